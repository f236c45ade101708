//go:build linux

package integration

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestRunCLI: exit statuses, default policy, policy files, refusals.
func TestRunCLI(t *testing.T) {
	w := newWorld(t)
	testdata, _ := filepath.Abs("testdata")
	marker := func(t *testing.T) (string, []string) {
		p := filepath.Join(sharedDir(t), "ran")
		return p, []string{"touch", p}
	}
	cases := []struct {
		name     string
		o        runOpts
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "exit code", o: runOpts{argv: []string{"sh", "-c", "exit 3"}}, wantCode: 3},
		{name: "killed by SIGINT", o: runOpts{argv: []string{"sh", "-c", "kill -INT $$"}}, wantCode: 130},
		{name: "stdin passes through", o: runOpts{argv: []string{"tr", "a-z", "A-Z"}, stdin: "hello"}, wantOut: "HELLO"},
		{name: "no policy no flags: no egress", o: runOpts{noAllow: true, argv: []string{"curl", "-sS", "--max-time", "10", "http://allowed.test/"}},
			wantOut: "allowlist is empty"},
		{name: "policy file allows", o: runOpts{noAllow: true, flags: []string{"--policy", filepath.Join(testdata, "allow-allowed.yaml")},
			argv: []string{"curl", "-sS", "--max-time", "10", "http://allowed.test/"}}, wantOut: "hello from allowed.test"},
		{name: "flags only restrict a policy file", o: runOpts{noAllow: true,
			flags: []string{"--policy", filepath.Join(testdata, "allow-allowed.yaml"), "--allow-domain", "git.test"},
			argv:  []string{"curl", "-sS", "--max-time", "10", "http://allowed.test/"}}, wantOut: "not in allowlist"},
		{name: "command not found", o: runOpts{argv: []string{"no-such-command-barry"}}, wantCode: 127,
			wantErr: "sandboxd: cannot run no-such-command-barry"},
		{name: "command not executable", o: runOpts{argv: []string{"/"}}, wantCode: 126,
			wantErr: "sandboxd: cannot run /: \"/\": permission denied\n"},
	}
	for _, u := range users {
		for _, c := range cases {
			t.Run(u.name+"/"+c.name, func(t *testing.T) {
				o := c.o
				o.uid = u.uid
				r := w.sandboxd(t, o)
				if r.code != c.wantCode || !strings.Contains(r.stdout, c.wantOut) || !strings.Contains(r.stderr, c.wantErr) {
					t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q (want %q)", r.code, c.wantCode, r.stdout, c.wantOut, r.stderr, c.wantErr)
				}
			})
		}
		// Refusals: exit 125, one line, and the command never ran.
		for _, c := range []struct {
			name, flag, arg, wantErr string
		}{
			{"partial network actions under enforce: sandbox", "--policy", filepath.Join(testdata, "partial-actions.yaml"),
				"sandboxd: sandbox could not start: not allowed: network.actions denies only some actions (write) under enforce: sandbox"},
			{"bad dns upstream", "--dns-upstream", "not-an-address", "sandboxd: sandbox could not start: dns proxy: "},
			{"missing policy file", "--policy", "/nonexistent/policy.yaml", "sandboxd: sandbox could not start: "},
			{"bad private range", "--allow-private", "10.0.0.0/33", "sandboxd: sandbox could not start: --allow-private"},
			{"missing working directory", "--cwd", "/nonexistent/dir", "sandboxd: sandbox could not start: working directory: stat /nonexistent/dir: no such file or directory"},
			{"audit file on a full disk", "--audit", "/dev/full", "sandboxd: sandbox could not start: audit file /dev/full: write /dev/full: no space left on device"},
			{"audit file is a directory", "--audit", "/", "sandboxd: sandbox could not start: audit file: open /: is a directory"},
			{"allowed unix socket missing", "--allow-unix-socket", "/nonexistent/docker.sock", "sandboxd: sandbox could not start: unix socket gate: /nonexistent/docker.sock: no such file or directory"},
		} {
			t.Run(u.name+"/refuse "+c.name, func(t *testing.T) {
				ran, argv := marker(t)
				r := w.sandboxd(t, runOpts{uid: u.uid, flags: []string{c.flag, c.arg}, argv: argv})
				if r.code != 125 || !strings.HasPrefix(r.stderr, c.wantErr) || strings.Count(r.stderr, "\n") != 1 {
					t.Fatalf("exit %d, stderr %q: want 125 and one line starting %q", r.code, r.stderr, c.wantErr)
				}
				if _, err := os.Stat(ran); err == nil {
					t.Fatal("the command ran")
				}
				// A session whose start is audited has its end audited too.
				if n := strings.Count(r.audit, `"msg":"session start"`); n != strings.Count(r.audit, `"msg":"session exit"`) || n > 0 && !strings.Contains(r.audit, `"status":125`) {
					t.Fatalf("audit has %d session start lines and no matching exit with status 125:\n%s", n, r.audit)
				}
			})
		}
	}
}

// TestStatusFileUnwritable: a sandbox whose status file cannot be written
// (here a file size limit that lets the 99-byte resolv.conf through but not
// the status) does not start: "sandboxd status" would not show it.
func TestStatusFileUnwritable(t *testing.T) {
	testenv.NeedCommand(t, "prlimit")
	w := newWorld(t)
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			ran := filepath.Join(sharedDir(t), "ran")
			r := w.sandboxd(t, runOpts{uid: u.uid, wrap: []string{"prlimit", "--fsize=120"}, argv: []string{"touch", ran}})
			const want = "sandboxd: sandbox could not start: status file: write "
			if r.code != 125 || !strings.HasPrefix(r.stderr, want) || !strings.HasSuffix(r.stderr, ": file too large\n") || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q: want 125 and one line starting %q", r.code, r.stderr, want)
			}
			if _, err := os.Stat(ran); err == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// TestUserNamespacesUnavailable: where the kernel refuses user namespaces
// sandboxd refuses to run and names the setting.
func TestUserNamespacesUnavailable(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedCommand(t, "unshare")
	ran := filepath.Join(sharedDir(t), "ran")
	out, err := exec.Command("unshare", "--user", "--map-root-user", "sh", "-c",
		`echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" run -- touch "$1"`, sandboxdBin, ran).CombinedOutput()
	if code := exitCode(err); code != 125 || !strings.Contains(string(out), "user.max_user_namespaces=0") {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the command ran")
	}
}

// combinedOutputOfCopy runs the command mk builds, again while exec
// fails with ETXTBSY: a binary a test has just copied can be "busy" for
// a moment, while a process another test forks meanwhile still holds the
// copy's write descriptor until it execs (go.dev/issue/22315).
func combinedOutputOfCopy(mk func() *exec.Cmd) ([]byte, error) {
	for i := 0; ; i++ {
		out, err := mk().CombinedOutput()
		if !errors.Is(err, syscall.ETXTBSY) || i == 50 {
			return out, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func exitCode(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestSignalsForwarded: SIGTERM, SIGHUP and SIGINT sent to sandboxd reach
// the command, and the command's own exit status comes back.
func TestSignalsForwarded(t *testing.T) {
	testenv.NeedRoot(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGWINCH} {
		t.Run(sig.String(), func(t *testing.T) {
			name := strings.TrimPrefix(map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP", syscall.SIGINT: "INT", syscall.SIGWINCH: "WINCH"}[sig], "")
			cmd := exec.Command(sandboxdBin, "run", "--", "sh", "-c",
				`trap 'echo got `+name+`; exit 42' `+name+`; echo ready; while :; do sleep 0.05; done`)
			cmd.Dir = sharedDir(t)
			out, _ := cmd.StdoutPipe()
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(out)
			if l, _ := br.ReadString('\n'); l != "ready\n" {
				t.Fatalf("got %q", l)
			}
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			restc := make(chan string, 1)
			go func() {
				r, _ := br.ReadString('\n')
				restc <- r
				done <- cmd.Wait()
			}()
			err := awaitExit(t, cmd, done)
			rest := <-restc
			if code := exitCode(err); code != 42 || rest != "got "+name+"\n" {
				t.Fatalf("exit %d, output %q", code, rest)
			}
		})
	}
}

// TestSignalDuringSetupAborts: a SIGINT that reaches sandboxd while the
// sandbox is being set up (here, during the scan of a 10,000-file
// workspace for a policy's "**/" globs) aborts the start: exit 125 with the
// reason on one line, the command never runs, and the session's runtime
// directory is gone. (sandboxd's CLI once took SIGINT for a context the run
// never read, so the signal was lost and the command ran.)
func TestSignalDuringSetupAborts(t *testing.T) {
	testenv.NeedRoot(t)
	dir := sharedDir(t)
	ws, rt, pd := filepath.Join(dir, "ws"), filepath.Join(dir, "run"), filepath.Join(dir, "pol")
	for _, d := range []string{ws, rt, pd} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		p := filepath.Join(ws, "pkg", fmt.Sprint(i))
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 100 {
			if err := os.WriteFile(filepath.Join(p, fmt.Sprintf("f%d.go", j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	pol := filepath.Join(pd, "deny.yaml") // a directory of its own: the sandbox makes it read-only
	if err := os.WriteFile(pol, []byte("version: 1\nharness: claude-code\n"+
		"bounds: {secrets: {files: {deny: [\"**/.env\", \"**/*.pem\", \"~/.ssh\"]}}}\nsession: {bounds: [secrets]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(ws, "ran")
	cmd := exec.Command(sandboxdBin, "run", "--policy", pol, "--cwd", ws, "--", "touch", marker)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+rt)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// The runtime directory appears after the init's start and before the
	// filesystem plan, which the scan makes last tens of milliseconds.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if ents, _ := os.ReadDir(rt); len(ents) > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("sandboxd exited (%v) before its runtime directory appeared; stderr %q", err, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no runtime directory within 20 s")
		}
		time.Sleep(200 * time.Microsecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err := awaitExit(t, cmd, done)
	want := "sandboxd: sandbox could not start: interrupted by interrupt before the command started\n"
	if code := exitCode(err); code != 125 || stderr.String() != want {
		t.Fatalf("exit %d, stderr %q; want 125 and %q", code, stderr.String(), want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the command ran")
	}
	if ents, _ := os.ReadDir(rt); len(ents) != 0 {
		t.Fatalf("runtime directory left behind: %v", ents)
	}
}

// awaitExit returns what done (cmd.Wait's result) says, or kills cmd and
// fails the test when sandboxd has not exited within 20 s.
func awaitExit(t *testing.T, cmd *exec.Cmd, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("sandboxd did not exit")
		return nil
	}
}

// TestTerminalPassesThrough: under a real pseudo-terminal the command sees
// it as its terminal, in the foreground, with its window size. Inside the
// private /dev the terminal is named /dev/console.
func TestTerminalPassesThrough(t *testing.T) {
	testenv.NeedCommand(t, "script")
	cmd := exec.Command("script", "-qec", "stty rows 33 cols 99; "+sandboxdBin+" run -- sh -c 'tty; stty size; test -t 0 && echo interactive'", "/dev/null")
	cmd.Dir = sharedDir(t)
	out, err := cmd.CombinedOutput()
	s := strings.ReplaceAll(string(out), "\r", "")
	if err != nil || !strings.Contains(s, "/dev/console\n") || !strings.Contains(s, "33 99\n") || !strings.Contains(s, "interactive") {
		t.Fatalf("err %v, output %q", err, s)
	}
}

// TestAllowUnixSocketFlag: --allow-unix-socket opens exactly one host
// socket (a fake Docker API here) to curl inside; another stays closed.
func TestAllowUnixSocketFlag(t *testing.T) {
	w := newWorld(t)
	dir := sharedDir(t)
	serve := func(name string) string {
		p := filepath.Join(dir, name)
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o777)
		srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { fmt.Fprintf(rw, "api %s", name) })}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		return p
	}
	docker, other := serve("docker.sock"), serve("other.sock")
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, flags: []string{"--allow-unix-socket", docker},
				argv: []string{"sh", "-c", "curl -sS --unix-socket " + docker + " http://d/version; echo; curl -sS --unix-socket " + other + " http://d/version; echo code=$?; curl -sS --max-time 10 https://allowed.test/"}})
			if r.code != 0 || !strings.Contains(r.stdout, "api docker.sock\n") || !strings.Contains(r.stdout, "code=7") || strings.Contains(r.stdout, "api other.sock") ||
				!strings.Contains(r.stdout, "hello from allowed.test") {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
