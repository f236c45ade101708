package proxy

import (
	"net/netip"
	"testing"
)

// classifyCases is the dial guard's specification: address → the range name
// that refuses it ("" = an ordinary global address that passes).
var classifyCases = []struct {
	addr, want string
}{
	{"0.0.0.0", "this network (unspecified)"},
	{"0.1.2.3", "this network (unspecified)"},
	{"10.0.0.1", "private (RFC 1918)"},
	{"100.64.0.1", "shared address space (CGNAT)"},
	{"100.127.255.254", "shared address space (CGNAT)"},
	{"100.63.255.254", ""},
	{"100.128.0.1", ""},
	{"100.100.100.200", "cloud metadata (Alibaba)"},
	{"127.0.0.1", "loopback"},
	{"127.255.255.255", "loopback"},
	{"169.254.169.254", "cloud metadata"},
	{"169.254.1.1", "link-local"},
	{"168.63.129.16", "cloud metadata (Azure wire server)"},
	{"172.16.0.1", "private (RFC 1918)"},
	{"172.32.0.1", ""},
	{"192.0.0.170", "IETF protocol assignments"},
	{"192.0.0.192", "cloud metadata (Oracle)"},
	{"192.0.2.1", "documentation (TEST-NET-1)"},
	{"192.88.99.1", "6to4 relay anycast"},
	{"192.168.1.1", "private (RFC 1918)"},
	{"198.18.0.1", "benchmarking"},
	{"198.51.100.1", "documentation (TEST-NET-2)"},
	{"203.0.113.5", "documentation (TEST-NET-3)"},
	{"224.0.0.1", "multicast"},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},
	{"8.8.8.8", ""},
	{"1.1.1.1", ""},
	{"::", "unspecified"},
	{"::1", "loopback"},
	{"::7f00:1", "IPv4-compatible (deprecated) of 127.0.0.1: loopback"},
	{"::808:808", "IPv4-compatible (deprecated)"},
	{"::ffff:10.0.0.1", "IPv4-mapped of 10.0.0.1: private (RFC 1918)"},
	{"64:ff9b::7f00:1", "NAT64 of 127.0.0.1: loopback"},
	{"64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254: cloud metadata"},
	{"64:ff9b::808:808", ""},
	{"64:ff9b:1::a00:1", "local-use NAT64"},
	{"2002:7f00:1::1", "6to4 of 127.0.0.1: loopback"},
	{"2002:a00:1::1", "6to4 of 10.0.0.1: private (RFC 1918)"},
	{"2002:808:808::1", ""},
	{"2001::1", "IETF protocol assignments (Teredo, ORCHID, ...)"},
	{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "IETF protocol assignments (Teredo, ORCHID, ...)"},
	{"2001:db8::1", "documentation"},
	{"3fff::1", "documentation"},
	{"100::1", "discard-only"},
	{"fc00::1", "unique local (ULA)"},
	{"fd00:ec2::254", "cloud metadata (AWS IPv6)"},
	{"fe80::1", "link-local"},
	{"fec0::1", "site-local (deprecated)"},
	{"ff02::2", "multicast"},
	{"2001:4860:4860::8888", ""},
	{"2606:4700::1111", ""},
	{"64:ff9c::1", ""},
}

func TestClassifyAddr(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range classifyCases {
		if seen[tc.addr] {
			t.Fatalf("duplicate case %s", tc.addr)
		}
		seen[tc.addr] = true
		if got := ClassifyAddr(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("ClassifyAddr(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestCheckAddrOrder(t *testing.T) {
	c, err := compilePolicy(Policy{
		Allow:        []string{"a.test", "10.9.9.9", "127.0.0.2"},
		Deny:         []string{"127.0.0.2", "8.8.4.4", "192.168.7.7"},
		AllowPrivate: []netip.Prefix{netip.MustParsePrefix("192.168.7.0/24")},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr string
		ok   bool
		why  string
	}{
		{"192.168.7.9", true, "address opened by --allow-private 192.168.7.0/24"},
		{"192.168.8.9", false, "private address: 192.168.8.9 is private (RFC 1918)"},
		{"10.9.9.9", true, "address opened by allowlist entry 10.9.9.9"},
		{"127.0.0.2", false, `denied domain: 127.0.0.2 matches network.domains entry "127.0.0.2"`},
		{"::ffff:10.9.9.9", true, "address opened by allowlist entry 10.9.9.9"},
		{"8.8.8.8", true, "global address"},
		{"8.8.4.4", false, `denied domain: 8.8.4.4 matches network.domains entry "8.8.4.4"`},
		{"192.168.7.7", false, `denied domain: 192.168.7.7 matches network.domains entry "192.168.7.7"`},
	} {
		ok, why := c.checkAddr(netip.MustParseAddr(tc.addr), nil)
		if ok != tc.ok || why != tc.why {
			t.Errorf("checkAddr(%s) = %v %q, want %v %q", tc.addr, ok, why, tc.ok, tc.why)
		}
	}
}

func TestOwnInterfaceAddressRefused(t *testing.T) {
	var l localAddrs
	c, _ := compilePolicy(Policy{Allow: []string{"a.test"}})
	// Every interface address this host has (loopback included) is refused.
	l.has(netip.Addr{})
	for a := range l.addrs {
		if ok, _ := c.checkAddr(a, &l); ok {
			t.Errorf("own address %s passed the dial guard", a)
		}
	}
}

func FuzzClassifyAddr(f *testing.F) {
	for _, tc := range classifyCases {
		b := netip.MustParseAddr(tc.addr).As16()
		f.Add(b[:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != 16 {
			return
		}
		a := netip.AddrFrom16([16]byte(b))
		got := ClassifyAddr(a)
		// Property: an IPv4-mapped address classifies like its IPv4 form.
		if a.Is4In6() && (got == "") != (ClassifyAddr(a.Unmap()) == "") {
			t.Fatalf("%s: %q but unmapped %q", a, got, ClassifyAddr(a.Unmap()))
		}
		// Property: no loopback, private, link-local or multicast passes.
		u := a.Unmap()
		if got == "" && (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsMulticast() || u.IsUnspecified()) {
			t.Fatalf("%s passed the table", a)
		}
	})
}
