package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestExplain: Explain decides like a CONNECT (same reasons), dials nothing
// and writes no audit line.
func TestExplain(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	cases := []struct {
		target string
		allow  bool
		reason string
	}{
		{"allowed.test", true, "allowed by"},
		{"allowed.test:8443", true, "allowed by"},
		{"denied.test", false, "denied"},
		{"unlisted.test", false, "not in"},
		{"meta.test", false, "169.254.169.254"},
		{"bad\x00host", false, "invalid host"},
	}
	for _, c := range cases {
		d, ap := e.srv.Explain(context.Background(), c.target)
		if d.Allowed() != c.allow || !strings.Contains(d.Reason, c.reason) {
			t.Errorf("Explain(%q) = %v %q, want allow=%v reason containing %q", c.target, d.Verdict, d.Reason, c.allow, c.reason)
		}
		if c.allow && ap.Addr().String() != "127.0.0.1" {
			t.Errorf("Explain(%q) address %v", c.target, ap)
		}
	}
	if n := len(e.audit.lines(t)); n != 0 {
		t.Errorf("Explain wrote %d audit lines", n)
	}
}

// TestPlainHTTPUpgradeRefused: a websocket upgrade over plain HTTP is
// refused (it would be a connection a policy change could not close).
func TestPlainHTTPUpgradeRefused(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://allowed.test:%s/ws HTTP/1.1\r\nHost: allowed.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nProxy-Authorization: %s\r\n\r\n", e.hport, basic(e.srv.User(), e.srv.Secret()))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Header.Get("X-Proxy-Error"), "protocol upgrade over plain HTTP") {
		t.Fatalf("status %d, X-Proxy-Error %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
}
