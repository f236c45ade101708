//go:build linux

package procjail

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"golang.org/x/sys/unix"
)

// containerModeEnv tells the test binary, re-executed by TestContainerMode
// in a network namespace of the test's own, to run
// TestContainerModeInside.
const containerModeEnv = "BARRY_TEST_CONTAINER_MODE"

// TestContainerMode runs TestContainerModeInside in a network namespace of
// its own (the container's, for container mode), with 10.77.0.1 on its
// loopback interface, the "outside" the command must not reach; the PID and
// mount namespaces are the host's, as in a container without user
// namespaces, and root lacks CAP_SYS_PTRACE, as a container's root does.
func TestContainerMode(t *testing.T) {
	testenv.NeedRoot(t)
	unshare := testenv.NeedCommand(t, "unshare")
	testenv.NeedCommand(t, "ip")
	testenv.NeedCommand(t, "python3")
	testenv.NeedCommand(t, "setpriv")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--net", "/bin/sh", "-c",
		`ip link set lo up && ip addr add 10.77.0.1/32 dev lo && exec setpriv --bounding-set -sys_ptrace "$0" -test.run='^TestContainerModeInside$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), containerModeEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestContainerModeInside") {
		t.Fatalf("container mode: %v\n%s", err, out)
	}
}

func TestContainerModeInside(t *testing.T) {
	testenv.Child(t, containerModeEnv, "TestContainerMode")
	// A uid no process has: every process of it is killed at the end.
	uid := uint32(1_600_000_000 + os.Getpid()%1_000_000)
	ws, err := os.MkdirTemp("", "container-mode-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(ws) })
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ws, int(uid), int(uid)); err != nil {
		t.Fatal(err)
	}
	// A directory the uid may write by its permissions, outside the
	// write roots (and /tmp, which container mode leaves writable):
	// only Landlock keeps the command out.
	odir, err := os.MkdirTemp("/run", "container-mode-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(odir) })
	if err := os.Chmod(odir, 0o777); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(odir, "planted")

	// The outside: a TCP and a UDP server on 10.77.0.1, which the
	// command must never reach.
	var tcpSeen, udpSeen atomic.Int32
	tln, err := net.Listen("tcp", "10.77.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Serve(t, tln, func(c net.Conn) { tcpSeen.Add(1) })
	uconn, err := net.ListenPacket("udp", "10.77.0.1:9999")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { uconn.Close() })
	go func() {
		buf := make([]byte, 100)
		for {
			if _, _, err := uconn.ReadFrom(buf); err != nil {
				return
			}
			udpSeen.Add(1)
		}
	}()
	// The capture's target (the proxy, in sandboxd): the first line of
	// what the capture sends.
	capSock := filepath.Join(t.TempDir(), "capture.sock")
	cln, err := net.Listen("unix", capSock)
	if err != nil {
		t.Fatal(err)
	}
	captured := make(chan string, 4)
	testenv.Serve(t, cln, func(c net.Conn) {
		var head strings.Builder
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			head.WriteString(line)
			if err != nil || line == "\r\n" {
				break
			}
		}
		captured <- head.String()
	})
	dnsSock := framedEchoServer(t)
	// An abstract socket of another process in the (container's) network
	// namespace: never reachable, even with a host socket allowed.
	abstract := "barry-container-mode-" + strconv.Itoa(os.Getpid())
	aln, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	var abstractSeen atomic.Int32
	testenv.Serve(t, aln, func(c net.Conn) { abstractSeen.Add(1) })
	// An allowed host socket, any user's to connect to, whose server
	// answers with the uid its peer has (SO_PEERCRED).
	credSock := filepath.Join(t.TempDir(), "cred.sock")
	credLn, err := net.Listen("unix", credSock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(credSock, 0o777); err != nil {
		t.Fatal(err)
	}
	testenv.Serve(t, credLn, func(c net.Conn) {
		raw, err := c.(*net.UnixConn).SyscallConn()
		if err != nil {
			return
		}
		var cred *unix.Ucred
		raw.Control(func(fd uintptr) { cred, _ = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
		if cred != nil {
			fmt.Fprintf(c, "peer uid %d\n", cred.Uid)
		}
	})

	script := `
import os, socket, subprocess
st = open("/proc/self/status").read()
print("uid", os.getuid(), "gid", os.getgid(), "groups", os.getgroups())
for k in ("NoNewPrivs", "Seccomp", "CapEff", "CapPrm"):
    print([l for l in st.splitlines() if l.startswith(k + ":")][0].replace("\t", " "))
try:
    s = socket.create_connection(("10.77.0.1", 8080), timeout=5)
    s.sendall(b"GET /x HTTP/1.1\r\nHost: outside.test\r\n\r\n")
    s.recv(100)
    print("tcp connected")
except Exception as e:
    print("tcp", type(e).__name__, e)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    u.sendto(b"leak", ("10.77.0.1", 9999))
    print("udp sent")
except OSError as e:
    print("udp", e.errno)
d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
d.settimeout(5)
d.sendto(b"abcdef", ("10.77.0.1", 53))
print("dns", d.recvfrom(100)[0].decode())
open("` + ws + `/inside", "w").write("x")
print("wrote workspace")
try:
    open("` + outside + `", "w").write("x")
    print("wrote outside")
except OSError as e:
    print("outside", e.errno)
a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    a.connect("\0` + abstract + `")
    print("abstract connected")
except OSError as e:
    print("abstract", e.errno)
u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
u.settimeout(5)
u.connect("` + credSock + `")
print(u.recv(100).decode().strip())
# A netlink connect, whose multicast groups are checked against the
# connecting thread's capabilities.
try:
    n = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    n.connect((0, 1))
    print("netlink connected")
except OSError as e:
    print("netlink", e.errno)
# The init's threads that act as this uid: neither re-limited (the kernel
# kills a process over its RLIMIT_CPU) nor signalled.
import resource, glob
for st in glob.glob("/proc/[0-9]*/task/[0-9]*/status"):
    pid = int(st.split("/")[2]); tid = int(st.split("/")[4])
    if pid == os.getpid():
        continue
    try:
        uids = [l for l in open(st) if l.startswith("Uid:")][0].split()[1:]
    except OSError:
        continue
    if str(os.getuid()) not in uids:
        continue
    try:
        resource.prlimit(tid, resource.RLIMIT_CPU, (1, 1))
        print("re-limited", pid, tid)
    except OSError as e:
        print("prlimit", e.errno)
    try:
        os.kill(tid, 0)
        print("signalled", pid, tid)
    except OSError as e:
        print("kill", e.errno)
subprocess.Popen(["sleep", "1000"], start_new_session=True)
print("left a sleep behind")
`
	spec := Spec{Command: "python3", Args: []string{"-c", script}, Dir: ws,
		Env:              []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + ws},
		Container:        &ContainerMode{UID: uid, GID: uid},
		AllowUnixSockets: []string{dnsSock, credSock},
		FileSystem:       FileSystem{Confine: true, WriteRoots: []string{ws}},
		Forwards: []Forward{
			{InsidePort: 3130, Network: "capture", Target: capSock},
			{InsidePort: 53, Network: "udp", Target: dnsSock},
		},
	}
	code, out, stderr := runContainer(t, spec)
	t.Logf("inside:\n%s%s", out, stderr)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"uid " + strconv.Itoa(int(uid)) + " gid " + strconv.Itoa(int(uid)) + " groups []",
		"NoNewPrivs: 1", "Seccomp: 2", "CapEff: 0000000000000000", "CapPrm: 0000000000000000",
		"udp 1",                              // dropped: EPERM
		"abstract 13",                        // EACCES
		"peer uid " + strconv.Itoa(int(uid)), // the gate connects as the command
		"netlink 13",                         // refused by the gate
		"prlimit 1",                          // EPERM
		"dns fedcba", "wrote workspace", "left a sleep behind",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inside: no %q", want)
		}
	}
	for _, leak := range []string{"re-limited", "signalled", "netlink connected"} {
		if strings.Contains(out, leak) {
			t.Errorf("inside: %q", leak)
		}
	}
	if strings.Contains(out, "wrote outside") {
		t.Errorf("the command wrote outside its write roots")
	}
	select {
	case head := <-captured:
		if !strings.Contains(head, "outside.test/x") || !strings.Contains(head, CaptureHeader+": 10.77.0.1:8080") {
			t.Errorf("the capture sent %q, want the request and the dialed address", head)
		}
		// The attribution reads the command's descriptors as its uid.
		if !strings.Contains(head, PeerHeader+": pid=") || !strings.Contains(head, "python3") {
			t.Errorf("the capture sent %q, want the process behind the connection", head)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("the TCP connection never reached the capture")
	}
	time.Sleep(100 * time.Millisecond) // a stray datagram would have landed
	if n := tcpSeen.Load(); n != 0 {
		t.Errorf("the outside TCP server saw %d connections", n)
	}
	if n := abstractSeen.Load(); n != 0 {
		t.Errorf("the abstract socket saw %d connections", n)
	}
	if n := udpSeen.Load(); n != 0 {
		t.Errorf("the outside UDP server saw %d datagrams", n)
	}
	// Nothing of the uid is left, and its rules are gone.
	if pids, err := uidProcesses(uid); err != nil || len(pids) != 0 {
		t.Errorf("processes of uid %d after the end: %v %v", uid, pids, err)
	}
	if b, err := exec.Command("nft", "list", "tables").CombinedOutput(); err == nil && strings.Contains(string(b), uidTable(uid)) {
		t.Errorf("the uid's tables are still installed:\n%s", b)
	}
}

// runContainer is run with a prestarted container-mode init.
func runContainer(t *testing.T, spec Spec) (int, string, string) {
	t.Helper()
	outR, outW, _ := os.Pipe()
	errR, errW, _ := os.Pipe()
	pre, err := Prestart(PrestartOptions{Stdout: outW, Stderr: errW, Container: true})
	if err != nil {
		t.Fatal(err)
	}
	spec.Stdout, spec.Stderr = outW, errW
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sb, err := pre.Start(ctx, spec)
	outW.Close()
	errW.Close()
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	var out, errb strings.Builder
	done := make(chan struct{})
	go func() { b, _ := readAll(outR); out.Write(b); close(done) }()
	b, _ := readAll(errR)
	errb.Write(b)
	<-done
	code, err := sb.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	sb.Close()
	return code, out.String(), errb.String()
}

func readAll(f *os.File) ([]byte, error) {
	defer f.Close()
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			return b, nil
		}
	}
}
