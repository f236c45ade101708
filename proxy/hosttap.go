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
// Until a request reaches the proxy's handler, anything written to it is
// net/http answering a request it refused to parse (a malformed request
// line or target, oversized headers): the tap turns that answer into the
// proxy's own refusal, with X-Proxy-Error and an audit line (refuse).
type tapConn struct {
	net.Conn
	handled  atomic.Bool                     // a request reached the handler
	refuse   func(c *tapConn, answer []byte) // writes the proxy's refusal for net/http's answer
	done     atomic.Bool                     // stopped recording: later reads cost one load
	mu       sync.Mutex
	head     []byte
	complete bool // the head ended ("\r\n\r\n") within maxTapHead
	full     bool // stopped recording
	requests int  // requests the server has read on this connection

	// handed: the connection was handed over by sandboxd's init
	// (handedConn), which named the process behind it: pid and argv.
	handed bool
	pid    int
	argv   []string
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
				// Keep only the request line, for the audit of the
				// refusal that follows.
				line, _, _ := bytes.Cut(c.head, []byte("\r\n"))
				c.head, c.full = line[:min(len(line), 8<<10):min(len(line), 8<<10)], true
			}
			c.done.Store(c.full)
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *tapConn) Write(p []byte) (int, error) {
	if !c.handled.Load() && c.refuse != nil && bytes.HasPrefix(p, []byte("HTTP/1.")) {
		c.refuse(c, p)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// firstLine returns the first line of the kept request head, as far as it
// was read.
func (c *tapConn) firstLine() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	line, _, _ := strings.Cut(string(c.head), "\r\n")
	return line
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
