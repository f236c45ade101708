package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathDecisionsAgree: the same reads decided by the sandbox's
// filesystem layer (sandboxd explain --path, policy.FSPlan) and by
// hookgate on a Read of the path (sandboxd explain --harness), under
// files.deny and files.allowOnly: the same verdict and rule from each (the
// reasons say which layer: hidden in the sandbox, or denied to the call).
// The paths exist and lie in the workspace: the kernel layer hides what a
// "**/" pattern matches at start in the workspace, the write roots and
// three levels into home (elsewhere only hookgate denies it, which
// docs/limits.md says).
func TestPathDecisionsAgree(t *testing.T) {
	// In home, not under a temporary directory: the sandbox's /tmp and
	// /var/tmp are its own, so a host path there would be invisible for
	// that reason instead of the rule's (a checkout, CI's included, may
	// itself lie under /tmp).
	home, err := os.UserHomeDir()
	if err != nil && os.Geteuid() == 0 {
		home, err = "/root", nil
	}
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(home, ".barry-pathagree-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, tmp := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		if strings.HasPrefix(root+"/", filepath.Clean(tmp)+"/") {
			t.Fatalf("home %s is under %s: the sandbox would hide it as private tmp", home, tmp)
		}
	}
	ws := filepath.Join(root, "ws")
	for _, d := range []string{"ws/src", "ws/keys", "other"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	for _, f := range []string{"ws/.env", "ws/src/main.go", "ws/keys/id.pem", "other/notes.txt", "other/.env"} {
		os.WriteFile(filepath.Join(root, f), []byte("x\n"), 0o644)
	}
	policies := map[string]string{
		"deny":      fmt.Sprintf(`{files: {deny: ["**/.env", "%s/keys"]}}`, ws),
		"allowOnly": fmt.Sprintf(`{files: {allowOnly: ["%s/**"], deny: ["**/*.pem"]}}`, ws),
	}
	path := map[string]string{}
	for name, bound := range policies {
		path[name] = filepath.Join(root, name+".yaml")
		os.WriteFile(path[name], []byte("version: 1\nharness: claude-code\nsession:\n  bound: "+bound+"\n"), 0o644)
	}
	cases := []struct {
		policy, file string
		allowed      bool
		rule         string
	}{
		{"deny", "ws/.env", false, "files.deny:**/.env"},
		{"deny", "ws/keys/id.pem", false, "files.deny:" + ws + "/keys"},
		{"deny", "ws/src/main.go", true, ""},
		{"allowOnly", "ws/src/main.go", true, "files.allowOnly:" + ws + "/**"},
		{"allowOnly", "ws/keys/id.pem", false, "files.deny:**/*.pem"},
		{"allowOnly", "other/notes.txt", false, "files.allowOnly"},
	}
	type verdict struct{ Verdict, Reason, Rule string }
	for _, c := range cases {
		p := filepath.Join(root, c.file)
		want := "deny"
		if c.allowed {
			want = "allow"
		}
		_, out, stderr := runApp(t, "", "explain", "--policy", path[c.policy], "--cwd", ws, "--path", p, "--json")
		var k verdict
		if err := json.Unmarshal([]byte(out), &k); err != nil {
			t.Fatalf("explain --path %s: %v: %s %s", p, err, out, stderr)
		}
		payload := fmt.Sprintf(`{"hook_event_name":"PreToolUse","session_id":"s","cwd":%q,"tool_name":"Read","tool_input":{"file_path":%q}}`, ws, p)
		_, out, _ = runApp(t, payload, "explain", "--policy", path[c.policy], "--harness", "claude-code", "--json")
		var h verdict
		if err := json.Unmarshal([]byte(out), &h); err != nil {
			t.Fatalf("explain --harness: %v: %s", err, out)
		}
		// An allowed read names the allowOnly entry in the call's ruling;
		// the kernel layer just finds it readable.
		if k.Verdict != want || h.Verdict != want || (!c.allowed && (k.Rule != c.rule || h.Rule != c.rule)) || (c.allowed && h.Rule != c.rule) {
			t.Errorf("%s %s: kernel %+v, hook %+v; want %s with rule %q from both", c.policy, c.file, k, h, want, c.rule)
		}
	}
}
