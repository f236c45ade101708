package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/proxy"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// syncBuffer is an audit sink that tests read while the proxy writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the audit records written so far.
func (s *syncBuffer) lines(t testing.TB) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		m := map[string]any{}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("audit line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// waitAudit waits (bounded) for an audit record about host and returns it.
func (s *syncBuffer) waitAudit(t testing.TB, host string) map[string]any {
	t.Helper()
	return s.waitAuditKind(t, host, "")
}

// waitAuditKind is waitAudit for the first record of one kind ("connect",
// "http", "dns"; "" for any).
func (s *syncBuffer) waitAuditKind(t testing.TB, host, kind string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		for _, m := range s.lines(t) {
			if m[audit.AttrHost] == host && (kind == "" || m[audit.AttrKind] == kind) {
				return m
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s audit line for %s; have %v", kind, host, s.lines(t))
	return nil
}

// env is one proxy on loopback with a fake DNS upstream and real servers.
type env struct {
	t       testing.TB
	srv     *proxy.Server
	addr    string
	url     *url.URL
	dns     *proxytest.DNS
	audit   *syncBuffer
	cert    *proxytest.Cert
	tlsSrv  *httptest.Server // HTTPS, cert for the *.test names
	httpSrv *httptest.Server // plain HTTP, echoes the Host it saw
	port    string           // tlsSrv port
	hport   string           // httpSrv port
	clients []*http.Client
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

func defaultPolicy() proxy.Policy {
	return proxy.Policy{
		Allow:        []string{"allowed.test", "*.wild.test", "denied.test", "meta.test", "private.test", "also.test"},
		Deny:         []string{"denied.test"},
		AllowPrivate: loopback,
	}
}

func newEnv(t testing.TB, pol proxy.Policy, mod ...func(*proxy.Config)) *env {
	t.Helper()
	e := &env{t: t, dns: proxytest.NewDNS(t), audit: &syncBuffer{}}
	e.dns.Add(t,
		"allowed.test. 60 IN A 127.0.0.1",
		"also.test. 60 IN A 127.0.0.1",
		"a.wild.test. 60 IN A 127.0.0.1",
		"denied.test. 60 IN A 127.0.0.1",
		"unlisted.test. 60 IN A 127.0.0.1",
		"meta.test. 60 IN A 169.254.169.254",
		"private.test. 60 IN A 10.1.2.3",
	)
	e.cert = proxytest.NewCert(t, "allowed.test", "also.test", "a.wild.test", "other.test")
	e.tlsSrv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "tls hello %s", r.Host)
	}))
	e.tlsSrv.TLS = &tls.Config{Certificates: []tls.Certificate{e.cert.TLS}}
	e.tlsSrv.StartTLS()
	t.Cleanup(e.tlsSrv.Close)
	e.httpSrv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "http hello host=%s body=%s", r.Host, body)
	}))
	t.Cleanup(e.httpSrv.Close)
	_, e.port, _ = net.SplitHostPort(e.tlsSrv.Listener.Addr().String())
	_, e.hport, _ = net.SplitHostPort(e.httpSrv.Listener.Addr().String())

	cfg := proxy.Config{
		SandboxID:   "sbx-test",
		Policy:      pol,
		DNSUpstream: e.dns.Addr,
		Audit:       slog.New(slog.NewJSONHandler(e.audit, nil)),
		DialTimeout: 3 * time.Second,
	}
	for _, m := range mod {
		m(&cfg)
	}
	srv, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.srv, e.addr = srv, ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	e.url, _ = url.Parse(srv.URL(e.addr))
	return e
}

// client is a Go net/http client through the proxy that trusts the test
// certificate.
func (e *env) client() *http.Client {
	c := &http.Client{
		Transport: &http.Transport{
			Proxy:           http.ProxyURL(e.url),
			TLSClientConfig: &tls.Config{RootCAs: e.cert.Pool},
		},
		Timeout: 10 * time.Second,
	}
	e.clients = append(e.clients, c)
	return c
}

// closeIdle closes the keep-alive connections of every client, which ends
// their tunnels.
func (e *env) closeIdle() {
	for _, c := range e.clients {
		c.CloseIdleConnections()
	}
}

// connect opens a raw CONNECT to target and returns the connection and the
// response status line and X-Proxy-Error.
func (e *env) connect(target string, auth bool) (net.Conn, *http.Response) {
	e.t.Helper()
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	req := fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n", target, target)
	if auth {
		req += "Proxy-Authorization: " + basic(e.srv.User(), e.srv.Secret()) + "\r\n"
	}
	req += "\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		e.t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		e.t.Fatalf("CONNECT %s: %v", target, err)
	}
	c.SetReadDeadline(time.Time{})
	return &bufConn{TCPConn: c.(*net.TCPConn), r: br}, resp
}

// bufConn reads what the response reader buffered first.
type bufConn struct {
	*net.TCPConn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

func basic(u, p string) string {
	r := &http.Request{Header: http.Header{}}
	r.SetBasicAuth(u, p)
	return r.Header.Get("Authorization")
}

func body(t testing.TB, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func discardLogger() *slog.Logger { return slog.New(slog.NewJSONHandler(io.Discard, nil)) }
