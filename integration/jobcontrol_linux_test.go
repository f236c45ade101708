//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestJobControl runs sandboxd run in a real terminal (tmux, an
// interactive bash with job control) and drives it with keys as a user
// would: Ctrl-Z stops the command and sandboxd with it, so bash reports the
// job stopped and takes the terminal back; fg gives the terminal back to
// the command, which reads what is typed; after bg its read stops it
// again while the shell keeps the terminal; Ctrl-D ends it with status 0;
// Ctrl-C interrupts a command (status 130). Everything is read from the
// terminal's screen (tmux capture-pane).
func TestJobControl(t *testing.T) {
	term := newTerm(t, nil, []string{"HOME=" + os.Getenv("HOME")})
	term.scrollback = true
	keys, waitFor, retype := term.keys, term.waitFor, term.retype

	// The command's workspace, where the test tells it when to read.
	ws := sharedDir(t)
	keys("cd "+ws+" && clear", "Enter")
	// The markers are computed, so the command line's echo does not show
	// them. After "pause" it reads again only once the file go exists.
	keys(sandboxdBin+" run -- sh -c 'echo cat-is-$((40+2)); while read l; do echo \"got:$l\"; "+
		"if [ \"$l\" = pause ]; then until [ -e go ]; do sleep 0.05; done; fi; done'", "Enter")
	waitFor("start", "cat-is-42")
	keys("C-z")
	waitFor("Ctrl-Z", "Stopped")
	retype("the shell after Ctrl-Z", "echo shell-has-the-$((1+1))-terminal", "shell-has-the-2-terminal")
	// Continued from outside while stopped (kill -CONT), the command
	// reads the terminal in the background and stops again (SIGTTIN),
	// while sandboxd is stopped: that stop, reported then, must not stop
	// sandboxd again after fg.
	continueFromOutside(t, "echo cat-is-$((40+2))")
	keys("fg", "Enter")
	waitFor("fg", "$ fg")
	// Typed before the command has the terminal back, a line is the
	// shell's (bash reads ahead while it hands the terminal over).
	retype("the command reads after fg", "typed-after-fg", "got:typed-after-fg")
	// After bg the command runs in the background, and its read stops it
	// (SIGTTIN) and sandboxd with it: the terminal stays the shell's, which
	// waits for input meanwhile.
	keys("pause", "Enter")
	waitFor("pause", "got:pause")
	keys("C-z")
	waitFor("Ctrl-Z again", "Stopped")
	retype("the shell after the second Ctrl-Z", "echo shell-has-it-again-$((1+2))", "shell-has-it-again-3")
	keys("bg", "Enter")
	waitFor("bg", "&\n$")
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// bash reports the background job's stop before a prompt, once it
	// has seen it; the shell still runs what is typed.
	// A shell that lost the terminal reads an end of file (it says exit,
	// and that there are stopped jobs).
	retype("bg", "echo shell-after-bg-$((2+2))", "Stopped")
	s := term.screen()
	if i := strings.LastIndex(s, "$ bg"); i < 0 || !strings.Contains(s[i:], "\nshell-after-bg-4\n") || strings.Contains(s[i:], "There are stopped jobs") {
		t.Fatalf("bg: the shell did not keep the terminal:\n%s", s)
	}
	keys("fg", "Enter")
	waitFor("fg after bg", "$ fg")
	retype("the command reads after fg from bg", "typed-after-bg", "got:typed-after-bg")
	keys("C-d")
	keys("echo status=$((0+$?))", "Enter")
	waitFor("Ctrl-D", "status=0")

	keys(sandboxdBin+" run -- sh -c 'echo sleep-is-$((40+2)); sleep 60'", "Enter")
	waitFor("start", "sleep-is-42")
	keys("C-c")
	keys("echo status=$((0+$?))", "Enter")
	waitFor("Ctrl-C", "status=130")
}

// continueFromOutside sends SIGCONT to the shell (sh) processes whose
// command line holds arg, and waits until they are stopped again.
func continueFromOutside(t *testing.T, arg string) {
	t.Helper()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(comm)) == "sh" && strings.Contains(string(cmdline), arg) {
			pids = append(pids, pid)
			syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	if len(pids) == 0 {
		t.Fatalf("no sh process with %q to continue", arg)
	}
	for _, pid := range pids {
		deadline := time.Now().Add(10 * time.Second)
		for {
			stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'T' {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("process %d, continued from outside, did not stop again: %s", pid, stat)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The init's report of that stop reaches sandboxd's socket now.
	time.Sleep(200 * time.Millisecond)
}

// launchTerm writes script, a shell script running sandboxd as o says
// (auditing to auditFile; a script's command line keeps the screen
// readable), and starts the terminal it is typed into, with o's
// environment from dir. When the test fails, the pane's processes and the
// audit are logged.
func launchTerm(t *testing.T, w *world, o runOpts, auditFile, script, dir string) *term {
	t.Helper()
	words := []string{"exec", "ip"}
	for _, a := range w.sandboxdArgs(o, auditFile) {
		words = append(words, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+strings.Join(words, " ")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := newTerm(t, nil, w.env(dir, o.extraEnv))
	t.Cleanup(func() {
		if t.Failed() {
			pane := strings.TrimSpace(c.tmux("display-message", "-p", "-t", c.name, "#{pane_pid}"))
			out, _ := exec.Command("ps", "-o", "pid,pgid,tpgid,stat,wchan:20,args", "-s", sessionOf(pane)).CombinedOutput()
			t.Logf("the pane's processes:\n%s", out)
			a, _ := os.ReadFile(auditFile)
			t.Logf("audit:\n%s", a)
		}
	})
	c.scrollback = true
	return c
}

// term is a terminal for a test: a tmux server of its own (-L), so the
// test touches no user session, whose one pane runs an interactive bash
// with job control (prompt "$ ").
type term struct {
	t    *testing.T
	name string
	// mark is the screen line after the last one waitFor or retype found.
	mark int
	// timeout bounds each waitFor (default 20 s).
	timeout time.Duration
	// scrollback: the screen has the lines scrolled off it too, so that a
	// full screen's scrolling does not move what was found above the mark.
	scrollback bool
}

// newTerm starts the terminal's tmux server under wrap (a command that
// execs its arguments, or nil), its bash with env and PATH only; the
// server and whatever is left in the pane's session are killed when the
// test ends.
func newTerm(t *testing.T, wrap, env []string) *term {
	t.Helper()
	testenv.NeedCommand(t, "tmux")
	bash := testenv.NeedCommand(t, "bash")
	c := &term{t: t, name: fmt.Sprintf("barry-jc-%d-%d", os.Getpid(), time.Now().UnixNano()), timeout: 20 * time.Second}
	argv := append(append([]string(nil), wrap...), "tmux", "-L", c.name, "new-session", "-d", "-s", c.name, "-x", "150", "-y", "40",
		"env", "-i", "PATH="+os.Getenv("PATH"))
	argv = append(append(argv, env...), "TERM=screen", "PS1=$ ", bash, "--norc", "--noprofile", "-i")
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
	t.Cleanup(func() {
		exec.Command("tmux", "-L", c.name, "kill-server").Run()
		// kill-server leaves the server's socket behind.
		dir := os.Getenv("TMUX_TMPDIR")
		if dir == "" {
			dir = "/tmp"
		}
		os.Remove(filepath.Join(dir, fmt.Sprintf("tmux-%d", os.Getuid()), c.name))
	})
	// Whatever the test leaves (a job still stopped after a failure) is
	// killed with the pane's shell: a stopped process ignores the hangup.
	pane := strings.TrimSpace(c.tmux("display-message", "-p", "-t", c.name, "#{pane_pid}"))
	t.Cleanup(func() { exec.Command("pkill", "-KILL", "-s", sessionOf(pane)).Run() })
	return c
}

func (c *term) tmux(args ...string) string {
	c.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", c.name}, args...)...).CombinedOutput()
	if err != nil {
		c.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *term) screen() string {
	if c.scrollback {
		return c.tmux("capture-pane", "-p", "-S", "-", "-t", c.name)
	}
	return c.tmux("capture-pane", "-p", "-t", c.name)
}

func (c *term) keys(k ...string) {
	c.t.Helper()
	c.tmux(append([]string{"send-keys", "-t", c.name}, k...)...)
}

// found reports whether screen s shows want after the mark, and moves the
// mark past it.
func (c *term) found(s, want string) bool {
	i := strings.LastIndex(s, want)
	if i < 0 || strings.Count(s[:i], "\n") < c.mark {
		return false
	}
	c.mark = strings.Count(s[:i], "\n") + 1
	return true
}

// waitFor waits for the screen to show want, after the mark.
func (c *term) waitFor(what, want string) {
	c.t.Helper()
	c.until(what, fmt.Sprintf("%q", want), func(s string) bool { return c.found(s, want) })
}

// until waits for a screen that ok accepts (it shows want).
func (c *term) until(what, want string, ok func(screen string) bool) {
	c.t.Helper()
	deadline := time.Now().Add(c.timeout)
	for {
		s := c.screen()
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: the terminal does not show %s:\n%s", what, want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retype sends a line until the screen shows want: bash discards what
// was typed while it takes the terminal back from a stopped job.
func (c *term) retype(what, line, want string) {
	c.t.Helper()
	for i := 0; ; i++ {
		c.keys(line, "Enter")
		deadline := time.Now().Add(2 * time.Second)
		for time.Now().Before(deadline) {
			if c.found(c.screen(), want) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		if i == 4 {
			c.t.Fatalf("%s: the terminal does not show %q:\n%s", what, want, c.screen())
		}
	}
}

// sessionOf returns the session id of process pid (for pkill -s), or pid.
func sessionOf(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return pid
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) > 3 {
		return f[3]
	}
	return pid
}
