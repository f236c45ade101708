package supervisor

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/barry-rocks/sandbox/procjail"
)

// Publish is one server inside the sandbox that the host reaches
// (--publish [HOSTADDR:]HOSTPORT:PORT): connections the host opens to
// HostAddr:HostPort are relayed to 127.0.0.1:Port inside. Nothing goes the
// other way: the sandbox cannot open a connection through it.
type Publish struct {
	HostAddr netip.Addr
	HostPort uint16
	Port     uint16
}

func (p Publish) String() string {
	return fmt.Sprintf("%s:%d", netip.AddrPortFrom(p.HostAddr, p.HostPort), p.Port)
}

// ParsePublish reads [HOSTADDR:]HOSTPORT:PORT; HOSTADDR is 127.0.0.1 when
// absent ([::1] for IPv6 loopback).
func ParsePublish(s string) (Publish, error) {
	bad := func(why string) (Publish, error) {
		return Publish{}, fmt.Errorf("--publish %q: %s (want [HOSTADDR:]HOSTPORT:PORT)", s, why)
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return bad("no inside port")
	}
	port, err := parsePort(s[i+1:])
	if err != nil {
		return bad("inside port: " + err.Error())
	}
	hostPart := s[:i]
	p := Publish{HostAddr: netip.AddrFrom4([4]byte{127, 0, 0, 1}), Port: port}
	hp := hostPart
	if j := strings.LastIndexByte(hostPart, ':'); j >= 0 {
		a, err := netip.ParseAddr(strings.Trim(hostPart[:j], "[]"))
		if err != nil {
			return bad("host address: " + err.Error())
		}
		p.HostAddr, hp = a.Unmap(), hostPart[j+1:]
	}
	if p.HostPort, err = parsePort(hp); err != nil {
		return bad("host port: " + err.Error())
	}
	return p, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a port (1-65535)", s)
	}
	return uint16(n), nil
}

// publish opens the host listeners of the session's published ports (a
// port that cannot be had refuses the session) and gives the jail its
// inbound sockets: the init listens on each, in the runtime directory,
// and relays to the port inside.
func (s *session) publish() (func(), error) {
	var lns []net.Listener
	stop := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for i, p := range s.opts.Publish {
		if p.Port == ProxyInsidePort || p.Port == HookInsidePort || p.Port == CaptureInsidePort || p.Port == 53 {
			return stop, fmt.Errorf("--publish %s: port %d inside is the sandbox's own", p, p.Port)
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(p.HostAddr, p.HostPort).String())
		if err != nil {
			return stop, fmt.Errorf("--publish %s: %w", p, err)
		}
		lns = append(lns, ln)
		sock := filepath.Join(s.dir, fmt.Sprintf("publish-%d.sock", i))
		s.inbound = append(s.inbound, procjail.Inbound{Port: p.Port, Socket: sock})
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go relayUnix(c, sock)
			}
		}()
	}
	return stop, nil
}

// relayUnix copies between c and a new connection to the Unix socket sock
// until both directions end.
func relayUnix(c net.Conn, sock string) {
	defer c.Close()
	u, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { copyClose(u, c); done <- struct{}{} }()
	go func() { copyClose(c, u); done <- struct{}{} }()
	<-done
	<-done
}

// copyClose copies src to dst, then ends dst's writing half.
func copyClose(dst, src net.Conn) {
	io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
}
