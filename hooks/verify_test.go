package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerify(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hookgate")
	os.WriteFile(bin, []byte("#!/bin/sh\necho hookgate test\n"), 0o755)
	for _, h := range []Harness{ClaudeCode, Codex, Copilot, Cursor, Gemini, Pi} {
		t.Run(string(h), func(t *testing.T) {
			home := t.TempDir()
			a := VerifyArgs{InstallArgs: InstallArgs{Harness: h, Home: home, Project: t.TempDir(), Binary: bin}}
			if _, err := Verify(context.Background(), a); err == nil {
				t.Fatal("verified with nothing installed")
			}
			if _, _, err := Install(a.InstallArgs); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(context.Background(), a); err != nil {
				t.Fatalf("after install: %v", err)
			}
			if h == Pi {
				return
			}
			// The binary gone: every call would be denied; say so.
			os.Rename(bin, bin+".away")
			_, err := Verify(context.Background(), a)
			os.Rename(bin+".away", bin)
			if err == nil || !strings.Contains(err.Error(), "does not run as hookgate") {
				t.Errorf("binary gone: %v", err)
			}
			path, _ := ConfigPath(a.InstallArgs)
			data, _ := os.ReadFile(path)
			switch h {
			case ClaudeCode:
				os.WriteFile(filepath.Join(home, ".claude", "settings.json"), []byte(strings.Replace(string(data), "{", `{"disableAllHooks": true,`, 1)), 0o644)
				if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "disableAllHooks") {
					t.Errorf("disableAllHooks: %v", err)
				}
				os.WriteFile(path, data, 0o644)
			case Codex:
				os.Remove(filepath.Join(home, ".codex", "config.toml"))
				if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "does not trust") {
					t.Errorf("untrusted: %v", err)
				}
				Install(a.InstallArgs)
			}
			// Another hook first in line could answer before hookgate.
			other := strings.Replace(string(data), `"command": "`, `"command": "/bin/true", "x": "`, 1)
			if p := mustProtocol(h).install; p.flat {
				ev := p.events[0]
				other = strings.Replace(string(data), `"`+ev+`": [`, `"`+ev+`": [{"command": "/bin/true"},`, 1)
			}
			os.WriteFile(path, []byte(other), 0o644)
			if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "before hookgate") {
				t.Errorf("another hook first: %v", err)
			}
		})
	}
}

// TestProjectTrust: Codex and Gemini CLI project installs are refused in
// an untrusted project, made effective with --trust-project, and verify
// follows; Gemini workspace settings that switch hooks off fail verify.
func TestProjectTrust(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hookgate")
	os.WriteFile(bin, []byte("#!/bin/sh\necho hookgate test\n"), 0o755)
	for _, h := range []Harness{Codex, Copilot, Gemini} {
		t.Run(string(h), func(t *testing.T) {
			home, proj := t.TempDir(), t.TempDir()
			a := VerifyArgs{InstallArgs: InstallArgs{Harness: h, Scope: "project", Home: home, Project: proj, Binary: bin}}
			if _, _, err := Install(a.InstallArgs); err == nil || !strings.Contains(err.Error(), "--trust-project") {
				t.Fatalf("untrusted project: %v", err)
			}
			a.TrustProject = true
			if _, _, err := Install(a.InstallArgs); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(context.Background(), a); err != nil {
				t.Fatalf("verify after a trusted install: %v", err)
			}
			if h == Copilot {
				// A trusted folder's settings can switch every hook off,
				// the user's too.
				os.MkdirAll(filepath.Join(proj, ".github", "copilot"), 0o755)
				os.WriteFile(filepath.Join(proj, ".github", "copilot", "settings.local.json"), []byte(`{"disableAllHooks": true}`), 0o644)
				if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "disableAllHooks") {
					t.Errorf("hooks disabled in the folder's settings: %v", err)
				}
			}
			if h == Gemini {
				os.MkdirAll(filepath.Join(home, ".gemini"), 0o755)
				os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"hooksConfig":{"disabled":["hookgate"]}}`), 0o644)
				if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "hooksConfig.disabled") {
					t.Errorf("hooks disabled in user settings: %v", err)
				}
			}
		})
	}
}

// TestGeminiTrustByEnvironment: with GEMINI_CLI_TRUST_WORKSPACE=true in
// the install's environment a Gemini CLI project install is accepted in a
// folder trustedFolders.json does not name, and verify accepts it while
// the variable stays and refuses it once it is gone; "false" refuses even
// a trusted folder.
func TestGeminiTrustByEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hookgate")
	os.WriteFile(bin, []byte("#!/bin/sh\necho hookgate test\n"), 0o755)
	home, proj := t.TempDir(), t.TempDir()
	a := VerifyArgs{InstallArgs: InstallArgs{Harness: Gemini, Scope: "project", Home: home, Project: proj, Binary: bin, GeminiTrustWorkspace: "true"}}
	if _, _, err := Install(a.InstallArgs); err != nil {
		t.Fatalf("install with GEMINI_CLI_TRUST_WORKSPACE=true: %v", err)
	}
	if _, err := os.Stat(filepath.Join(home, ".gemini", "trustedFolders.json")); err == nil {
		t.Errorf("the install wrote trustedFolders.json though the variable trusts the folder")
	}
	if _, err := Verify(context.Background(), a); err != nil {
		t.Errorf("verify with the variable: %v", err)
	}
	a.GeminiTrustWorkspace = ""
	if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "GEMINI_CLI_TRUST_WORKSPACE=true") {
		t.Errorf("verify without the variable: %v", err)
	}
	a.TrustProject = true
	if _, _, err := Install(a.InstallArgs); err != nil {
		t.Fatal(err)
	}
	a.GeminiTrustWorkspace = "false"
	if _, err := Verify(context.Background(), a); err == nil || !strings.Contains(err.Error(), "trusts no folder") {
		t.Errorf("verify with GEMINI_CLI_TRUST_WORKSPACE=false: %v", err)
	}
}
