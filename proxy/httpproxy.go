package proxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/elazarl/goproxy"

	"github.com/barry-rocks/sandbox/policy"
)

type pinKey struct{}

// inflight is one plain-HTTP exchange: decided, pinned, registered so a
// policy swap can cancel it.
type inflight struct {
	host   policy.Host
	addr   netip.AddrPort
	cancel context.CancelFunc
	rec    *record
	up     atomic.Int64
	down   atomic.Int64
	once   sync.Once
	// finishing (under Server.mu) is set when finish starts writing the
	// line; done is closed once it is written. The request stays in
	// Server.inflight until then, so that Close waits for its line.
	finishing bool
	done      chan struct{}
}

// handleHTTP decides an absolute-form plain HTTP request (Server.decide),
// pins the checked address into the request's context and URL (the Host
// header keeps the canonical name), and answers a denial with 403.
func (s *Server) handleHTTP(r *http.Request, ctx *goproxy.ProxyCtx) (*http.Request, *http.Response) {
	rec := s.newRecord("http", r)
	// Read into the record; never forwarded.
	r.Header.Del(OriginalDestinationHeader)
	r.Header.Del(PeerHeader)
	if r.URL.Scheme != "http" {
		rec.host = r.URL.Host
		rec.deny(fmt.Sprintf("%s: scheme %q is not proxied as plain HTTP (use CONNECT)", ReasonBadRequest, r.URL.Scheme))
		s.audit(rec)
		return r, denial{http.StatusForbidden, rec.d.Reason}.response(r)
	}
	if strings.EqualFold(strings.Join(r.Header.Values("Upgrade"), ","), "h2c") {
		// An offer to upgrade to cleartext HTTP/2 (Java's HttpClient makes
		// it on every http:// request) is optional: dropped, the server
		// answers in HTTP/1.1.
		r.Header.Del("Upgrade")
		r.Header.Del("HTTP2-Settings")
	}
	if r.Header.Get("Upgrade") != "" {
		// A protocol upgrade (websocket over plain HTTP) would leave a
		// connection this proxy neither counts nor closes on a policy
		// change; wss:// goes through CONNECT, which does both.
		rec.host = r.URL.Host
		rec.deny(ReasonBadRequest + ": protocol upgrade over plain HTTP is not proxied (use wss:// or https://)")
		s.audit(rec)
		return r, denial{http.StatusForbidden, rec.d.Reason}.response(r)
	}
	if r.URL.User != nil {
		rec.host = r.URL.Host
		rec.deny(ReasonBadRequest + ": credentials in the request URL")
		s.audit(rec)
		return r, denial{http.StatusForbidden, rec.d.Reason}.response(r)
	}
	// A placeholder over plain HTTP is never replaced (the value would
	// cross the network in the clear); it passes as it is, and the line
	// says so.
	rec.placeholders = s.placeholdersInRequest(r)
	d, h, ap := s.decide(r.Context(), rawAuthority(r), "80", rec)
	if !d.Allowed() {
		s.audit(rec)
		return r, denial{http.StatusForbidden, rec.d.Reason}.response(r)
	}
	if why := checkHostHeader(r, h, rec.port); why != "" {
		rec.deny(why)
		s.audit(rec)
		return r, denial{http.StatusForbidden, rec.d.Reason}.response(r)
	}
	cctx, cancel := context.WithCancel(r.Context())
	f := &inflight{host: h, addr: ap, cancel: cancel, rec: rec, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		rec.deny("proxy shutting down")
		s.audit(rec)
		return r, denial{http.StatusServiceUnavailable, rec.d.Reason}.response(r)
	}
	s.inflight[f] = struct{}{}
	s.mu.Unlock()
	// A policy swap between decide and registration must not be missed:
	// SetPolicy stores the new policy before it walks s.inflight.
	if ok, why := s.stillAllowed(s.pol.Load(), h, ap); !ok {
		s.mu.Lock()
		delete(s.inflight, f)
		s.mu.Unlock()
		cancel()
		rec.deny(ReasonPolicyChanged + ": " + why)
		s.audit(rec)
		return r, denial{http.StatusForbidden, rec.d.Reason}.response(r)
	}
	hostHdr := h.String()
	if h.IP.Is6() {
		hostHdr = "[" + hostHdr + "]"
	}
	if ap.Port() != 80 {
		hostHdr = fmt.Sprintf("%s:%d", hostHdr, ap.Port())
	}
	r = r.WithContext(context.WithValue(cctx, pinKey{}, ap))
	r.URL.Host = ap.String()
	r.Host = hostHdr
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &countingBody{ReadCloser: r.Body, n: &f.up}
	}
	ctx.UserData = f
	ctx.RoundTripper = goproxy.RoundTripperFunc(func(req *http.Request, _ *goproxy.ProxyCtx) (*http.Response, error) {
		resp, err := s.tr.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &f.down, done: func() { s.finish(f, "") }}
		return resp, nil
	})
	return r, nil
}

// rawAuthority is the request target's host[:port] as the client sent it:
// net/url decodes percent-escapes in a host ("caf%C3%A9.test" becomes
// "café.test"), and a host with '%' is refused, not decoded. A CONNECT's
// target is its whole request URI; an absolute-form target's is what sits
// between "://" and the path. Anything else falls back to r.URL.Host.
func rawAuthority(r *http.Request) string {
	if r.Method == http.MethodConnect {
		return r.RequestURI
	}
	if _, rest, ok := strings.Cut(r.RequestURI, "://"); ok {
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[:i]
		}
		return rest
	}
	return r.URL.Host
}

// handleResponse turns a failed round trip into a 502 with a one-line
// reason that does not echo the dial error, and closes the audit record.
func (s *Server) handleResponse(resp *http.Response, ctx *goproxy.ProxyCtx) *http.Response {
	f, _ := ctx.UserData.(*inflight)
	if resp != nil && f != nil && resp.StatusCode == http.StatusSwitchingProtocols {
		// Upgrades are refused before the round trip, so a 101 is the
		// upstream switching on its own; goproxy would hijack the client
		// connection for it and leave it outside every count and close.
		reason := fmt.Sprintf("%s: %s: answered 101 Switching Protocols to a request without an upgrade", ReasonUpstreamFailure, f.addr)
		f.rec.deny(reason)
		s.finish(f, reason)
		resp.Body.Close()
		return denial{http.StatusBadGateway, reason}.response(ctx.Req)
	}
	if resp != nil || f == nil {
		return resp
	}
	reason := fmt.Sprintf("%s: %s", ReasonUpstreamFailure, f.addr)
	if ctx.Error != nil {
		reason = fmt.Sprintf("%s: %s: %s", ReasonDialFailed, f.addr, dialErr(ctx.Error))
	}
	// The client gets no upstream answer, so the line says deny and why,
	// as a CONNECT whose dial fails does.
	f.rec.deny(reason)
	s.finish(f, reason)
	return denial{http.StatusBadGateway, reason}.response(ctx.Req)
}

func (s *Server) finish(f *inflight, failure string) {
	f.once.Do(func() {
		s.mu.Lock()
		f.finishing = true
		s.mu.Unlock()
		f.cancel()
		f.rec.up, f.rec.down = f.up.Load(), f.down.Load()
		if failure != "" && f.rec.close == "" {
			f.rec.close = failure
		}
		s.audit(f.rec)
		s.mu.Lock()
		delete(s.inflight, f)
		s.mu.Unlock()
		close(f.done)
	})
}

// dialPinned is the upstream transport's only dialer: it dials the address
// pinned in the request context, and refuses anything else.
func (s *Server) dialPinned(ctx context.Context, network, addr string) (net.Conn, error) {
	ap, ok := ctx.Value(pinKey{}).(netip.AddrPort)
	if !ok || ap.String() != addr {
		return nil, fmt.Errorf("proxy: refusing unpinned dial to %s", addr)
	}
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	defer cancel()
	return s.cfg.Dial(dctx, "tcp", ap.String())
}

type countingBody struct {
	io.ReadCloser
	n    *atomic.Int64
	done func()
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (b *countingBody) Close() error {
	err := b.ReadCloser.Close()
	if b.done != nil {
		b.done()
	}
	return err
}

// checkHostHeader refuses a plain-HTTP request whose Host header names
// another host or port than its absolute target (canonical forms compared;
// no Host header is fine, the target decides). It returns the reason, or "".
func checkHostHeader(r *http.Request, target policy.Host, port string) string {
	tap, _ := r.Context().Value(tapKey{}).(*tapConn)
	if tap == nil {
		return ReasonBadRequest + ": request head not available"
	}
	if tap.nextRequest() != 1 {
		return ReasonBadRequest + ": one plain HTTP request per connection (the proxy answers Connection: close)"
	}
	hosts, ok := tap.hostHeaders()
	if !ok {
		return ReasonBadRequest + ": request head not available"
	}
	if len(hosts) > 1 {
		return ReasonHostMismatch + ": more than one Host header"
	}
	if len(hosts) == 0 {
		return ""
	}
	return hostNames(hosts[0], "80", target, port)
}

// hostNames is the Host rule: hostport (a Host header, an HTTP/2
// :authority) names target on port, defPort when it names none; "" when it
// does, else the reason it does not.
func hostNames(hostport, defPort string, target policy.Host, port string) string {
	hs, hp, err := policy.SplitHostPort(hostport)
	if err != nil {
		return fmt.Sprintf("%s: Host %q", ReasonHostMismatch, hostport)
	}
	if hp == "" {
		hp = defPort
	}
	h, err := policy.ParseHost(hs)
	if err != nil || h != target || strings.TrimLeft(hp, "0") != strings.TrimLeft(port, "0") {
		return fmt.Sprintf("%s: Host %q, target %s:%s", ReasonHostMismatch, hostport, target, port)
	}
	return ""
}

// placeholdersInRequest names the credentials whose placeholder r's target
// or headers hold.
func (s *Server) placeholdersInRequest(r *http.Request) []string {
	if len(s.allCreds) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for _, n := range placeholdersIn(r.RequestURI, s.allCreds) {
		seen[n] = true
	}
	for _, vals := range r.Header {
		for _, v := range vals {
			for _, n := range placeholdersIn(v, s.allCreds) {
				seen[n] = true
			}
		}
	}
	return sortedKeys(seen)
}
