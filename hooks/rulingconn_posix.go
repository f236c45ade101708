//go:build linux || darwin

package hooks

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"syscall"
)

// dialRuling connects to a ruling server with plain blocking system calls:
// one hookgate process makes one connection, and net.Dial's poller
// registration, nonblocking connect and address lookups cost it ~0.08 ms.
// network and addr are ParseAddr's: "unix" and a path (a
// leading @ is Linux's abstract namespace, as for net.Dial), or "tcp" and a
// loopback IP:PORT. Once ctx is done the socket is shut down, which ends a
// pending TCP connect and every read and write, and dialRuling fails; a
// Unix connect blocked on a full backlog is not woken by it, but the
// check's own deadline (Check) answers deny then all the same.
func dialRuling(ctx context.Context, network, addr string) (rulingConn, error) {
	var (
		family int
		sa     syscall.Sockaddr
	)
	switch network {
	case "unix":
		family, sa = syscall.AF_UNIX, &syscall.SockaddrUnix{Name: addr}
	case "tcp":
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, fmt.Errorf("dial tcp %s: %w", addr, err)
		}
		if a := ap.Addr(); a.Is4() {
			family, sa = syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: a.As4()}
		} else {
			family, sa = syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: a.As16()}
		}
	default:
		return nil, fmt.Errorf("dial %s %s: unsupported network", network, addr)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s %s: %w", network, addr, err)
	}
	// As the net package does where SOCK_CLOEXEC is missing: no fork may
	// inherit the descriptor between socket and close-on-exec.
	syscall.ForkLock.RLock()
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("dial %s %s: socket: %w", network, addr, err)
	}
	c := &fdConn{fd: fd}
	// No socket timeout is set, so a signal restarts connect, read and
	// write (SA_RESTART); ctx's end shuts the socket down instead, which
	// ends a blocked call at once.
	stop := context.AfterFunc(ctx, c.abort)
	err = syscall.Connect(fd, sa)
	if !stop() || err != nil {
		c.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("dial %s %s: connect: %w", network, addr, err)
	}
	return c, nil
}

// fdConn is a connected blocking stream socket. Read, Write and Close are
// for one goroutine; abort may be called from any, at any time.
type fdConn struct {
	mu     sync.Mutex
	fd     int
	closed bool
}

func (c *fdConn) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, fmt.Errorf("read: %w", err)
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *fdConn) Write(b []byte) (int, error) {
	written := 0
	for written < len(b) {
		n, err := syscall.Write(c.fd, b[written:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return written, fmt.Errorf("write: %w", err)
		}
		written += n
	}
	return written, nil
}

// abort shuts the socket down: a blocked or later Read returns EOF and a
// Write fails.
func (c *fdConn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed {
		syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	}
}

func (c *fdConn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	return syscall.Close(c.fd)
}
