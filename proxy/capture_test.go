package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/proxy"
)

// rawRequest sends head (a request without its final blank line) with the
// proxy's credentials and returns the connection and the response.
func rawRequest(t *testing.T, e *env, head string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head += "Proxy-Authorization: " + basic(e.srv.User(), e.srv.Secret()) + "\r\n\r\n"
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	method, _, _ := strings.Cut(head, " ")
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s: %v", head, err)
	}
	return c, br, resp
}

// TestOriginalDestination: a request that carries the address its client
// dialed (sandboxd's capture) is let through only to that address, and
// only if it is one of the name's; the audit line says it was captured;
// the header never reaches the upstream.
func TestOriginalDestination(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	h := proxy.OriginalDestinationHeader

	// CONNECT: the name's own address passes (the TLS server answers).
	c, _, resp := rawRequest(t, e, fmt.Sprintf("CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n%s: 127.0.0.1:%s\r\n", e.port, e.port, h, e.port))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT to the name's address: %d %s", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	c.Close()
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrCaptured] != "127.0.0.1:"+e.port || rec[audit.AttrDecision] != "allow" {
		t.Errorf("audit of the captured CONNECT: %v", rec)
	}

	for _, c := range []struct{ name, orig, want string }{
		{"another address", "192.0.2.9:" + e.port, "address is not the name's: 192.0.2.9:" + e.port + " is not an address of allowed.test"},
		{"another port", "127.0.0.1:1", "address is not the name's: 127.0.0.1:1 is not an address of allowed.test"},
		{"unparseable", "nonsense", "address is not the name's"},
	} {
		t.Run("connect "+c.name, func(t *testing.T) {
			_, _, resp := rawRequest(t, e, fmt.Sprintf("CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%s\r\n%s: %s\r\n", e.port, e.port, h, c.orig))
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Proxy-Error"), c.want) {
				t.Errorf("status %d, X-Proxy-Error %q, want 403 %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), c.want)
			}
		})
	}

	// Plain HTTP: passes to the name's address, without the header.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "header=%q", r.Header.Get(h))
	}))
	t.Cleanup(up.Close)
	_, uport, _ := net.SplitHostPort(up.Listener.Addr().String())
	_, _, resp = rawRequest(t, e, fmt.Sprintf("GET http://allowed.test:%s/x HTTP/1.1\r\nHost: allowed.test:%s\r\n%s: 127.0.0.1:%s\r\n", uport, uport, h, uport))
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK || string(b) != `header=""` {
		t.Fatalf("captured plain HTTP: %d %q (the upstream must not see %s)", resp.StatusCode, b, h)
	}
	_, _, resp = rawRequest(t, e, fmt.Sprintf("GET http://allowed.test:%s/x HTTP/1.1\r\nHost: allowed.test:%s\r\n%s: 192.0.2.9:%s\r\n", uport, uport, h, uport))
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Proxy-Error"), proxy.ReasonNotNamesAddress) {
		t.Errorf("plain HTTP to another address: %d %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
}

// TestH2CUpgradeDropped: a plain HTTP request offering cleartext HTTP/2
// (Upgrade: h2c, as Java's HttpClient sends) is forwarded without the
// offer, and answered in HTTP/1.1; a websocket upgrade is still refused.
func TestH2CUpgradeDropped(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upgrade=%q settings=%q", r.Header.Get("Upgrade"), r.Header.Get("HTTP2-Settings"))
	}))
	t.Cleanup(up.Close)
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	_, _, resp := rawRequest(t, e, fmt.Sprintf("GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test:%s\r\n"+
		"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n", port, port))
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK || string(b) != `upgrade="" settings=""` {
		t.Errorf("h2c offer: %d %q, want 200 without the offer upstream", resp.StatusCode, b)
	}
	_, _, resp = rawRequest(t, e, fmt.Sprintf("GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test:%s\r\n"+
		"Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n", port, port))
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("X-Proxy-Error"), "protocol upgrade") {
		t.Errorf("websocket upgrade: %d %q, want 403", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
}
