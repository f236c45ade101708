package proxy_test

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/audit"
)

// handed is a connection as sandboxd's init hands it over
// (procjail.PassedConn): the process behind it travels beside the socket.
type handed struct {
	*net.TCPConn
	pid  int
	argv []string
}

func (h *handed) Peer() (int, []string) { return h.pid, h.argv }
func (h *handed) NetConn() net.Conn     { return h.TCPConn }

type handingListener struct{ net.Listener }

func (l handingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &handed{TCPConn: c.(*net.TCPConn), pid: 4242, argv: []string{"handed", "over"}}, nil
}

// TestHandedConnPeer: on a connection handed over whole, the audit names the
// process that came with it, and a PeerHeader the client sends is its own
// and ignored; the CONNECT still tunnels (over the raw connection).
func TestHandedConnPeer(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.srv.Serve(handingListener{ln})
	e.addr = ln.Addr().String()
	forged := "X-Barry-Peer: pid=7 argv=[\"forged\"]\r\n"

	c, _, resp := rawRequest(t, e, fmt.Sprintf("CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n%s", e.port, e.port, forged))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %d %s", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	c.Close()
	_, _, resp = rawRequest(t, e, fmt.Sprintf("GET http://denied.test:%s/x HTTP/1.1\r\nHost: denied.test:%s\r\n%s", e.hport, e.hport, forged))
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("denied GET: %d", resp.StatusCode)
	}
	for _, host := range []string{"allowed.test", "denied.test"} {
		rec := e.audit.waitAudit(t, host)
		var argv []string
		for _, a := range rec[audit.AttrArgv].([]any) {
			argv = append(argv, fmt.Sprint(a))
		}
		if rec[audit.AttrPID] != float64(4242) || !slices.Equal(argv, []string{"handed", "over"}) {
			t.Errorf("%s: audited pid %v argv %v, want the handed connection's 4242 [handed over]", host, rec[audit.AttrPID], argv)
		}
		if strings.Contains(fmt.Sprint(rec), "forged") {
			t.Errorf("%s: the client's own X-Barry-Peer was audited: %v", host, rec)
		}
	}
}
