//go:build linux

package procjail

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
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

// unixHTTPServer serves a real HTTP server on a host Unix socket.
func unixHTTPServer(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "http.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s", body, r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return path
}

func TestForwardTCP(t *testing.T) {
	testenv.NeedCommand(t, "curl")
	sock := unixHTTPServer(t, "hello from host")
	spec := sh(`curl -sS --max-time 10 http://127.0.0.1:3128/path`)
	spec.Forwards = []Forward{{InsidePort: 3128, Network: "tcp", Target: sock}}
	code, out, stderr := run(t, spec)
	if code != 0 || out != "hello from host /path" {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
}

// framedEchoServer answers each length-framed message with its reverse.
func framedEchoServer(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dns.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Serve(t, ln, func(c net.Conn) {
		var hdr [2]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(hdr[:]))
		io.ReadFull(c, msg)
		for i, j := 0, len(msg)-1; i < j; i, j = i+1, j-1 {
			msg[i], msg[j] = msg[j], msg[i]
		}
		c.Write(append(hdr[:], msg...))
	})
	return path
}

func TestForwardUDP(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	sock := framedEchoServer(t)
	spec := Spec{Command: "python3", Args: []string{"-c", `
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
s.sendto(b"abcdef", ("127.0.0.1", 53))
print(s.recvfrom(100)[0].decode(), end="")
`}}
	spec.Forwards = []Forward{{InsidePort: 53, Network: "udp", Target: sock}}
	code, out, stderr := run(t, spec)
	if code != 0 || out != "fedcba" {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
}

func TestResolvConf(t *testing.T) {
	// Opened for appending, nothing written: a regression must not
	// change the host's file.
	spec := sh(`cat /etc/resolv.conf; (exec 3>>/etc/resolv.conf) && echo WROTE`)
	spec.ResolvConf = ResolvConf()
	code, out, _ := run(t, spec)
	if code == 0 || out != ResolvConf() {
		t.Fatalf("exit %d, out %q: want the generated file, read-only", code, out)
	}
}

// TestHostsFile: /etc/hosts inside is the host's entries and the
// sandbox's hostname at 127.0.1.1, read-only, so that a lookup of the
// hostname (git's default identity, Java's getLocalHost) is answered
// inside instead of going to the DNS proxy, which refuses it.
func TestHostsFile(t *testing.T) {
	testenv.NeedCommand(t, "getent")
	want := hostsFile("/etc/hosts", "sandbox", nil)
	if want == nil {
		t.Fatal("the test needs a regular, readable /etc/hosts on the host")
	}
	spec := sh(`cat /etc/hosts; echo ==; getent hosts "$(hostname)"; (exec 3>>/etc/hosts) && echo WROTE`)
	spec.ResolvConf = ResolvConf()
	code, out, stderr := run(t, spec)
	inside, lookup, _ := strings.Cut(out, "==\n")
	if f := strings.Fields(lookup); code == 0 || inside != string(want) || len(f) == 0 || f[0] != "127.0.1.1" || strings.Contains(out, "WROTE") {
		t.Fatalf("exit %d, out %q, stderr %q: want the generated file, read-only, answering the hostname", code, out, stderr)
	}
}

// TestHostsFileContent: the host's entries and the hostname's line; no
// file (the host's shown as before) for a name that cannot be a field, a
// missing, looping, oversized or hidden host file: a convenience never
// stops a session.
func TestHostsFileContent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "hosts")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(p, []byte("127.0.0.1 localhost"), 0o644))
	if got := hostsFile(p, "sandbox", nil); string(got) != "127.0.0.1 localhost\n# added by sandboxd: the sandbox's hostname\n127.0.1.1\tsandbox\n" {
		t.Errorf("hostsFile: %q", got)
	}
	for _, name := range []string{"", "a b", "a\nb", "a#b", "é"} {
		if got := hostsFile(p, name, nil); got != nil {
			t.Errorf("hostsFile(%q): %q; want nothing", name, got)
		}
	}
	must(os.Symlink("hosts", filepath.Join(dir, "link")))
	if got := hostsFile(filepath.Join(dir, "link"), "sandbox", nil); !strings.HasPrefix(string(got), "127.0.0.1 localhost\n") {
		t.Errorf("through a symlink: %q", got)
	}
	must(os.Symlink("loop", filepath.Join(dir, "loop")))
	big := filepath.Join(dir, "big")
	must(os.WriteFile(big, make([]byte, maxHostsFile+1), 0o644))
	for _, c := range []struct {
		path   string
		hidden []string
	}{
		{filepath.Join(dir, "missing"), nil},
		{filepath.Join(dir, "loop"), nil},
		{big, nil},
		{dir, nil},                                // not a regular file
		{p, []string{dir}},                        // hidden by a directory above it
		{filepath.Join(dir, "link"), []string{p}}, // its target hidden
	} {
		if got := hostsFile(c.path, "sandbox", c.hidden); got != nil {
			t.Errorf("hostsFile(%s, hidden %v): %d bytes; want nothing", c.path, c.hidden, len(got))
		}
	}
}

// TestHostUnixSocketsUnreachable: a host pathname socket and a host abstract
// socket are both listening; the sandboxed command can reach neither, and
// cannot use a datagram socketpair to send to a host path; a stream
// socketpair keeps working.
func TestHostUnixSocketsUnreachable(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "host.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(path, 0o777)
	abstract := fmt.Sprintf("@barry-test-%d", rand.Int64())
	aln, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer aln.Close()
	dgramPath := filepath.Join(dir, "host-dgram.sock")
	dg, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: dgramPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer dg.Close()
	os.Chmod(dgramPath, 0o777)
	accepted := make(chan string, 4)
	for _, l := range []net.Listener{ln, aln} {
		go func(l net.Listener) {
			if c, err := l.Accept(); err == nil {
				accepted <- l.Addr().String()
				c.Close()
			}
		}(l)
	}
	go func() {
		buf := make([]byte, 100)
		if n, _, err := dg.ReadFrom(buf); err == nil {
			accepted <- "datagram " + string(buf[:n])
		}
	}()

	script := fmt.Sprintf(`
import socket
def attempt(name, f):
    try:
        f()
        print(name, "ESCAPED")
    except OSError as e:
        print(name, "refused", e.errno)
def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(addr)
def dgram_pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"x", %q)
attempt("pathname", lambda: connect(%q))
attempt("abstract", lambda: connect("\0" + %q))
attempt("dgram-socketpair", dgram_pair)
attempt("seqpacket-socket", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET))
a, b = socket.socketpair()
a.send(b"ok")
print("stream-socketpair", b.recv(2).decode())
`, dgramPath, path, abstract[1:])
	code, out, stderr := run(t, Spec{Command: "python3", Args: []string{"-c", script}})
	want := "pathname refused 1\nabstract refused 1\ndgram-socketpair refused 1\nseqpacket-socket refused 1\nstream-socketpair ok\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d\nout %q\nwant %q\nstderr %s", code, out, want, stderr)
	}
	select {
	case a := <-accepted:
		t.Fatalf("host socket %s was reached", a)
	case <-time.After(100 * time.Millisecond):
	}
}

// TestContainment: processes that call setsid and double-fork are alive
// while the command runs and gone, checked by PID, once it has exited.
func TestContainment(t *testing.T) {
	marker := strconv.Itoa(900000 + rand.IntN(90000))
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	spec := sh(`(setsid sh -c 'sleep ` + marker + ` & sleep ` + marker + `' &) ; nohup sleep ` + marker + ` >/dev/null 2>&1 & sleep 0.3; echo started; read x || true`)
	spec.Stdin, spec.Stdout, spec.Stderr = inR, outW, os.Stderr
	sb, err := Start(context.Background(), spec)
	inR.Close()
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(outR).ReadString('\n')
	if line != "started\n" {
		t.Fatalf("got %q", line)
	}
	before := testenv.HostPIDsWithArg(marker)
	for i := 0; i < 500 && len(before) < 3; i++ { // a loaded machine may take a while to exec them
		time.Sleep(10 * time.Millisecond)
		before = testenv.HostPIDsWithArg(marker)
	}
	if len(before) != 3 {
		t.Fatalf("want 3 background sleeps visible from the host, have %v", before)
	}
	inW.Close()
	if code, _ := sb.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, pid := range before {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d survived the sandbox (kill 0: %v)", pid, err)
		}
	}
}

// TestUnprivileged runs this package's jail tests again as uid 65534 (no
// capabilities, user namespaces only), failing rather than skipping.
func TestUnprivileged(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NotInChild(t, "PROCJAIL_UNPRIVILEGED_CHILD", "already unprivileged")
	dir, exe, tmp := nobodyCopy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.count=1", "-test.v",
		"-test.run", "^(TestExitStatus|TestOnlyLoopback|TestForwardTCP|TestForwardUDP|TestResolvConf|TestHostUnixSocketsUnreachable|TestContainment|TestPosture|TestSetupFailureInside|TestAllowUnixSocket|TestAllowUnixSocketMissing|TestSpecNotVisible|TestFileSystemLayer)$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp,
		"PROCJAIL_UNPRIVILEGED_CHILD=1", testenv.RequirePrivilegedEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tests as uid 65534 failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestPosture") || !strings.Contains(string(out), "--- PASS: TestContainment") {
		t.Fatalf("tests as uid 65534 did not run:\n%s", out)
	}
	t.Logf("as uid 65534:\n%s", out)
}

// TestAllowUnixSocket: with one host socket allowed, the command reaches
// exactly that one (also by a relative path), and neither another host
// socket nor a symlink to the allowed one; TCP keeps working.
func TestAllowUnixSocket(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	dir := t.TempDir()
	os.Chmod(dir, 0o777)
	listen := func(name string) (string, chan string) {
		p := filepath.Join(dir, name)
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		os.Chmod(p, 0o777)
		got := make(chan string, 8)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				got <- name // before the reply, so it is counted once the client has it
				c.Write([]byte("hello " + name))
				c.Close()
			}
		}()
		return p, got
	}
	okPath, okGot := listen("allowed.sock")
	otherPath, otherGot := listen("other.sock")
	link := filepath.Join(dir, "link.sock")
	os.Symlink(otherPath, link)
	http := unixHTTPServer(t, "tcp still works")
	script := fmt.Sprintf(`
import os, socket, urllib.request
def attempt(name, addr):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)
        print(name, s.recv(100).decode())
    except OSError as e:
        print(name, "refused", e.errno)
attempt("allowed", %q)
os.chdir(%q)
attempt("relative", "allowed.sock")
attempt("other", %q)
attempt("symlink", %q)
attempt("abstract-host", "\0barry-no-such-abstract")
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    print("dgram ESCAPED")
except OSError as e:
    print("dgram refused", e.errno)
print(urllib.request.urlopen("http://127.0.0.1:3128/x", timeout=10).read().decode())
import select
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setblocking(False)
rc = s.connect_ex(("127.0.0.1", 3128))
select.select([], [s], [], 10)
print("nonblocking", rc in (0, 115), s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.connect(("127.0.0.1", 9))
print("udp connect", u.getpeername()[1])
`, okPath, dir, otherPath, link)
	spec := Spec{Command: "python3", Args: []string{"-c", script}, AllowUnixSockets: []string{okPath},
		Forwards: []Forward{{InsidePort: 3128, Network: "tcp", Target: http}}}
	code, out, stderr := run(t, spec)
	want := "allowed hello allowed.sock\nrelative hello allowed.sock\nother refused 13\nsymlink refused 13\nabstract-host refused 111\ndgram refused 1\ntcp still works /x\nnonblocking True 0\nudp connect 9\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d\nout  %q\nwant %q\nstderr %s", code, out, want, stderr)
	}
	if len(okGot) != 2 || len(otherGot) != 0 {
		t.Fatalf("allowed socket saw %d connections (want 2), other saw %d (want 0)", len(okGot), len(otherGot))
	}
}

func TestAllowUnixSocketMissing(t *testing.T) {
	spec := sh("echo ran")
	spec.AllowUnixSockets = []string{filepath.Join(t.TempDir(), "missing.sock")}
	_, err := Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "unix socket gate" || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("got %v, want a SetupError at step unix socket gate", err)
	}
}

// nobodyCopy makes a directory uid 65534 can use: a copy of this test
// binary (exe) and a home and TMPDIR of its own (tmp), removed at the end.
func nobodyCopy(t *testing.T) (dir, exe, tmp string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "procjail-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	exe = filepath.Join(dir, "procjail.test")
	src, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, src, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp = filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return dir, exe, tmp
}

// TestCreateGateWithoutDecider: a sandbox asked for the create gate by a
// binary that has no decider (procjail's own test binary sets none) does
// not start: the gate fails closed, it is never silently off.
func TestCreateGateWithoutDecider(t *testing.T) {
	if CreateDecider != nil {
		t.Skip("this test binary has a create decider")
	}
	spec := sh("echo ran")
	spec.FileSystem.CreateGuard = []byte(`{"roots":["/nonexistent"]}`)
	_, err := Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "unix socket gate" || !strings.Contains(err.Error(), "no create decider") {
		t.Fatalf("got %v, want a SetupError at step unix socket gate: no create decider", err)
	}
}

// TestOpenRouteNeedsCreateGate: the open gate's seccomp route runs on the
// create gate's machinery: a spec that asks for the route without the
// create gate does not start (it is never silently off).
func TestOpenRouteNeedsCreateGate(t *testing.T) {
	spec := sh("echo ran")
	spec.FileSystem.OpenGuard = []byte(`{"cwd":"/"}`)
	spec.FileSystem.OpenRoots = []string{"/"}
	_, err := Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "unix socket gate" || !strings.Contains(err.Error(), "the open route needs the create gate") {
		t.Fatalf("got %v, want a SetupError at step unix socket gate: the open route needs the create gate", err)
	}
}
