package proxy

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
)

// PeerFrame starts, on a DNS proxy's stream connection from sandboxd's
// init, a first frame (two-byte length, as DNS over TCP) that names the
// process inside behind the queries: PeerFrame, then PeerHeader's value.
// No DNS message starts so (its opcode would be 10). The DNS proxy audits
// pid and argv from it and decides nothing by it. (procjail.PeerFrame is
// the same.)
const PeerFrame = "BARRY-PEER "

// peerAddr is a connection's remote address with the process behind it.
type peerAddr struct {
	net.Addr
	pid  int
	argv []string
}

// peerListener hands out peerConns.
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &peerConn{Conn: c}, nil
}

// peerConn reads a PeerFrame, if the connection starts with one, before
// the first read the DNS server makes, and names the peer in RemoteAddr.
type peerConn struct {
	net.Conn
	once    sync.Once
	mu      sync.Mutex
	pending []byte // the first frame, when it was a query
	peer    *peerAddr
}

func (c *peerConn) Read(p []byte) (int, error) {
	var err error
	c.once.Do(func() { err = c.readPeer() })
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		c.mu.Unlock()
		return n, nil
	}
	c.mu.Unlock()
	return c.Conn.Read(p)
}

func (c *peerConn) readPeer() error {
	var hdr [2]byte
	if _, err := io.ReadFull(c.Conn, hdr[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint16(hdr[:]))
	if _, err := io.ReadFull(c.Conn, body); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := strings.CutPrefix(string(body), PeerFrame); ok {
		if pid, argv := parsePeer(v); pid > 0 {
			c.peer = &peerAddr{Addr: c.Conn.RemoteAddr(), pid: pid, argv: argv}
		}
		return nil
	}
	c.pending = append(hdr[:], body...)
	return nil
}

func (c *peerConn) RemoteAddr() net.Addr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.peer != nil {
		return *c.peer
	}
	return c.Conn.RemoteAddr()
}
