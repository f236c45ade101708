//go:build linux

package procjail

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// run starts command in a sandbox and returns its exit status and output.
func run(t *testing.T, spec Spec) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	spec.Stdout, spec.Stderr = outW, errW
	if spec.Env == nil {
		spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
	}
	sb, err := Start(ctx, spec)
	outW.Close()
	errW.Close()
	if errors.Is(err, ErrUserNamespaces) {
		testenv.SkipOrFail(t, err.Error())
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var out, errb bytes.Buffer
	done := make(chan struct{})
	go func() { out.ReadFrom(outR); close(done) }()
	errb.ReadFrom(errR)
	<-done
	code, err := sb.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return code, out.String(), errb.String()
}

func sh(script string) Spec { return Spec{Command: "/bin/sh", Args: []string{"-c", script}} }

func TestExitStatus(t *testing.T) {
	for _, c := range []struct {
		script string
		want   int
	}{
		{"true", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + 15},
		{"kill -KILL $$", 128 + 9},
	} {
		if code, _, stderr := run(t, sh(c.script)); code != c.want {
			t.Errorf("%q: exit %d, want %d (stderr %q)", c.script, code, c.want, stderr)
		}
	}
}

func TestOnlyLoopback(t *testing.T) {
	// Only lo; our hostname; and only the sandbox's processes: the init
	// (PID 1) and this shell.
	code, out, stderr := run(t, sh(`tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; cat /proc/sys/kernel/hostname; cd /proc; for p in [0-9]*; do [ "$p" = 1 ] || [ "$p" = $$ ] || [ "$(cat $p/comm 2>/dev/null)" = "" ] || echo "other $p"; done; echo done`))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "lo\nsandbox\ndone\n"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

func TestSetupFailureInside(t *testing.T) {
	spec := sh("echo ran")
	spec.Hostname = strings.Repeat("h", 100) // sethostname refuses more than 64 bytes
	_, err := Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "hostname" {
		t.Fatalf("got %v, want a SetupError at step hostname", err)
	}
	if got := err.Error(); got != "hostname: invalid argument" {
		t.Errorf("reason %q", got)
	}
}

func TestCommandNotFound(t *testing.T) {
	_, err := Start(context.Background(), Spec{Command: "no-such-command-xyz", Env: []string{"PATH=/usr/bin:/bin"}})
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 127 {
		t.Fatalf("got %v, want CommandError 127", err)
	}
}

// TestReadyAborts: when the caller's own setup fails (Spec.Ready), the
// command never runs.
func TestReadyAborts(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	spec := Spec{Command: "/usr/bin/touch", Args: []string{marker}}
	spec.Ready = func() error { return errors.New("proxy did not start") }
	_, err := Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "ready" || err.Error() != "ready: proxy did not start" {
		t.Fatalf("got %v", err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
}

// TestSpecNotVisible: the spec (here a secret in the command's environment)
// is not in the init's argv, and the init's environment, memory and
// descriptors (host sockets among them) cannot be read or opened from
// inside (it is not dumpable).
func TestSpecNotVisible(t *testing.T) {
	spec := sh(`tr '\0' ' ' < /proc/1/cmdline; echo; cat /proc/1/environ >/dev/null 2>&1 && echo environ-readable; ` +
		`cat /proc/1/mem >/dev/null 2>&1 && echo mem-readable; ` +
		`for f in /proc/1/fd/*; do readlink "$f" >/dev/null 2>&1 && echo fd-link-readable; cat "$f" </dev/null >/dev/null 2>&1 && echo fd-openable; done; echo done`)
	spec.Env = []string{"PATH=/usr/bin:/bin", "SECRET=s3cr3t-value"}
	code, out, stderr := run(t, spec)
	if code != 0 || out != "sandboxd __init \ndone\n" {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
}

func TestForwardTargetNotASocket(t *testing.T) {
	f := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(f, nil, 0o644)
	spec := sh("echo ran")
	spec.Forwards = []Forward{{InsidePort: 3128, Network: "tcp", Target: f}}
	_, err := Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || err.Error() != "forward tcp/3128: "+f+" is not a socket" {
		t.Fatalf("got %v", err)
	}
}

// TestReadOnlyPaths: a read-only path cannot be written, replaced by a
// rename, removed or unmounted from inside, while the rest stays writable;
// the host's copy is unchanged.
func TestReadOnlyPaths(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cfg")
	os.Mkdir(cfg, 0o755)
	policyFile := filepath.Join(cfg, "policy.yaml")
	os.WriteFile(policyFile, []byte("original\n"), 0o644)
	spec := sh(`cd "$1"
echo evil > cfg/policy.yaml 2>/dev/null && echo wrote
echo evil > cfg/new 2>/dev/null && echo created
echo evil > other && mv other cfg/policy.yaml 2>/dev/null && echo renamed-over
mv cfg cfg2 2>/dev/null && echo moved-dir
rm -rf cfg 2>/dev/null; [ -e cfg/policy.yaml ] || echo removed
umount cfg 2>/dev/null && echo unmounted
echo ok > scratch && echo scratch-ok`)
	spec.Args = append(spec.Args, "sh", dir)
	spec.ReadOnlyPaths = []string{cfg}
	code, out, stderr := run(t, spec)
	if code != 0 || out != "scratch-ok\n" {
		t.Fatalf("exit %d, out %q (stderr %q): want only scratch-ok", code, out, stderr)
	}
	if b, _ := os.ReadFile(policyFile); string(b) != "original\n" {
		t.Fatalf("host policy changed to %q", b)
	}
}

func TestReadOnlyPathMissingRefuses(t *testing.T) {
	spec := sh("echo ran")
	spec.ReadOnlyPaths = []string{filepath.Join(t.TempDir(), "missing")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := Start(ctx, spec); err == nil || !strings.Contains(err.Error(), "read-only path") {
		t.Fatalf("Start = %v, want a refusal naming the read-only path", err)
	}
}

// TestInitKeepsSentFaultSignals: the signals Go's runtime would crash on
// (abort, segmentation fault, and the like), sent to the init from inside,
// neither end the sandbox nor reach the command.
func TestInitKeepsSentFaultSignals(t *testing.T) {
	code, out, stderr := run(t, sh(`trap 'echo got-signal' ABRT SEGV BUS FPE ILL TRAP SYS
for s in 4 5 6 7 8 11 16 31; do kill -$s 1 || echo "kill -$s failed"; done
sleep 0.3; echo alive`))
	if code != 0 || out != "alive\n" {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// TestTimerSlack: every thread of the init runs with initTimerSlack (the
// gates' waits end in Go's sysmon polling, which the slack coalesces), and
// the command with the slack of the thread that started the sandbox, as it
// would have outside.
func TestTimerSlack(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	const mine = 123457
	unix.Prctl(unix.PR_SET_TIMERSLACK, mine, 0, 0, 0)
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(old), 0, 0, 0)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inW.Close()
	spec := sh(`cat /proc/self/timerslack_ns; sh -c 'cat /proc/self/timerslack_ns'; read x || true`)
	spec.Stdin, spec.Stdout, spec.Env = inR, outW, []string{"PATH=/usr/bin:/bin"}
	sb, err := Start(ctx, spec)
	inR.Close()
	outW.Close()
	if errors.Is(err, ErrUserNamespaces) {
		testenv.SkipOrFail(t, err.Error())
	}
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if now, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); now != mine {
		t.Errorf("the starting thread's slack is %d after Start, want %d back", now, mine)
	}
	rd := bufio.NewReader(outR)
	for i := 0; i < 2; i++ {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the command's slack: %v", err)
		}
		if got := strings.TrimSpace(line); got != strconv.Itoa(mine) {
			t.Errorf("command's timer slack %s, want %d (the starting thread's)", got, mine)
		}
	}
	// The command waits on its stdin: its init is there to look at. The
	// thread that started the command has the command's slack until just
	// after the fork; a thread may end between listing and reading.
	var wrong []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", sb.init.pid))
		if err != nil || len(tasks) == 0 {
			t.Fatalf("init's threads: %v", err)
		}
		wrong = nil
		for _, tk := range tasks {
			b, err := os.ReadFile("/proc/" + tk.Name() + "/timerslack_ns")
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatalf("init thread %s: %v", tk.Name(), err)
			}
			if got := strings.TrimSpace(string(b)); got != strconv.Itoa(initTimerSlack) {
				wrong = append(wrong, tk.Name()+": "+got)
			}
		}
		if len(wrong) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(wrong) > 0 {
		t.Errorf("init threads whose timer slack is not %d: %v", initTimerSlack, wrong)
	}
	inW.Close()
	if code, err := sb.Wait(); code != 0 || err != nil {
		t.Errorf("exit %d, %v", code, err)
	}
}
