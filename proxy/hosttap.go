package proxy

import (
	"bytes"
	"net"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
)

// Go's HTTP server drops the Host header of an absolute-form request before
// any handler sees it, so a disagreement between Host and the request
// target could not be refused. tapConn keeps, passively, the bytes of the
// first request head read on a client connection; every plain-HTTP response
// closes its connection ("Connection: close"), so a plain-HTTP request is
// always the first on its connection and the kept head is its own. A tunnel
// unwraps the tap first, so the relay still copies between the raw
// connections (splice).

// maxTapHead bounds the kept head (the server refuses larger heads anyway).
const maxTapHead = 64 << 10

// tapConn is a client connection that records its first request head.
type tapConn struct {
	net.Conn
	done     atomic.Bool // stopped recording: later reads cost one load
	mu       sync.Mutex
	head     []byte
	complete bool // the head ended ("\r\n\r\n") within maxTapHead
	full     bool // stopped recording
	requests int  // requests the server has read on this connection
}

func (c *tapConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.done.Load() {
		c.mu.Lock()
		if !c.full {
			c.head = append(c.head, p[:n]...)
			if i := bytes.Index(c.head, []byte("\r\n\r\n")); i >= 0 {
				c.head, c.complete, c.full = c.head[:i+4], true, true
			} else if len(c.head) > maxTapHead {
				c.head, c.full = nil, true
			}
			c.done.Store(c.full)
		}
		c.mu.Unlock()
	}
	return n, err
}

// nextRequest counts a request read on the connection and returns its
// ordinal (1 for the first).
func (c *tapConn) nextRequest() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	return c.requests
}

// hostHeaders returns the Host header values of the first request head,
// and whether that head was kept whole.
func (c *tapConn) hostHeaders() ([]string, bool) {
	c.mu.Lock()
	head, ok := c.head, c.complete
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	var hosts []string
	lines := strings.Split(string(head), "\r\n")
	for _, l := range lines[1:] {
		k, v, found := strings.Cut(l, ":")
		if found && textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k)) == "Host" {
			hosts = append(hosts, strings.TrimSpace(v))
		}
	}
	return hosts, true
}

// unwrapTap returns the raw connection under a tap.
func unwrapTap(c net.Conn) net.Conn {
	if t, ok := c.(*tapConn); ok {
		return t.Conn
	}
	return c
}

type tapKey struct{}
