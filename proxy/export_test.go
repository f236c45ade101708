package proxy

import (
	"net"
	"time"
)

// SetInterfaceAddrs replaces the source of s's own interface addresses (the
// dial guard's "address of this host" check). Call it before s serves.
func SetInterfaceAddrs(s *Server, list func() ([]net.Addr, error)) {
	s.local.list = list
}

// SetRelayHook makes every tunnel direction of s report the connections it
// copies between (dst, src) before its first io.Copy. Call it before s
// relays anything.
func SetRelayHook(s *Server, f func(dst, src net.Conn)) {
	s.relayHook = f
}

// SetDNSInterfaceAddrs is SetInterfaceAddrs for a DNS server: the source of
// the host's own addresses its answer filter refuses. Call it before d
// serves.
func SetDNSInterfaceAddrs(d *DNSServer, list func() ([]net.Addr, error)) {
	d.local.list = list
}

// oneRead returns its bytes in one read, and panics on a second.
type oneRead struct{ b []byte }

func (o *oneRead) Read(p []byte) (int, error) {
	if o.b == nil {
		panic("read twice")
	}
	n := copy(p, o.b)
	o.b = nil
	return n, nil
}

// SetStreamHold replaces how long s's stream scrubbers hold a quiet tail.
func SetStreamHold(s *Server, d time.Duration) { s.streamHold = d }
