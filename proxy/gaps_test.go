package proxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// Tests that close the gaps an audit of the proxy found: each one fails when
// the behavior it names is broken (see the commit messages for how each was
// seen failing).

// staticResolver answers from a map ("name." → addresses) and never touches
// the network.
type staticResolver map[string][]netip.Addr

func (r staticResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// decideOnly builds a Server that is asked only through Explain: its
// resolver is static, its interface addresses are own, and any dial fails
// the test (no packet leaves for the data-only addresses used here).
func decideOnly(t *testing.T, pol proxy.Policy, r staticResolver, own ...netip.Addr) *proxy.Server {
	t.Helper()
	srv, err := proxy.New(proxy.Config{
		Policy:   pol,
		Resolver: r,
		Audit:    discardLogger(),
		Dial: func(_ context.Context, _, addr string) (net.Conn, error) {
			t.Errorf("dialed %s in a decision-only test", addr)
			return nil, errors.New("no dial in this test")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	proxy.SetInterfaceAddrs(srv, func() ([]net.Addr, error) {
		var out []net.Addr
		for _, a := range own {
			out = append(out, &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(a.BitLen(), a.BitLen())})
		}
		return out, nil
	})
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestOwnGlobalInterfaceAddressRefused: a globally routable address that is
// one of this host's own interface addresses is refused with its own
// reason, and the same address passes when the host does not have it. Every
// address a test machine really has is special-purpose anyway (so the
// host-address branch could be deleted unnoticed); here the interface list
// is injected. 8.8.8.8 is data only: Explain never dials, and the dialer
// fails the test if called.
func TestOwnGlobalInterfaceAddressRefused(t *testing.T) {
	own := netip.MustParseAddr("8.8.8.8")
	r := staticResolver{"own.test.": {own}}
	allow := []string{"own.test"}
	cases := []struct {
		name   string
		listed bool
		open   []netip.Prefix
		ok     bool
		reason string
	}{
		{"listed", true, nil, false, "private address: 8.8.8.8 is an address of this host"},
		{"not listed", false, nil, true, `allowed by entry "own.test"`},
		{"listed, opened by a range", true, []netip.Prefix{netip.MustParsePrefix("8.8.8.0/24")}, false,
			"private address: 8.8.8.8 is an address of this host (an opened range does not cover it; open it by itself)"},
		{"listed, opened by itself", true, []netip.Prefix{netip.MustParsePrefix("8.8.8.8/32")}, true, `allowed by entry "own.test"`},
	}
	for _, c := range cases {
		var ifs []netip.Addr
		if c.listed {
			ifs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), own}
		}
		srv := decideOnly(t, proxy.Policy{Allow: allow, AllowPrivate: c.open}, r, ifs...)
		d, ap := srv.Explain(ctxT(t), "own.test:443")
		if d.Allowed() != c.ok || d.Reason != c.reason {
			t.Errorf("%s: Explain = %v %q, want %v %q", c.name, d.Allowed(), d.Reason, c.ok, c.reason)
		}
		if want := netip.AddrPortFrom(own, 443); c.ok && ap != want {
			t.Errorf("%s: pinned %v, want %v", c.name, ap, want)
		}
	}
}

// TestRelayCopiesRawConns: both directions of a tunnel hand io.Copy the raw
// *net.TCPConn (TCP listener) or *net.UnixConn (Unix listener) of the
// client and the *net.TCPConn of the target, so Linux splices; any wrapper
// type would silently fall back to a userspace copy.
func TestRelayCopiesRawConns(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	var mu sync.Mutex
	var got []string
	proxy.SetRelayHook(e.srv, func(dst, src net.Conn) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%T <- %T", dst, src))
	})
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Clone(got)
		got = nil
		slices.Sort(out)
		return out
	}
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)

	c, resp := e.connect("allowed.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT over TCP: %s", resp.Status)
	}
	roundTrip(t, c, "over tcp")
	c.Close()
	waitFor(t, func() bool { return e.srv.ActiveTunnels() == 0 })
	if g, want := seen(), []string{"*net.TCPConn <- *net.TCPConn", "*net.TCPConn <- *net.TCPConn"}; !slices.Equal(g, want) {
		t.Errorf("TCP listener: relay copied between %q, want %q", g, want)
	}

	sock := filepath.Join(t.TempDir(), "proxy.sock")
	ln := mustListen(t, "unix", sock)
	go e.srv.Serve(ln)
	uc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(uc, "CONNECT allowed.test:%s HTTP/1.1\r\nHost: allowed.test:%[1]s\r\nProxy-Authorization: %s\r\n\r\n", port, basic(e.srv.User(), e.srv.Secret()))
	br := bufio.NewReader(uc)
	resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT over the Unix socket: %v %v", resp, err)
	}
	io.WriteString(uc, "over unix")
	buf := make([]byte, len("over unix"))
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "over unix" {
		t.Fatalf("echo over the Unix socket: %q %v", buf, err)
	}
	uc.Close()
	waitFor(t, func() bool { return e.srv.ActiveTunnels() == 0 })
	if g, want := seen(), []string{"*net.TCPConn <- *net.UnixConn", "*net.UnixConn <- *net.TCPConn"}; !slices.Equal(g, want) {
		t.Errorf("Unix listener: relay copied between %q, want %q", g, want)
	}
}

// closedPort returns a loopback port nothing listens on (a listener's port,
// closed again).
func closedPort(t *testing.T) string {
	ln := mustListen(t, "tcp", "127.0.0.1:0")
	_, port := splitPort(ln.Addr().String())
	ln.Close()
	return port
}

// checkDialRefusal checks a 502 answer and its audit line: the reason in the
// header and the body, and an audit line that says deny with that reason
// (for plain HTTP, whose dial happens in the transport, also as its close
// cause).
func checkDialRefusal(t *testing.T, e *env, kind string, resp *http.Response, reason string) {
	t.Helper()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("status %d, want 502", resp.StatusCode)
	}
	if got := resp.Header.Get("X-Proxy-Error"); got != reason {
		t.Errorf("X-Proxy-Error %q, want %q", got, reason)
	}
	if got := body(t, resp); got != reason+"\n" {
		t.Errorf("body %q, want %q", got, reason+"\n")
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrKind] != kind {
		t.Errorf("audit kind %v, want %s", rec[audit.AttrKind], kind)
	}
	if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != reason {
		t.Errorf("audit decision %v reason %v, want deny %q (line %v)", rec[audit.AttrDecision], rec[audit.AttrReason], reason, rec)
	}
	if kind == "http" && rec[audit.AttrClose] != reason {
		t.Errorf("audit close %v, want %q (line %v)", rec[audit.AttrClose], reason, rec)
	}
}

// TestDialFailure: an allowed name whose address refuses the connection
// gets 502 naming the dial failure, for CONNECT and plain HTTP, with an
// audit line that says deny and why.
func TestDialFailure(t *testing.T) {
	port := closedPort(t)
	want := "dial failed: 127.0.0.1:" + port + ": connection refused"
	t.Run("connect", func(t *testing.T) {
		e := newEnv(t, defaultPolicy())
		_, resp := e.connect("allowed.test:"+port, true)
		checkDialRefusal(t, e, "connect", resp, want)
	})
	t.Run("http", func(t *testing.T) {
		e := newEnv(t, defaultPolicy())
		resp, err := e.client().Get("http://allowed.test:" + port + "/")
		if err != nil {
			t.Fatal(err)
		}
		checkDialRefusal(t, e, "http", resp, want)
	})
}

// TestDialTimeout: a dialer that never connects (it blocks until its
// context ends) is cut off at DialTimeout: the client gets 502 naming the
// timeout well before its own deadline, for CONNECT and plain HTTP.
func TestDialTimeout(t *testing.T) {
	const dialTimeout = 300 * time.Millisecond
	for _, kind := range []string{"connect", "http"} {
		t.Run(kind, func(t *testing.T) {
			release := make(chan struct{})
			var dialed atomic.Int64
			e := newEnv(t, defaultPolicy(), func(c *proxy.Config) {
				c.DialTimeout = dialTimeout
				c.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
					dialed.Add(1)
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-release: // the test ended without a timeout
						return nil, errors.New("test ended")
					}
				}
			})
			t.Cleanup(func() { close(release) }) // runs before the proxy's Close
			port := closedPort(t)
			start := time.Now()
			var resp *http.Response
			if kind == "connect" {
				c, err := net.Dial("tcp", e.addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				c.SetDeadline(start.Add(dialTimeout + 5*time.Second))
				fmt.Fprintf(c, "CONNECT allowed.test:%s HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n", port, basic(e.srv.User(), e.srv.Secret()))
				resp, err = http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
				if err != nil {
					t.Fatalf("no answer within DialTimeout + 5s: %v", err)
				}
			} else {
				cl := e.client()
				cl.Timeout = dialTimeout + 5*time.Second
				var err error
				resp, err = cl.Get("http://allowed.test:" + port + "/")
				if err != nil {
					t.Fatalf("no answer within DialTimeout + 5s: %v", err)
				}
			}
			if el := time.Since(start); el > dialTimeout+5*time.Second {
				t.Errorf("answered after %v, DialTimeout is %v", el, dialTimeout)
			}
			if dialed.Load() == 0 {
				t.Error("the dialer was never called")
			}
			checkDialRefusal(t, e, kind, resp, "dial failed: 127.0.0.1:"+port+": timeout")
		})
	}
}

// TestPolicyFromBound: a resolved bound's network rules become the proxy
// policy: no network rules or no allowDomains mean no egress (Barry's
// enforce: sandbox semantics), actions [all] means no egress, allowDomains
// and domains pass through as the allow and deny lists, the operator's
// private ranges pass through, and what cannot be enforced by host is an
// error. Each result is checked by asking a Server built from it.
func TestPolicyFromBound(t *testing.T) {
	const noEgress = "not in allowlist: the allowlist is empty (no egress)"
	type probe struct {
		host   string
		ok     bool
		reason string
	}
	sandbox := func(n policy.NetworkRules) *policy.Bound {
		n.Enforce = policy.EnforceSandbox
		return &policy.Bound{Name: "b", Network: &n}
	}
	ten := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		name    string
		b       *policy.Bound
		private []netip.Prefix
		err     string
		probes  []probe
	}{
		{name: "nil bound", b: nil,
			probes: []probe{{"a.test", false, noEgress}}},
		{name: "bound without network", b: &policy.Bound{Name: "b", DeniedTools: []string{"Bash"}},
			probes: []probe{{"a.test", false, noEgress}}},
		{name: "allowDomains absent", b: sandbox(policy.NetworkRules{Domains: []string{"bad.test"}}),
			probes: []probe{
				{"a.test", false, noEgress},
				{"bad.test", false, `denied domain: bad.test matches network.domains entry "bad.test"`},
			}},
		{name: "allowDomains empty", b: sandbox(policy.NetworkRules{AllowDomains: []string{}}),
			probes: []probe{{"a.test", false, noEgress}}},
		{name: "actions all", b: sandbox(policy.NetworkRules{Actions: []string{policy.ActionAll}, AllowDomains: []string{"a.test"}}),
			probes: []probe{{"a.test", false, `denied network action: network.actions "all" denies every action (no egress)`}}},
		{name: "actions read and write cover all", b: sandbox(policy.NetworkRules{Actions: []string{policy.ActionRead, policy.ActionWrite}, AllowDomains: []string{"a.test"}}),
			probes: []probe{{"a.test", false, `denied network action: network.actions "read, write" denies every action (no egress)`}}},
		{name: "actions all under guard", b: &policy.Bound{Network: &policy.NetworkRules{Enforce: policy.EnforceGuard, Actions: []string{policy.ActionAll}, AllowDomains: []string{"a.test"}}},
			probes: []probe{{"a.test", false, `denied network action: network.actions "all" denies every action (no egress)`}}},
		{name: "allowDomains and domains", b: sandbox(policy.NetworkRules{AllowDomains: []string{"a.test", "*.b.test"}, Domains: []string{"bad.b.test"}}),
			probes: []probe{
				{"a.test", true, `allowed by entry "a.test"`},
				{"x.b.test", true, `allowed by entry "*.b.test"`},
				{"bad.b.test", false, `denied domain: bad.b.test matches network.domains entry "bad.b.test"`},
				{"other.test", false, "not in allowlist: other.test"},
			}},
		{name: "private address without an opened range", b: sandbox(policy.NetworkRules{AllowDomains: []string{"private.test"}}),
			probes: []probe{{"private.test", false, "private address: 10.1.2.3 is private (RFC 1918)"}}},
		{name: "operator range passed through", b: sandbox(policy.NetworkRules{AllowDomains: []string{"private.test"}}), private: ten,
			probes: []probe{{"private.test", true, `allowed by entry "private.test"`}}},
		{name: "partial actions under sandbox", b: sandbox(policy.NetworkRules{Actions: []string{policy.ActionWrite}, AllowDomains: []string{"a.test"}}),
			err: "network.actions denies only some actions (write) under enforce: sandbox"},
		{name: "invalid allow pattern", b: sandbox(policy.NetworkRules{AllowDomains: []string{"*.com"}}),
			err: "public suffix"},
		{name: "invalid deny pattern", b: sandbox(policy.NetworkRules{AllowDomains: []string{"a.test"}, Domains: []string{"a\nb.test"}}),
			err: "proxy policy: network.domains[0]"},
	}
	r := staticResolver{
		"a.test.":        {netip.MustParseAddr("8.8.8.8")}, // data only: never dialed
		"x.b.test.":      {netip.MustParseAddr("8.8.8.8")},
		"private.test.":  {netip.MustParseAddr("10.1.2.3")},
		"bad.test.":      {netip.MustParseAddr("8.8.8.8")},
		"bad.b.test.":    {netip.MustParseAddr("8.8.8.8")},
		"other.test.":    {netip.MustParseAddr("8.8.8.8")},
		"unlisted.test.": {netip.MustParseAddr("8.8.8.8")},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
		p, err := proxy.PolicyFromBound(c.b, c.private)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
			}
			if p.Allow != nil || p.Deny != nil || p.AllowPrivate != nil {
				t.Errorf("%s: a refused bound still gave a policy: %+v", c.name, p)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		srv := decideOnly(t, p, r)
		for _, pr := range c.probes {
			d, _ := srv.Explain(ctxT(t), pr.host)
			if d.Allowed() != pr.ok || d.Reason != pr.reason {
				t.Errorf("%s: %s: %v %q, want %v %q", c.name, pr.host, d.Allowed(), d.Reason, pr.ok, pr.reason)
			}
		}
	}

	// The policy owns its lists: changing the bound or the operator's slice
	// afterwards changes nothing.
	b := sandbox(policy.NetworkRules{AllowDomains: []string{"private.test"}})
	private := slices.Clone(ten)
	p, err := proxy.PolicyFromBound(b, private)
	if err != nil {
		t.Fatal(err)
	}
	b.Network.AllowDomains[0] = "other.test"
	private[0] = netip.MustParsePrefix("192.168.0.0/16")
	if d, _ := decideOnly(t, p, r).Explain(ctxT(t), "private.test"); !d.Allowed() {
		t.Errorf("after changing the inputs: %q", d.Reason)
	}
}

// TestProxyEnvironmentIgnoredPlainHTTP: with every proxy variable pointing
// at a trap, a plain-HTTP request to a name whose pinned address is not
// loopback still goes straight to the upstream. (net/http never sends a
// loopback target to an environment proxy, so a loopback upstream cannot
// tell whether the transport consults the environment.) net/http reads the
// environment once per process, so the check runs in a fresh child process
// of this test binary, started with the variables set; the trap is here in
// the parent and counts what reaches it.
func TestProxyEnvironmentIgnoredPlainHTTP(t *testing.T) {
	if os.Getenv(envChild) != "" {
		proxyEnvChild(t, os.Getenv("HTTP_PROXY"))
		return
	}
	trap, hits := countingTrap(t)
	trapURL := "http://" + trap.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestProxyEnvironmentIgnoredPlainHTTP$", "-test.count=1", "-test.v", "-test.timeout=50s")
	cmd.Env = append(os.Environ(), envChild+"=1", "NO_PROXY=", "no_proxy=")
	for _, v := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		cmd.Env = append(cmd.Env, v+"="+trapURL)
	}
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestProxyEnvironmentIgnoredPlainHTTP") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the trap proxy from the environment saw %d connections", n)
	}
}

// envChild marks the child process of TestProxyEnvironmentIgnoredPlainHTTP.
const envChild = "BARRY_PROXY_ENV_CHILD"

// proxyEnvChild is the child's half: the proxy variables name the parent's
// trap. The upstream is on loopback; the resolver answers 203.0.113.10 and
// the test's dialer carries exactly that address to loopback, so nothing
// is sent to 203.0.113.10.
func proxyEnvChild(t *testing.T, trapURL string) {
	probe, _ := http.NewRequest(http.MethodGet, "http://203.0.113.10:80/", nil)
	if u, _ := http.ProxyFromEnvironment(probe); trapURL == "" || u == nil || u.String() != trapURL {
		t.Fatalf("http.ProxyFromEnvironment gives %v, not the trap %q: this check could not catch a transport that follows the environment", u, trapURL)
	}
	upstream := netip.MustParseAddr("203.0.113.10")
	pol := proxy.Policy{Allow: []string{"upstream.test"}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}
	e := newEnv(t, pol, func(c *proxy.Config) {
		c.Dial = func(ctx context.Context, _, addr string) (net.Conn, error) {
			ap, err := netip.ParseAddrPort(addr)
			if err != nil || ap.Addr() != upstream {
				return nil, fmt.Errorf("test dialer: refusing %s", addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), ap.Port()).String())
		}
	})
	e.dns.Add(t, "upstream.test. 60 IN A 203.0.113.10")

	resp, err := e.client().Get("http://upstream.test:" + e.hport + "/")
	if err != nil {
		t.Fatal(err)
	}
	got := body(t, resp)
	if resp.StatusCode != 200 || got != "http hello host=upstream.test:"+e.hport+" body=" {
		t.Errorf("plain HTTP: %d %q (X-Proxy-Error %q)", resp.StatusCode, got, resp.Header.Get("X-Proxy-Error"))
	}
	echo := proxytest.NewEcho(t, nil, "")
	_, port := splitPort(echo.Addr)
	c, cresp := e.connect("upstream.test:"+port, true)
	if cresp.StatusCode != 200 {
		t.Fatalf("CONNECT: %s", cresp.Status)
	}
	roundTrip(t, c, "ssh-ish")
}

// TestInterfaceListingFailureRefuses: when the host's addresses cannot be
// listed, a global address is refused (it may be the host's own), with the
// listing error in the reason; it used to pass as "global address".
func TestInterfaceListingFailureRefuses(t *testing.T) {
	own := netip.MustParseAddr("8.8.8.8")
	srv := decideOnly(t, proxy.Policy{Allow: []string{"own.test"}}, staticResolver{"own.test.": {own}})
	proxy.SetInterfaceAddrs(srv, func() ([]net.Addr, error) { return nil, errors.New("netlink refused") })
	d, _ := srv.Explain(ctxT(t), "own.test:443")
	want := "private address: cannot tell whether 8.8.8.8 is an address of this host (listing interfaces: netlink refused)"
	if d.Allowed() || d.Reason != want {
		t.Errorf("Explain = %v %q, want deny %q", d.Allowed(), d.Reason, want)
	}
}
