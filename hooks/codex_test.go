package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCodexHandlerHash: the worked example checked against Codex 0.171's
// own hooks/list currentHash.
func TestCodexHandlerHash(t *testing.T) {
	got := codexHandlerHash("pre_tool_use", ".*", "/usr/bin/hookgate check --harness codex", "hookgate: checking tool call", 10)
	if want := "sha256:df900c073f6ccac0f09f759f280be4cf9bc9cf40847d3604bb25210ddc94e506"; got != want {
		t.Errorf("hash %s, want %s", got, want)
	}
}

func TestUpsertCodexTrust(t *testing.T) {
	e := []codexTrust{{Key: "/h/hooks.json:pre_tool_use:0:0", Hash: "sha256:aa"}}
	out, err := upsertCodexTrust("model = \"x\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n", e)
	if err != nil {
		t.Fatal(err)
	}
	want := "model = \"x\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n\n[hooks.state.\"/h/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:aa\"\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	// Again with a new hash: replaced in place, other keys kept.
	out2, err := upsertCodexTrust(strings.Replace(out, "trusted_hash", "enabled = true\ntrusted_hash", 1), []codexTrust{{Key: e[0].Key, Hash: "sha256:bb"}})
	if err != nil || strings.Count(out2, "[hooks.state.") != 1 || !strings.Contains(out2, "sha256:bb") || strings.Contains(out2, "sha256:aa") || !strings.Contains(out2, "enabled = true") {
		t.Errorf("replace: %v\n%s", err, out2)
	}
	// hooks.state in a form this does not edit is refused.
	for _, cfg := range []string{"hooks.state = {}\n", "[hooks]\nstate = {}\n", "[hooks.state]\n\"k\" = {trusted_hash = \"x\"}\n"} {
		if _, err := upsertCodexTrust(cfg, e); err == nil {
			t.Errorf("%q edited", cfg)
		}
	}
}

// TestInstallCodexTrusts: install under CODEX_HOME writes the hooks file
// there and a trust entry whose key and hash match the entry written.
func TestInstallCodexTrusts(t *testing.T) {
	home, codexHome := t.TempDir(), t.TempDir()
	a := InstallArgs{Harness: Codex, Home: home, CodexHome: codexHome, Binary: "/opt/hookgate", Now: func() time.Time { return time.Unix(0, 0) }}
	path, _, err := Install(a)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(codexHome, "hooks.json") {
		t.Fatalf("hooks file %s, want under CODEX_HOME", path)
	}
	data, _ := os.ReadFile(path)
	entries, err := codexTrustFor(path, data)
	if err != nil || len(entries) != 2 {
		t.Fatalf("trust entries %v %v", entries, err)
	}
	cfg, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	for _, e := range entries {
		if !strings.Contains(string(cfg), "[hooks.state."+tomlQuote(e.Key)+"]\ntrusted_hash = "+tomlQuote(e.Hash)) {
			t.Errorf("config.toml lacks the trust for %s:\n%s", e.Key, cfg)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".codex")); err == nil {
		t.Error("install wrote ~/.codex although CODEX_HOME is set")
	}
	// Project scope refuses an untrusted project, with the line to add.
	proj := t.TempDir()
	pa := a
	pa.Scope, pa.Project = "project", proj
	if _, _, err := Install(pa); err == nil || !strings.Contains(err.Error(), "trust_level") {
		t.Errorf("untrusted project: %v", err)
	}
	os.WriteFile(filepath.Join(codexHome, "config.toml"), append(cfg, []byte("\n[projects."+tomlQuote(proj)+"]\ntrust_level = \"trusted\"\n")...), 0o644)
	if _, _, err := Install(pa); err != nil {
		t.Errorf("trusted project: %v", err)
	}
}
