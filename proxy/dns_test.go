package proxy_test

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/proxy"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

type dnsEnv struct {
	srv      *proxy.DNSServer
	addr     string // UDP
	tcpAddr  string
	upstream *proxytest.DNS
	audit    *syncBuffer
}

func newDNSEnv(t testing.TB, mod ...func(*proxy.DNSConfig)) *dnsEnv {
	t.Helper()
	return newDNSEnvWith(t, nil, mod...)
}

// newDNSEnvWith is newDNSEnv with the host's interface addresses listed by
// ifs (nil: the real ones).
func newDNSEnvWith(t testing.TB, ifs func() ([]net.Addr, error), mod ...func(*proxy.DNSConfig)) *dnsEnv {
	t.Helper()
	up := proxytest.NewDNS(t)
	up.Add(t,
		"allowed.test. 60 IN A 8.8.4.4",
		"allowed.test. 60 IN AAAA 2001:4860:4860::8844",
		`allowed.test. 60 IN TXT "hello world"`,
		"allowed.test. 60 IN HTTPS 1 . alpn=h2",
		"mixed.test. 60 IN A 8.8.4.4",
		"mixed.test. 60 IN A 127.0.0.1",
		"mixed.test. 60 IN A 10.0.0.1",
		"mixed.test. 60 IN AAAA ::ffff:169.254.169.254",
		"cname.test. 60 IN CNAME allowed.test.",
		"unlisted.test. 60 IN A 8.8.4.4",
		"denied.test. 60 IN A 8.8.4.4",
	)
	e := &dnsEnv{upstream: up, audit: &syncBuffer{}}
	cfg := proxy.DNSConfig{
		SandboxID: "sbx-dns",
		Policy:    proxy.Policy{Allow: []string{"allowed.test", "mixed.test", "cname.test", "denied.test", "*.wild.test"}, Deny: []string{"denied.test"}},
		Upstream:  up.Addr,
		Audit:     slog.New(slog.NewJSONHandler(e.audit, nil)),
	}
	for _, m := range mod {
		m(&cfg)
	}
	srv, err := proxy.NewDNS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ifs != nil {
		proxy.SetDNSInterfaceAddrs(srv, ifs)
	}
	pc, ln := proxytest.ListenUDPTCP(t)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); srv.ServeUDP(pc) }()
	go func() { defer wg.Done(); srv.ServeTCP(ln) }()
	t.Cleanup(func() { srv.Close(); wg.Wait() })
	e.srv, e.addr, e.tcpAddr = srv, pc.LocalAddr().String(), ln.Addr().String()
	return e
}

func (e *dnsEnv) query(t *testing.T, netw, name string, qtype uint16) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.SetEdns0(1232, false)
	c := &dns.Client{Net: netw, Timeout: 5 * time.Second}
	addr := e.addr
	if netw == "tcp" {
		addr = e.tcpAddr
	}
	var r *dns.Msg
	var err error
	for i := 0; i < 3; i++ { // the server may still be starting
		if r, _, err = c.Exchange(m, addr); err == nil {
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("query %s: %v", name, err)
	return nil
}

func ede(m *dns.Msg) (uint16, string, bool) {
	if o := m.IsEdns0(); o != nil {
		for _, opt := range o.Option {
			if e, ok := opt.(*dns.EDNS0_EDE); ok {
				return e.InfoCode, e.ExtraText, true
			}
		}
	}
	return 0, "", false
}

func TestDNSAllowed(t *testing.T) {
	e := newDNSEnv(t)
	for _, netw := range []string{"udp", "tcp"} {
		r := e.query(t, netw, "allowed.test.", dns.TypeA)
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "8.8.4.4" {
			t.Fatalf("%s A: %v", netw, r)
		}
	}
	r := e.query(t, "udp", "ALLOWED.test.", dns.TypeTXT)
	if len(r.Answer) != 1 || strings.Join(r.Answer[0].(*dns.TXT).Txt, " ") != "hello world" {
		t.Fatalf("TXT: %v", r)
	}
	r = e.query(t, "udp", "cname.test.", dns.TypeA)
	if len(r.Answer) != 2 {
		t.Fatalf("CNAME chain: %v", r)
	}
	r = e.query(t, "udp", "nx.wild.test.", dns.TypeA)
	if r.Rcode != dns.RcodeNameError {
		t.Fatalf("NXDOMAIN from upstream should pass: %v", r)
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrKind] != "dns" || rec[audit.AttrDecision] != "allow" || rec[audit.AttrRcode] != "NOERROR" || rec[audit.AttrSandbox] != "sbx-dns" {
		t.Fatalf("audit = %v", rec)
	}
	if r, _ := rec[audit.AttrRule].(string); r == "" {
		t.Fatalf("audit line has no rule: %v", rec)
	}
	// The answered address and the sizes each way, as in the proxy's lines.
	if rec[audit.AttrAddr] != "8.8.4.4" || rec[audit.AttrBytesUp].(float64) < 17 || rec[audit.AttrBytesDown].(float64) <= rec[audit.AttrBytesUp].(float64) {
		t.Fatalf("audit addr/bytes = %v", rec)
	}
}

func TestDNSRefusedWithoutUpstreamQuery(t *testing.T) {
	e := newDNSEnv(t)
	cases := []struct {
		name   string
		qtype  uint16
		reason string
	}{
		{"unlisted.test.", dns.TypeA, "not in allowlist: unlisted.test"},
		{"data-to-leak.unlisted.test.", dns.TypeTXT, "not in allowlist: data-to-leak.unlisted.test"},
		{"denied.test.", dns.TypeA, `denied domain: denied.test matches network.domains entry "denied.test"`},
		{"wild.test.", dns.TypeA, "not in allowlist: wild.test"},
		{"allowed.test.", dns.TypeHTTPS, "record type refused: HTTPS"},
		{"allowed.test.", dns.TypeSVCB, "record type refused: SVCB"},
		{"allowed.test.", dns.TypeANY, "record type refused: ANY"},
		{`a\.b.allowed.test.`, dns.TypeA, "invalid host"},
		{"127.0.0.1.", dns.TypeA, "invalid host: 127.0.0.1 is an address"},
		{"0x7f.1.", dns.TypeA, "invalid host: 127.0.0.1 is an address"},
	}
	for _, tc := range cases {
		r := e.query(t, "udp", tc.name, tc.qtype)
		code, text, ok := ede(r)
		if r.Rcode != dns.RcodeRefused || !ok || code != dns.ExtendedErrorCodeBlocked || !strings.HasPrefix(text, tc.reason) {
			t.Errorf("%s %s: rcode %s EDE %d %q, want REFUSED Blocked %q", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[r.Rcode], code, text, tc.reason)
		}
	}
	if n := e.upstream.Total(); n != 0 {
		t.Fatalf("upstream saw %d queries for refused questions", n)
	}
}

func TestDNSStripsRefusedAddresses(t *testing.T) {
	e := newDNSEnv(t)
	r := e.query(t, "udp", "mixed.test.", dns.TypeA)
	if len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "8.8.4.4" {
		t.Fatalf("answer %v, want only 8.8.4.4", r.Answer)
	}
	if code, text, ok := ede(r); !ok || code != dns.ExtendedErrorCodeFiltered || !strings.Contains(text, "removed 2 address(es)") {
		t.Fatalf("EDE %d %q", code, text)
	}
	r = e.query(t, "udp", "mixed.test.", dns.TypeAAAA)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("mapped metadata address not stripped: %v", r.Answer)
	}
}

func TestDNSUpstreamFailureIsServfail(t *testing.T) {
	dead, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.LocalAddr().String()
	dead.Close() // nothing listens there any more
	e := newDNSEnv(t, func(c *proxy.DNSConfig) { c.Upstream = deadAddr; c.Timeout = 300 * time.Millisecond })
	r := e.query(t, "udp", "allowed.test.", dns.TypeA)
	if r.Rcode != dns.RcodeServerFailure {
		t.Fatalf("rcode %s, want SERVFAIL", dns.RcodeToString[r.Rcode])
	}
	r = e.query(t, "udp", "unlisted.test.", dns.TypeA)
	if r.Rcode != dns.RcodeRefused {
		t.Fatalf("a denial must stay REFUSED even with upstream down: %s", dns.RcodeToString[r.Rcode])
	}
}

func TestDNSConcurrencyCap(t *testing.T) {
	e := newDNSEnv(t, func(c *proxy.DNSConfig) { c.MaxConcurrent = 1 })
	e.upstream.SetDelay(300 * time.Millisecond)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	capped := 0
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.query(t, "udp", "allowed.test.", dns.TypeA)
			mu.Lock()
			defer mu.Unlock()
			codes[r.Rcode]++
			if _, text, _ := ede(r); text == "too many concurrent queries" {
				capped++
			}
		}()
	}
	wg.Wait()
	if codes[dns.RcodeSuccess] < 1 || capped < 1 || codes[dns.RcodeServerFailure] != capped {
		t.Fatalf("rcodes %v, capped %d", codes, capped)
	}
}

func TestDNSSetPolicy(t *testing.T) {
	e := newDNSEnv(t)
	if r := e.query(t, "udp", "allowed.test.", dns.TypeA); r.Rcode != dns.RcodeSuccess {
		t.Fatal(r)
	}
	if err := e.srv.SetPolicy(proxy.Policy{Allow: []string{"other.test"}}); err != nil {
		t.Fatal(err)
	}
	if r := e.query(t, "udp", "allowed.test.", dns.TypeA); r.Rcode != dns.RcodeRefused {
		t.Fatalf("after swap: %s", dns.RcodeToString[r.Rcode])
	}
}

func newDNSEnvB(b *testing.B) *dnsEnv {
	return newDNSEnv(b, func(c *proxy.DNSConfig) { c.Audit = discardLogger() })
}

// TestDNSStripsOwnAddresses: a global address that is one of this host's
// own is removed from answers like a special-purpose one, and when the
// host's addresses cannot be listed every global address is removed. The
// interface list is injected: a test machine's real ones are all special.
// 8.8.4.4 is data from the fake upstream; nothing is sent to it.
func TestDNSStripsOwnAddresses(t *testing.T) {
	own := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("8.8.4.4").To4(), Mask: net.CIDRMask(32, 32)}}, nil
	}
	e := newDNSEnvWith(t, own)
	r := e.query(t, "udp", "allowed.test.", dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("the host's own address was answered: %v", r.Answer)
	}
	if _, text, ok := ede(r); !ok || !strings.Contains(text, "address of this host") {
		t.Fatalf("EDE %q, want the reason", text)
	}
	r = e.query(t, "udp", "allowed.test.", dns.TypeAAAA)
	if len(r.Answer) != 1 {
		t.Fatalf("an address the host does not have was removed: %v", r.Answer)
	}
	failing := newDNSEnvWith(t, func() ([]net.Addr, error) { return nil, errors.New("netlink refused") })
	r = failing.query(t, "udp", "allowed.test.", dns.TypeA)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("with the host's addresses unknown, a global address was answered: %v", r.Answer)
	}
}
