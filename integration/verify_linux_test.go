//go:build linux

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyCodex asks the real Codex (its app-server's hooks/list)
// through hookgate verify: it fails before install, passes after it, and
// fails again once Codex's trust no longer matches (the entry edited, as a
// new hookgate path or policy would) or CODEX_HOME points elsewhere.
func TestVerifyCodex(t *testing.T) {
	codex := codexBinary(t)
	w := newCodexWorld(t, codex, nil, codexOpts{codexHomeElsewhere: true})
	verify := func(env ...string) (int, string) {
		cmd := exec.Command(w.hookgate, "verify", "--harness", "codex", "--codex", codex)
		cmd.Dir = w.work
		cmd.Env = append(w.env(), env...)
		out, _ := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), string(out)
	}
	if code, out := verify(); code != 1 {
		t.Fatalf("before install: exit %d %s", code, out)
	}
	w.install(t, "user")
	if code, out := verify(); code != 0 || !strings.Contains(out, "codex runs it") {
		t.Fatalf("after install: exit %d %s", code, out)
	}
	// Another CODEX_HOME: Codex sees no hookgate hook there.
	other := filepath.Join(w.root, "other-codex-home")
	os.MkdirAll(other, 0o755)
	cfg, _ := os.ReadFile(filepath.Join(w.codexHome, "config.toml"))
	os.WriteFile(filepath.Join(other, "config.toml"), []byte(strings.Split(string(cfg), "[hooks.state")[0]), 0o644)
	if code, out := verify("CODEX_HOME=" + other); code != 1 {
		t.Errorf("other CODEX_HOME: exit %d %s", code, out)
	}
	// The entry edited after trust was recorded: Codex reports it modified.
	hooksFile := filepath.Join(w.codexHome, "hooks.json")
	b, _ := os.ReadFile(hooksFile)
	os.WriteFile(hooksFile, []byte(strings.Replace(string(b), `"timeout": 30`, `"timeout": 31`, 1)), 0o644)
	if code, out := verify(); code != 1 || !strings.Contains(out, "modified") && !strings.Contains(out, "untrusted") {
		t.Errorf("edited entry: exit %d %s", code, out)
	}
}
