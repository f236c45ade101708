//go:build linux

package procjail

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestPassListener: a message carrying one TCP socket becomes a PassedConn
// with the peer the message names (pid 0 for a value in another form);
// messages with no descriptor, two, or one that is not a TCP socket are
// dropped and their descriptors closed; Accept ends when the init's end
// closes, and after Close.
func TestPassListener(t *testing.T) {
	l, err := NewPassListener()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	child := l.childEnd()
	cc, err := net.FileConn(child)
	child.Close()
	if err != nil {
		t.Fatal(err)
	}
	init := cc.(*net.UnixConn)
	if l.childEnd() != nil {
		t.Fatal("the child end was handed out twice")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tcpFD := func() (int, net.Conn) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		f, err := c.(*net.TCPConn).File()
		if err != nil {
			t.Fatal(err)
		}
		return int(f.Fd()), c
	}
	send := func(msg string, fds ...int) {
		var oob []byte
		if len(fds) > 0 {
			oob = unix.UnixRights(fds...)
		}
		if _, _, err := init.WriteMsgUnix([]byte(msg), oob, nil); err != nil {
			t.Fatal(err)
		}
	}
	r, w, _ := os.Pipe()
	defer r.Close()
	a, _ := tcpFD()
	b, _ := tcpFD()
	send(`pid=9 argv=["none"]`)              // no descriptor
	send(`pid=9 argv=["two"]`, a, b)         // two
	send(`pid=9 argv=["pipe"]`, int(w.Fd())) // not a socket
	good, gc := tcpFD()
	send(`pid=42 argv=["curl","-sS"]`, good)
	forged, _ := tcpFD()
	send(`pid=x argv=["bad"]`, forged)

	got, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := got.(*PassedConn)
	if !ok {
		t.Fatalf("Accept returned %T", got)
	}
	if pid, argv := pc.Peer(); pid != 42 || !slices.Equal(argv, []string{"curl", "-sS"}) {
		t.Errorf("peer %d %q, want 42 [curl -sS]", pid, argv)
	}
	if pc.LocalAddr().String() != gc.LocalAddr().String() {
		t.Errorf("handed connection %s, want the one dialed from %s", pc.LocalAddr(), gc.LocalAddr())
	}
	got, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	if pid, argv := got.(*PassedConn).Peer(); pid != 0 || argv != nil {
		t.Errorf("a peer value in another form gave %d %q, want 0", pid, argv)
	}
	// The pipe's write end that went with a dropped message was closed
	// by the listener: with the test's own copy closed, the read sees EOF.
	w.Close()
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the dropped message's pipe end is still open (read %d, %v)", n, err)
	}

	init.Close()
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after the init's end closed: %v, want net.ErrClosed", err)
	}
}

// TestPassForward: a connection to a pass forward's port inside reaches the
// host as the client's own socket, with the process behind it; a pass
// forward without Spec.Pass, a second one, one with a target, and a
// listener already given to a sandbox are refused before anything runs.
func TestPassForward(t *testing.T) {
	l, err := NewPassListener()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	type got struct {
		pid  int
		argv []string
		line string
		err  error
	}
	gotc := make(chan got, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			gotc <- got{err: err}
			return
		}
		defer c.Close()
		pid, argv := c.(*PassedConn).Peer()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 3)
		_, err = io.ReadFull(c, buf)
		c.Write([]byte("back\n"))
		gotc <- got{pid, argv, string(buf), err}
	}()
	spec := Spec{Command: "/bin/bash", Args: []string{"-c", `exec 3<>/dev/tcp/127.0.0.1/3128; printf 'hi\n' >&3; read -r l <&3; echo "$l"`}}
	spec.Forwards = []Forward{{InsidePort: 3128, Network: "pass"}}
	spec.Pass = l
	code, out, stderr := run(t, spec)
	if code != 0 || out != "back\n" {
		t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
	}
	g := <-gotc
	if g.err != nil || g.line != "hi\n" || g.pid <= 1 || len(g.argv) == 0 || g.argv[0] != "/bin/bash" {
		t.Errorf("the host got %+v, want the line and bash's pid and argv", g)
	}

	for _, c := range []struct {
		name string
		mod  func(*Spec)
		want string
	}{
		{"no Spec.Pass", func(s *Spec) { s.Pass = nil }, "spec: forwards[0]: a pass forward needs Spec.Pass"},
		{"two", func(s *Spec) { s.Forwards = append(s.Forwards, Forward{InsidePort: 3129, Network: "pass"}) }, "spec: forwards[1]: only one pass forward"},
		{"a target", func(s *Spec) { s.Forwards[0].Target = "/run/x.sock" }, "spec: forwards[0].target: must be empty for a pass forward"},
		{"given already", func(*Spec) {}, "pass: the pass listener was already given to a sandbox, or closed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := sh("echo ran")
			s.Forwards = []Forward{{InsidePort: 3128, Network: "pass"}}
			s.Pass = l // given to the sandbox above
			if c.name != "given already" {
				fresh, err := NewPassListener()
				if err != nil {
					t.Fatal(err)
				}
				defer fresh.Close()
				s.Pass = fresh
			}
			c.mod(&s)
			_, err := Start(context.Background(), s)
			var se *SetupError
			if !errors.As(err, &se) || err.Error() != c.want {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestPassPeerNotAListener: a client that binds its socket (SO_REUSEPORT)
// to the port of another process's listener before it connects is still
// named itself: the look-up matches the connection, not the listening
// socket on the same local address (which /proc/net/tcp lists first).
func TestPassPeerNotAListener(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	l, err := NewPassListener()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	peer := make(chan []string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			peer <- nil
			return
		}
		defer c.Close()
		_, argv := c.(*PassedConn).Peer()
		peer <- argv
		c.Write([]byte("x"))
	}()
	script := `
import socket, subprocess, sys, time
srv = subprocess.Popen([sys.executable, "-c", """
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
s.bind(("127.0.0.1", 45678)); s.listen(); print("listening", flush=True); time.sleep(30)
""", "innocent-listener"], stdout=subprocess.PIPE)
assert srv.stdout.readline() == b"listening\n"
c = socket.socket(); c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
c.bind(("127.0.0.1", 45678)); c.connect(("127.0.0.1", 3128)); c.recv(1)
srv.kill()
`
	// A file, so that the client's argv stays short enough to be named
	// whole.
	client := filepath.Join(t.TempDir(), "client.py")
	if err := os.WriteFile(client, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := Spec{Command: "python3", Args: []string{client, "the-client"}, Env: []string{"PATH=/usr/bin:/bin"}}
	spec.Forwards = []Forward{{InsidePort: 3128, Network: "pass"}}
	spec.Pass = l
	code, _, stderr := run(t, spec)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	argv := <-peer
	if len(argv) == 0 || argv[len(argv)-1] != "the-client" {
		t.Errorf("the handed connection is attributed to %q, want the client (argv ending in the-client)", argv)
	}
}
