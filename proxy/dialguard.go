package proxy

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

// SpecialRange is one row of the dial guard's table: a range no connection
// may reach unless the policy opens it explicitly.
type SpecialRange struct {
	Prefix netip.Prefix
	Name   string
	// Embeds says where an IPv4 address sits inside an IPv6 address of this
	// range (bit offset), -1 when it does not embed one.
	Embeds int
}

func sr(p, name string) SpecialRange {
	return SpecialRange{Prefix: netip.MustParsePrefix(p), Name: name, Embeds: -1}
}

func embed(p, name string, at int) SpecialRange {
	s := sr(p, name)
	s.Embeds = at
	return s
}

// SpecialRanges is the dial guard's table, built on the IANA IPv4 and IPv6
// special-purpose address registries plus cloud metadata addresses. More
// specific rows come first so the reason names the narrowest range. Go's
// IsPrivate/IsGlobalUnicast are not used: they miss 0.0.0.0/8, 240/4,
// 192.0.0.0/24, 198.18/15, ::/96, fec0::/10 and 64:ff9b:1::/48.
var SpecialRanges = []SpecialRange{
	// Cloud metadata first: most specific, most dangerous.
	sr("169.254.169.254/32", "cloud metadata"),
	sr("169.254.170.2/32", "cloud metadata (ECS task)"),
	sr("100.100.100.200/32", "cloud metadata (Alibaba)"),
	sr("168.63.129.16/32", "cloud metadata (Azure wire server)"),
	sr("192.0.0.192/32", "cloud metadata (Oracle)"),
	sr("fd00:ec2::254/128", "cloud metadata (AWS IPv6)"),
	// IPv4 special-purpose registry.
	sr("0.0.0.0/8", "this network (unspecified)"),
	sr("10.0.0.0/8", "private (RFC 1918)"),
	sr("100.64.0.0/10", "shared address space (CGNAT)"),
	sr("127.0.0.0/8", "loopback"),
	sr("169.254.0.0/16", "link-local"),
	sr("172.16.0.0/12", "private (RFC 1918)"),
	sr("192.0.0.0/24", "IETF protocol assignments"),
	sr("192.0.2.0/24", "documentation (TEST-NET-1)"),
	sr("192.31.196.0/24", "AS112-v4"),
	sr("192.52.193.0/24", "AMT"),
	sr("192.88.99.0/24", "6to4 relay anycast"),
	sr("192.168.0.0/16", "private (RFC 1918)"),
	sr("192.175.48.0/24", "direct delegation AS112"),
	sr("198.18.0.0/15", "benchmarking"),
	sr("198.51.100.0/24", "documentation (TEST-NET-2)"),
	sr("203.0.113.0/24", "documentation (TEST-NET-3)"),
	sr("224.0.0.0/4", "multicast"),
	sr("255.255.255.255/32", "broadcast"),
	sr("240.0.0.0/4", "reserved"),
	// IPv6 special-purpose registry. Rows that embed IPv4 are checked
	// against the IPv4 rows too.
	sr("::/128", "unspecified"),
	sr("::1/128", "loopback"),
	embed("::ffff:0:0/96", "IPv4-mapped", 96),
	embed("::/96", "IPv4-compatible (deprecated)", 96),
	embed("64:ff9b::/96", "NAT64", 96),
	sr("64:ff9b:1::/48", "local-use NAT64"),
	sr("100::/64", "discard-only"),
	sr("2001:db8::/32", "documentation"),
	sr("2001::/23", "IETF protocol assignments (Teredo, ORCHID, ...)"),
	embed("2002::/16", "6to4", 16),
	sr("3fff::/20", "documentation"),
	sr("5f00::/16", "segment routing (SRv6) SIDs"),
	sr("fc00::/7", "unique local (ULA)"),
	sr("fe80::/10", "link-local"),
	sr("fec0::/10", "site-local (deprecated)"),
	sr("ff00::/8", "multicast"),
}

// embedded IPv6 forms that stay refused as a whole whatever they embed.
var (
	mappedPfx = netip.MustParsePrefix("::ffff:0:0/96")
	compatPfx = netip.MustParsePrefix("::/96")
)

// ClassifyAddr returns the name of the special-purpose range a falls into,
// following IPv4 embedded in IPv6 forms (mapped, compatible, NAT64, 6to4):
// "" means an ordinary global address. The name of an embedded hit reads
// "NAT64 of 127.0.0.1: loopback".
func ClassifyAddr(a netip.Addr) string {
	a = a.WithZone("")
	for _, r := range SpecialRanges {
		if !r.Prefix.Contains(a) {
			continue
		}
		if r.Embeds < 0 {
			return r.Name
		}
		v4 := embeddedV4(a, r.Embeds)
		if inner := ClassifyAddr(v4); inner != "" {
			return fmt.Sprintf("%s of %s: %s", r.Name, v4, inner)
		}
		if r.Prefix == mappedPfx || r.Prefix == compatPfx {
			// An unmapped public IPv4 in IPv6 clothing: refuse the odd form
			// only for the deprecated compatible range.
			if r.Prefix == compatPfx {
				return r.Name
			}
			return ""
		}
		return "" // NAT64/6to4 of a public address
	}
	return ""
}

func embeddedV4(a netip.Addr, bit int) netip.Addr {
	b := a.As16()
	i := bit / 8
	return netip.AddrFrom4([4]byte{b[i], b[i+1], b[i+2], b[i+3]})
}

// localAddrs caches the host's own interface addresses; refreshed at most
// every two seconds so a new interface is covered quickly. Safe for
// concurrent use.
type localAddrs struct {
	// list returns the interface addresses; nil means net.InterfaceAddrs.
	// Tests set it (export_test.go) to list a global address as the host's
	// own, which no real interface of a test machine offers.
	list  func() ([]net.Addr, error)
	mu    sync.Mutex
	at    time.Time
	addrs map[netip.Addr]bool
	err   error // the last listing's failure, if it failed
}

// has reports whether a is one of the host's interface addresses, from a
// listing at most two seconds old. When the host's addresses cannot be
// listed, the error says so and callers refuse: an unknown own address is
// not a global one.
func (l *localAddrs) has(a netip.Addr) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if (l.addrs == nil && l.err == nil) || time.Since(l.at) > 2*time.Second {
		m := map[netip.Addr]bool{}
		list := l.list
		if list == nil {
			list = net.InterfaceAddrs
		}
		ifas, err := list()
		for _, ifa := range ifas {
			if n, ok := ifa.(*net.IPNet); ok {
				if x, ok := netip.AddrFromSlice(n.IP); ok {
					m[x.Unmap()] = true
				}
			}
		}
		l.addrs, l.err, l.at = m, err, time.Now()
	}
	if l.err != nil {
		return false, l.err
	}
	return l.addrs[a], nil
}

// checkAddr is the dial guard for one resolved address, in this order: an
// IP entry of the deny list refuses it (whatever name led there); an
// operator range or explicit allowlist IP entry opens it; a special-purpose
// range refuses it; one of the host's own interface addresses refuses it;
// otherwise it passes.
func (c *compiled) checkAddr(a netip.Addr, local *localAddrs) (ok bool, reason string) {
	a = a.Unmap().WithZone("")
	if e, _ := c.names.Matches(policy.Host{IP: a}); e != "" {
		return false, fmt.Sprintf("%s: %s matches network.domains entry %q", ReasonDeniedDomain, a, e)
	}
	if why, ok := c.openedAddr(a); ok {
		// A range opened for private upstreams does not cover this host's
		// own non-loopback addresses (an allowed name resolving to one would
		// reach sandboxd's host services); opening the address by itself
		// does.
		if local != nil && !a.IsLoopback() && !c.openedExactly(a) {
			own, err := local.has(a)
			if err != nil {
				return false, fmt.Sprintf("%s: cannot tell whether %s is an address of this host (listing interfaces: %v)", ReasonPrivateAddress, a, err)
			}
			if own {
				return false, fmt.Sprintf("%s: %s is an address of this host (an opened range does not cover it; open it by itself)", ReasonPrivateAddress, a)
			}
		}
		return true, "address opened by " + why
	}
	if name := ClassifyAddr(a); name != "" {
		return false, fmt.Sprintf("%s: %s is %s", ReasonPrivateAddress, a, name)
	}
	if local != nil {
		own, err := local.has(a)
		if err != nil {
			return false, fmt.Sprintf("%s: cannot tell whether %s is an address of this host (listing interfaces: %v)", ReasonPrivateAddress, a, err)
		}
		if own {
			return false, fmt.Sprintf("%s: %s is an address of this host", ReasonPrivateAddress, a)
		}
	}
	return true, "global address"
}
