package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy/tlshello"
)

// credentialIndex checks creds and ca and indexes the credentials by host.
func credentialIndex(creds []Credential, ca *CA) (map[string][]Credential, error) {
	if len(creds) == 0 {
		return nil, nil
	}
	if ca == nil {
		return nil, errors.New("proxy: credentials without a CA")
	}
	if err := CheckCredentials(creds); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	idx := map[string][]Credential{}
	for _, c := range creds {
		for _, h := range c.Hosts {
			if !ca.hosts[h] {
				return nil, fmt.Errorf("proxy: credential %s: the CA was not made for %s", c.Name, h)
			}
			idx[h] = append(idx[h], c)
		}
	}
	for h := range idx {
		// Issued now, not in the first request.
		if _, err := ca.Leaf(h); err != nil {
			return nil, fmt.Errorf("proxy: %w", err)
		}
	}
	return idx, nil
}

// runCredentialHost is a credential host's tunnel after its 200: the
// client's first flight is held (as firstFlight does) while a watcher sees
// whether the server speaks first. A ClientHello that passes the SNI rules,
// with the server silent, is terminated (terminate); anything else (a
// server-first protocol, a client that is not TLS) is relayed opaque like
// any tunnel, where the placeholder passes as it is.
func (t *tunnel) runCredentialHost(pending []byte) {
	type first struct {
		b   []byte
		err error
	}
	var spoke atomic.Bool
	fc := make(chan first, 1)
	go func() {
		b := make([]byte, 32<<10)
		n, err := t.target.Read(b)
		if n > 0 || !isTimeout(err) {
			spoke.Store(true)
			t.client.SetReadDeadline(time.Now()) // wakes the hold
		}
		fc <- first{b[:n], err}
	}()
	buf := append(make([]byte, 0, 4096), pending...)
	st, name := tlshello.NeedMore, ""
	var holdErr error
	for {
		st, name = tlshello.Parse(buf)
		if st != tlshello.NeedMore || spoke.Load() || len(buf) >= tlshello.MaxBytes {
			break
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		t.client.SetReadDeadline(time.Now().Add(t.slice()))
		n, err := t.client.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 {
			t.lastUp.Store(time.Now().UnixNano())
		}
		if err == nil {
			continue
		}
		if isTimeout(err) && !t.closing.Load() && !spoke.Load() {
			last := max(t.lastUp.Load(), t.lastDown.Load())
			if time.Since(time.Unix(0, last)) < t.s.cfg.IdleTimeout {
				continue
			}
			err = errIdle
		}
		if !isTimeout(err) || !spoke.Load() {
			holdErr = err
		}
		break
	}
	t.target.SetReadDeadline(time.Now())
	f := <-fc
	t.target.SetReadDeadline(time.Time{})
	if isTimeout(f.err) {
		f.err = nil
	}
	if holdErr != nil && !errors.Is(holdErr, io.EOF) {
		t.close(closeWhy(holdErr))
		return
	}
	if (st == tlshello.SNI || st == tlshello.NoSNI) && len(f.b) == 0 && f.err == nil && holdErr == nil {
		if err := t.checkHello(st, name, buf); err != nil {
			t.close("")
			return
		}
		t.terminate(buf)
		return
	}
	if len(f.b) > 0 {
		t.client.SetWriteDeadline(time.Now().Add(t.s.cfg.IdleTimeout))
		if _, err := t.client.Write(f.b); err != nil {
			t.close("client gone")
			return
		}
		t.rec.down += int64(len(f.b))
		t.lastDown.Store(time.Now().UnixNano())
	}
	t.relay(buf)
}

// termination is one terminated credential-host tunnel: the sandbox's TLS
// session ends here, each request is forwarded to the pinned upstream over
// a TLS session of the proxy's own, verified with the proxy's roots.
type termination struct {
	t     *tunnel
	creds []Credential // the host's
	port  string
	rp    *httputil.ReverseProxy
	tr    *http.Transport

	up, down atomic.Int64
	handlers sync.WaitGroup

	mu           sync.Mutex
	ending       bool // set once the connection ended: no handler starts after
	used, passed map[string]bool
	preDialed    net.Conn // the tunnel's first dial, used by the first upstream connection
}

// Bounds of one terminated tunnel: its upstream connections, and its
// client's concurrent HTTP/2 streams.
const (
	maxUpstreamConns = 8
	maxStreams       = 100
	// maxBasicLen bounds a Basic credential the proxy encodes (base64).
	maxBasicLen = 2048
)

// terminate serves HTTP (HTTP/1.1 and HTTP/2, by ALPN) on the client's TLS
// session with the sandbox CA's certificate for the host, until the client
// connection ends or the tunnel is closed.
func (t *tunnel) terminate(hello []byte) {
	rec := t.rec
	rec.terminated = true
	leaf, err := t.s.cfg.CA.Leaf(t.host.String())
	if err != nil {
		rec.deny(fmt.Sprintf("%s: %v", ReasonUpstreamFailure, err))
		t.close("")
		return
	}
	m := &termination{t: t, creds: t.creds, port: rec.port, used: map[string]bool{}, passed: map[string]bool{}, preDialed: t.target}
	cc := &termConn{Conn: t.client, pre: hello, up: &m.up, down: &m.down, lastUp: &t.lastUp, lastDown: &t.lastDown}
	tc := tls.Server(cc, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		NextProtos:   []string{"h2", "http/1.1"},
		MinVersion:   tls.VersionTLS12,
	})
	serverName := t.host.Name
	if t.host.IsIP() {
		serverName = t.host.IP.String()
	}
	m.tr = &http.Transport{
		Proxy:                 nil,
		DialContext:           m.dial,
		TLSClientConfig:       t.s.upstreamTLS(serverName),
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   t.s.cfg.DialTimeout,
		ResponseHeaderTimeout: t.s.cfg.HeaderTimeout,
		IdleConnTimeout:       t.s.cfg.IdleTimeout,
		MaxIdleConnsPerHost:   4,
		// One tunnel's requests share a few upstream connections: an
		// HTTP/2 client's hundreds of streams do not become as many
		// sockets of sandboxd's.
		MaxConnsPerHost:        maxUpstreamConns,
		MaxResponseHeaderBytes: 64 << 10,
	}
	m.rp = &httputil.ReverseProxy{
		Rewrite:        m.rewrite,
		Transport:      scrub1xx{rt: m.tr, s: t.s},
		ModifyResponse: m.modify,
		ErrorHandler:   m.fail,
		ErrorLog:       log.New(io.Discard, "", 0),
	}
	done := make(chan struct{})
	var once sync.Once
	srv := &http.Server{
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxStreams},
		Handler:           m,
		ReadHeaderTimeout: t.s.cfg.HeaderTimeout,
		IdleTimeout:       t.s.cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				once.Do(func() { close(done) })
			}
		},
	}
	ln := &oneConnListener{c: tc, closed: make(chan struct{})}
	go srv.Serve(ln)
	stopIdle := make(chan struct{})
	go t.idleWatch(stopIdle)
	<-done
	m.mu.Lock()
	m.ending = true
	m.mu.Unlock()
	m.handlers.Wait()
	close(stopIdle)
	srv.Close()
	m.tr.CloseIdleConnections()
	m.mu.Lock()
	if m.preDialed != nil {
		m.preDialed.Close()
	}
	rec.up, rec.down = m.up.Load(), m.down.Load()
	rec.creds, rec.placeholders = sortedKeys(m.used), sortedKeys(m.passed)
	m.mu.Unlock()
	// As a close: a dial after it is refused (addExtra), and every
	// upstream connection is closed.
	t.closeMu.Lock()
	stillOpen := t.closeReason == ""
	t.closeMu.Unlock()
	if stillOpen {
		t.close("")
	}
}

func sortedKeys(m map[string]bool) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// dial is the upstream transport's dialer: the tunnel's own first
// connection, then new ones to the same pinned address.
func (m *termination) dial(ctx context.Context, _, addr string) (net.Conn, error) {
	t := m.t
	if want := net.JoinHostPort(m.tr.TLSClientConfig.ServerName, m.port); addr != want {
		return nil, fmt.Errorf("proxy: refusing dial to %s in the tunnel to %s", addr, want)
	}
	m.mu.Lock()
	if c := m.preDialed; c != nil {
		m.preDialed = nil
		m.mu.Unlock()
		// Closed with the tunnel's others when it ends (an upgraded
		// connection is not the transport's to close).
		if !t.addExtra(c) {
			c.Close()
			return nil, net.ErrClosed
		}
		return c, nil
	}
	m.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, t.s.cfg.DialTimeout)
	defer cancel()
	c, err := t.s.cfg.Dial(dctx, "tcp", t.addr.String())
	if err != nil {
		return nil, err
	}
	if !t.addExtra(c) {
		c.Close()
		return nil, net.ErrClosed
	}
	return c, nil
}

// ServeHTTP checks a terminated request's host, puts the credentials into
// its headers and forwards it.
func (m *termination) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if m.ending {
		// The connection is closed and terminate is waiting for the
		// handlers: an HTTP/2 stream's may start late.
		m.mu.Unlock()
		m.refuse(w, r, http.StatusServiceUnavailable, "proxy: the tunnel is closing")
		return
	}
	m.handlers.Add(1)
	m.mu.Unlock()
	defer m.handlers.Done()
	if why := m.checkHost(r.Host); why != "" {
		m.refuse(w, r, http.StatusMisdirectedRequest, why)
		return
	}
	if r.Method == http.MethodConnect {
		m.refuse(w, r, http.StatusMethodNotAllowed, ReasonBadRequest+": CONNECT inside a terminated tunnel")
		return
	}
	out := r.Clone(r.Context())
	inj := injectHeaders(out.Header, m.creds)
	for _, b := range inj.basic {
		if len(b.from) > maxBasicLen {
			// Each is scrubbed from every later answer: a long one would
			// make every stream's hold as long.
			m.refuse(w, r, http.StatusRequestHeaderFieldsTooLarge, fmt.Sprintf("%s: a Basic credential over %d bytes", ReasonBadRequest, maxBasicLen))
			return
		}
	}
	if !m.t.s.basics.add(inj.basic) {
		m.refuse(w, r, http.StatusTooManyRequests, fmt.Sprintf("%s: more than %d distinct Basic credentials in this sandbox (each is scrubbed from every later response)", ReasonBadRequest, maxBasicSwaps))
		return
	}
	// Compressed answers could not be scrubbed: the transport asks for
	// gzip itself and decodes it (a request without Accept-Encoding).
	out.Header.Del("Accept-Encoding")
	// A WebSocket's compressed frames could not be scrubbed either.
	out.Header.Del("Sec-WebSocket-Extensions")
	m.note(inj.used, nil)
	// A placeholder left in the target or a header (one the value does not
	// go into) passes as it is, audited.
	m.note(nil, m.t.s.placeholdersInRequest(out))
	if u, err := url.PathUnescape(r.URL.RawQuery); err == nil {
		m.note(nil, placeholdersIn(r.URL.Path+"?"+u, m.t.s.allCreds))
	}
	if out.Body != nil && out.Body != http.NoBody {
		all := m.t.s.allCreds
		out.Body = newDetector(out.Body, all, func(name string) { m.note(nil, []string{name}) })
	}
	m.rp.ServeHTTP(w, out)
}

// checkHost is the Host rule inside a terminated tunnel: a request names
// the CONNECT's host (and its port, or none for 443), so one TLS session
// cannot be used to reach another host.
func (m *termination) checkHost(hostport string) string {
	return hostNames(hostport, "443", m.t.host, m.port)
}

func (m *termination) rewrite(pr *httputil.ProxyRequest) {
	pr.Out.URL.Scheme = "https"
	pr.Out.URL.Host = net.JoinHostPort(m.tr.TLSClientConfig.ServerName, m.port)
	pr.Out.Host = pr.In.Host
}

// modify scrubs a response's headers and body (a WebSocket's server side
// too) before it goes back into the sandbox. (Informational answers are
// scrubbed by scrub1xx, which ReverseProxy copies before this.)
func (m *termination) modify(resp *http.Response) error {
	// The version before the swaps: one added between is taken at the
	// stream's next read.
	ver := m.t.s.basics.version()
	swaps := m.t.s.scrubSwaps()
	for _, v := range resp.Header.Values("Content-Encoding") {
		for _, ce := range strings.Split(v, ",") {
			if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
				// The encoding's name is the server's: not quoted back.
				return errors.New("the response is encoded (a Content-Encoding the client did not ask for), which the proxy cannot scrub")
			}
		}
	}
	scrubHeader(resp.Header, swaps)
	// Announced trailers' names: ReverseProxy announces them before the
	// body is read.
	scrubHeader(resp.Trailer, swaps)
	if resp.StatusCode == http.StatusSwitchingProtocols {
		// ReverseProxy refuses a switch to another protocol than asked
		// for (its upgradeType: the Upgrade of a Connection: upgrade), but
		// without closing the connection: refused here, it is.
		if want, got := upgradeType(resp.Request.Header), upgradeType(resp.Header); want == "" || !strings.EqualFold(want, got) {
			return errors.New("the server switched to another protocol than asked for")
		}
		if len(resp.Header.Values("Sec-WebSocket-Extensions")) > 0 {
			// The offer was dropped: compressed frames could not be
			// scrubbed.
			return errors.New("the server took up a WebSocket extension that was not offered")
		}
		rwc, ok := resp.Body.(io.ReadWriteCloser)
		if !ok {
			return errors.New("switching protocols without a connection")
		}
		resp.Status = "101 Switching Protocols" // not the server's phrase
		sc := newUpgradedScrubber(rwc, swaps)
		sc.src, sc.ver = m.t.s, ver
		resp.Body = &scrubUpgraded{scrubber: sc, rwc: rwc}
		return nil
	}
	var sc *scrubber
	if resp.ContentLength >= 0 {
		sc = newScrubber(resp.Body, swaps)
	} else {
		sc = newStreamScrubber(resp.Body, swaps)
	}
	sc.src, sc.ver = m.t.s, ver
	resp.Body = &scrubBody{scrubber: sc, c: resp.Body, resp: resp}
	return nil
}

// scrub1xx scrubs the informational answers (103 Early Hints, 100
// Continue) that ReverseProxy copies to the client as they come, through
// a trace hook of its own: one added here runs before it, on the same
// header map.
type scrub1xx struct {
	rt http.RoundTripper
	s  *Server
}

func (x scrub1xx) RoundTrip(r *http.Request) (*http.Response, error) {
	trace := &httptrace.ClientTrace{Got1xxResponse: func(_ int, h textproto.MIMEHeader) error {
		scrubHeader(http.Header(h), x.s.scrubSwaps())
		return nil
	}}
	return x.rt.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
}

// fail answers a request the upstream did not: 502 with the reason, and a
// deny line of its own in the audit.
func (m *termination) fail(w http.ResponseWriter, r *http.Request, err error) {
	reason := fmt.Sprintf("%s: %s: %s", ReasonUpstreamFailure, m.t.addr, upstreamErr(err))
	m.refuse(w, r, http.StatusBadGateway, reason)
}

func (m *termination) refuse(w http.ResponseWriter, r *http.Request, code int, reason string) {
	// An error can quote the upstream (a malformed status line), which may
	// hold a value.
	reason = scrubString(reason, m.t.s.scrubSwaps())
	line := policy.OneLine(reason)
	w.Header().Set("X-Proxy-Error", line)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, line+"\n")
	rec := *m.t.rec
	rec.kind = audit.KindHTTP
	rec.start = time.Now()
	rec.close, rec.up, rec.down, rec.creds, rec.placeholders = "", 0, 0, nil, nil
	rec.deny(reason)
	m.t.s.audit(&rec)
}

// upstreamErr is a failed upstream round trip in one line: a certificate
// that does not verify is named as such.
//
// Other errors are named by their kind, not quoted: Go's transport quotes
// what the server sent (a malformed status line) with %q, whose escapes a
// value's bytes could pass the scrub in.
func upstreamErr(err error) string {
	var ve *tls.CertificateVerificationError
	var ne net.Error
	switch {
	case errors.As(err, &ve):
		return "the server's certificate does not verify: " + policy.OneLine(ve.Err.Error())
	case isTimeout(err):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET):
		return "the server closed the connection"
	case strings.Contains(err.Error(), "malformed"):
		return "the server's answer is not well-formed HTTP"
	case errors.As(err, &ne):
		return "network error"
	}
	return "the round trip failed"
}

// upgradeType is ReverseProxy's: the Upgrade header of a message whose
// Connection names upgrade, "" otherwise.
func upgradeType(h http.Header) string {
	for _, v := range h.Values("Connection") {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), "upgrade") {
				return h.Get("Upgrade")
			}
		}
	}
	return ""
}

func (m *termination) note(used, passed []string) {
	if len(used) == 0 && len(passed) == 0 {
		return
	}
	m.mu.Lock()
	for _, n := range used {
		m.used[n] = true
	}
	for _, n := range passed {
		m.passed[n] = true
	}
	m.mu.Unlock()
}

// termConn is the client's connection under the TLS server: the held first
// flight is read first; bytes are counted both ways.
type termConn struct {
	net.Conn
	pre      []byte
	up, down *atomic.Int64
	// lastUp and lastDown are the tunnel's (unix nanos of the last bytes
	// each way), which idleWatch reads.
	lastUp, lastDown *atomic.Int64
}

func (c *termConn) Read(p []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(p, c.pre)
		c.pre = c.pre[n:]
		c.up.Add(int64(n))
		return n, nil
	}
	n, err := c.Conn.Read(p)
	c.up.Add(int64(n))
	if n > 0 {
		c.lastUp.Store(time.Now().UnixNano())
	}
	return n, err
}

func (c *termConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.down.Add(int64(n))
	if n > 0 {
		c.lastDown.Store(time.Now().UnixNano())
	}
	return n, err
}

// idleWatch closes a terminated tunnel whose client connection moved no
// bytes either way for IdleTimeout (a WebSocket, a request left waiting),
// as an opaque tunnel's copy loops do; it ends when stop is closed.
func (t *tunnel) idleWatch(stop <-chan struct{}) {
	tick := time.NewTicker(t.slice())
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			last := max(t.lastUp.Load(), t.lastDown.Load())
			if now.Sub(time.Unix(0, last)) >= t.s.cfg.IdleTimeout {
				t.close("idle timeout")
				return
			}
		}
	}
}

// oneConnListener hands out one connection, then blocks until closed.
type oneConnListener struct {
	mu     sync.Mutex
	c      net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{} }
