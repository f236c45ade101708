//go:build linux

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
)

// TestLaunchPiInteractive runs Pi's own terminal UI (no -p) under
// `sandboxd launch pi` in a real terminal (tmux, an interactive bash with
// job control), against the fake model on the fake internet (the
// models.json provider of newPiLaunchBox), and drives it with keys as a
// user would: it shows its input box (no first-run screen: the footer
// under the box names the model); a typed prompt reaches the model, whose
// bash call runs (its marker appears on the host); a resize leaves it
// working; Ctrl-Z (Pi's own key: it restores the terminal and stops its
// process group) stops it, bash reports the job stopped and Pi draws
// nothing until fg, which brings it back; /quit ends it and sandboxd with
// status 0.
func TestLaunchPiInteractive(t *testing.T) {
	pi := piCLI(t)
	w := newWorld(t)
	model := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
	b := newPiLaunchBox(t, pi)
	marker := filepath.Join(b.ws, "marker")
	srv, err := fakemodel.AnthropicWith([]fakemodel.ToolCall{piBash("echo hi > " + marker)}, fakemodel.AnthropicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	model.set(srv, nil)
	t.Cleanup(func() { model.set(nil, nil); srv.Close() })

	policy := filepath.Join(b.root, "policy", "session.yaml")
	piWriteFile(t, policy, launchPiPolicy)
	o := runOpts{
		sub:   []string{"launch", "pi"},
		flags: []string{"--policy", policy, "--api-host", launchModelHost, "--program", b.program},
		argv:  []string{"--provider", piFakeProvider, "--model", piFakeModel, "--no-session", "--offline"},
		dir:   b.ws,
		extraEnv: (&piBox{home: b.home}).env("NODE_EXTRA_CA_CERTS="+w.caFile,
			"PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0", "PATH=/usr/local/bin:/usr/bin:/bin"),
	}
	launchTUI{
		name: "Pi", srv: srv, marker: marker, home: b.home, root: b.root,
		// Pi's footer, under its input box, ends in the model's name.
		ready: piFakeModel, footer: piFakeModel,
		// A submitted prompt is a line of its own, indented by one.
		echo: " ", final: fakemodel.AnthropicFinalText,
		// The footer's line, laid out for 100 columns: the token counts on
		// the left, the model on the right.
		resized: func(l string) bool {
			return strings.Contains(l, "(auto)") && strings.HasSuffix(l, piFakeModel) && len([]rune(l)) <= 100
		},
		suspend: func(c *term) { c.keys("C-z") },
		// Pi prints nothing when it ends: its last frame stays.
		quitLast: piFakeModel,
	}.drive(t, w, o)
}

// TestLaunchGeminiInteractive is TestLaunchPiInteractive for Gemini CLI's
// own terminal UI under `sandboxd launch gemini` (GOOGLE_GEMINI_BASE_URL
// points it at the fake model, as in TestLaunchGemini). No first-run
// screen appears: the user's settings select the API key's auth (no auth
// dialog), no theme dialog is shown, and the launch turns folder trust
// off in its system settings (no trust dialog). Gemini CLI suspends on a
// second Ctrl-Z (the first warns "Press Ctrl+Z again to suspend"); on
// Linux Ctrl-Z is also its input's undo, which, with anything to undo
// (after a prompt), takes the key first and never suspends (also without
// sandboxd), so the user's ~/.gemini/keybindings.json unbinds it from
// undo (Alt+Z stays). /quit prints its session summary, then sandboxd
// exits with status 0.
func TestLaunchGeminiInteractive(t *testing.T) {
	gemini := geminiBinary(t)
	w := newWorld(t)
	model := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
	b := newGeminiLaunchBox(t, gemini)
	piWriteFile(t, filepath.Join(b.home, ".gemini", "keybindings.json"), `[{"command": "-edit.undo", "key": "ctrl+z"}]`+"\n")
	marker := filepath.Join(b.ws, "marker")
	notes := newLaunchNotes()
	srv, err := fakemodel.GeminiWith([]fakemodel.ToolCall{shellCall("echo hi > " + marker)}, fakemodel.GeminiOptions{Logf: notes.logf(t)})
	if err != nil {
		t.Fatal(err)
	}
	model.set(srv, nil)
	t.Cleanup(func() {
		model.set(nil, nil)
		srv.Close()
		for len(notes.logs) > 0 {
			(<-notes.logs)()
		}
	})

	policy := filepath.Join(b.root, "policy", "session.yaml")
	piWriteFile(t, policy, geminiLaunchPolicy)
	const flash = "gemini-2.5-flash"
	o := runOpts{
		sub:   []string{"launch", "gemini"},
		flags: []string{"--policy", policy, "--api-host", launchModelHost, "--program", b.program},
		argv:  []string{"-m", flash, "--approval-mode", "yolo"},
		dir:   b.ws,
		extraEnv: []string{"HOME=" + b.home, "USER=" + claudeUser(), "LANG=C.UTF-8",
			"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL=https://" + launchModelHost, "NODE_EXTRA_CA_CERTS=" + w.caFile,
			"GEMINI_TELEMETRY_ENABLED=false"},
	}
	launchTUI{
		name: "Gemini CLI", srv: srv, marker: marker, home: b.home, root: b.root,
		// The empty input box's placeholder; the footer's last line ends
		// in the model's name.
		ready: "Type your message", footer: flash,
		echo: "> ", final: fakemodel.GeminiFinalText,
		// The footer's first line, laid out for 100 columns: the
		// workspace on the left, /model on the right.
		resized: func(l string) bool {
			return strings.Contains(l, "workspace (/directory)") && strings.HasSuffix(l, "/model") && len([]rune(l)) <= 100
		},
		suspend: func(c *term) {
			c.keys("C-z")
			c.waitFor("the first Ctrl-Z", "Press Ctrl+Z again to suspend")
			c.keys("C-z")
		},
		// Its session summary's first line.
		quitLast: "Agent powering down. Goodbye!",
	}.drive(t, w, o)
}

// launchTUI is a harness's terminal UI as launchTUI.drive reads and drives
// it.
type launchTUI struct {
	name string
	// srv is the fake model, serving one call that writes marker.
	srv    *fakemodel.Server
	marker string
	// home is the user's home (the HOME of every process of the launch),
	// root the box's directory, where the launch's script goes.
	home, root string
	// ready is on the screen once the UI takes a prompt; footer is on
	// every frame it draws, below its input box.
	ready, footer string
	// echo comes before a submitted prompt in the UI's history, final
	// after it once the model's last turn is shown.
	echo, final string
	// resized reports whether a line of the screen was drawn for a
	// window 100 columns wide.
	resized func(line string) bool
	// suspend sends the UI's keys that stop it.
	suspend func(c *term)
	// quitLast is in the last thing the UI draws when /quit ends it,
	// before sandboxd's summary line.
	quitLast string
}

// drive runs sandboxd as o says from a script in a tmux terminal and
// drives u through a session: start, a prompt whose tool call leaves the
// marker, a resize and a prompt, Ctrl-Z and fg and a prompt, /quit and
// sandboxd's status 0. Each wait is bounded (c.timeout) and fails with the
// screen.
func (u launchTUI) drive(t *testing.T, w *world, o runOpts) {
	t.Helper()
	auditFile := filepath.Join(sharedDir(t), "audit.jsonl")
	script := filepath.Join(u.root, "bin", "launch")
	c := launchTerm(t, w, o, auditFile, script, o.dir)
	c.timeout = 30 * time.Second
	start := time.Now()
	c.keys("cd "+o.dir+" && clear", "Enter")
	c.keys(script, "Enter")
	c.waitFor("start", u.ready)
	t.Logf("%s is up after %v", u.name, time.Since(start).Round(time.Millisecond))

	// prompt types a prompt and waits for the model's last turn after it
	// in the history and the fake model's request count to grow.
	prompt := func(what, text string) {
		t.Helper()
		before := len(u.srv.Requests())
		// Enter only once the UI shows the text in its input box: typed
		// before it has the terminal in raw mode again (after fg), the
		// line's end is not a submission. Gemini CLI also reads an Enter
		// within 30 ms of a typed key as a newline (FAST_RETURN_TIMEOUT:
		// a paste, for a terminal without bracketed paste), so it comes
		// 100 ms after the text is shown.
		typed := strings.Count(c.screen(), text)
		c.keys("-l", text)
		c.until(what, "the typed prompt", func(s string) bool { return strings.Count(s, text) > typed })
		time.Sleep(100 * time.Millisecond)
		c.keys("Enter")
		c.until(what, "the model's answer after the prompt", func(s string) bool {
			i := strings.LastIndex(s, u.echo+text)
			return i >= 0 && strings.Contains(s[i:], u.final)
		})
		if n := len(u.srv.Requests()); n <= before {
			t.Fatalf("%s: the fake model got %d requests, as many as before", what, n)
		}
		t.Logf("%s: done after %v, %d model requests", what, time.Since(start).Round(time.Millisecond), len(u.srv.Requests()))
	}
	prompt("the first prompt", "Run the tool calls you are given.")
	piRequireContent(t, u.marker, "hi\n")

	c.tmux("resize-window", "-t", c.name, "-x", "100", "-y", "30")
	// tmux reflows the lines drawn for 150 columns (a rule 150 wide
	// becomes one of 100 and one of 50): a footer line laid out for 100
	// columns is the UI's redraw.
	c.until("the resize", "the footer laid out for 100 columns", func(string) bool {
		for _, l := range strings.Split(c.tmux("capture-pane", "-p", "-t", c.name), "\n") {
			if u.resized(l) {
				return true
			}
		}
		return false
	})
	prompt("a prompt after the resize", "Again.")

	// What Ctrl-Z brings is nowhere above: the mark, a line number, may
	// be past it after a UI's redraw that cleared the scrollback (Pi's).
	c.mark = 0
	u.suspend(c)
	c.waitFor("Ctrl-Z", "Stopped")
	// Every process of the launch is stopped: sandboxd and the harness's
	// (the sandbox's init, in a process group of its own, runs on).
	launchTUIRequireStopped(t, c, u.home)
	// The UI left its frame below the cursor, which bash writes over
	// without clearing: cleared, the screen shows the shell's lines only.
	c.retype("the shell after Ctrl-Z", "clear; echo shell-has-the-$((1+1))-terminal", "shell-has-the-2-terminal")
	// Stopped, the UI draws nothing until fg. A draw here means it was
	// continued while the shell had the terminal.
	if s := c.tmux("capture-pane", "-p", "-t", c.name); strings.Contains(s, u.footer) {
		t.Fatalf("Ctrl-Z: %s drew while its job was stopped:\n%s", u.name, s)
	}
	launchTUIRequireStopped(t, c, u.home)
	c.keys("fg", "Enter")
	// On fg the UI redraws: its footer comes after fg's line, or its
	// redraw erased the shell's lines (Pi clears the screen, Gemini CLI
	// its last frame's height above the cursor).
	c.until("fg", u.name+"'s input box after fg", func(s string) bool {
		i := strings.LastIndex(s, "$ fg")
		if i < 0 {
			return !strings.Contains(s, "shell-has-the-2-terminal") && strings.Contains(s, u.footer)
		}
		_, rest, ok := strings.Cut(s[i:], "\n")
		return ok && strings.Contains(rest, u.footer)
	})
	prompt("a prompt after fg", "Once more.")

	typed := strings.Count(c.screen(), "/quit")
	c.keys("-l", "/quit")
	c.until("/quit", "the typed command", func(s string) bool { return strings.Count(s, "/quit") > typed })
	time.Sleep(100 * time.Millisecond)
	c.keys("Enter")
	// The mark is not used from here: a UI that redraws its whole screen
	// clears the scrollback, and lines move up.
	c.until("/quit", "sandboxd's summary line after "+u.name+"'s last", func(s string) bool {
		i := strings.LastIndex(s, u.quitLast)
		return i >= 0 && strings.Contains(s[i:], "\nsandboxd: ")
	})
	c.keys("echo status=$((0+$?))", "Enter")
	c.until("/quit: sandboxd's status", "status=0", func(s string) bool {
		i := strings.LastIndex(s, "\nsandboxd: ")
		return i >= 0 && strings.Contains(s[i:], "\nstatus=0\n")
	})
	t.Logf("/quit: sandboxd exited after %v", time.Since(start).Round(time.Millisecond))
}

// launchTUIRequireStopped checks that the processes with HOME home but
// the terminal's shell and the sandbox's init, sandboxd and the
// harness's, are all stopped.
func launchTUIRequireStopped(t *testing.T, c *term, home string) {
	t.Helper()
	shell := strings.TrimSpace(c.tmux("display-message", "-p", "-t", c.name, "#{pane_pid}"))
	var states []string
	stopped, running := 0, 0
	for _, pid := range pidsWithHome(home) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " "))
		i := strings.LastIndexByte(string(stat), ')')
		if err != nil || i < 0 || i+2 >= len(stat) || len(args) == 0 {
			continue // gone
		}
		state := stat[i+2]
		states = append(states, fmt.Sprintf("%d %c %.100s", pid, state, strings.Join(args, " ")))
		switch {
		case fmt.Sprint(pid) == shell || len(args) > 1 && args[1] == "__init":
		case state == 'T':
			stopped++
		default:
			running++
		}
	}
	if running > 0 || stopped < 2 {
		t.Fatalf("Ctrl-Z: sandboxd and the harness's processes are not all stopped:\n%s", strings.Join(states, "\n"))
	}
}
