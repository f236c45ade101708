package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// DNSConfig configures a DNSServer. Policy is required; Upstream defaults to
// the first nameserver of /etc/resolv.conf.
type DNSConfig struct {
	SandboxID string
	Policy    Policy
	// Upstream is the "host:port" of the resolver allowed names are sent to.
	Upstream string
	// Audit receives one line per query (nil: JSON to stderr).
	Audit *slog.Logger
	// Timeout bounds one upstream exchange (default 2s).
	Timeout time.Duration
	// MaxConcurrent caps queries in progress (default 256); past it a query
	// gets SERVFAIL at once. miekg/dns starts a goroutine per UDP packet.
	MaxConcurrent int
}

// DNSServer answers the sandbox's DNS queries: names the policy does not
// allow get REFUSED with an Extended DNS Error "Blocked" carrying the reason
// and are never sent upstream; allowed names are forwarded and the answer is
// passed on without the A/AAAA records the dial guard would refuse. Its
// methods are safe for concurrent use.
type DNSServer struct {
	cfg      DNSConfig
	pol      atomic.Pointer[compiled]
	local    localAddrs
	auditLog *slog.Logger
	sem      chan struct{}

	mu      sync.Mutex
	closed  bool
	servers []*dnsRun
}

type dnsRun struct {
	srv     *dns.Server
	started chan struct{}
	done    chan struct{}
}

// NewDNS builds a DNSServer; it serves nothing until ServeUDP/ServeTCP.
func NewDNS(cfg DNSConfig) (*DNSServer, error) {
	pol, err := compilePolicy(cfg.Policy)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = 256
	}
	if cfg.Upstream == "" {
		cc, err := dns.ClientConfigFromFile("/etc/resolv.conf")
		if err != nil || len(cc.Servers) == 0 {
			return nil, errors.New("dns proxy: no upstream given and none in /etc/resolv.conf")
		}
		cfg.Upstream = net.JoinHostPort(cc.Servers[0], cc.Port)
	}
	if _, _, err := net.SplitHostPort(cfg.Upstream); err != nil {
		return nil, fmt.Errorf("dns proxy: upstream %q: want host:port", cfg.Upstream)
	}
	d := &DNSServer{cfg: cfg, auditLog: cfg.Audit, sem: make(chan struct{}, cfg.MaxConcurrent)}
	if d.auditLog == nil {
		d.auditLog = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	d.pol.Store(pol)
	return d, nil
}

// Upstream returns the upstream resolver address.
func (d *DNSServer) Upstream() string { return d.cfg.Upstream }

// SetPolicy swaps the policy atomically for queries that arrive after it.
func (d *DNSServer) SetPolicy(p Policy) error {
	c, err := compilePolicy(p)
	if err != nil {
		return err
	}
	d.pol.Store(c)
	return nil
}

// ServeUDP serves queries on pc until Close; it returns nil after Close.
func (d *DNSServer) ServeUDP(pc net.PacketConn) error {
	return d.serve(&dns.Server{PacketConn: pc, Net: "udp", UDPSize: 1232})
}

// ServeTCP serves queries on ln until Close; it returns nil after Close.
func (d *DNSServer) ServeTCP(ln net.Listener) error {
	return d.serve(&dns.Server{Listener: peerListener{ln}, Net: "tcp"})
}

func (d *DNSServer) serve(srv *dns.Server) error {
	run := &dnsRun{srv: srv, started: make(chan struct{}), done: make(chan struct{})}
	srv.Handler = d
	srv.MsgAcceptFunc = acceptQueries
	srv.ReadTimeout, srv.WriteTimeout = 2*time.Second, 2*time.Second
	srv.NotifyStartedFunc = func() { close(run.started) }
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		if srv.PacketConn != nil {
			srv.PacketConn.Close()
		}
		if srv.Listener != nil {
			srv.Listener.Close()
		}
		return nil
	}
	d.servers = append(d.servers, run)
	d.mu.Unlock()
	defer close(run.done)
	err := srv.ActivateAndServe()
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil
	}
	return err
}

// Close stops every server.
func (d *DNSServer) Close() error {
	d.mu.Lock()
	d.closed = true
	runs := d.servers
	d.mu.Unlock()
	var first error
	for _, r := range runs {
		select {
		case <-r.started:
		case <-r.done:
			continue
		}
		if err := r.srv.Shutdown(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// acceptQueries accepts standard queries only (not NOTIFY, UPDATE or
// responses), with exactly one question.
func acceptQueries(dh dns.Header) dns.MsgAcceptAction {
	if dh.Bits&(1<<15) != 0 { // QR: a response
		return dns.MsgIgnore
	}
	if op := int(dh.Bits>>11) & 0xF; op != dns.OpcodeQuery {
		return dns.MsgRejectNotImplemented
	}
	if dh.Qdcount != 1 || dh.Ancount > 0 || dh.Nscount > 0 || dh.Arcount > 2 {
		return dns.MsgReject
	}
	return dns.MsgAccept
}

// dnsVerdict is the outcome of one query. Its decision starts as the zero
// policy.Decision, a denial.
type dnsVerdict struct {
	host, qtype string
	d           policy.Decision
	rcode       int
	stripped    int
	addrs       []string // A and AAAA addresses answered
	up, down    int      // query and answer sizes in bytes
}

// ServeDNS answers one query, in this order: the concurrency cap; class IN;
// the name (policy.ParseHost; no escapes, no address literals); the record
// type (ANY, HTTPS, SVCB, AXFR, IXFR refused); the deny list and allowlist;
// only then the upstream exchange, whose A/AAAA records go through the dial
// guard.
func (d *DNSServer) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	start := time.Now()
	var v dnsVerdict
	if len(r.Question) == 1 {
		v.host, v.qtype = r.Question[0].Name, dns.TypeToString[r.Question[0].Qtype]
	}
	pol := d.pol.Load()
	select {
	case d.sem <- struct{}{}:
		defer func() { <-d.sem }()
	default:
		v.d.Reason = "too many concurrent queries"
		v.up = r.Len()
		v.down = d.reply(w, r, dns.RcodeServerFailure, dns.ExtendedErrorCodeOther, v.d.Reason, nil)
		v.rcode = dns.RcodeServerFailure
		d.audit(w, pol, &v, start)
		return
	}
	v.up = r.Len()
	m, ede, edeText := d.answer(r, pol, &v)
	if m == nil {
		v.down = d.reply(w, r, v.rcode, ede, edeText, nil)
	} else {
		v.down = d.reply(w, r, m.Rcode, ede, edeText, m)
		for _, rr := range m.Answer {
			switch a := rr.(type) {
			case *dns.A:
				v.addrs = append(v.addrs, a.A.String())
			case *dns.AAAA:
				v.addrs = append(v.addrs, a.AAAA.String())
			}
		}
	}
	d.audit(w, pol, &v, start)
}

func (d *DNSServer) answer(r *dns.Msg, pol *compiled, v *dnsVerdict) (*dns.Msg, uint16, string) {
	refuse := func(reason string) (*dns.Msg, uint16, string) {
		v.rcode, v.d.Verdict, v.d.Reason = dns.RcodeRefused, policy.Deny, reason
		return nil, dns.ExtendedErrorCodeBlocked, reason
	}
	if len(r.Question) != 1 {
		v.rcode, v.d.Reason = dns.RcodeFormatError, ReasonBadRequest+": not exactly one question"
		return nil, dns.ExtendedErrorCodeOther, ""
	}
	q := r.Question[0]
	if q.Qclass != dns.ClassINET {
		return refuse(fmt.Sprintf("%s: class %s", ReasonRecordType, dns.ClassToString[q.Qclass]))
	}
	if strings.ContainsRune(q.Name, '\\') {
		return refuse(fmt.Sprintf("%s: %q: escaped bytes in a name", ReasonInvalidHost, q.Name))
	}
	h, err := policy.ParseHost(q.Name)
	if err != nil {
		return refuse(err.Error())
	}
	v.host = h.String()
	if h.IsIP() {
		return refuse(fmt.Sprintf("%s: %s is an address, not a name", ReasonInvalidHost, h))
	}
	switch q.Qtype {
	case dns.TypeANY, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeAXFR, dns.TypeIXFR:
		return refuse(fmt.Sprintf("%s: %s (HTTPS/SVCB carry ECH configs that hide the SNI; ANY and transfers are not answered)", ReasonRecordType, dns.TypeToString[q.Qtype]))
	}
	dec := pol.decideName(h)
	v.d = dec // the rule that decided the name stays on the line
	if !dec.Allowed() {
		return refuse(dec.Reason)
	}
	resp, err := d.exchange(q)
	if err != nil {
		v.rcode, v.d.Verdict, v.d.Reason = dns.RcodeServerFailure, policy.Deny, fmt.Sprintf("%s: %s: %v", ReasonUpstreamFailure, d.cfg.Upstream, err)
		return nil, dns.ExtendedErrorCodeNetworkError, ReasonUpstreamFailure
	}
	m := new(dns.Msg)
	m.Rcode = resp.Rcode
	m.RecursionAvailable = resp.RecursionAvailable
	var stripped []string
	for _, rr := range resp.Answer {
		var a netip.Addr
		switch x := rr.(type) {
		case *dns.A:
			a, _ = netip.AddrFromSlice(x.A)
		case *dns.AAAA:
			a, _ = netip.AddrFromSlice(x.AAAA)
		case *dns.HTTPS, *dns.SVCB:
			continue
		}
		if a.IsValid() {
			if ok, why := pol.checkAddr(a.Unmap(), &d.local); !ok {
				stripped = append(stripped, why)
				continue
			}
		}
		m.Answer = append(m.Answer, rr)
	}
	m.Ns = resp.Ns
	v.rcode, v.stripped = resp.Rcode, len(stripped)
	if len(stripped) > 0 {
		v.d.Reason += fmt.Sprintf("; removed %d address(es): %s", len(stripped), stripped[0])
		return m, dns.ExtendedErrorCodeFiltered, fmt.Sprintf("removed %d address(es) the proxy would refuse: %s", len(stripped), stripped[0])
	}
	return m, 0, ""
}

// exchange sends a fresh query (no client EDNS options: no ECS, no cookies)
// for q upstream, retrying over TCP when the UDP answer is truncated, and
// checks the answer is for the question asked.
func (d *DNSServer) exchange(q dns.Question) (*dns.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(q.Name, q.Qtype)
	m.RecursionDesired = true
	m.SetEdns0(1232, false)
	c := &dns.Client{Net: "udp", Timeout: d.cfg.Timeout, UDPSize: 1232}
	resp, _, err := c.ExchangeContext(ctx, m, d.cfg.Upstream)
	if err == nil && resp.Truncated {
		c.Net = "tcp"
		resp, _, err = c.ExchangeContext(ctx, m, d.cfg.Upstream)
	}
	if err != nil {
		return nil, errors.New(shortNetErr(err))
	}
	if len(resp.Question) != 1 || !strings.EqualFold(resp.Question[0].Name, q.Name) || resp.Question[0].Qtype != q.Qtype {
		return nil, errors.New("answer for another question")
	}
	if resp.Rcode == dns.RcodeServerFailure || resp.Rcode == dns.RcodeRefused {
		return nil, fmt.Errorf("upstream answered %s", dns.RcodeToString[resp.Rcode])
	}
	return resp, nil
}

func shortNetErr(err error) string {
	if isTimeout(err) {
		return "timeout"
	}
	return "exchange error"
}

// reply writes an answer to r: m's records (nil: none) with rcode, and an
// Extended DNS Error when the query had EDNS0 and ede is set. It returns the
// answer's size in bytes.
func (d *DNSServer) reply(w dns.ResponseWriter, r *dns.Msg, rcode int, ede uint16, text string, m *dns.Msg) int {
	out := new(dns.Msg)
	out.SetRcode(r, rcode)
	out.RecursionAvailable = true
	if m != nil {
		out.Answer, out.Ns = m.Answer, m.Ns
		out.RecursionAvailable = m.RecursionAvailable
	}
	size := dns.MinMsgSize
	if opt := r.IsEdns0(); opt != nil {
		size = int(min(max(opt.UDPSize(), dns.MinMsgSize), 1232))
		o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
		o.SetUDPSize(uint16(size))
		if text != "" || ede != 0 {
			o.Option = append(o.Option, &dns.EDNS0_EDE{InfoCode: ede, ExtraText: policy.OneLine(text)})
		}
		out.Extra = append(out.Extra, o)
	}
	if _, tcp := w.RemoteAddr().(*net.TCPAddr); tcp {
		size = dns.MaxMsgSize
	}
	out.Truncate(size)
	w.WriteMsg(out)
	return out.Len()
}

func (d *DNSServer) audit(w dns.ResponseWriter, pol *compiled, v *dnsVerdict, start time.Time) {
	var peer []slog.Attr
	if p, ok := w.RemoteAddr().(peerAddr); ok {
		peer = []slog.Attr{slog.Int(audit.AttrPID, p.pid), slog.Any(audit.AttrArgv, p.argv)}
	}
	audit.Decision(context.Background(), d.auditLog, audit.KindDNS, v.d, append([]slog.Attr{
		slog.String(audit.AttrSandbox, d.cfg.SandboxID),
		slog.String(audit.AttrPolicy, pol.fingerprint),
		slog.String(audit.AttrClient, w.RemoteAddr().String()),
		slog.String(audit.AttrHost, v.host),
		slog.String(audit.AttrQType, v.qtype),
		slog.String(audit.AttrRcode, dns.RcodeToString[v.rcode]),
		slog.String(audit.AttrAddr, strings.Join(v.addrs, ",")),
		slog.Int(audit.AttrStripped, v.stripped),
		slog.Int(audit.AttrBytesUp, v.up),
		slog.Int(audit.AttrBytesDown, v.down),
		slog.Float64(audit.AttrDurationMS, float64(time.Since(start).Microseconds())/1000),
	}, peer...)...,
	)
}
