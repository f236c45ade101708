//go:build linux

package procjail

// The proxy's connections, handed over whole: a "pass" forward's listener
// inside the sandbox gives each connection it accepts, with the process
// behind it, to the host over a socket pair (SCM_RIGHTS), so the proxy
// reads and writes the client's own socket and no relay copies its bytes.

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// maxPassMessage bounds a pass message: the peer's value (its argv is
// bounded by maxArgv and maxArgvBytes).
const maxPassMessage = 64 << 10

// PassListener is the host's end of the sandbox's "pass" forwards: a
// net.Listener whose connections are the clients' own sockets inside the
// sandbox, each with the process behind it (PassedConn). Create it before
// Start, set it as Spec.Pass, and serve it (proxy.Server.Serve); Start
// hands its other end to the init.
type PassListener struct {
	conn  *net.UnixConn
	child *os.File // the init's end until Start hands it over

	mu     sync.Mutex
	closed bool
}

// NewPassListener makes the socket pair of a PassListener.
func NewPassListener() (*PassListener, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	pf, cf := os.NewFile(uintptr(fds[0]), "pass"), os.NewFile(uintptr(fds[1]), "pass")
	c, err := net.FileConn(pf)
	pf.Close()
	if err != nil {
		cf.Close()
		return nil, err
	}
	return &PassListener{conn: c.(*net.UnixConn), child: cf}, nil
}

// childEnd returns the init's end of the pair for Start, and forgets it:
// the caller closes it once the init holds its copy.
func (l *PassListener) childEnd() *os.File {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.child
	l.child = nil
	return f
}

// Accept returns the next connection the sandbox handed over. A message
// that does not carry exactly one TCP socket is dropped (its descriptors
// closed). After Close it returns an error wrapping net.ErrClosed.
func (l *PassListener) Accept() (net.Conn, error) {
	buf, oob := make([]byte, maxPassMessage), make([]byte, unix.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := l.conn.ReadMsgUnix(buf, oob)
		if errors.Is(err, io.EOF) || err == nil && n == 0 && oobn == 0 {
			// The init's end is closed: the sandbox is gone.
			l.Close()
			return nil, net.ErrClosed
		}
		if err != nil {
			return nil, err
		}
		fds := receivedFDs(oob[:oobn])
		if len(fds) != 1 || flags&(unix.MSG_CTRUNC) != 0 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			continue
		}
		c, err := fileConn(fds[0])
		if err != nil {
			continue
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			c.Close()
			continue
		}
		pc := &PassedConn{TCPConn: tc}
		if flags&unix.MSG_TRUNC == 0 {
			pc.pid, pc.argv = parsePeerValue(string(buf[:n]))
		}
		return pc, nil
	}
}

func fileConn(fd int) (net.Conn, error) {
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "passed connection")
	defer f.Close()
	return net.FileConn(f)
}

// Close stops Accept. Connections already handed out stay open.
func (l *PassListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.child != nil {
		l.child.Close()
		l.child = nil
	}
	return l.conn.Close()
}

// Addr names the listener.
func (l *PassListener) Addr() net.Addr { return passAddr{} }

type passAddr struct{}

func (passAddr) Network() string { return "pass" }
func (passAddr) String() string  { return "sandbox" }

// PassedConn is a client's own TCP connection inside the sandbox, handed
// over by the init with the process behind it.
type PassedConn struct {
	*net.TCPConn
	pid  int
	argv []string
}

// Peer returns the process inside behind the connection as the init found
// it when it accepted the connection (peerOf: the pid is the kernel's, the
// argv the process's own say): pid 0 (and no argv) when it found none. It
// travels beside the socket, not in the bytes the client sends, so a
// client cannot name another process by writing a header.
func (c *PassedConn) Peer() (int, []string) { return c.pid, c.argv }

// NetConn returns the raw TCP connection (which Linux splices).
func (c *PassedConn) NetConn() net.Conn { return c.TCPConn }

// parsePeerValue reads peerValue's form; 0 and nil for any other.
func parsePeerValue(v string) (int, []string) {
	p, a, ok := strings.Cut(v, " argv=")
	if !ok {
		return 0, nil
	}
	ps, ok := strings.CutPrefix(p, "pid=")
	pid, err := strconv.Atoi(ps)
	var argv []string
	if !ok || err != nil || pid <= 0 || json.Unmarshal([]byte(a), &argv) != nil {
		return 0, nil
	}
	return pid, argv
}

// startPass listens on addr inside and hands each connection, with the
// process behind it, to the host over the socket pair at fd (see
// PassListener). A connection the host cannot take is closed.
func startPass(addr string, fd int) error {
	uc, err := unixConnOf(fd, "pass")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		uc.Close()
		return err
	}
	// Each message is whole on a SOCK_SEQPACKET pair, and the runtime
	// serializes the writes: connections need no lock of their own.
	go acceptLoop(ln, func(c net.Conn) {
		defer c.Close()
		tc := c.(*net.TCPConn)
		msg := peerValue(0, nil)
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
			msg = peerValue(peerOf("tcp", ap, addrPort(c.LocalAddr())))
		}
		rc, err := tc.SyscallConn()
		if err != nil {
			return
		}
		rc.Control(func(sfd uintptr) {
			uc.WriteMsgUnix([]byte(msg), unix.UnixRights(int(sfd)), nil)
		})
	})
	return nil
}
