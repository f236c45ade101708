package hooks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrustCopilotFolder: trust goes into config.json's trustedFolders
// the way Copilot writes the file (a // comment header, then JSON), keeping
// the header and the other settings; a parent folder covers its children.
func TestTrustCopilotFolder(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, "config.json")
	header := "// User settings belong in settings.json.\n// This file is managed automatically.\n"
	os.WriteFile(cfg, []byte(header+`{"firstLaunchAt": "2026-12-01T10:04:00.000Z", "trustedFolders": ["/srv/other"]}`), 0o600)
	if copilotTrusted(home, "/work/proj") {
		t.Fatal("trusted before")
	}
	if err := trustCopilotFolder(home, "/work/proj", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.HasPrefix(string(b), header) || !strings.Contains(string(b), `"firstLaunchAt"`) || !strings.Contains(string(b), `"/srv/other"`) {
		t.Errorf("header or settings lost:\n%s", b)
	}
	for dir, want := range map[string]bool{"/work/proj": true, "/work/proj/sub": true, "/work/projx": false, "/work": false, "/srv/other/a": true} {
		if got := copilotTrusted(home, dir); got != want {
			t.Errorf("trusted(%s) = %v, want %v", dir, got, want)
		}
	}
	// Idempotent.
	trustCopilotFolder(home, "/work/proj", time.Unix(0, 0))
	b2, _ := os.ReadFile(cfg)
	if string(b2) != string(b) {
		t.Errorf("second trust changed the file:\n%s", b2)
	}
	// A file that is not JSON after its header is left alone.
	os.WriteFile(cfg, []byte(header+"{not json"), 0o600)
	if err := trustCopilotFolder(home, "/work/p2", time.Unix(0, 0)); err == nil {
		t.Error("rewrote a config it cannot read")
	}
}

// TestCopilotMCPIDs: "<server>-<tool>" reads at every "-", and Copilot's
// native tools are never MCP tools.
func TestCopilotMCPIDs(t *testing.T) {
	ids, ok := copilotMCPIDs(Call{Tool: "my-db-query"}, nil, nil)
	if !ok || strings.Join(ids, ",") != "my:db-query,my-db:query" {
		t.Errorf("ids %v", ids)
	}
	if _, ok := copilotMCPIDs(Call{Tool: "read_bash"}, nil, nil); ok {
		t.Error("native tool read as MCP")
	}
	if _, ok := copilotMCPIDs(Call{Tool: "-x"}, nil, nil); ok {
		t.Error("leading dash read as MCP")
	}
}

// TestVerifyCopilotOtherHooks: verify refuses every other preToolUse hook
// Copilot would also run (it passes one hook's modifiedArgs down the
// chain, so another hook could rewrite a call hookgate allowed), and a
// trusted git root's disableAllHooks seen from a subdirectory.
func TestVerifyCopilotOtherHooks(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "hookgate")
	os.WriteFile(bin, []byte("#!/bin/sh\necho hookgate test\n"), 0o755)
	other := `{"version":1,"hooks":{"preToolUse":[{"type":"command","command":"/usr/local/bin/rewrite","timeoutSec":5}]}}`
	for _, c := range []struct {
		name  string
		plant func(home, repo string)
		want  string
	}{
		{"another file in the user's hooks", func(home, _ string) {
			os.WriteFile(filepath.Join(home, ".copilot", "hooks", "aa-other.json"), []byte(other), 0o644)
		}, "another preToolUse hook"},
		{"inline in the user's settings", func(home, _ string) {
			os.WriteFile(filepath.Join(home, ".copilot", "settings.json"), []byte(other), 0o644)
		}, "another preToolUse hook"},
		{"Claude-compatible form in the user's hooks", func(home, _ string) {
			os.WriteFile(filepath.Join(home, ".copilot", "hooks", "x.json"), []byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"x"}]}]}}`), 0o644)
		}, "another preToolUse hook"},
		{"a trusted repository's hooks", func(home, repo string) {
			trustCopilotFolder(filepath.Join(home, ".copilot"), repo, time.Unix(0, 0))
			os.MkdirAll(filepath.Join(repo, ".github", "hooks"), 0o755)
			os.WriteFile(filepath.Join(repo, ".github", "hooks", "repo.json"), []byte(other), 0o644)
		}, "another preToolUse hook"},
		{"a trusted git root's disableAllHooks, from a subdirectory", func(home, repo string) {
			trustCopilotFolder(filepath.Join(home, ".copilot"), repo, time.Unix(0, 0))
			os.MkdirAll(filepath.Join(repo, ".github", "copilot"), 0o755)
			os.WriteFile(filepath.Join(repo, ".github", "copilot", "settings.local.json"), []byte(`{"disableAllHooks": true}`), 0o644)
		}, "disableAllHooks"},
		{"an untrusted repository's hooks are not read", func(home, repo string) {
			os.MkdirAll(filepath.Join(repo, ".github", "hooks"), 0o755)
			os.WriteFile(filepath.Join(repo, ".github", "hooks", "repo.json"), []byte(other), 0o644)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			home, repo := t.TempDir(), t.TempDir()
			os.Mkdir(filepath.Join(repo, ".git"), 0o755)
			sub := filepath.Join(repo, "sub")
			os.Mkdir(sub, 0o755)
			a := VerifyArgs{InstallArgs: InstallArgs{Harness: Copilot, Home: home, Project: sub, Binary: bin}}
			if _, _, err := Install(a.InstallArgs); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(context.Background(), a); err != nil {
				t.Fatalf("after install: %v", err)
			}
			c.plant(home, repo)
			_, err := Verify(context.Background(), a)
			if c.want == "" {
				if err != nil {
					t.Errorf("verify: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("verify: %v, want %q", err, c.want)
			}
		})
	}
}
