package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/proxy"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

const realToken = "ghp_RealSecretValue0123456789abcdefABCD"

// credEnv is a proxy with one credential for allowed.test, an upstream
// that demands it and echoes what it got, and a client that trusts the
// sandbox CA (as a sandbox does).
type credEnv struct {
	*env
	ca   *proxy.CA
	cred proxy.Credential
	port string
	mu   sync.Mutex
	seen []http.Header // request headers the upstream got
}

// newCredEnv's upstream is verified with the servers' certificate when
// trust is set, else with no root at all.
func newCredEnv(t testing.TB, trust bool, mod ...func(*proxy.Config)) *credEnv {
	t.Helper()
	ph, err := proxy.NewPlaceholder(realToken)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ph, "ghp_") || len(ph) != len(realToken) || ph == realToken {
		t.Fatalf("placeholder %q: want ghp_ and the value's length", ph)
	}
	ce := &credEnv{cred: proxy.Credential{Name: "GITHUB_TOKEN", Hosts: []string{"allowed.test"}, Value: realToken, Placeholder: ph}}
	if ce.ca, err = proxy.NewCA([]string{"allowed.test"}); err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	ce.env = newEnv(t, defaultPolicy(), func(c *proxy.Config) {
		c.Credentials = []proxy.Credential{ce.cred}
		c.CA = ce.ca
		c.UpstreamRoots = roots
		for _, m := range mod {
			m(c)
		}
	})
	if trust {
		leaf, err := x509.ParseCertificate(ce.env.cert.TLS.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		roots.AddCert(leaf)
	}
	ce.port = ce.serve(t, true, ce.serveEcho)
	return ce
}

// serveEcho demands the real token (Bearer, Basic or X-Api-Key) and
// echoes the request's headers and body, and the Authorization header in
// a response header.
func (ce *credEnv) serveEcho(w http.ResponseWriter, r *http.Request) {
	ce.mu.Lock()
	ce.seen = append(ce.seen, r.Header.Clone())
	ce.mu.Unlock()
	_, pass, _ := r.BasicAuth()
	ok := r.Header.Get("Authorization") == "Bearer "+realToken || pass == realToken || r.Header.Get("X-Api-Key") == realToken
	if r.URL.Path == "/public" {
		ok = true
	}
	if r.URL.Path == "/br" {
		w.Header().Set("Content-Encoding", "br")
	}
	if r.URL.Path == "/identity-then-br" {
		w.Header()["Content-Encoding"] = []string{"identity", "br"}
	}
	w.Header().Set("X-Echo-Auth", r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
	w.Header().Set("X-Proto", r.Proto)
	if r.URL.Path == "/trailer" {
		w.Header().Set("Trailer", "X-Echo-Trailer")
		io.WriteString(w, "body ")
		w.(http.Flusher).Flush()
		io.WriteString(w, realToken)
		w.Header().Set("X-Echo-Trailer", "t="+realToken)
		return
	}
	if r.URL.Path == "/redirect" {
		w.Header().Set("Location", "https://allowed.test/next?token="+realToken)
		w.WriteHeader(http.StatusFound)
		return
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	b, _ := io.ReadAll(r.Body)
	r.Header.Write(w)
	fmt.Fprintf(w, "\nbody=%s\nraw=%s\n", b, realToken)
}

// serve starts an upstream for the credential host (the servers'
// certificate; HTTP/2 offered when h2) and returns its port.
func (ce *credEnv) serve(t testing.TB, h2 bool, h http.HandlerFunc) string {
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}}
	srv.EnableHTTP2 = h2
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// switched is a WebSocket upgrade's answer.
const switched = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"

// serveRaw starts an upstream for the credential host that answers each
// request with answer, raw, then reads its connection to the end (closed
// says when, once).
func (ce *credEnv) serveRaw(t testing.TB, answer string) (port string, closed <-chan struct{}) {
	done := make(chan struct{})
	var once sync.Once
	port = ce.serve(t, false, func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(brw, answer)
		brw.Flush()
		io.Copy(io.Discard, c)
		once.Do(func() { close(done) })
	})
	return port, done
}

// rawTLS is an HTTP/1.1 client's TLS session through the proxy with the
// credential host on port, trusting the sandbox CA.
func (ce *credEnv) rawTLS(t testing.TB, port string) *tls.Conn {
	conn, resp := ce.env.connect("allowed.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %d", resp.StatusCode)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ce.ca.Certificate())
	tc := tls.Client(conn, &tls.Config{ServerName: "allowed.test", RootCAs: pool, NextProtos: []string{"http/1.1"}})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	return tc
}

func (ce *credEnv) caClient(h2 bool) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(ce.ca.Certificate())
	c := ce.env.client()
	tr := c.Transport.(*http.Transport)
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	tr.ForceAttemptHTTP2 = h2
	return c
}

// requirePassed checks, once the client's tunnels are closed, that the
// credential host's line names the placeholder as passed (what: the case).
func (ce *credEnv) requirePassed(t *testing.T, what string) {
	t.Helper()
	ce.env.closeIdle()
	rec := ce.env.audit.waitAuditKind(t, "allowed.test", "connect")
	if fmt.Sprint(rec[audit.AttrPlaceholder]) != "[GITHUB_TOKEN]" {
		t.Errorf("%s: audit placeholders %v, want [GITHUB_TOKEN]", what, rec[audit.AttrPlaceholder])
	}
}

func (ce *credEnv) url(path string) string { return "https://allowed.test:" + ce.port + path }

func noReal(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, realToken) {
		t.Errorf("%s holds the real token: %q", what, s)
	}
}

func TestCredentialInjected(t *testing.T) {
	ce := newCredEnv(t, true)
	basicPh := basic("x-access-token", ce.cred.Placeholder)
	for _, tc := range []struct {
		name   string
		h2     bool
		header string
		value  string
	}{
		{"bearer", false, "Authorization", "Bearer " + ce.cred.Placeholder},
		{"basic as git sends it", false, "Authorization", basicPh},
		{"custom header", false, "X-Api-Key", ce.cred.Placeholder},
		{"bearer over HTTP/2", true, "Authorization", "Bearer " + ce.cred.Placeholder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", ce.url("/echo"), strings.NewReader("payload "+ce.cred.Placeholder))
			req.Header.Set(tc.header, tc.value)
			resp, err := ce.caClient(tc.h2).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := body(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d (the upstream did not get the real token): %s", resp.StatusCode, b)
			}
			wantProto := "HTTP/1.1"
			if tc.h2 {
				wantProto = "HTTP/2.0"
			}
			// The upstream's session is the proxy's own: HTTP/2 when the
			// server offers it, whatever the client speaks.
			if resp.Proto != wantProto || resp.Header.Get("X-Proto") != "HTTP/2.0" {
				t.Errorf("protocol to the client %s, to the upstream %s; want %s and HTTP/2.0", resp.Proto, resp.Header.Get("X-Proto"), wantProto)
			}
			noReal(t, "response body", b)
			for k, v := range resp.Header {
				noReal(t, "response header "+k, strings.Join(v, ","))
			}
			if !strings.Contains(b, "raw="+ce.cred.Placeholder) {
				t.Errorf("the real token in the body was not replaced by the placeholder: %q", b)
			}
			if got := resp.Header.Get("X-Echo-Auth"); got != tc.value {
				t.Errorf("echoed header = %q, want what the client sent, %q", got, tc.value)
			}
			if !strings.Contains(b, "payload "+ce.cred.Placeholder) {
				t.Errorf("the body's placeholder did not pass as it is: %q", b)
			}
		})
	}
	ce.env.closeIdle()
	rec := ce.env.audit.waitAuditKind(t, "allowed.test", "connect")
	if rec[audit.AttrTerminated] != true || fmt.Sprint(rec[audit.AttrCredentials]) != "[GITHUB_TOKEN]" {
		t.Errorf("audit line: terminated %v credentials %v, want true [GITHUB_TOKEN]", rec[audit.AttrTerminated], rec[audit.AttrCredentials])
	}
	for _, l := range ce.env.audit.lines(t) {
		noReal(t, "audit line", fmt.Sprint(l))
	}
}

func TestCredentialPlaceholderInOtherHeaderAudited(t *testing.T) {
	ce := newCredEnv(t, true)
	req, _ := http.NewRequest("GET", ce.url("/public"), nil)
	req.Header.Set("X-Amz-Meta-Note", ce.cred.Placeholder)
	resp, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	ce.requirePassed(t, "a placeholder in a header the value does not go into")
}

func TestCredentialPlaceholderPassedAudited(t *testing.T) {
	ce := newCredEnv(t, true)
	resp, err := ce.caClient(false).Post(ce.url("/public?q="+ce.cred.Placeholder), "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	b := body(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	ce.env.closeIdle()
	rec := ce.env.audit.waitAuditKind(t, "allowed.test", "connect")
	if fmt.Sprint(rec[audit.AttrPlaceholder]) != "[GITHUB_TOKEN]" || rec[audit.AttrCredentials] != nil {
		t.Errorf("audit: placeholders %v credentials %v, want [GITHUB_TOKEN] and none injected", rec[audit.AttrPlaceholder], rec[audit.AttrCredentials])
	}
}

func TestCredentialRedirectScrubbed(t *testing.T) {
	ce := newCredEnv(t, true)
	c := ce.caClient(false)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(ce.url("/redirect"))
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if loc := resp.Header.Get("Location"); !strings.Contains(loc, ce.cred.Placeholder) {
		t.Errorf("Location = %q, want the placeholder in the real token's place", loc)
	}
}

func TestCredentialTrailerScrubbed(t *testing.T) {
	ce := newCredEnv(t, true)
	for _, h2 := range []bool{false, true} {
		resp, err := ce.caClient(h2).Get(ce.url("/trailer"))
		if err != nil {
			t.Fatal(err)
		}
		b := body(t, resp)
		if b != "body "+ce.cred.Placeholder {
			t.Errorf("h2 %v: streamed body %q", h2, b)
		}
		if got := resp.Trailer.Get("X-Echo-Trailer"); got != "t="+ce.cred.Placeholder {
			t.Errorf("h2 %v: trailer %q, want the placeholder", h2, got)
		}
	}
}

func TestCredentialOtherHostOpaque(t *testing.T) {
	ce := newCredEnv(t, true)
	var got string
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
	}))
	other.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}}
	other.StartTLS()
	t.Cleanup(other.Close)
	_, port, _ := net.SplitHostPort(other.Listener.Addr().String())
	c := ce.env.client() // trusts the servers' own certificate only
	var fp [32]byte
	c.Transport.(*http.Transport).TLSClientConfig.VerifyConnection = func(cs tls.ConnectionState) error {
		fp = sha256.Sum256(cs.PeerCertificates[0].Raw)
		return nil
	}
	req, _ := http.NewRequest("GET", "https://also.test:"+port+"/", nil)
	req.Header.Set("Authorization", "Bearer "+ce.cred.Placeholder)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if got != "Bearer "+ce.cred.Placeholder {
		t.Errorf("another host got Authorization %q, want the placeholder", got)
	}
	if want := sha256.Sum256(ce.env.cert.TLS.Certificate[0]); fp != want {
		t.Errorf("another host's certificate fingerprint %x, want the server's own %x", fp, want)
	}
	ce.env.closeIdle()
	if rec := ce.env.audit.waitAuditKind(t, "also.test", "connect"); rec[audit.AttrTerminated] != nil {
		t.Errorf("another host's tunnel was terminated: %v", rec)
	}
}

func TestCredentialBadUpstreamCertificate(t *testing.T) {
	ce := newCredEnv(t, false)
	req, _ := http.NewRequest("GET", ce.url("/echo"), nil)
	req.Header.Set("Authorization", "Bearer "+ce.cred.Placeholder)
	resp, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b := body(t, resp)
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(resp.Header.Get("X-Proxy-Error"), "certificate does not verify") {
		t.Fatalf("status %d X-Proxy-Error %q, want 502 naming the certificate", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	noReal(t, "502 body", b)
	ce.mu.Lock()
	n := len(ce.seen)
	ce.mu.Unlock()
	if n != 0 {
		t.Errorf("the upstream got %d requests over an unverified session", n)
	}
	rec := ce.env.audit.waitAuditKind(t, "allowed.test", "http")
	if rec[audit.AttrDecision] != "deny" || !strings.Contains(rec[audit.AttrReason].(string), "certificate does not verify") {
		t.Errorf("audit line %v, want a deny naming the certificate", rec)
	}
}

// TestCredentialUntrustedUpstreamRefused: a terminated host's server is
// verified by the proxy itself, with the system roots when none are
// configured (which do not hold the test servers' certificate), and
// against the host's name (a certificate its roots hold but for another
// name is refused): the request never reaches the server, the client gets
// 502 naming the certificate.
func TestCredentialUntrustedUpstreamRefused(t *testing.T) {
	elsewhere := proxytest.NewCert(t, "elsewhere.test")
	for _, tc := range []struct {
		name  string
		roots *x509.CertPool
		cert  *tls.Certificate // the upstream's; nil: the servers' (names the host)
	}{
		{name: "system roots", roots: nil},
		{name: "trusted certificate for another name", roots: elsewhere.Pool, cert: &elsewhere.TLS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ce := newCredEnv(t, false, func(c *proxy.Config) { c.UpstreamRoots = tc.roots })
			port := ce.port
			if tc.cert != nil {
				var got atomic.Int64
				srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
				srv.TLS = &tls.Config{Certificates: []tls.Certificate{*tc.cert}}
				srv.StartTLS()
				t.Cleanup(func() {
					srv.Close()
					if n := got.Load(); n != 0 {
						t.Errorf("the upstream got %d requests over an unverified session", n)
					}
				})
				_, port, _ = net.SplitHostPort(srv.Listener.Addr().String())
			}
			req, _ := http.NewRequest("GET", "https://allowed.test:"+port+"/echo", nil)
			req.Header.Set("Authorization", "Bearer "+ce.cred.Placeholder)
			resp, err := ce.caClient(false).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := body(t, resp)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(resp.Header.Get("X-Proxy-Error"), "certificate does not verify") {
				t.Fatalf("status %d X-Proxy-Error %q, want 502 naming the certificate", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
			}
			noReal(t, "502 body", b)
			ce.mu.Lock()
			n := len(ce.seen)
			ce.mu.Unlock()
			if n != 0 {
				t.Errorf("the upstream got %d requests over an unverified session", n)
			}
		})
	}
}

func TestCredentialHostRuleInsideTunnel(t *testing.T) {
	ce := newCredEnv(t, true)
	req, _ := http.NewRequest("GET", ce.url("/echo"), nil)
	req.Host = "also.test"
	req.Header.Set("Authorization", "Bearer "+ce.cred.Placeholder)
	resp, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a request for also.test inside allowed.test's tunnel: status %d, want 421", resp.StatusCode)
	}
	ce.mu.Lock()
	defer ce.mu.Unlock()
	if len(ce.seen) != 0 {
		t.Errorf("the upstream got the misdirected request")
	}
}

func TestCredentialUnscrubbableEncodingRefused(t *testing.T) {
	ce := newCredEnv(t, true)
	for _, path := range []string{"/br", "/identity-then-br"} {
		resp, err := ce.caClient(false).Get(ce.url(path))
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("%s: an unsolicited encoding: status %d, want 502", path, resp.StatusCode)
		}
	}
}

func TestCredentialWebSocket(t *testing.T) {
	ce := newCredEnv(t, true)
	// The value is split across two writes 5 ms apart: a hold longer than
	// a loaded machine's delay between them.
	proxy.SetStreamHold(ce.env.srv, time.Second)
	ws := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" || r.Header.Get("Authorization") != "Bearer "+realToken {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		// The token sent whole, then split across two writes.
		fmt.Fprintf(brw, "echo %s token %s\n", strings.TrimSpace(line), realToken)
		brw.Flush()
		io.WriteString(c, "split "+realToken[:10])
		time.Sleep(5 * time.Millisecond)
		io.WriteString(c, realToken[10:]+" end\n")
	}))
	ws.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}}
	ws.StartTLS()
	t.Cleanup(ws.Close)
	_, port, _ := net.SplitHostPort(ws.Listener.Addr().String())
	conn, resp := ce.env.connect("allowed.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ce.ca.Certificate())
	tc := tls.Client(conn, &tls.Config{ServerName: "allowed.test", RootCAs: pool, NextProtos: []string{"http/1.1"}})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(tc, "GET /ws HTTP/1.1\r\nHost: allowed.test:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: permessage-deflate\r\nAuthorization: Bearer %s\r\n\r\n", port, ce.cred.Placeholder)
	br := bufio.NewReader(tc)
	up, err := http.ReadResponse(br, nil)
	if err != nil || up.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", up, err)
	}
	fmt.Fprintf(tc, "hello\n")
	var all bytes.Buffer
	for range 2 {
		l, err := br.ReadString('\n')
		all.WriteString(l)
		if err != nil {
			t.Fatalf("reading the upgraded stream: %v (got %q)", err, all.String())
		}
	}
	noReal(t, "upgraded stream", all.String())
	want := "echo hello token " + ce.cred.Placeholder + "\nsplit " + ce.cred.Placeholder + " end\n"
	if all.String() != want {
		t.Errorf("upgraded stream %q, want %q", all.String(), want)
	}
}

// The proxy cannot tell a credential host's server-first protocol from a
// TLS client that is slow to speak: the server's greeting is passed at once
// and the tunnel stays opaque.
func TestCredentialHostServerFirst(t *testing.T) {
	ce := newCredEnv(t, true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.WriteString(c, "220 greeting\r\n")
		b := make([]byte, 64)
		n, _ := c.Read(b)
		fmt.Fprintf(c, "got %s", b[:n])
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	conn, resp := ce.env.connect("allowed.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	if l, err := br.ReadString('\n'); err != nil || l != "220 greeting\r\n" {
		t.Fatalf("greeting %q %v", l, err)
	}
	io.WriteString(conn, "HELO x")
	if b, _ := io.ReadAll(br); string(b) != "got HELO x" {
		t.Errorf("reply %q", b)
	}
}

func TestCredentialConfigRefused(t *testing.T) {
	ca, err := proxy.NewCA([]string{"allowed.test"})
	if err != nil {
		t.Fatal(err)
	}
	good := proxy.Credential{Name: "T", Hosts: []string{"allowed.test"}, Value: realToken, Placeholder: "ghp_" + strings.Repeat("x", len(realToken)-4)}
	for name, cfg := range map[string]proxy.Config{
		"no CA":              {Credentials: []proxy.Credential{good}},
		"host not in CA":     {Credentials: []proxy.Credential{{Name: "T", Hosts: []string{"also.test"}, Value: good.Value, Placeholder: good.Placeholder}}, CA: ca},
		"short value":        {Credentials: []proxy.Credential{{Name: "T", Hosts: good.Hosts, Value: "abc", Placeholder: "xyz"}}, CA: ca},
		"placeholder length": {Credentials: []proxy.Credential{{Name: "T", Hosts: good.Hosts, Value: good.Value, Placeholder: "short-one"}}, CA: ca},
		"line break":         {Credentials: []proxy.Credential{{Name: "T", Hosts: good.Hosts, Value: "abcdefgh\n", Placeholder: "abcdefgX\n"}}, CA: ca},
	} {
		cfg.Policy = defaultPolicy()
		if _, err := proxy.New(cfg); err == nil {
			t.Errorf("%s: proxy.New accepted it", name)
		}
	}
}

func TestCAIsNameConstrained(t *testing.T) {
	ca, err := proxy.NewCA([]string{"allowed.test"})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Certificate())
	leaf, err := ca.Leaf("allowed.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "allowed.test"}); err != nil {
		t.Errorf("leaf for allowed.test: %v", err)
	}
	if _, err := ca.Leaf("other.test"); err == nil {
		t.Errorf("the CA issued a certificate for a host it was not made for")
	}
	if len(ca.Certificate().PermittedDNSDomains) != 1 || !ca.Certificate().PermittedDNSDomainsCritical {
		t.Errorf("CA constraints %v", ca.Certificate().PermittedDNSDomains)
	}
	if bytes.Contains(ca.PEM(), []byte("PRIVATE")) {
		t.Errorf("the CA's PEM holds a key")
	}
}

func TestPlaceholderShape(t *testing.T) {
	for _, v := range []string{realToken, "github_pat_11AAAAAAA0abcdefghijklmnopqrstuvwxyz", "sk-ant-api03-abcDEF123-xyz_", "AKIAIOSFODNN7EXAMPLE", "plainsecretvalue", "a.b.c-d_e.1234"} {
		p, err := proxy.NewPlaceholder(v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if len(p) != len(v) || p == v {
			t.Errorf("%q -> %q: want another value of the same length", v, p)
		}
		for i := range v {
			if cls(v[i]) != cls(p[i]) {
				t.Errorf("%q -> %q: byte %d changes class", v, p, i)
				break
			}
		}
	}
	if p, _ := proxy.NewPlaceholder(realToken); !strings.HasPrefix(p, "ghp_") {
		t.Errorf("prefix not kept: %q", p)
	}
	const ant = "sk-ant-api03-" + "Abcdefghij0123456789Abcdefghij0123456789" + "-LastTwentyChars_xyAA"
	if p, _ := proxy.NewPlaceholder(ant); !strings.HasPrefix(p, "sk-ant-api03-") || !strings.HasSuffix(p, ant[len(ant)-20:]) || p == ant {
		t.Errorf("an Anthropic key's placeholder %q: want its prefix and last 20 characters kept (Claude Code approves a key by them), the rest new", p)
	}
	if _, err := proxy.NewPlaceholder("short"); err == nil {
		t.Errorf("a 5-byte value got a placeholder")
	}
	_ = base64.StdEncoding
	_ = proxytest.NewCert
}

func cls(b byte) int {
	switch {
	case b >= 'a' && b <= 'z':
		return 1
	case b >= 'A' && b <= 'Z':
		return 2
	case b >= '0' && b <= '9':
		return 3
	}
	return int(b) + 10
}

// BenchmarkCredentialHost measures a terminated credential host against an
// opaque tunnel to the same server in the same run, interleaved: a 1 MiB
// download and a small request on a kept-alive connection. The ratios are
// terminated over opaque (throughput: higher is better; latency: lower).
func BenchmarkCredentialHost(b *testing.B) {
	ce := newCredEnv(b, true)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.Header().Set("Content-Length", fmt.Sprint(len(payload)))
			w.Write(payload)
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}}
	srv.StartTLS()
	b.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	term, opaque := ce.caClient(false), ce.env.client()
	get := func(c *http.Client, host, path string) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest("GET", "https://"+host+":"+port+path, nil)
		req.Header.Set("Authorization", "Bearer "+ce.cred.Placeholder)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	// also.test is not a credential host; both names are the same server.
	get(term, "allowed.test", "/")
	get(opaque, "also.test", "/")
	var tBig, oBig, tSmall, oSmall time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tBig += get(term, "allowed.test", "/big")
		oBig += get(opaque, "also.test", "/big")
		tSmall += get(term, "allowed.test", "/")
		oSmall += get(opaque, "also.test", "/")
	}
	n := float64(b.N)
	b.ReportMetric(float64(len(payload))/(tBig.Seconds()/n)/1e6, "MB/s-terminated")
	b.ReportMetric(float64(len(payload))/(oBig.Seconds()/n)/1e6, "MB/s-opaque")
	b.ReportMetric(oBig.Seconds()/tBig.Seconds(), "throughput-ratio")
	b.ReportMetric(float64(tSmall.Microseconds())/n, "us/req-terminated")
	b.ReportMetric(float64(oSmall.Microseconds())/n, "us/req-opaque")
	b.ReportMetric(float64((tSmall-oSmall).Microseconds())/n, "us/req-added")
}

func TestCredentialKeepAlive(t *testing.T) {
	ce := newCredEnv(t, true)
	c := ce.caClient(false)
	for i := range 3 {
		req, _ := http.NewRequest("GET", ce.url("/echo"), nil)
		req.Header.Set("X-Api-Key", ce.cred.Placeholder)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	ce.env.closeIdle()
	ce.env.audit.waitAuditKind(t, "allowed.test", "connect")
	n := 0
	for _, l := range ce.env.audit.lines(t) {
		if l[audit.AttrHost] == "allowed.test" && l[audit.AttrKind] == "connect" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("3 requests on one kept-alive client made %d tunnels, want 1", n)
	}
}

// A malformed answer quoting the value: the 502's reason is scrubbed too.
func TestCredentialUpstreamErrorScrubbed(t *testing.T) {
	ce := newCredEnv(t, true)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "HTTX/9 "+realToken+"\r\n\r\n")
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	resp, err := ce.caClient(false).Get("https://allowed.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b := body(t, resp)
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	noReal(t, "502 body", b)
	noReal(t, "X-Proxy-Error", resp.Header.Get("X-Proxy-Error"))
	for _, l := range ce.env.audit.lines(t) {
		noReal(t, "audit line", fmt.Sprint(l))
	}
}

// The review's findings (helper-37), each as the upstream would try it.

func TestCredentialInformationalScrubbed(t *testing.T) {
	ce := newCredEnv(t, true)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</x?k="+r.Header.Get("X-Api-Key")+">; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for _, h2 := range []bool{false, true} {
		var links []string
		trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			links = append(links, h.Get("Link"))
			return nil
		}}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "https://allowed.test:"+port+"/", nil)
		req.Header.Set("X-Api-Key", ce.cred.Placeholder)
		resp, err := ce.caClient(h2).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		if len(links) != 1 || !strings.Contains(links[0], ce.cred.Placeholder) {
			t.Errorf("h2 %v: 103 Link headers %q, want one with the placeholder", h2, links)
		}
		for _, l := range links {
			noReal(t, "103 Link", l)
		}
	}
}

func TestCredentialHeaderNamesAndLateTrailersScrubbed(t *testing.T) {
	ce := newCredEnv(t, true)
	port := ce.serve(t, true, func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("X-Api-Key")
		w.Header().Set("X-"+v, "1")
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set(http.TrailerPrefix+"X-Late", v)
		w.Header().Set(http.TrailerPrefix+"X-T-"+v, "1")
	})
	for _, h2 := range []bool{false, true} {
		req, _ := http.NewRequest("GET", "https://allowed.test:"+port+"/", nil)
		req.Header.Set("X-Api-Key", ce.cred.Placeholder)
		resp, err := ce.caClient(h2).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		for _, h := range []http.Header{resp.Header, resp.Trailer} {
			for k, v := range h {
				if strings.Contains(strings.ToLower(k), strings.ToLower(realToken)) {
					t.Errorf("h2 %v: a header name holds the value (case-folded): %s", h2, k)
				}
				noReal(t, "value of "+k, strings.Join(v, ","))
			}
		}
		if got := resp.Trailer.Get("X-Late"); got != ce.cred.Placeholder {
			t.Errorf("h2 %v: unannounced trailer %q, want the placeholder", h2, got)
		}
	}
}

// A Server-Sent-Events stream through a credential host comes event by
// event, with no hold, while a value split across two flushes is still
// swapped whole. The proxy's stream hold is an hour: an event held for it
// would fail the read's deadline; the server sends each event only once
// the client has read the one before.
func TestCredentialEventStream(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		ce := newCredEnv(t, true)
		proxy.SetStreamHold(ce.env.srv, time.Hour)
		got := make(chan string)
		ce.port = ce.serve(t, h2, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			f := w.(http.Flusher)
			for i := range 20 {
				fmt.Fprintf(w, "event: content_block_delta\ndata: {\"index\":%d,\"text\":\"sk\"}\n\n", i)
				f.Flush()
				select {
				case <-got:
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "data: "+realToken[:9])
			f.Flush()
			io.WriteString(w, realToken[9:]+"\n\n")
		})
		resp, err := ce.caClient(h2).Get(ce.url("/events"))
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		deadline := time.AfterFunc(10*time.Second, func() { resp.Body.Close() })
		for i := range 20 {
			var ev strings.Builder
			for {
				l, err := br.ReadString('\n')
				ev.WriteString(l)
				if err != nil {
					t.Fatalf("h2 %v: event %d: %v (got %q): held", h2, i, err, ev.String())
				}
				if l == "\n" {
					break
				}
			}
			if want := fmt.Sprintf("\"index\":%d,", i); !strings.Contains(ev.String(), want) {
				t.Fatalf("h2 %v: event %d: %q", h2, i, ev.String())
			}
			got <- ev.String()
		}
		rest, err := io.ReadAll(br)
		deadline.Stop()
		if err != nil {
			t.Fatalf("h2 %v: %v", h2, err)
		}
		if want := "data: " + ce.cred.Placeholder + "\n\n"; string(rest) != want {
			t.Errorf("h2 %v: the split value came as %q, want %q", h2, rest, want)
		}
		resp.Body.Close()
	}
}

func TestCredentialOnlyKeyHeadersInjected(t *testing.T) {
	ce := newCredEnv(t, true)
	req, _ := http.NewRequest("GET", ce.url("/echo"), nil)
	req.Header.Set("X-Api-Key", ce.cred.Placeholder)
	req.Header.Set("X-Amz-Meta-Note", ce.cred.Placeholder)
	req.Header.Set("Content-Type", "text/"+ce.cred.Placeholder)
	resp, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	ce.mu.Lock()
	defer ce.mu.Unlock()
	got := ce.seen[len(ce.seen)-1]
	if got.Get("X-Api-Key") != realToken || got.Get("X-Amz-Meta-Note") != ce.cred.Placeholder || got.Get("Content-Type") != "text/"+ce.cred.Placeholder {
		t.Errorf("upstream saw X-Api-Key %q, X-Amz-Meta-Note %q, Content-Type %q: want the value in the key header alone",
			got.Get("X-Api-Key"), got.Get("X-Amz-Meta-Note"), got.Get("Content-Type"))
	}
}

func TestCredentialCustomHeader(t *testing.T) {
	ce := newCredEnv(t, true, func(c *proxy.Config) { c.Credentials[0].Headers = []string{"x-my-token"} })
	seen := make(chan string, 1)
	port := ce.serve(t, false, func(w http.ResponseWriter, r *http.Request) { seen <- r.Header.Get("X-My-Token") })
	req, _ := http.NewRequest("GET", "https://allowed.test:"+port+"/", nil)
	req.Header.Set("X-My-Token", ce.cred.Placeholder)
	resp, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if got := <-seen; got != realToken {
		t.Errorf("a header the credential names got %q, want the value", got)
	}
}

// A Basic credential the proxy made for one request, echoed by a later
// one, is scrubbed too.
func TestCredentialEarlierBasicScrubbed(t *testing.T) {
	ce := newCredEnv(t, true)
	var mu sync.Mutex
	var stored string
	port := ce.serve(t, false, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if a := r.Header.Get("Authorization"); a != "" {
			stored = a
			return
		}
		io.WriteString(w, stored)
	})
	c := ce.caClient(false)
	sent := basic("someone", ce.cred.Placeholder)
	req, _ := http.NewRequest("GET", "https://allowed.test:"+port+"/store", nil)
	req.Header.Set("Authorization", sent)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	resp, err = c.Get("https://allowed.test:" + port + "/show")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); got != sent {
		t.Errorf("the stored Basic credential came back as %q, want what the client sent, %q", got, sent)
	}
}

func TestCredentialsSharingAValue(t *testing.T) {
	ph, _ := proxy.NewPlaceholder(realToken)
	ca, _ := proxy.NewCA([]string{"allowed.test"})
	a := proxy.Credential{Name: "A", Hosts: []string{"allowed.test"}, Value: realToken, Placeholder: ph}
	b := a
	b.Name = "B"
	if _, err := proxy.New(proxy.Config{Policy: defaultPolicy(), Credentials: []proxy.Credential{a, b}, CA: ca}); err != nil {
		t.Errorf("two variables, one value and one placeholder: %v", err)
	}
	b.Placeholder = "ghp_" + strings.Repeat("z", len(realToken)-4)
	if _, err := proxy.New(proxy.Config{Policy: defaultPolicy(), Credentials: []proxy.Credential{a, b}, CA: ca}); err == nil {
		t.Errorf("one value with two placeholders was accepted")
	}
}

func TestCredentialUpgradeToAnotherProtocolRefused(t *testing.T) {
	ce := newCredEnv(t, true)
	port, upstreamClosed := ce.serveRaw(t, switched)
	req, _ := http.NewRequest("GET", "https://allowed.test:"+port+"/", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket, foo")
	resp, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("a switch to another protocol than asked: %d, want 502", resp.StatusCode)
	}
	// The refused connection is closed at once, not left to the
	// tunnel's end (the client keeps its tunnel open).
	select {
	case <-upstreamClosed:
	case <-time.After(5 * time.Second):
		t.Errorf("the upstream connection of a refused switch is still open")
	}
}

func TestCredentialUpstreamConnectionsBounded(t *testing.T) {
	ce := newCredEnv(t, true)
	var conns atomic.Int32
	var mu sync.Mutex
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := release
		mu.Unlock()
		<-ch
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}} // HTTP/1.1 only
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := ce.caClient(true) // one HTTP/2 tunnel, made by a first request
	mu.Lock()
	close(release)
	mu.Unlock()
	if resp, err := c.Get("https://allowed.test:" + port + "/"); err == nil {
		body(t, resp)
	}
	mu.Lock()
	release = make(chan struct{})
	mu.Unlock()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := c.Get("https://allowed.test:" + port + "/"); err == nil {
				body(t, resp)
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	for conns.Load() < 8 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // room for any beyond the bound to show
	n := conns.Load()
	mu.Lock()
	close(release)
	mu.Unlock()
	wg.Wait()
	if n == 0 || n > 8 {
		t.Errorf("50 concurrent requests in one tunnel opened %d upstream connections, want 1..8", n)
	}
}

// A full-duplex request body is passed on as it comes, not held for the
// placeholder check.
func TestCredentialRequestBodyNotHeld(t *testing.T) {
	ce := newCredEnv(t, true)
	got := make(chan string, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 7)
		n, _ := io.ReadFull(r.Body, b)
		got <- string(b[:n])
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ce.env.cert.TLS}}
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go func() {
		req, _ := http.NewRequest("POST", "https://allowed.test:"+port+"/", pr)
		if resp, err := ce.caClient(true).Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write([]byte("hello " + ce.cred.Placeholder[:1]))
	select {
	case s := <-got:
		if s != "hello g" {
			t.Errorf("upstream read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the body's last byte (the placeholder's first) was held: a full-duplex stream would stall")
	}
}

func TestCredentialPlaceholderInBodyAudited(t *testing.T) {
	ce := newCredEnv(t, true)
	// Split across two writes: the detector keeps the last bytes of each.
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, "x="+ce.cred.Placeholder[:7])
		time.Sleep(20 * time.Millisecond)
		io.WriteString(pw, ce.cred.Placeholder[7:])
		pw.Close()
	}()
	resp, err := ce.caClient(false).Post(ce.url("/public"), "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, resp); !strings.Contains(b, "body=x="+ce.cred.Placeholder) {
		t.Fatalf("the body did not pass as it is: %q", b)
	}
	ce.requirePassed(t, "a placeholder in the body")
}

// A stream open before a later request makes a Basic encoding scrubs that
// encoding too (a host that reflects requests into an event feed).
func TestCredentialOpenStreamScrubsLaterBasic(t *testing.T) {
	ce := newCredEnv(t, true)
	feed := make(chan string, 1)
	port := ce.serve(t, false, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/feed" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "start\n")
			w.(http.Flusher).Flush()
			io.WriteString(w, "auth "+<-feed+"\n")
			return
		}
		feed <- r.Header.Get("Authorization")
	})
	c := ce.caClient(false)
	resp, err := c.Get("https://allowed.test:" + port + "/feed")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if l, _ := br.ReadString('\n'); l != "start\n" {
		t.Fatalf("feed: %q", l)
	}
	sent := basic("later-user", ce.cred.Placeholder)
	req, _ := http.NewRequest("GET", "https://allowed.test:"+port+"/login", nil)
	req.Header.Set("Authorization", sent)
	r2, err := ce.caClient(false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, r2)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if string(rest) != "auth "+sent+"\n" {
		t.Errorf("the open stream showed %q, want the Basic credential as the client sent it, %q", rest, sent)
	}
}

func TestCredentialUpgradeEdges(t *testing.T) {
	ce := newCredEnv(t, true)
	for _, tc := range []struct {
		name, answer string
		want         int
	}{
		{"no Connection: upgrade in the 101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n", http.StatusBadGateway},
		{"the value in the reason phrase", "HTTP/1.1 101 " + realToken + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", http.StatusSwitchingProtocols},
		{"an extension taken up that was not offered", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n", http.StatusBadGateway},
	} {
		t.Run(tc.name, func(t *testing.T) {
			port, closed := ce.serveRaw(t, tc.answer)
			tc2 := ce.rawTLS(t, port)
			fmt.Fprintf(tc2, "GET / HTTP/1.1\r\nHost: allowed.test:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", port)
			br := bufio.NewReader(tc2)
			status, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			noReal(t, "status line", status)
			if !strings.Contains(status, fmt.Sprint(tc.want)) {
				t.Errorf("status line %q, want %d", status, tc.want)
			}
			if tc.want == http.StatusBadGateway {
				select {
				case <-closed:
				case <-time.After(5 * time.Second):
					t.Errorf("the refused switch's upstream connection is still open")
				}
			}
		})
	}
}

func TestCredentialAnnouncedTrailerName(t *testing.T) {
	ce := newCredEnv(t, true)
	port := ce.serve(t, false, func(w http.ResponseWriter, r *http.Request) {
		name := "X-" + r.Header.Get("X-Api-Key")
		w.Header().Set("Trailer", name)
		io.WriteString(w, "body")
		w.Header().Set(name, "1")
	})
	tc := ce.rawTLS(t, port)
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: allowed.test:%s\r\nX-Api-Key: %s\r\nConnection: close\r\n\r\n", port, ce.cred.Placeholder)
	raw, _ := io.ReadAll(tc)
	if strings.Contains(strings.ToLower(string(raw)), strings.ToLower(realToken)) {
		t.Errorf("the raw answer holds the value (case-folded): %q", raw)
	}
}

func TestCredentialIdleWebSocketClosed(t *testing.T) {
	ce := newCredEnv(t, true, func(c *proxy.Config) { c.IdleTimeout = 300 * time.Millisecond })
	port, _ := ce.serveRaw(t, switched) // silent
	tc := ce.rawTLS(t, port)
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: allowed.test:%s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Api-Key: %s\r\n\r\n", port, ce.cred.Placeholder)
	br := bufio.NewReader(tc)
	if up, err := http.ReadResponse(br, nil); err != nil || up.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", up, err)
	}
	start := time.Now()
	_, err := br.ReadByte()
	if err == nil || time.Since(start) > 8*time.Second {
		t.Errorf("an idle WebSocket in a terminated tunnel: read %v after %v, want closed by the idle timeout", err, time.Since(start))
	}
	rec := ce.env.audit.waitAuditKind(t, "allowed.test", "connect")
	if rec[audit.AttrClose] != "idle timeout" {
		t.Errorf("close %v, want idle timeout", rec[audit.AttrClose])
	}
}
