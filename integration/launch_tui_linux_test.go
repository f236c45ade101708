//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
)

// TestLaunchClaudeInteractive runs Claude Code's own terminal UI (no -p)
// under `sandboxd launch claude-code` in a real terminal (tmux, an
// interactive bash with job control), against the fake model on the fake
// internet, and drives it with keys as a user would: it shows its input
// prompt; a typed prompt reaches the model, whose Bash call runs (its
// marker appears on the host); a resize leaves it working; Ctrl-Z stops
// it (bash reports the job stopped) and fg brings it back; /exit ends it
// and sandboxd with status 0, and so does Ctrl-C twice in a second launch.
// The screen is read with its scrollback (tmux capture-pane -S -).
func TestLaunchClaudeInteractive(t *testing.T) {
	claude := claudeCLI(t)
	w := newWorld(t)
	model := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
	w.serveHTTPS(t, launchMCPHost, launchMCPAddr, &launchMCP{})
	b := newLaunchBox(t, claude)
	marker := filepath.Join(b.ws, "marker")
	srv, err := fakemodel.AnthropicWith([]fakemodel.ToolCall{
		{Name: "Bash", Input: map[string]any{"command": "echo hi > " + marker, "description": "fakemodel"}},
	}, fakemodel.AnthropicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model.set(srv, nil)
	t.Cleanup(func() { model.set(nil, nil); srv.Close() })

	// Claude Code's first-run screens (onboarding, the API key's
	// approval, the workspace's trust, the bypass mode's warning and the
	// fullscreen renderer's offer) are
	// answered in ~/.claude.json, which is read-only inside the sandbox.
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true, "bypassPermissionsModeAccepted": true, "fullscreenUpsellSeenCount": 100,
		// Claude Code knows an approved key by its last 20 characters,
		// which the key's placeholder inside keeps.
		"customApiKeyResponses": map[string]any{"approved": []string{claudeAPIKey[len(claudeAPIKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{b.ws: map[string]any{"hasTrustDialogAccepted": true}},
	})
	claudeWriteFile(t, filepath.Join(b.home, ".claude.json"), string(cfg)+"\n")
	// The bypass mode's acceptance, where Claude Code moves it from
	// ~/.claude.json on its first run outside: the user's settings, which
	// are read-only inside too (made "{}" when missing).
	if err := os.MkdirAll(filepath.Join(b.home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	claudeWriteFile(t, filepath.Join(b.home, ".claude", "settings.json"), `{"skipDangerousModePermissionPrompt": true}`+"\n")

	policy := filepath.Join(b.root, "policy", "session.yaml")
	claudeWriteFile(t, policy, launchPolicy)
	auditFile := filepath.Join(sharedDir(t), "audit.jsonl")
	logDir := filepath.Join(b.root, "log")
	o := b.runOpts(w, policy, auditFile, logDir, nil, []string{"--dangerously-skip-permissions",
		"--debug-file", filepath.Join(logDir, "claude-debug.txt")})
	script := filepath.Join(b.root, "bin", "launch")
	t.Cleanup(func() {
		if t.Failed() {
			d, _ := os.ReadFile(filepath.Join(logDir, "claude-debug.txt"))
			t.Logf("Claude Code's debug log (its end):\n%s", d[max(0, len(d)-4000):])
		}
	})

	c := launchTerm(t, w, o, auditFile, script, b.ws)
	c.timeout = 20 * time.Second
	start := time.Now()
	c.keys("cd "+b.ws+" && clear", "Enter")
	c.keys(script, "Enter")
	c.waitFor("start", "bypass permissions on")
	t.Logf("the UI is up after %v", time.Since(start).Round(time.Millisecond))
	// prompt types a prompt and waits for the model's last turn on the
	// screen and the fake model's request count to grow.
	prompt := func(what, text string) {
		t.Helper()
		before := len(srv.Requests())
		// Enter only once Claude Code shows the text in its input box:
		// typed before it has the terminal in raw mode again (after fg),
		// the line's end is a newline in the box, not a submission.
		typed := strings.Count(c.screen(), text)
		c.keys("-l", text)
		c.until(what, "the typed prompt", func(s string) bool { return strings.Count(s, text) > typed })
		c.keys("Enter")
		c.until(what, "the model's answer after the prompt", func(s string) bool {
			i := strings.LastIndex(s, "❯ "+text)
			return i >= 0 && strings.Contains(s[i:], fakemodel.AnthropicFinalText)
		})
		if n := len(srv.Requests()); n <= before {
			t.Fatalf("%s: the fake model got %d requests, as many as before", what, n)
		}
		t.Logf("%s: done after %v, %d model requests", what, time.Since(start).Round(time.Millisecond), len(srv.Requests()))
	}
	prompt("the first prompt", "Run the tool calls you are given.")
	claudeRequirePresent(t, marker)

	c.tmux("resize-window", "-t", c.name, "-x", "100", "-y", "30")
	// The input box's rule is redrawn as wide as the window.
	c.until("the resize", "the input box 100 columns wide", func(string) bool {
		s := c.tmux("capture-pane", "-p", "-t", c.name)
		return strings.Contains(s, strings.Repeat("─", 100)) && !strings.Contains(s, strings.Repeat("─", 101))
	})
	prompt("a prompt after the resize", "Again.")

	c.keys("C-z")
	c.waitFor("Ctrl-Z", "Stopped")
	c.retype("the shell after Ctrl-Z", "echo shell-has-the-$((1+1))-terminal", "shell-has-the-2-terminal")
	// Stopped, Claude Code draws nothing until fg. A draw here (over the
	// shell's lines, bash's report of the stop among them) means it was
	// continued while the shell had the terminal, and tmux's answers to
	// its terminal queries land in bash's input.
	if s := c.screen(); !strings.Contains(s, "Stopped") || strings.Contains(s[strings.LastIndex(s, "Stopped"):], "bypass permissions on") {
		t.Fatalf("Ctrl-Z: Claude Code drew while its job was stopped:\n%s", s)
	}
	c.keys("fg", "Enter")
	// The input box drawn before Ctrl-Z is still on the screen: the one
	// that counts comes after fg's line.
	c.until("fg", "Claude Code's input box after fg", func(s string) bool {
		i := strings.LastIndex(s, "$ fg")
		if i < 0 {
			return false
		}
		_, rest, ok := strings.Cut(s[i:], "\n")
		return ok && strings.Contains(rest, "bypass permissions on")
	})
	prompt("a prompt after fg", "Once more.")

	c.keys("-l", "/exit")
	c.keys("Enter")
	// Typed before Claude Code has ended, a line would be its next prompt.
	c.waitFor("/exit", "Resume this session with")
	status := func(what string) {
		t.Helper()
		c.waitFor(what, "sandboxd: ")
		c.keys("echo status=$((0+$?))", "Enter")
		c.waitFor(what+": sandboxd's status", "status=0\n")
		t.Logf("%s: sandboxd exited after %v", what, time.Since(start).Round(time.Millisecond))
	}
	status("/exit")

	// Again, ended by Ctrl-C twice (the first only warns).
	c.keys(script, "Enter")
	// The mark stays above the status line, where Claude Code shows its
	// warning.
	c.until("the second start", "the input box", func(s string) bool {
		i := strings.LastIndex(s, "$ "+script)
		return i >= 0 && strings.Contains(s[i:], "bypass permissions on")
	})
	c.keys("C-c")
	c.waitFor("the first Ctrl-C", "Press Ctrl-C again to exit")
	c.keys("C-c")
	status("Ctrl-C twice")
}
