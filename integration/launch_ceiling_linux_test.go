//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// launchCodexWebPolicy grants Codex's web search (trait web) and denies a
// domain: a bound that needs web_search taken back, which Codex's hooks
// mode cannot gate (no hook fires for hosted search).
const launchCodexWebPolicy = "version: 1\nharness: codex\nsession:\n  traits: [web]\n  bound: {network: {domains: [pastebin.com]}}\n"

// TestLaunchCountsItsCeiling: the same session policy refuses to start
// Codex under sandboxd run (exit 125, one line naming web_search: nothing
// there takes it back) and starts it under sandboxd launch codex, which
// turns web search off in the session's private CODEX_HOME. The program is
// a script in Codex's place that copies what it was given to the
// workspace, so this runs without the Codex CLI; as root and as uid 65534
// (whose private home is under /tmp, placed over the sandbox's own). After the
// session the private home is gone from the host, its transcripts kept in
// the user's ~/.codex/sessions.
func TestLaunchCountsItsCeiling(t *testing.T) {
	w := newWorld(t)
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			root := sharedDir(t)
			ws, policy := filepath.Join(root, "ws"), filepath.Join(root, "policy", "session.yaml")
			for _, d := range []string{ws, filepath.Dir(policy)} {
				if err := os.MkdirAll(d, 0o777); err != nil {
					t.Fatal(err)
				}
				os.Chmod(d, 0o777)
			}
			if err := os.WriteFile(policy, []byte(launchCodexWebPolicy), 0o644); err != nil {
				t.Fatal(err)
			}
			ran := filepath.Join(ws, "ran")
			r := w.sandboxd(t, runOpts{uid: u.uid, dir: ws, flags: []string{"--policy", policy}, argv: []string{"touch", ran}})
			if r.code != 125 || !strings.Contains(r.stderr, "web_search") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("sandboxd run: exit %d, stderr %q: want 125 and one line naming web_search", r.code, r.stderr)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Error("sandboxd run refused, but the command ran")
			}

			program := filepath.Join(root, "codex")
			script := "#!/bin/sh\necho \"$CODEX_HOME\" > " + ran + "\ncp \"$CODEX_HOME/config.toml\" " + filepath.Join(ws, "config.toml") +
				"\n: > \"$CODEX_HOME/state\" && echo state-writable >> " + ran +
				"\n( : > \"$CODEX_HOME/config.toml\" ) 2>/dev/null || echo config-read-only >> " + ran +
				"\nmkdir -p \"$CODEX_HOME/sessions/2026\" && echo transcript > \"$CODEX_HOME/sessions/2026/rollout-1.jsonl\"" +
				"\nln -s /etc/passwd \"$CODEX_HOME/sessions/2026/link.jsonl\"\n"
			if err := os.WriteFile(program, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			r = w.sandboxd(t, runOpts{uid: u.uid, dir: ws, sub: []string{"launch", "codex"},
				flags: []string{"--policy", policy, "--program", program}, argv: []string{"exec", "hi"}})
			if r.code != 0 {
				t.Fatalf("sandboxd launch codex: exit %d, stderr %q", r.code, r.stderr)
			}
			out, err := os.ReadFile(ran)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != 3 || lines[1] != "state-writable" || lines[2] != "config-read-only" {
				t.Errorf("inside, the private CODEX_HOME: %q; want it writable with a read-only config.toml", lines)
			}
			home := lines[0]
			if !strings.HasSuffix(home, ".home") {
				t.Errorf("CODEX_HOME inside is %q, not the session's private home", home)
			}
			cfg, _ := os.ReadFile(filepath.Join(ws, "config.toml"))
			if doc := codexConfigDoc(t, string(cfg)); tomlAt(doc, "web_search") != "disabled" || tomlAt(doc, "hooks", "state") == nil {
				t.Errorf("the session's config.toml lacks web search off or the hook's trust:\n%s", cfg)
			}
			// The transcript is kept in the user's ~/.codex (HOME is the
			// workspace here); the symlink beside it is not.
			kept := filepath.Join(ws, ".codex", "sessions", "2026")
			if b, err := os.ReadFile(filepath.Join(kept, "rollout-1.jsonl")); err != nil || string(b) != "transcript\n" {
				t.Errorf("the session's transcript was not kept in ~/.codex/sessions: %q, %v", b, err)
			}
			if _, err := os.Lstat(filepath.Join(kept, "link.jsonl")); err == nil {
				t.Error("a symlink of the private home was copied to ~/.codex/sessions")
			}
			if _, err := os.Stat(home); err == nil {
				t.Errorf("the private home %s is left on the host after the session", home)
			}
		})
	}
}
