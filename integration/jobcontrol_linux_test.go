//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestJobControl runs sandboxd run in a real terminal (tmux, an
// interactive bash with job control) and drives it with keys as a user
// would: Ctrl-Z stops the command and sandboxd with it, so bash reports the
// job stopped and takes the terminal back; fg gives the terminal back to
// the command, which reads what is typed; Ctrl-D ends it with status 0;
// Ctrl-C interrupts a command (status 130). Everything is read from the
// terminal's screen (tmux capture-pane).
func TestJobControl(t *testing.T) {
	testenv.NeedCommand(t, "tmux")
	bash := testenv.NeedCommand(t, "bash")
	name := fmt.Sprintf("barry-jc-%d", os.Getpid())
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-L", name}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// A tmux server of its own (-L), so the test touches no user session.
	tmux("new-session", "-d", "-s", name, "-x", "150", "-y", "40", "env", "-i", "PATH="+os.Getenv("PATH"), "HOME="+os.Getenv("HOME"),
		"TERM=screen", "PS1=$ ", bash, "--norc", "--noprofile", "-i")
	t.Cleanup(func() { exec.Command("tmux", "-L", name, "kill-server").Run() })
	screen := func() string { return tmux("capture-pane", "-p", "-t", name) }
	// waitFor waits for the screen to show want, after the last mark.
	mark := 0
	waitFor := func(what, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			s := screen()
			if i := strings.LastIndex(s, want); i >= 0 && strings.Count(s[:i], "\n") >= mark {
				mark = strings.Count(s[:i], "\n") + 1
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the terminal does not show %q:\n%s", what, want, s)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	keys := func(k ...string) { t.Helper(); tmux(append([]string{"send-keys", "-t", name}, k...)...) }
	// Whatever the test leaves (a job still stopped after a failure) is
	// killed with the pane's shell: a stopped process ignores the hangup.
	pane := strings.TrimSpace(tmux("display-message", "-p", "-t", name, "#{pane_pid}"))
	t.Cleanup(func() { exec.Command("pkill", "-KILL", "-s", sessionOf(pane)).Run() })
	// retype sends a line until the screen shows want: bash discards what
	// was typed while it takes the terminal back from a stopped job.
	retype := func(what, line, want string) {
		t.Helper()
		for i := 0; ; i++ {
			keys(line, "Enter")
			deadline := time.Now().Add(2 * time.Second)
			for time.Now().Before(deadline) {
				if s := screen(); strings.Count(s, want) > 0 && strings.Count(s[:strings.LastIndex(s, want)], "\n") >= mark {
					mark = strings.Count(s[:strings.LastIndex(s, want)], "\n") + 1
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			if i == 4 {
				t.Fatalf("%s: the terminal does not show %q:\n%s", what, want, screen())
			}
		}
	}

	keys("clear", "Enter")
	// The markers are computed, so the command line's echo does not show
	// them.
	keys(sandboxdBin+" run -- sh -c 'echo cat-is-$((40+2)); while read l; do echo \"got:$l\"; done'", "Enter")
	waitFor("start", "cat-is-42")
	keys("C-z")
	waitFor("Ctrl-Z", "Stopped")
	retype("the shell after Ctrl-Z", "echo shell-has-the-$((1+1))-terminal", "shell-has-the-2-terminal")
	keys("fg", "Enter")
	waitFor("fg", "$ fg")
	// Typed before the command has the terminal back, a line is the
	// shell's (bash reads ahead while it hands the terminal over).
	retype("the command reads after fg", "typed-after-fg", "got:typed-after-fg")
	keys("C-d")
	keys("echo status=$((0+$?))", "Enter")
	waitFor("Ctrl-D", "status=0")

	keys(sandboxdBin+" run -- sh -c 'echo sleep-is-$((40+2)); sleep 60'", "Enter")
	waitFor("start", "sleep-is-42")
	keys("C-c")
	keys("echo status=$((0+$?))", "Enter")
	waitFor("Ctrl-C", "status=130")
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
