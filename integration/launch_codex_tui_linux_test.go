//go:build linux

package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
)

// codexTUIArgs are Codex's arguments for its terminal UI under the
// launch. The launch adds --no-daemon itself: without it Codex 0.171's TUI
// starts a background app-server and talks to it over a Unix socket in
// CODEX_HOME, which the sandbox refuses, and exits at once ("app server
// did not become ready"). --no-alt-screen: Codex draws inline, so its
// history stays in the pane's scrollback, under the shell's lines.
var codexTUIArgs = []string{"--no-alt-screen"}

// codexComposer is the placeholder of Codex's empty input box.
const codexComposer = "Ask Codex to do anything"

// codexUIDrawn are lines only Codex's live UI draws (its input box and
// footer).
var codexUIDrawn = []string{codexComposer, "? for shortcuts", "GPT-5.5 default"}

// TestLaunchCodexInteractive runs Codex's own terminal UI (no exec) under
// `sandboxd launch codex` in a real terminal (tmux, an interactive bash
// with job control), against the fake Responses API on the fake internet
// (as TestLaunchCodex serves it: api.model.test, the user's provider in
// ~/.codex/config.toml), and drives it with keys as a user would. Every
// launch first shows two screens of Codex 0.171's, answered with keys:
// "Folder access" (the launch records the workspace as an untrusted
// project: "1. Open restricted", Enter) and the model notice "Meet GPT-6
// Sol" ("2. Use existing model", Down and Enter; Codex cannot save the
// answer, "Failed to save model migration prompt preference", since the
// session's config.toml is read-only, so it asks again next time). No
// login screen: the provider's env_key is set. Then: its input box
// shows; a typed prompt reaches the model, whose exec_command call runs
// (its marker appears on the host); after a resize Codex redraws its
// history as wide as the window and takes a prompt; Ctrl-Z stops it (bash
// reports the job stopped, and Codex draws nothing until fg) and fg brings
// it back, taking a prompt; /quit ends it and sandboxd with status 0, and
// so does Ctrl-C twice in a second launch (the first clears a draft, the
// second quits). The screen is read with its scrollback.
func TestLaunchCodexInteractive(t *testing.T) {
	codex := codexBinary(t)
	w := newWorld(t)
	front := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, front)
	b := newCodexLaunchBox(t, codex)
	marker := filepath.Join(b.ws, "marker")
	lc, policy := newLaunchCmd(t, b.root, codexLaunchPolicy, func(logf func(string, ...any)) (*fakemodel.Server, error) {
		return fakemodel.OpenAIWith([]fakemodel.ToolCall{codexExec("echo hi > " + marker)}, fakemodel.OpenAIOptions{Logf: logf})
	})
	srv := lc.srv
	front.set(srv, nil)
	t.Cleanup(func() {
		front.set(nil, nil)
		srv.Close()
		for len(lc.notes.logs) > 0 {
			(<-lc.notes.logs)()
		}
		killHomeLeftovers(t, b.home, "codex")
	})

	auditFile := filepath.Join(sharedDir(t), "audit.jsonl")
	o := runOpts{sub: []string{"launch", "codex"},
		flags: []string{"--policy", policy, "--api-host", launchModelHost, "--program", b.program},
		argv:  codexTUIArgs, dir: b.ws, audit: auditFile,
		extraEnv: []string{"HOME=" + b.home, "USER=" + claudeUser(), "LANG=C.UTF-8", fakemodel.OpenAIKeyEnv + "=fake-key"}}
	script := filepath.Join(b.root, "bin", "launch")
	c := launchTerm(t, w, o, auditFile, script, b.ws)
	c.timeout = 30 * time.Second
	start := time.Now()
	c.keys("cd "+b.ws+" && clear", "Enter")

	// after reports whether s shows b after its last a.
	after := func(s, a, b string) bool {
		i := strings.LastIndex(s, a)
		return i >= 0 && strings.Contains(s[i:], b)
	}
	// press sends key until the screen is done, at most 5 times, each
	// given 3 s: a key that comes as Codex opens a screen can be lost.
	// Each done names what follows the screen the key answers, so that a
	// key sent again cannot answer the next screen.
	press := func(what, key string, done func(string) bool) {
		t.Helper()
		for i := 0; ; i++ {
			if i > 0 {
				t.Logf("%s: %s sent again", what, key)
			}
			c.keys(key)
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				if done(c.screen()) {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			if i == 4 {
				t.Fatalf("%s: %s does not take: the terminal shows\n%s", what, key, c.screen())
			}
		}
	}
	// launch starts sandboxd, answers Codex's first screens and waits for
	// its input box.
	launch := func(what string) {
		t.Helper()
		c.keys(script, "Enter")
		c.waitFor(what+": folder access", "1. Open restricted")
		press(what+": folder access", "Enter", func(s string) bool { return after(s, "1. Open restricted", codexComposer) })
		c.waitFor(what+": the model notice", "2. Use existing model")
		press(what+": the model notice", "Down", func(s string) bool { return after(s, "Meet GPT-6 Sol", "› 2. Use existing model") })
		press(what+": the model notice", "Enter", func(s string) bool { return after(s, "› 2. Use existing model", "GPT-5.5 default") })
		t.Logf("%s: the UI is up after %v", what, time.Since(start).Round(time.Millisecond))
	}
	// prompt types a prompt and waits for the model's last turn on the
	// screen and the fake model's request count to grow.
	prompt := func(what, text string) {
		t.Helper()
		before := len(srv.Requests())
		// Enter only once Codex shows the text in its input box: right
		// after fast typing, Codex takes Enter as part of a paste (a
		// newline in the box: seen with Enter sent at once).
		typed := strings.Count(c.screen(), text)
		c.keys("-l", text)
		c.until(what, "the typed prompt", func(s string) bool { return strings.Count(s, text) > typed })
		c.keys("Enter")
		c.until(what, "the model's answer after the prompt", func(s string) bool { return after(s, "› "+text, fakemodel.OpenAIFinalText) })
		if n := len(srv.Requests()); n <= before {
			t.Fatalf("%s: the fake model got %d requests, as many as before", what, n)
		}
		t.Logf("%s: done after %v, %d model requests", what, time.Since(start).Round(time.Millisecond), len(srv.Requests()))
	}
	// status waits for sandboxd's last line and checks its exit status.
	status := func(what string) {
		t.Helper()
		c.waitFor(what, "sandboxd: ")
		c.keys("echo status=$((0+$?))", "Enter")
		c.waitFor(what+": sandboxd's status", "status=0\n")
		t.Logf("%s: sandboxd exited after %v", what, time.Since(start).Round(time.Millisecond))
	}

	launch("start")
	// One line at 150 columns, more than one at 100.
	first := "Run the tool calls you are given, every one of them, in the order the model sends them, and then say that you are done with them all."
	prompt("the first prompt", first)
	piRequirePresent(t, marker)

	c.tmux("resize-window", "-t", c.name, "-x", "100", "-y", "30")
	// Codex redraws its history as wide as the window: the first prompt
	// wraps at a word, its rest indented (the terminal's own reflow would
	// cut it at the 100th column, unindented).
	c.until("the resize", "the first prompt rewrapped at 100 columns", func(string) bool {
		s := c.tmux("capture-pane", "-p", "-t", c.name)
		for _, l := range strings.Split(s, "\n") {
			if utf8.RuneCountInString(l) > 100 {
				return false
			}
		}
		return !strings.Contains(s, "› "+first) && strings.Contains(strings.ReplaceAll(s, "\n  ", " "), "› "+first)
	})
	prompt("a prompt after the resize", "Again.")

	c.keys("C-z")
	c.waitFor("Ctrl-Z", "Stopped")
	c.retype("the shell after Ctrl-Z", "echo shell-has-the-$((1+1))-terminal", "shell-has-the-2-terminal")
	// Stopped, Codex draws nothing until fg: its input box or footer
	// after bash's report of the stop means it was continued while the
	// shell had the terminal.
	s := c.screen()
	i := strings.LastIndex(s, "Stopped")
	for _, drawn := range codexUIDrawn {
		if i < 0 || strings.Contains(s[i:], drawn) {
			t.Fatalf("Ctrl-Z: Codex drew %q while its job was stopped:\n%s", drawn, s)
		}
	}
	c.keys("fg", "Enter")
	// The input box drawn before Ctrl-Z is still on the screen: the one
	// that counts comes after fg's line.
	c.until("fg", "Codex's input box after fg", func(s string) bool {
		i := strings.LastIndex(s, "$ fg")
		if i < 0 {
			return false
		}
		_, rest, ok := strings.Cut(s[i:], "\n")
		return ok && strings.Contains(rest, codexComposer)
	})
	prompt("a prompt after fg", "Once more.")

	c.keys("-l", "/quit")
	c.until("/quit", "the typed /quit", func(s string) bool { return after(s, "› Once more.", "› /quit") })
	c.keys("Enter")
	// Codex's goodbye after a session with turns.
	c.waitFor("/quit", "codex resume ")
	status("/quit")

	// Again, ended by Ctrl-C twice: the first clears what was typed (on
	// an empty input box, one Ctrl-C quits), the second quits.
	launch("the second start")
	c.keys("-l", "a draft")
	c.until("the draft", "the typed draft", func(s string) bool { return after(s, "$ "+script, "› a draft") })
	// Codex redraws its input box in place: the draft's line becomes the
	// empty box's. (Under load the key can be lost as the draft is drawn:
	// sent again only while the draft still shows.)
	press("the first Ctrl-C", "C-c", func(string) bool {
		s := c.tmux("capture-pane", "-p", "-t", c.name)
		return strings.Contains(s, "› "+codexComposer) && !strings.Contains(s, "a draft") || strings.Contains(s, "Session ID: ")
	})
	c.keys("C-c")
	// Codex's goodbye after a session without turns.
	c.waitFor("the second Ctrl-C", "Session ID: ")
	status("Ctrl-C twice")

	// The model Codex asked for all along is the user's: the notice's
	// answer kept it.
	for i, body := range srv.Requests() {
		var req struct {
			Model string `json:"model"`
		}
		if err := json.Unmarshal(body, &req); err != nil || req.Model != codexLaunchModel {
			t.Errorf("model request %d: model %q (%v), want %q", i, req.Model, err, codexLaunchModel)
		}
	}
}
