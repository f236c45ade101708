package supervisor

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

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
// port that cannot be had refuses the session) and names their ports
// inside to the jail; servePublished hands their connections over once
// the sandbox runs.
func (s *session) publish() (func(), error) {
	stop := func() {
		for _, ln := range s.published {
			ln.Close()
		}
	}
	for _, p := range s.opts.Publish {
		own := p.Port == ProxyInsidePort || p.Port == HookInsidePort || p.Port == CaptureInsidePort || p.Port == 53
		for _, f := range s.forwards {
			own = own || f.InsidePort == p.Port
		}
		if s.launched != nil {
			for _, f := range s.launched.forwards {
				own = own || f.InsidePort == p.Port
			}
		}
		if own {
			return stop, fmt.Errorf("--publish %s: port %d inside is the sandbox's own", p, p.Port)
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(p.HostAddr, p.HostPort).String())
		if err != nil {
			return stop, fmt.Errorf("--publish %s: %w", p, err)
		}
		s.published = append(s.published, ln)
		s.inbound = append(s.inbound, procjail.Inbound{Port: p.Port})
	}
	return stop, nil
}

// servePublished hands each connection the host opens to a published
// port to the sandbox's init (its descriptor: no path between them), which
// relays it to the port inside.
func (s *session) servePublished() (func(), error) {
	for i, ln := range s.published {
		go func() {
			var backoff time.Duration
			for {
				c, err := ln.Accept()
				if errors.Is(err, net.ErrClosed) {
					return
				}
				if err != nil {
					// EMFILE and the like pass: wait, as net/http does.
					backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
					time.Sleep(backoff)
					continue
				}
				backoff = 0
				s.sb.PassInbound(i, c.(*net.TCPConn))
				c.Close()
			}
		}()
	}
	return nil, nil
}
