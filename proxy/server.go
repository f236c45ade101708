package proxy

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elazarl/goproxy"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// Resolver looks up the addresses of a name. *net.Resolver satisfies it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Server. Only Policy is required.
type Config struct {
	// SandboxID names the sandbox in audit lines and is the proxy user name
	// when User is empty.
	SandboxID string
	// Policy is the initial policy; SetPolicy replaces it.
	Policy Policy
	// User and Secret are the Proxy-Authorization Basic credentials every
	// request must carry. Secret is generated (32 random bytes, hex) when
	// empty; User defaults to SandboxID, or "sandbox".
	User, Secret string
	// Resolver resolves allowed names. Default: Go's own resolver (never
	// cgo, so glibc's inet_aton forms never apply), through DNSUpstream when
	// that is set.
	Resolver Resolver
	// DNSUpstream is a "host:port" DNS server for the default resolver.
	DNSUpstream string
	// ResolveCacheTTL keeps lookups of allowed names this long (default 5s,
	// negative: no cache). Cached answers still pass the dial guard on every
	// use.
	ResolveCacheTTL time.Duration
	// Audit receives one line per decision (keys: internal/audit). Nil
	// writes JSON to stderr.
	Audit *slog.Logger
	// DialTimeout bounds name resolution and the dial (default 10s).
	DialTimeout time.Duration
	// IdleTimeout closes a tunnel with no bytes in either direction, and a
	// client keep-alive connection with no request (default 5 min).
	IdleTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers and waiting for a
	// plain HTTP response's headers (default 30s).
	HeaderTimeout time.Duration
	// MaxConns caps client connections plus tunnels (default 1024). Past it
	// a new connection gets 503 and is closed.
	MaxConns int
	// CopyBuffer, when positive, relays tunnel bytes through a userspace
	// buffer of that many bytes per direction instead of io.Copy between the
	// raw connections (which splices on Linux). See docs/benchmarks.md.
	CopyBuffer int
	// Dial dials the pinned upstream address (always "ip:port"). Default: a
	// net.Dialer with DialTimeout. It must return a *net.TCPConn, so tunnels
	// splice. Tests use it to dial inside a network namespace.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Credentials are put into the requests to their hosts (see
	// Credential): the proxy terminates TLS for those hosts alone, with
	// CA's certificates, and scrubs the values from what goes back. Every
	// other host stays an opaque tunnel. CA is required with Credentials;
	// it must have been made for (at least) their hosts.
	Credentials []Credential
	CA          *CA
	// UpstreamRoots verify every server the proxy itself speaks TLS to:
	// the terminated hosts' (and the plain-HTTP transport's, which refuses
	// https:// before it dials). Nil: the system roots as this process
	// reads them (SSL_CERT_FILE and SSL_CERT_DIR on Linux). Verification
	// is never skipped (upstreamTLS).
	UpstreamRoots *x509.CertPool
}

// Server is the CONNECT and plain-HTTP forward proxy. Its methods are safe
// for concurrent use.
type Server struct {
	cfg      Config
	pol      atomic.Pointer[compiled]
	gp       *goproxy.ProxyHttpServer
	hs       *http.Server
	tr       *http.Transport
	resolver Resolver
	local    localAddrs
	auditLog *slog.Logger
	authWant string
	// relayHook, when set (tests, export_test.go), is called with the
	// connections each tunnel direction hands to io.Copy, so a test can
	// check they are the raw types Linux splices between.
	relayHook func(dst, src net.Conn)
	// creds are Config.Credentials by host (the hosts whose TLS is
	// terminated); allCreds all of them (what is scrubbed and looked for).
	creds    map[string][]Credential
	allCreds []Credential
	// credSwaps are allCreds' values to their placeholders (valueSwap).
	credSwaps []swap
	basics    basicSwaps // the Basic credentials the proxy made (scrubbed back)
	// streamHold, when set (tests), replaces the stream scrubber's.
	streamHold time.Duration

	conns     atomic.Int64
	wg        sync.WaitGroup
	bodyBufs  sync.Pool     // plain-HTTP body buffers (flushingWriter.ReadFrom)
	bigBodies chan struct{} // their tokens: maxBodyBuffers

	mu       sync.Mutex
	closed   bool
	tunnels  map[*tunnel]struct{}
	inflight map[*inflight]struct{}
	self     []netip.AddrPort
}

// New builds a Server from cfg. It listens on nothing until Serve.
func New(cfg Config) (*Server, error) {
	pol, err := compilePolicy(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = 30 * time.Second
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 1024
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: cfg.DialTimeout}
		cfg.Dial = d.DialContext
	}
	if cfg.User == "" {
		cfg.User = cfg.SandboxID
		if cfg.User == "" {
			cfg.User = "sandbox"
		}
	}
	if strings.ContainsAny(cfg.User, ":\r\n") || strings.ContainsAny(cfg.Secret, "\r\n") {
		return nil, errors.New("proxy: user must not contain ':' or line breaks")
	}
	creds, err := credentialIndex(cfg.Credentials, cfg.CA)
	if err != nil {
		return nil, err
	}
	if creds != nil && cfg.UpstreamRoots == nil {
		// The system roots are read once per process, on first use (~10 ms
		// for a few hundred files): read them now, not in the first
		// terminated request.
		go x509.SystemCertPool()
	}
	if cfg.Secret == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("proxy: generating the secret: %w", err)
		}
		cfg.Secret = hex.EncodeToString(b[:])
	}
	s := &Server{
		cfg:       cfg,
		auditLog:  cfg.Audit,
		authWant:  cfg.User + ":" + cfg.Secret,
		tunnels:   map[*tunnel]struct{}{},
		inflight:  map[*inflight]struct{}{},
		bigBodies: make(chan struct{}, maxBodyBuffers),
		creds:     creds,
		allCreds:  slices.Clone(cfg.Credentials),
	}
	for _, c := range s.allCreds {
		s.credSwaps = append(s.credSwaps, valueSwap(c.Value, c.Placeholder))
	}
	if s.auditLog == nil {
		s.auditLog = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	s.pol.Store(pol)
	s.resolver = cfg.Resolver
	if s.resolver == nil {
		s.resolver = NewResolver(cfg.DNSUpstream)
	}
	if cfg.ResolveCacheTTL == 0 {
		cfg.ResolveCacheTTL = 5 * time.Second
		s.cfg.ResolveCacheTTL = cfg.ResolveCacheTTL
	}
	if cfg.ResolveCacheTTL > 0 {
		s.resolver = &resolveCache{r: s.resolver, ttl: cfg.ResolveCacheTTL, m: map[string]cacheEntry{}}
	}
	s.tr = &http.Transport{
		Proxy:                  nil, // never follow HTTP(S)_PROXY
		DialContext:            s.dialPinned,
		TLSClientConfig:        s.upstreamTLS(""), // https:// is refused before it; verifying all the same
		ForceAttemptHTTP2:      false,
		TLSHandshakeTimeout:    cfg.DialTimeout,
		ResponseHeaderTimeout:  cfg.HeaderTimeout,
		IdleConnTimeout:        90 * time.Second,
		MaxIdleConnsPerHost:    8,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
	}
	gp := goproxy.NewProxyHttpServer()
	gp.Logger = log.New(io.Discard, "", 0)
	gp.Verbose = false
	gp.ConnectDial, gp.ConnectDialWithReq = nil, nil // kill the HTTPS_PROXY wiring
	// goproxy's own transport (and its TLS client config) is replaced
	// whole: every request goproxy would send itself, and every TLS
	// session it would open to a server, goes through s.tr and verifies.
	gp.Tr = s.tr
	gp.KeepAcceptEncoding = true
	gp.NonproxyHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := s.newRecord("http", r)
		s.denyHTTP(w, rec, ReasonBadRequest+": not a proxy request (relative URL)")
	})
	gp.ConnectionErrHandler = func(w io.Writer, _ *goproxy.ProxyCtx, _ error) {
		io.WriteString(w, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	}
	// Every CONNECT gets an answer from this handler, so goproxy's default
	// (accept and dial the raw host) is never reached.
	gp.OnRequest().HandleConnectFunc(s.handleConnect)
	gp.OnRequest().DoFunc(s.handleHTTP)
	gp.OnResponse().DoFunc(s.handleResponse)
	s.gp = gp
	s.hs = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ConnState:         s.connState,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, tapKey{}, c)
		},
	}
	return s, nil
}

// upstreamTLS is the TLS client configuration of every session the proxy
// opens to a server: verified with Config.UpstreamRoots (nil: the system
// roots) against serverName ("": the name the transport dials), TLS 1.2 at
// least. It is the proxy's own choice, never a library's default.
func (s *Server) upstreamTLS(serverName string) *tls.Config {
	return &tls.Config{
		ServerName:         serverName,
		RootCAs:            s.cfg.UpstreamRoots,
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: false,
	}
}

// User returns the proxy user name.
func (s *Server) User() string { return s.cfg.User }

// Secret returns the proxy secret.
func (s *Server) Secret() string { return s.cfg.Secret }

// URL returns the proxy URL with credentials for a listener address
// ("host:port"; a Unix socket path gives a URL a client cannot dial, so
// callers use it only for TCP).
func (s *Server) URL(addr string) string {
	u := url.URL{Scheme: "http", User: url.UserPassword(s.cfg.User, s.cfg.Secret), Host: addr}
	return u.String()
}

// Fingerprint returns the fingerprint of the policy in force.
func (s *Server) Fingerprint() string { return s.pol.Load().fingerprint }

// Serve accepts connections on ln (TCP or Unix) until Close. It returns nil
// after Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	if ap, err := netip.ParseAddrPort(ln.Addr().String()); err == nil {
		s.self = append(s.self, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
	}
	s.mu.Unlock()
	err := s.hs.Serve(&capListener{Listener: ln, s: s})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// SetPolicy swaps the policy atomically. Requests decided after it use the
// new policy; open tunnels and plain-HTTP exchanges whose host or address
// the new policy refuses are closed at once, and idle upstream keep-alive
// connections are dropped.
func (s *Server) SetPolicy(p Policy) error {
	c, err := compilePolicy(p)
	if err != nil {
		return err
	}
	s.pol.Store(c)
	s.tr.CloseIdleConnections()
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.tunnels {
		if ok, why := s.stillAllowed(c, t.host, t.addr); !ok {
			t.close(ReasonPolicyChanged + ": " + why)
		}
	}
	for f := range s.inflight {
		if f.finishing {
			continue // answered; its line is being written
		}
		if ok, why := s.stillAllowed(c, f.host, f.addr); !ok {
			f.rec.close = ReasonPolicyChanged + ": " + why
			f.cancel()
		}
	}
	return nil
}

func (s *Server) stillAllowed(c *compiled, h policy.Host, a netip.AddrPort) (bool, string) {
	if d := c.decideName(h); !d.Allowed() {
		return false, d.Reason
	}
	if ok, why := c.checkAddr(a.Addr(), &s.local); !ok {
		return false, why
	}
	return true, ""
}

// Close stops the listeners, closes every client connection and tunnel, and
// waits for the tunnels to finish and for every plain-HTTP request's line.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	err := s.hs.Close()
	for t := range s.tunnels {
		t.close("proxy shutting down")
	}
	pending := make([]*inflight, 0, len(s.inflight))
	for f := range s.inflight {
		if !f.finishing { // one whose line is being written keeps its record
			f.rec.close = "proxy shutting down"
			f.cancel()
		}
		pending = append(pending, f)
	}
	s.mu.Unlock()
	s.wg.Wait()
	// Every plain-HTTP request's line is written before Close returns: the
	// caller closes the audit stream next (sandboxd's session does), and a
	// line written after that is lost. Its handler writes it once the
	// response body closes, which the cancel above hastens; one that has not
	// within inflightGrace is written here, once (finish).
	grace := time.NewTimer(inflightGrace)
	defer grace.Stop()
	late := false
	for _, f := range pending {
		if !late {
			select {
			case <-f.done:
				continue
			case <-grace.C:
				late = true
			}
		}
		s.finish(f, "proxy shutting down")
	}
	s.tr.CloseIdleConnections()
	return err
}

// inflightGrace is how long Close waits for the plain-HTTP requests it
// cancelled to write their own lines.
const inflightGrace = 2 * time.Second

// ActiveTunnels returns the number of open tunnels.
func (s *Server) ActiveTunnels() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tunnels)
}

// capListener refuses connections past MaxConns with a 503.
type capListener struct {
	net.Listener
	s *Server
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.s.conns.Load() >= int64(l.s.cfg.MaxConns) {
			rec := &record{kind: audit.KindConn, client: c.RemoteAddr().String(), start: time.Now()}
			rec.deny(fmt.Sprintf("%s: %d open (cap %d)", ReasonTooManyConns, l.s.conns.Load(), l.s.cfg.MaxConns))
			c.SetWriteDeadline(time.Now().Add(time.Second))
			denial{http.StatusServiceUnavailable, rec.d.Reason}.writeTo(c)
			c.Close()
			l.s.audit(rec)
			continue
		}
		l.s.conns.Add(1)
		t := &tapConn{Conn: c, refuse: l.s.refuseUnparsed}
		if h, ok := c.(handedConn); ok {
			// The client's own socket: the tap reads it, and the tunnel
			// splices it, raw.
			t.Conn, t.handed = h.NetConn(), true
			t.pid, t.argv = h.Peer()
		}
		return t, nil
	}
}

func (s *Server) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateClosed, http.StateHijacked:
		s.conns.Add(-1)
	}
}

type holderKey struct{}

// hijackHolder keeps what net/http's Hijack returned, so the tunnel can
// replay bytes the client sent right behind the CONNECT request (goproxy
// drops them for ConnectHijack).
type hijackHolder struct {
	start time.Time
	br    *bufio.Reader
}

type hijackCapture struct {
	http.ResponseWriter
	h *hijackHolder
}

func (w *hijackCapture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("proxy: connection cannot be hijacked")
	}
	c, rw, err := hj.Hijack()
	if err == nil {
		w.h.br = rw.Reader
	}
	return c, rw, err
}

// refuseUnparsed replaces net/http's own answer to a request it could not
// parse ("400 Bad Request: malformed Host header", "431 Request Header
// Fields Too Large", ...) with the proxy's refusal: 403, the reason in
// X-Proxy-Error and the body, and an audit line, like every other denial.
func (s *Server) refuseUnparsed(c *tapConn, answer []byte) {
	status, _, _ := strings.Cut(string(answer), "\r\n")
	status = strings.TrimPrefix(strings.TrimPrefix(status, "HTTP/1.1 "), "HTTP/1.0 ")
	why := status
	if _, body, ok := strings.Cut(string(answer), "\r\n\r\n"); ok && strings.TrimSpace(body) != "" {
		why = strings.TrimSpace(body)
	}
	if len(why) > 3 && why[3] == ' ' && strings.Trim(why[:3], "0123456789") == "" {
		why = why[4:] // "400 Bad Request: x" → "Bad Request: x"
	}
	line := c.firstLine()
	kind, target := audit.KindHTTP, ""
	if f := strings.Fields(line); len(f) >= 2 {
		target = f[1]
		if f[0] == http.MethodConnect {
			kind = audit.KindConnect
		}
	}
	rec := &record{kind: kind, client: c.RemoteAddr().String(), start: time.Now(), host: policy.OneLine(target)}
	if why == "" {
		why = "no reason given"
	}
	if phrase, detail, ok := strings.Cut(why, ":"); ok { // "Bad Request: malformed Host header"
		why = strings.ToLower(phrase) + ":" + detail
	} else {
		why = strings.ToLower(why)
	}
	if len(why) > 200 { // net/http may quote the offending header line
		why = strings.ToValidUTF8(why[:200], "") + "…"
	}
	rec.deny(fmt.Sprintf("%s: the request could not be parsed (%s)", ReasonBadRequest, why))
	c.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	denial{http.StatusForbidden, rec.d.Reason}.writeTo(c.Conn)
	s.audit(rec)
}

// ServeHTTP authenticates the request, then hands it to goproxy, whose
// handlers are all ours.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tap, ok := r.Context().Value(tapKey{}).(*tapConn); ok {
		tap.handled.Store(true)
	}
	if !s.authOK(r) {
		rec := s.newRecord(kindOf(r), r)
		rec.host = r.URL.Host
		rec.deny(ReasonAuthRequired)
		w.Header().Set("Proxy-Authenticate", `Basic realm="barry-sandbox"`)
		w.Header().Set("X-Proxy-Error", rec.d.Reason)
		w.Header().Set("Connection", "close")
		http.Error(w, rec.d.Reason, http.StatusProxyAuthRequired)
		s.audit(rec)
		return
	}
	if r.Method == http.MethodConnect {
		if r.URL.Host == "" || r.URL.Path != "" || r.URL.Scheme != "" {
			rec := s.newRecord("connect", r)
			s.denyHTTP(w, rec, ReasonBadRequest+": CONNECT needs an authority-form target (host:port)")
			return
		}
		h := &hijackHolder{start: time.Now()}
		r = r.WithContext(context.WithValue(r.Context(), holderKey{}, h))
		s.gp.ServeHTTP(&hijackCapture{ResponseWriter: w, h: h}, r)
		return
	}
	s.gp.ServeHTTP(&flushingWriter{ResponseWriter: w, bufs: &s.bodyBufs, big: s.bigBodies}, r)
}

// WriteHeader closes the connection after every plain-HTTP response, so
// each plain-HTTP request is the first on its connection (see tapConn).
func (w *flushingWriter) WriteHeader(code int) {
	w.Header().Set("Connection", "close")
	w.ResponseWriter.WriteHeader(code)
}

// flushingWriter sends each chunk of a plain-HTTP response on at once, so
// streamed responses (long polls, chunked progress) are not held in the
// server's buffer; goproxy flushes only event streams by itself.
type flushingWriter struct {
	http.ResponseWriter
	bufs *sync.Pool    // of *[]byte, bodyBuffer long (ReadFrom)
	big  chan struct{} // one token per bodyBuffer in use (at most maxBodyBuffers)
}

// bodyBuffer is the buffer a plain-HTTP response body is copied through,
// one per response being copied (a sync.Pool: the GC drops idle ones). A
// 256 MiB download over HTTP, 11 interleaved rounds on 2 vCPUs
// (as scripts/bench-run downloads, load ~2): 1 MiB 0.82 of direct, 256 KiB
// 0.59, io.Copy's 32 KiB 0.46, and a splice from the upstream's socket
// into the client's (own exchange instead of http.Transport) 0.56.
const bodyBuffer = 1 << 20

// maxBodyBuffers bounds the bodyBuffers in use at once: past it a body is
// copied through a small one, so that a sandbox holding many slow
// responses open pins at most 16 MiB of them, not 1 MiB each.
const maxBodyBuffers = 16

// ReadFrom copies a response body (goproxy's io.Copy) through one
// bodyBuffer (a 32 KiB one when maxBodyBuffers are in use), sending each
// read on at once as Write does.
func (w *flushingWriter) ReadFrom(r io.Reader) (int64, error) {
	var bp *[]byte
	select {
	case w.big <- struct{}{}:
		bp, _ = w.bufs.Get().(*[]byte)
		if bp == nil {
			b := make([]byte, bodyBuffer)
			bp = &b
		}
		defer func() { w.bufs.Put(bp); <-w.big }()
	default:
		b := make([]byte, 32<<10)
		bp = &b
	}
	var n int64
	for {
		nr, er := r.Read(*bp)
		if nr > 0 {
			nw, ew := w.Write((*bp)[:nr])
			n += int64(nw)
			if ew != nil {
				return n, ew
			}
			if nw != nr {
				return n, io.ErrShortWrite
			}
		}
		if er == io.EOF {
			return n, nil
		}
		if er != nil {
			return n, er
		}
	}
}

func (w *flushingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

func (w *flushingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Hijack keeps websocket upgrades working.
func (w *flushingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := w.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("proxy: connection cannot be hijacked")
	}
	return hj.Hijack()
}

func kindOf(r *http.Request) audit.Kind {
	if r.Method == http.MethodConnect {
		return audit.KindConnect
	}
	return audit.KindHTTP
}

func (s *Server) authOK(r *http.Request) bool {
	v := r.Header.Get("Proxy-Authorization")
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(raw, []byte(s.authWant)) == 1
}

// handedConn is a client connection that sandboxd's init handed over
// whole (procjail.PassedConn) with the process behind it, which travels
// beside the socket: on such a connection a PeerHeader is the client's own
// and is ignored.
type handedConn interface {
	net.Conn
	Peer() (pid int, argv []string)
	NetConn() net.Conn
}

func (s *Server) newRecord(kind audit.Kind, r *http.Request) *record {
	rec := &record{kind: kind, client: r.RemoteAddr, start: time.Now()}
	if tap, ok := r.Context().Value(tapKey{}).(*tapConn); ok && tap.handed {
		rec.pid, rec.argv = tap.pid, tap.argv
	} else {
		rec.pid, rec.argv = parsePeer(r.Header.Get(PeerHeader))
	}
	if v := r.Header.Get(OriginalDestinationHeader); v != "" {
		// Unparseable: an invalid address, which matches none (decide
		// denies the request).
		rec.captured, _ = netip.ParseAddrPort(v)
		if !rec.captured.IsValid() {
			rec.captured = netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
		}
	}
	return rec
}

// PeerHeader names, on a request that sandboxd's init relayed, the
// process inside the sandbox behind the connection: "pid=PID argv=JSON".
// The proxy audits it (pid, argv) and never forwards it; it decides
// nothing. (procjail.PeerHeader is the same name.)
const PeerHeader = "X-Barry-Peer"

// parsePeer reads PeerHeader's value; 0 and nil for none or a value in
// another form.
func parsePeer(v string) (int, []string) {
	p, a, ok := strings.Cut(v, " argv=")
	if !ok {
		return 0, nil
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(p, "pid="))
	var argv []string
	if err != nil || !strings.HasPrefix(p, "pid=") || pid <= 0 || json.Unmarshal([]byte(a), &argv) != nil {
		return 0, nil
	}
	return pid, argv
}

// OriginalDestinationHeader carries, on a request of sandboxd's capture
// (a connection of a client that ignores the proxy variables, turned into
// a CONNECT or a proxy request by the name it carried), the address the
// client dialed. The proxy then dials that address only if it is one of
// the name's, and refuses the request otherwise: a client cannot reach an
// address under another name's policy. It narrows what the proxy would
// dial anyway, so whoever sends it gains nothing; it is never forwarded.
// (procjail.CaptureHeader is the same name.)
const OriginalDestinationHeader = "X-Barry-Original-Destination"

func (s *Server) denyHTTP(w http.ResponseWriter, rec *record, reason string) {
	rec.deny(reason)
	denial{http.StatusForbidden, reason}.serve(w)
	s.audit(rec)
}

// denial is the proxy's refusal as the client sees it: a status and the
// one-line reason, in the body and in X-Proxy-Error. goproxy has three
// places a refusal leaves from (a handler's ResponseWriter, a raw
// connection, a response hook), so it renders three ways; the text is one.
type denial struct {
	code   int
	reason string
}

func (d denial) line() string { return policy.OneLine(d.reason) }

// serve writes the refusal through a ResponseWriter, and ends the
// connection: a later request on it would carry no PeerHeader of the
// init's (only a connection's first request line gets one).
func (d denial) serve(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	w.Header().Set("X-Proxy-Error", d.line())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(d.code)
	io.WriteString(w, d.line()+"\n")
}

// writeTo writes the refusal as a raw HTTP/1.1 response that closes the
// connection (a hijacked or tunnelled client).
func (d denial) writeTo(w io.Writer) {
	body := d.line() + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nX-Proxy-Error: %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		d.code, http.StatusText(d.code), d.line(), len(body), body)
}

// response is the refusal as goproxy's response to r.
func (d denial) response(r *http.Request) *http.Response {
	resp := goproxy.NewResponse(r, "text/plain; charset=utf-8", d.code, d.line()+"\n")
	resp.Header.Set("X-Proxy-Error", d.line())
	return resp
}

// decide makes the one decision for a request target, in this order:
//  1. the port: present (or defaultPort) and in 1..65535;
//  2. the host, canonicalized by policy.ParseHost (invalid: refused, no lookup);
//  3. the deny list, then the allowlist (compiled.decideName);
//  4. only for an allowed name: resolution (an IP literal is its own answer);
//  5. every address through the dial guard (compiled.checkAddr) and the
//     proxy's own listeners; the first address that passes is pinned.
//
// It fills rec (host, port, addr and the decision).
func (s *Server) decide(ctx context.Context, target, defaultPort string, rec *record) (policy.Decision, policy.Host, netip.AddrPort) {
	deny := func(reason string) (policy.Decision, policy.Host, netip.AddrPort) {
		rec.deny(reason)
		return policy.Denied(reason, ""), policy.Host{}, netip.AddrPort{}
	}
	rec.host = target
	hs, ps, err := policy.SplitHostPort(target)
	if err != nil {
		return deny(err.Error()) // "invalid host: ..." (policy.ErrInvalidHost)
	}
	if ps == "" {
		ps = defaultPort
	}
	port, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || port == 0 || len(ps) > 5 {
		return deny(fmt.Sprintf("%s: %q", ReasonInvalidPort, ps))
	}
	rec.port = strconv.FormatUint(port, 10)
	h, err := policy.ParseHost(hs)
	if err != nil {
		return deny(err.Error()) // "invalid host: ..." (policy.ErrInvalidHost)
	}
	rec.host = h.String()
	pol := s.pol.Load()
	rec.policy = pol.fingerprint
	d := pol.decideName(h)
	rec.d = d
	if !d.Allowed() {
		return d, h, netip.AddrPort{}
	}
	var addrs []netip.Addr
	if h.IsIP() {
		addrs = []netip.Addr{h.IP}
	} else {
		lctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
		addrs, err = s.resolver.LookupNetIP(lctx, "ip", h.Name+".")
		cancel()
		if err != nil {
			return deny(fmt.Sprintf("%s: %s: %s", ReasonResolveFailed, h, lookupErr(err)))
		}
		if len(addrs) == 0 {
			return deny(fmt.Sprintf("%s: %s has no address", ReasonNoAddress, h))
		}
	}
	if c := rec.captured; c.IsValid() {
		// A captured connection goes where its client dialed, and only if
		// that is the name's (and the port the request's).
		orig := c.Addr().Unmap().WithZone("")
		if !slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Unmap().WithZone("") == orig }) || c.Port() != uint16(port) {
			return deny(fmt.Sprintf("%s: %s is not an address of %s", ReasonNotNamesAddress, c, h))
		}
		addrs = []netip.Addr{orig}
	}
	first := ""
	for _, a := range addrs {
		a = a.Unmap().WithZone("")
		ap := netip.AddrPortFrom(a, uint16(port))
		ok, why := pol.checkAddr(a, &s.local)
		if ok && s.isSelf(ap) {
			ok, why = false, fmt.Sprintf("%s: %s is this proxy's own listener", ReasonPrivateAddress, ap)
		}
		if ok {
			rec.addr = ap.String()
			return d, h, ap
		}
		if first == "" {
			first = why
		}
	}
	return deny(first)
}

func lookupErr(err error) string {
	var de *net.DNSError
	if errors.As(err, &de) {
		switch {
		case de.IsNotFound:
			return "no such host"
		case de.IsTimeout:
			return "timeout"
		}
		return "lookup error"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "lookup error"
}

func (s *Server) isSelf(ap netip.AddrPort) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.self {
		if l.Port() != ap.Port() {
			continue
		}
		if l.Addr() == ap.Addr() {
			return true
		}
		if l.Addr().IsUnspecified() {
			// Listening on every address: any address of this host is
			// the proxy itself, and an unknown one may be.
			own, err := s.local.has(ap.Addr())
			if ap.Addr().IsLoopback() || own || err != nil {
				return true
			}
		}
	}
	return false
}

// NewResolver returns the default resolver: Go's own (PreferGo, so never
// glibc), through upstream ("host:port") when it is not empty.
func NewResolver(upstream string) *net.Resolver {
	r := &net.Resolver{PreferGo: true}
	if upstream != "" {
		r.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, upstream)
		}
	}
	return r
}

// Explain decides target ("host" or "host:port"; port 443 when absent)
// exactly as a CONNECT for it would be decided now (the name against the
// policy, then, for an allowed name only, resolution and the dial guard on
// every address) without dialing anything or writing an audit line. It
// returns the decision and, when allowed, the address a tunnel would dial.
// It is safe for concurrent use.
func (s *Server) Explain(ctx context.Context, target string) (policy.Decision, netip.AddrPort) {
	rec := &record{start: time.Now()}
	_, _, ap := s.decide(ctx, target, "443", rec) // ap is zero unless allowed
	return rec.d, ap
}
