package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

func TestConnectAllowedGoClient(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	resp, err := e.client().Get("https://allowed.test:" + e.port + "/x")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := body(t, resp), "tls hello allowed.test:"+e.port; got != want {
		t.Fatalf("body = %q, want %q", got, want)
	}
	e.closeIdle()
	rec := e.audit.waitAudit(t, "allowed.test")
	for k, want := range map[string]any{
		audit.AttrKind: "connect", audit.AttrDecision: "allow", audit.AttrSandbox: "sbx-test",
		audit.AttrReason: `allowed by entry "allowed.test"`, audit.AttrSNI: "allowed.test",
		audit.AttrAddr: "127.0.0.1:" + e.port, audit.AttrPort: e.port, audit.AttrPolicy: e.srv.Fingerprint(),
	} {
		if rec[k] != want {
			t.Errorf("audit %s = %v, want %v", k, rec[k], want)
		}
	}
	if rec[audit.AttrBytesUp].(float64) <= 0 || rec[audit.AttrBytesDown].(float64) <= 0 {
		t.Errorf("audit bytes = %v/%v, want both > 0", rec[audit.AttrBytesUp], rec[audit.AttrBytesDown])
	}
	for _, k := range []string{"time", audit.AttrClient, audit.AttrDurationMS} {
		if _, ok := rec[k]; !ok {
			t.Errorf("audit line lacks %s: %v", k, rec)
		}
	}
	// The line's decision is the one Explain gives for the same target.
	if d, _ := e.srv.Explain(context.Background(), "allowed.test:"+e.port); rec[audit.AttrRule] != d.Rule || d.Rule == "" || rec[audit.AttrReason] != d.Reason {
		t.Errorf("audit rule %v reason %v, Explain %+v", rec[audit.AttrRule], rec[audit.AttrReason], d)
	}
}

func TestPlainHTTPAllowed(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	resp, err := e.client().Post("http://Allowed.TEST.:"+e.hport+"/p", "text/plain", strings.NewReader("ping"))
	if err != nil {
		t.Fatal(err)
	}
	// The upstream sees the canonical name as Host, whatever the client sent.
	if got, want := body(t, resp), "http hello host=allowed.test:"+e.hport+" body=ping"; got != want {
		t.Fatalf("body = %q, want %q", got, want)
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrKind] != "http" || rec[audit.AttrDecision] != "allow" || rec[audit.AttrBytesUp].(float64) != 4 {
		t.Fatalf("audit = %v", rec)
	}
}

// TestHostHeader: a plain-HTTP request whose Host header disagrees with its
// absolute target is refused (Go's server hides the header; the proxy keeps
// the request head); an agreeing, port-qualified, case- or dot-different or
// absent Host passes, and the upstream always sees the decided name.
func TestHostHeader(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	send := func(head string) *http.Response {
		t.Helper()
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, head, e.hport, basic(e.srv.User(), e.srv.Secret()))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	cases := []struct {
		name, head string
		status     int
		reason     string
	}{
		{"other host", "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: %s\r\n\r\n", 403, "host header disagrees with the request target: Host \"evil.test\""},
		{"other port", "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test:1\r\nProxy-Authorization: %s\r\n\r\n", 403, "host header disagrees with the request target"},
		{"missing port means 80", "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\nProxy-Authorization: %s\r\n\r\n", 403, "host header disagrees with the request target"},
		{"same host and port", "GET http://allowed.test:%[1]s/ HTTP/1.1\r\nHost: allowed.test:%[1]s\r\nProxy-Authorization: %[2]s\r\n\r\n", 200, ""},
		{"percent-encoded target host", "GET http://caf%%C3%%A9.test:%[1]s/ HTTP/1.1\r\nHost: xn--caf-dma.test:%[1]s\r\nProxy-Authorization: %[2]s\r\n\r\n", 403, `invalid host: "caf%C3%A9.test"`},
		{"case and trailing dot", "GET http://allowed.test:%[1]s/ HTTP/1.1\r\nhost: ALLOWED.test.:%[1]s\r\nProxy-Authorization: %[2]s\r\n\r\n", 200, ""},
		{"no Host (HTTP/1.0)", "GET http://allowed.test:%s/ HTTP/1.0\r\nProxy-Authorization: %s\r\n\r\n", 200, ""},
	}
	for _, c := range cases {
		resp := send(c.head)
		got := body(t, resp)
		if resp.StatusCode != c.status || !strings.HasPrefix(resp.Header.Get("X-Proxy-Error"), c.reason) {
			t.Errorf("%s: status %d, X-Proxy-Error %q, want %d %q", c.name, resp.StatusCode, resp.Header.Get("X-Proxy-Error"), c.status, c.reason)
		}
		if c.status == 200 && !strings.Contains(got, "host=allowed.test:"+e.hport) {
			t.Errorf("%s: upstream saw %q", c.name, got)
		}
		if !resp.Close {
			t.Errorf("%s: a plain-HTTP response must close its connection", c.name)
		}
	}
}

// TestPlainHTTPKeepAliveClients: clients that reuse connections (Go's
// net/http) keep working: each plain-HTTP response closes its connection.
func TestPlainHTTPKeepAliveClients(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	c := e.client()
	for i := 0; i < 3; i++ {
		resp, err := c.Get("http://allowed.test:" + e.hport + "/")
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, resp); !strings.Contains(got, "http hello") {
			t.Fatalf("request %d: %q", i, got)
		}
	}
}

func TestDenials(t *testing.T) {
	cases := []struct {
		target string
		reason string // prefix of X-Proxy-Error
		lookup bool   // whether the name may reach the resolver
	}{
		{"denied.test:443", `denied domain: denied.test matches network.domains entry "denied.test"`, false},
		{"unlisted.test:443", "not in allowlist: unlisted.test", false},
		{"wild.test:443", "not in allowlist: wild.test", false},
		{"127.0.0.1:443", "not in allowlist: 127.0.0.1", false},
		{"0x7f.1:443", "not in allowlist: 127.0.0.1", false},
		{"2130706433:443", "not in allowlist: 127.0.0.1", false},
		{"[::ffff:127.0.0.1]:443", "not in allowlist: 127.0.0.1", false},
		{"169.254.169.254:80", "not in allowlist: 169.254.169.254", false},
		{"meta.test:80", "private address: 169.254.169.254 is cloud metadata", true},
		{"private.test:80", "private address: 10.1.2.3 is private (RFC 1918)", true},
		{"nxdomain.wild.test:443", "resolve failed: nxdomain.wild.test: no such host", true},
		{"allowed.test:0", `invalid port: "0"`, false},
		{"allowed.test:99999", `invalid port: "99999"`, false},
		{"allowed.test", `invalid port: ""`, false},
		{"a..test:443", `invalid host: "a..test": empty label`, false},
		{"caf%C3%A9.test:443", `invalid host: "caf%C3%A9.test"`, false},               // net/url would decode it to café.test
		{"exa%6dple.test:443", "bad request: the request could not be parsed", false}, // net/http's own refusal, rewritten
		{"[allowed.test]:443", "bad request: the request could not be parsed", false},
	}
	e := newEnv(t, defaultPolicy())
	for _, tc := range cases {
		t.Run("connect "+tc.target, func(t *testing.T) {
			_, resp := e.connect(tc.target, true)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status = %d, want 403", resp.StatusCode)
			}
			got := resp.Header.Get("X-Proxy-Error")
			if !strings.HasPrefix(got, tc.reason) {
				t.Fatalf("X-Proxy-Error = %q, want prefix %q", got, tc.reason)
			}
			if b := body(t, resp); b != got+"\n" {
				t.Fatalf("body = %q, want the reason line", b)
			}
		})
	}
	for _, tc := range cases {
		if _, err := url.Parse("http://" + tc.target + "/"); err != nil {
			continue // not a URL a client could send
		}
		if strings.Contains(tc.target, "%") || strings.Contains(tc.target, "..") || strings.HasSuffix(tc.target, ":0") || strings.HasSuffix(tc.target, "99999") || !strings.Contains(tc.target, ":") {
			continue // not valid in a URL, or the default port applies
		}
		t.Run("http "+tc.target, func(t *testing.T) {
			resp, err := e.client().Get("http://" + tc.target + "/")
			if err != nil {
				t.Fatal(err)
			}
			body(t, resp)
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(resp.Header.Get("X-Proxy-Error"), tc.reason) {
				t.Fatalf("status %d, X-Proxy-Error %q, want 403 %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), tc.reason)
			}
		})
	}
	for _, tc := range cases {
		h, _, _ := strings.Cut(tc.target, ":")
		if !tc.lookup && e.dns.Seen(h) != 0 {
			t.Errorf("%s reached the resolver %d times; a refused name must never be looked up", h, e.dns.Seen(h))
		}
	}
}

func TestRebindToLoopbackRefused(t *testing.T) {
	pol := defaultPolicy()
	pol.AllowPrivate = nil
	e := newEnv(t, pol)
	_, resp := e.connect("allowed.test:"+e.port, true)
	if got, want := resp.Header.Get("X-Proxy-Error"), "private address: 127.0.0.1 is loopback"; resp.StatusCode != 403 || got != want {
		t.Fatalf("status %d %q, want 403 %q", resp.StatusCode, got, want)
	}
	resp2, err := e.client().Get("http://allowed.test:" + e.hport + "/")
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp2)
	if resp2.StatusCode != 403 {
		t.Fatalf("plain HTTP status %d, want 403", resp2.StatusCode)
	}
}

func TestEmptyAllowlistIsNoEgress(t *testing.T) {
	e := newEnv(t, proxy.Policy{AllowPrivate: loopback})
	_, resp := e.connect("allowed.test:"+e.port, true)
	if got := resp.Header.Get("X-Proxy-Error"); got != "not in allowlist: the allowlist is empty (no egress)" {
		t.Fatalf("X-Proxy-Error = %q", got)
	}
	if e.dns.Total() != 0 {
		t.Fatalf("resolver saw %d queries", e.dns.Total())
	}
}

func TestAuthRequired(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	_, resp := e.connect("allowed.test:"+e.port, false)
	if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get("X-Proxy-Error") != proxy.ReasonAuthRequired {
		t.Fatalf("no credentials: %d %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	u := *e.url
	u.User = nil
	for _, pu := range []string{u.String(), strings.Replace(e.url.String(), e.srv.Secret(), "wrong", 1)} {
		c := e.client()
		pu := pu
		c.Transport.(*http.Transport).Proxy = func(*http.Request) (*url.URL, error) { return url.Parse(pu) }
		resp, err := c.Get("http://allowed.test:" + e.hport + "/")
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		if resp.StatusCode != http.StatusProxyAuthRequired {
			t.Fatalf("%s: status %d, want 407", pu, resp.StatusCode)
		}
	}
	if e.dns.Total() != 0 {
		t.Fatalf("unauthenticated requests reached the resolver")
	}
}

func TestSNI(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	dialTLS := func(target string, cfg *tls.Config) error {
		c, resp := e.connect(target, true)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s: %d %s", target, resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
		}
		tc := tls.Client(c, cfg)
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err != nil {
			return err
		}
		defer tc.Close()
		fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		_, err := io.ReadAll(tc)
		return err
	}
	t.Run("mismatch", func(t *testing.T) {
		err := dialTLS("allowed.test:"+e.port, &tls.Config{ServerName: "other.test", RootCAs: e.cert.Pool})
		if err == nil {
			t.Fatal("a ClientHello naming other.test went through a tunnel to allowed.test")
		}
		rec := e.audit.waitAudit(t, "allowed.test")
		if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != "sni mismatch: ClientHello names other.test but CONNECT named allowed.test" {
			t.Fatalf("audit = %v", rec)
		}
	})
	t.Run("alert record before the ClientHello", func(t *testing.T) {
		// Go's TLS server skips a warning alert before the ClientHello, so
		// an unchecked record there would let a hello for other.test
		// through a tunnel opened for also.test.
		c, resp := e.connect("also.test:"+e.port, true)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %d", resp.StatusCode)
		}
		if _, err := c.Write([]byte{0x15, 3, 1, 0, 2, 1, 90}); err != nil {
			t.Fatal(err)
		}
		tc := tls.Client(c, &tls.Config{ServerName: "other.test", RootCAs: e.cert.Pool})
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		if err := tc.Handshake(); err == nil {
			tc.Close()
			t.Fatal("a ClientHello for other.test behind an alert record went through a tunnel to also.test")
		}
		rec := e.audit.waitAudit(t, "also.test")
		if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != "sni mismatch: first TLS record (type 21) is not a ClientHello" {
			t.Fatalf("audit = %v", rec)
		}
	})
	t.Run("case and trailing dot match", func(t *testing.T) {
		if err := dialTLS("ALSO.test.:"+e.port, &tls.Config{ServerName: "also.test", RootCAs: e.cert.Pool}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no sni passes", func(t *testing.T) {
		if err := dialTLS("a.wild.test:"+e.port, &tls.Config{InsecureSkipVerify: true}); err != nil {
			t.Fatal(err)
		}
		rec := e.audit.waitAudit(t, "a.wild.test")
		if rec[audit.AttrSNI] != "none" || rec[audit.AttrDecision] != "allow" {
			t.Fatalf("audit = %v", rec)
		}
	})
}

// TestServerSpeaksFirst: a non-TLS protocol whose server talks first works,
// and the audit says it was not TLS.
func TestServerSpeaksFirst(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	echo := proxytest.NewEcho(t, nil, "SSH-2.0-test\r\n")
	_, port, _ := net.SplitHostPort(echo.Addr)
	c, resp := e.connect("allowed.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || line != "SSH-2.0-test\r\n" {
		t.Fatalf("banner %q, %v", line, err)
	}
	io.WriteString(c, "SSH-2.0-client\r\n")
	line, err = br.ReadString('\n')
	if err != nil || line != "SSH-2.0-client\r\n" {
		t.Fatalf("echo %q, %v", line, err)
	}
	c.Close()
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrSNI] != "not-tls" {
		t.Fatalf("audit = %v", rec)
	}
}

// TestPipelinedClientHello: bytes sent in the same write as the CONNECT
// request are not lost.
func TestPipelinedClientHello(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	raw, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	pc := &pipelined{Conn: raw, prefix: fmt.Sprintf("CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test\r\nProxy-Authorization: %s\r\n\r\n", e.port, basic(e.srv.User(), e.srv.Secret()))}
	tc := tls.Client(pc, &tls.Config{ServerName: "allowed.test", RootCAs: e.cert.Pool})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(tc)
	if !strings.Contains(string(b), "tls hello allowed.test") {
		t.Fatalf("response %q", b)
	}
}

// pipelined writes prefix in the same write as the first payload, and
// skips the proxy's response head before the first read.
type pipelined struct {
	net.Conn
	prefix string
	wrote  bool
	br     *bufio.Reader
}

func (p *pipelined) Write(b []byte) (int, error) {
	if !p.wrote {
		p.wrote = true
		_, err := p.Conn.Write(append([]byte(p.prefix), b...))
		return len(b), err
	}
	return p.Conn.Write(b)
}

func (p *pipelined) Read(b []byte) (int, error) {
	if p.br == nil {
		p.br = bufio.NewReader(p.Conn)
		resp, err := http.ReadResponse(p.br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != 200 {
			return 0, fmt.Errorf("CONNECT: %s", resp.Status)
		}
	}
	return p.br.Read(b)
}

func TestPolicySwapClosesTunnel(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	gone, _ := e.connect("allowed.test:"+port, true)
	kept, _ := e.connect("also.test:"+port, true)
	for _, c := range []net.Conn{gone, kept} {
		roundTrip(t, c, "before")
	}
	oldFP := e.srv.Fingerprint()
	pol := defaultPolicy()
	pol.Allow = []string{"also.test"}
	start := time.Now()
	if err := e.srv.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	gone.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := gone.Read(make([]byte, 1))
	if n != 0 || err == nil || isTimeout(err) {
		t.Fatalf("tunnel to allowed.test still open after the swap: n=%d err=%v", n, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("tunnel closed after %v, want within 1s", d)
	}
	roundTrip(t, kept, "after")
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrClose] != "policy changed: not in allowlist: allowed.test" || rec[audit.AttrPolicy] != oldFP || oldFP == e.srv.Fingerprint() {
		t.Fatalf("audit = %v (policy that decided %s, now %s)", rec, oldFP, e.srv.Fingerprint())
	}
	_, resp := e.connect("allowed.test:"+port, true)
	if resp.StatusCode != 403 {
		t.Fatalf("new CONNECT after swap: %d", resp.StatusCode)
	}
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
		t.Fatalf("echo %q, %v", buf, err)
	}
}

func splitPort(a string) (string, string) {
	h, p, _ := net.SplitHostPort(a)
	return h, p
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func TestHalfClose(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	c, _ := e.connect("allowed.test:"+port, true)
	payload := strings.Repeat("x", 1<<20)
	go func() {
		io.WriteString(c, payload)
		c.(*bufConn).CloseWrite()
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || len(got) != len(payload) {
		t.Fatalf("read %d bytes, %v; want %d then EOF", len(got), err, len(payload))
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrBytesUp].(float64) != 1<<20 || rec[audit.AttrBytesDown].(float64) != 1<<20 {
		t.Fatalf("audit bytes %v/%v", rec[audit.AttrBytesUp], rec[audit.AttrBytesDown])
	}
}

func TestIdleTimeout(t *testing.T) {
	e := newEnv(t, defaultPolicy(), func(c *proxy.Config) { c.IdleTimeout = 300 * time.Millisecond })
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	c, _ := e.connect("allowed.test:"+port, true)
	roundTrip(t, c, "hi")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("idle tunnel not closed: %v", err)
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrClose] != "idle timeout" {
		t.Fatalf("audit = %v", rec)
	}
}

func TestConnectionCap(t *testing.T) {
	e := newEnv(t, defaultPolicy(), func(c *proxy.Config) { c.MaxConns = 2 })
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	a, _ := e.connect("allowed.test:"+port, true)
	b, _ := e.connect("also.test:"+port, true)
	roundTrip(t, a, "a")
	roundTrip(t, b, "b")
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 503 || !strings.HasPrefix(resp.Header.Get("X-Proxy-Error"), "too many connections") {
		t.Fatalf("over the cap: %d %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
}

func TestCloseEndsTunnels(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	c, _ := e.connect("allowed.test:"+port, true)
	roundTrip(t, c, "x")
	done := make(chan struct{})
	go func() { e.srv.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("tunnel open after Close: %v", err)
	}
}

// TestProxyEnvironmentIgnored sets every proxy variable to a trap server
// before the proxy is built, and proves the trap sees nothing.
func TestProxyEnvironmentIgnored(t *testing.T) {
	trap, hits := countingTrap(t)
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(v, "http://"+trap.Addr().String())
	}
	t.Setenv("NO_PROXY", "")
	e := newEnv(t, defaultPolicy())
	resp, err := e.client().Get("https://allowed.test:" + e.port + "/")
	if err != nil {
		t.Fatal(err)
	}
	if body(t, resp) != "tls hello allowed.test:"+e.port {
		t.Fatal("wrong CONNECT answer")
	}
	resp, err = e.client().Get("http://allowed.test:" + e.hport + "/")
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("plain HTTP: %d", resp.StatusCode)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the trap proxy from the environment saw %d connections", n)
	}
}

func TestHTTPSURLThroughPlainProxyRefused(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET https://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\nProxy-Authorization: %s\r\n\r\n", e.port, basic(e.srv.User(), e.srv.Secret()))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 403 || !strings.HasPrefix(resp.Header.Get("X-Proxy-Error"), `bad request: scheme "https"`) {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
}

func TestUnixListener(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go e.srv.Serve(ln)
	c := e.client()
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}
	resp, err := c.Get("https://allowed.test:" + e.port + "/")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); got != "tls hello allowed.test:"+e.port {
		t.Fatalf("body %q", got)
	}
}

// TestNoLeak opens and closes 1,000 tunnels and compares goroutines and
// open sockets before and after. Only socket descriptors are counted
// (splice keeps a pool of pipes), and the garbage collector is off while
// the tunnels run and the counts are compared: a socket that no code closes
// is closed by its finalizer after a GC cycle, so with GC on a missing
// Close would go unseen. With GC off no cycle runs, so no finalizer can.
func TestNoLeak(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	// Warm up pools (resolver, goroutines of the test servers).
	c, _ := e.connect("allowed.test:"+port, true)
	roundTrip(t, c, "w")
	c.Close()
	waitFor(t, func() bool { return e.srv.ActiveTunnels() == 0 })
	// Collect what earlier tests left for finalizers, then stop collecting.
	runtime.GC()
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	g0, f0 := runtime.NumGoroutine(), openSockets(t)

	const n, par = 1000, 8
	var wg sync.WaitGroup
	sem := make(chan struct{}, par)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := oneTunnel(e, "allowed.test:"+port, i); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		return e.srv.ActiveTunnels() == 0 && runtime.NumGoroutine() <= g0+2 && openSockets(t) <= f0+2
	})
	if g, f := runtime.NumGoroutine(), openSockets(t); g > g0+2 || f > f0+2 {
		t.Fatalf("after %d tunnels: goroutines %d -> %d, sockets %d -> %d", n, g0, g, f0, f)
	}
	if echo.Accepted() < n {
		t.Fatalf("echo accepted %d, want >= %d", echo.Accepted(), n)
	}
}

func oneTunnel(e *env, target string, i int) error {
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n", target, basic(e.srv.User(), e.srv.Secret()))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("tunnel %d: %s", i, resp.Status)
	}
	msg := fmt.Sprintf("msg-%d", i)
	io.WriteString(c, msg)
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(br)
	if err != nil || string(got) != msg {
		return fmt.Errorf("tunnel %d: echo %q, %v", i, got, err)
	}
	return nil
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// openSockets counts this process's open socket descriptors (readlink of
// /proc/self/fd/N is "socket:[inode]"); pipes, files and the directory
// being read are not counted.
func openSockets(t *testing.T) int {
	testenv.OnlyOn(t, "linux") // reads /proc
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		testenv.SkipOrFail(t, "no /proc/self/fd")
	}
	n := 0
	for _, ent := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + ent.Name()); err == nil && strings.HasPrefix(l, "socket:[") {
			n++
		}
	}
	return n
}

func TestPolicyFromBoundAndErrors(t *testing.T) {
	if _, err := proxy.New(proxy.Config{Policy: proxy.Policy{Allow: []string{"*.com"}}}); err == nil || !strings.Contains(err.Error(), "public suffix") {
		t.Fatalf("New with *.com: %v", err)
	}
	if _, err := proxy.New(proxy.Config{Policy: proxy.Policy{Allow: []string{"a.test"}, AllowPrivate: []netip.Prefix{{}}}}); err == nil {
		t.Fatal("New accepted an invalid prefix")
	}
}

// TestPolicySwapEndsPlainHTTPStream: a streaming plain-HTTP response to a
// host the new policy refuses stops within a second of SetPolicy.
func TestPolicySwapEndsPlainHTTPStream(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	stop := make(chan struct{})
	defer close(stop)
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 200; i++ {
			select {
			case <-stop:
				return
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			io.WriteString(w, "tick\n")
			w.(http.Flusher).Flush()
		}
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go slow.Serve(ln)
	defer slow.Close()
	_, port := splitPort(ln.Addr().String())
	resp, err := e.client().Get("http://allowed.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if l, err := br.ReadString('\n'); err != nil || l != "tick\n" {
		t.Fatalf("first tick %q %v", l, err)
	}
	pol := defaultPolicy()
	pol.Allow = []string{"also.test"}
	start := time.Now()
	e.srv.SetPolicy(pol)
	for {
		if _, err := br.ReadString('\n'); err != nil {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("stream still flowing 5s after the swap")
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("stream ended %v after the swap, want within 1s", d)
	}
	t.Logf("stream ended after %v", time.Since(start))
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrClose] != "policy changed: not in allowlist: allowed.test" {
		t.Fatalf("audit %v", rec)
	}
	t.Logf("audit after %v", time.Since(start))
}

// TestIdleCountsServerTraffic: a server that keeps talking to a silent
// client keeps the tunnel alive past the idle timeout.
func TestIdleCountsServerTraffic(t *testing.T) {
	e := newEnv(t, defaultPolicy(), func(c *proxy.Config) { c.IdleTimeout = 300 * time.Millisecond })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const ticks = 20
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for i := 0; i < ticks; i++ {
			time.Sleep(50 * time.Millisecond)
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
		}
	}()
	_, port := splitPort(ln.Addr().String())
	c, _ := e.connect("allowed.test:"+port, true)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, _ := io.ReadAll(c)
	if len(got) != ticks {
		t.Fatalf("got %d ticks over %v of server-only traffic, want %d", len(got), ticks*50*time.Millisecond, ticks)
	}
}

// TestIPv6Loopback: an allowed name with only an AAAA answer, opened by
// AllowPrivate ::1/128.
func TestIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		testenv.SkipOrFail(t, "no IPv6 loopback: "+err.Error())
	}
	ln.Close()
	pol := defaultPolicy()
	pol.Allow = append(pol.Allow, "six.test")
	pol.AllowPrivate = append(pol.AllowPrivate, netip.MustParsePrefix("::1/128"))
	e := newEnv(t, pol)
	e.dns.Add(t, "six.test. 60 IN AAAA ::1")
	echo := proxytest.NewEcho(t, mustListen(t, "tcp", "[::1]:0"), "")
	_, port := splitPort(echo.Addr)
	c, resp := e.connect("six.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	roundTrip(t, c, "v6")
	c.Close()
	rec := e.audit.waitAudit(t, "six.test")
	if rec[audit.AttrAddr] != "[::1]:"+port {
		t.Fatalf("audit %v", rec)
	}
}

func mustListen(t *testing.T, network, addr string) net.Listener {
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// swapResolver resolves like the default resolver, but first swaps the
// proxy's policy to one that no longer allows the name: the swap lands
// after the name was decided and before the request or tunnel is
// registered, the window a live policy change must not miss.
type swapResolver struct {
	inner proxy.Resolver
	srv   **proxy.Server
	to    proxy.Policy
}

func (r swapResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if err := (*r.srv).SetPolicy(r.to); err != nil {
		return nil, err
	}
	return r.inner.LookupNetIP(ctx, network, host)
}

func TestPolicySwapDuringDecision(t *testing.T) {
	var srv *proxy.Server
	to := defaultPolicy()
	to.Allow = []string{"also.test"}
	e := newEnv(t, defaultPolicy(), func(c *proxy.Config) {
		c.Resolver = swapResolver{inner: proxy.NewResolver(c.DNSUpstream), srv: &srv, to: to}
		c.ResolveCacheTTL = -1 // every decision resolves, so every one swaps
	})
	srv = e.srv
	want := "policy changed: not in allowlist: allowed.test"
	t.Run("plain http", func(t *testing.T) {
		resp, err := e.client().Get("http://allowed.test:" + e.hport + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 403 || resp.Header.Get("X-Proxy-Error") != want {
			t.Fatalf("got %d %q, want 403 %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), want)
		}
	})
	if err := srv.SetPolicy(defaultPolicy()); err != nil {
		t.Fatal(err)
	}
	t.Run("connect", func(t *testing.T) {
		_, resp := e.connect("allowed.test:"+e.port, true)
		if resp.StatusCode != 403 || resp.Header.Get("X-Proxy-Error") != want {
			t.Fatalf("got %d %q, want 403 %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), want)
		}
		rec := e.audit.waitAuditKind(t, "allowed.test", "connect") // not the plain request's line
		if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != want {
			t.Fatalf("audit = %v", rec)
		}
	})
}

// TestUnparsedRequestsAreRefusedLikeDenials: requests net/http refuses to
// parse before any handler runs (a bad target, a malformed header, a head
// over the size cap) get the proxy's own refusal, 403 with the reason in
// X-Proxy-Error and the body, and an audit line, instead of net/http's
// bare 400/431.
func TestUnparsedRequestsAreRefusedLikeDenials(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	cases := []struct {
		name, head string
		host       string
	}{
		{"bad connect target", "CONNECT exa%6dple.test:443 HTTP/1.1\r\nHost: x\r\n\r\n", "exa%6dple.test:443"},
		{"malformed header", "GET http://one.test/ HTTP/1.1\r\nHost: one.test\r\nno colon here\r\n\r\n", "http://one.test/"},
		{"head over the cap", "GET http://two.test/ HTTP/1.1\r\nHost: two.test\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", "http://two.test/"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			go io.WriteString(conn, c.head) // the server may answer before reading it all
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			reason := resp.Header.Get("X-Proxy-Error")
			if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(reason, "bad request: the request could not be parsed (") {
				t.Fatalf("got %d %q, want 403 and the reason", resp.StatusCode, reason)
			}
			if b := body(t, resp); b != reason+"\n" {
				t.Fatalf("body %q, want the reason line", b)
			}
			rec := e.audit.waitAudit(t, c.host)
			if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != reason {
				t.Fatalf("audit = %v", rec)
			}
		})
	}
}

// countingTrap is a listener on loopback that counts and closes every
// connection it gets, for tests proving that nothing reaches it.
func countingTrap(t *testing.T) (net.Listener, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	trap, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Serve(t, trap, func(net.Conn) { hits.Add(1) })
	return trap, &hits
}
