package policy

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Host is a canonical destination: either a DNS name (lower-case ASCII,
// punycode for international names, no trailing dot) or an IP address (IPv4
// in its 4-byte form, IPv4-mapped IPv6 unmapped, no zone). Exactly one of Name
// and IP is set. The zero Host is invalid.
type Host struct {
	Name string
	IP   netip.Addr
}

// IsIP reports whether the host is an IP literal.
func (h Host) IsIP() bool { return h.IP.IsValid() }

// IsValid reports whether the host holds a name or an address.
func (h Host) IsValid() bool { return h.Name != "" || h.IP.IsValid() }

// String returns the canonical name or address (IPv6 without brackets).
func (h Host) String() string {
	if h.IP.IsValid() {
		return h.IP.String()
	}
	return h.Name
}

const maxHostLen = 253

// SplitHostPort splits "host:port", "[v6]:port", "[v6]", a bare IPv6 literal
// or a bare host into host and port ("" when absent). It does not validate the
// host; ParseHost does.
func SplitHostPort(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", fmt.Errorf("%w: %q: missing ']'", ErrInvalidHost, s)
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("%w: %q: junk after ']'", ErrInvalidHost, s)
		}
		return host, rest[1:], nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", nil
	case 1:
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:], nil
	default:
		return s, "", nil // a bare IPv6 literal
	}
}

// ParseHost canonicalizes a host as it appears in a URL, a CONNECT target, a
// DNS question or a policy entry: a port is stripped, case folded, one
// trailing dot removed, Unicode names converted to punycode (IDNA UTS #46),
// and IPv4 literals in any inet_aton form (127.1, 0x7f.0.0.1, 2130706433,
// 0177.0.0.1) turned into their dotted form, IPv4-mapped IPv6 into IPv4.
//
// It refuses, with an error wrapping ErrInvalidHost, anything that cannot be
// matched safely: NUL, CR, LF, spaces, '%' (zone ids and escapes), empty
// labels, labels over 63 bytes, names over 253 bytes, and names whose last
// label looks numeric but is not a valid IPv4 address.
func ParseHost(s string) (Host, error) {
	raw := s
	if s == "" {
		return Host{}, fmt.Errorf("%w: empty host", ErrInvalidHost)
	}
	if len(s) > 4*maxHostLen {
		return Host{}, fmt.Errorf("%w: host too long", ErrInvalidHost)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 0 || c == '\r' || c == '\n':
			return Host{}, fmt.Errorf("%w: %q: control character", ErrInvalidHost, raw)
		case c == '%':
			return Host{}, fmt.Errorf("%w: %q: '%%' is not allowed (zone id or escape)", ErrInvalidHost, raw)
		case c < 0x20 || c == 0x7f || c == ' ' || c == '\t':
			return Host{}, fmt.Errorf("%w: %q: control or space character", ErrInvalidHost, raw)
		case c == '/' || c == '\\' || c == '@' || c == '?' || c == '#':
			return Host{}, fmt.Errorf("%w: %q: %q is not allowed in a host", ErrInvalidHost, raw, c)
		}
	}
	h, port, err := SplitHostPort(s)
	if err != nil {
		return Host{}, err
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			return Host{}, fmt.Errorf("%w: %q: bad port", ErrInvalidHost, raw)
		}
	}
	if h == "" {
		return Host{}, fmt.Errorf("%w: %q: empty host", ErrInvalidHost, raw)
	}
	if strings.Contains(h, ":") {
		a, err := netip.ParseAddr(h)
		if err != nil {
			return Host{}, fmt.Errorf("%w: %q: bad IPv6 address", ErrInvalidHost, raw)
		}
		return Host{IP: a.Unmap()}, nil
	}
	h = strings.TrimSuffix(h, ".")
	if h == "" || strings.HasSuffix(h, ".") {
		return Host{}, fmt.Errorf("%w: %q: empty label", ErrInvalidHost, raw)
	}
	if !isASCII(h) {
		a, err := idna.Lookup.ToASCII(h)
		if err != nil {
			return Host{}, fmt.Errorf("%w: %q: not a valid international name", ErrInvalidHost, raw)
		}
		h = a
	}
	h = strings.ToLower(h)
	labels := strings.Split(h, ".")
	last := labels[len(labels)-1]
	if looksNumeric(last) {
		a, ok := parseIPv4Loose(h)
		if !ok {
			return Host{}, fmt.Errorf("%w: %q: numeric name that is not an IPv4 address", ErrInvalidHost, raw)
		}
		return Host{IP: a}, nil
	}
	if len(h) > maxHostLen {
		return Host{}, fmt.Errorf("%w: name longer than %d bytes", ErrInvalidHost, maxHostLen)
	}
	for _, l := range labels {
		if l == "" {
			return Host{}, fmt.Errorf("%w: %q: empty label", ErrInvalidHost, raw)
		}
		if len(l) > 63 {
			return Host{}, fmt.Errorf("%w: %q: label longer than 63 bytes", ErrInvalidHost, raw)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return Host{}, fmt.Errorf("%w: %q: character %q not allowed in a name", ErrInvalidHost, raw, c)
			}
		}
		if strings.HasPrefix(l, "xn--") {
			if _, err := idna.Lookup.ToUnicode(l); err != nil {
				return Host{}, fmt.Errorf("%w: %q: bad punycode label", ErrInvalidHost, raw)
			}
		}
	}
	return Host{Name: h}, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// looksNumeric follows the WHATWG URL rule "ends in a number": a label of
// decimal digits, or 0x followed by hex digits, makes the host an IPv4 literal.
func looksNumeric(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// parseIPv4Loose parses the inet_aton forms: 1 to 4 parts, each decimal, octal
// (leading 0) or hex (0x); the last part fills the remaining bytes.
func parseIPv4Loose(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		if p == "" {
			return netip.Addr{}, false
		}
		base := 10
		digits := p
		switch {
		case strings.HasPrefix(p, "0x"):
			base, digits = 16, p[2:]
			if digits == "" {
				digits = "0"
			}
		case len(p) > 1 && p[0] == '0':
			base, digits = 8, p[1:]
		}
		v, err := strconv.ParseUint(digits, base, 64)
		if err != nil || v > 0xffffffff {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var ip uint64
	n := len(vals)
	for i := 0; i < n-1; i++ {
		if vals[i] > 255 {
			return netip.Addr{}, false
		}
		ip |= vals[i] << (8 * (3 - i))
	}
	lastMax := uint64(1)<<(8*(5-n)) - 1
	if vals[n-1] > lastMax {
		return netip.Addr{}, false
	}
	ip |= vals[n-1]
	return netip.AddrFrom4([4]byte{byte(ip >> 24), byte(ip >> 16), byte(ip >> 8), byte(ip)}), true
}

// DomainPattern is one parsed entry of network.domains or network.allowDomains:
// an exact name, a wildcard "*.base" that matches every name strictly below
// base (never base itself), or an IP literal that matches only that address.
type DomainPattern struct {
	Raw      string // the entry as written
	Wildcard bool
	Base     string     // canonical name (without "*.") when not an IP
	IP       netip.Addr // set for IP entries
}

// String returns the canonical form of the pattern.
func (p DomainPattern) String() string {
	switch {
	case p.IP.IsValid():
		return p.IP.String()
	case p.Wildcard:
		return "*." + p.Base
	default:
		return p.Base
	}
}

// ParseDomainPattern parses one domain entry. An allowlist entry (allow true)
// must not be "*" or a wildcard over a public suffix ("*.com", "*.co.uk",
// "*.github.io"), which would open a whole registry. A deny entry may be.
// "*" alone is refused in both: deny everything with network.actions: [all].
func ParseDomainPattern(s string, allow bool) (DomainPattern, error) {
	p := DomainPattern{Raw: s}
	if s == "*" || s == "*." {
		return p, fmt.Errorf("%w: %q matches every host; list the hosts, or deny all network with actions: [all]", ErrInvalidPattern, s)
	}
	body := s
	if strings.HasPrefix(s, "*.") {
		p.Wildcard = true
		body = s[2:]
	}
	if strings.ContainsAny(body, "*") {
		return p, fmt.Errorf("%w: %q: a wildcard is allowed only as a whole leading label (*.example.com)", ErrInvalidPattern, s)
	}
	h, err := ParseHost(body)
	if err != nil {
		return p, fmt.Errorf("%w: %q: %v", ErrInvalidPattern, s, err)
	}
	if h.IsIP() {
		if p.Wildcard {
			return p, fmt.Errorf("%w: %q: a wildcard cannot cover an IP address", ErrInvalidPattern, s)
		}
		if _, port, _ := SplitHostPort(body); port != "" {
			return p, fmt.Errorf("%w: %q: entries name hosts, not ports", ErrInvalidPattern, s)
		}
		p.IP = h.IP
		return p, nil
	}
	if _, port, _ := SplitHostPort(body); port != "" {
		return p, fmt.Errorf("%w: %q: entries name hosts, not ports", ErrInvalidPattern, s)
	}
	p.Base = h.Name
	if p.Wildcard && allow {
		if suffix, _ := publicsuffix.PublicSuffix(h.Name); suffix == h.Name {
			return p, fmt.Errorf("%w: %q: %q is a public suffix, so the wildcard would allow every domain registered under it", ErrInvalidPattern, s, h.Name)
		}
	}
	return p, nil
}

// Matches reports whether the canonical host h falls under the pattern.
// Wildcards never match IP addresses, and IP entries match only that address.
func (p DomainPattern) Matches(h Host) bool {
	if p.IP.IsValid() {
		return h.IP.IsValid() && h.IP == p.IP
	}
	if h.IP.IsValid() || h.Name == "" {
		return false
	}
	if p.Wildcard {
		return len(h.Name) > len(p.Base)+1 && strings.HasSuffix(h.Name, p.Base) && h.Name[len(h.Name)-len(p.Base)-1] == '.'
	}
	return h.Name == p.Base
}

// covers reports whether every host p matches is matched by q (p ⊆ q).
func (p DomainPattern) coveredBy(q DomainPattern) bool {
	if p.IP.IsValid() || q.IP.IsValid() {
		return p.IP.IsValid() && q.IP.IsValid() && p.IP == q.IP
	}
	switch {
	case !q.Wildcard:
		return !p.Wildcard && p.Base == q.Base
	case !p.Wildcard:
		return q.Matches(Host{Name: p.Base})
	default:
		return p.Base == q.Base || q.Matches(Host{Name: p.Base})
	}
}

// DomainSet is a compiled list of domain patterns for fast matching. The zero
// DomainSet matches nothing. It is safe for concurrent use once built.
type DomainSet struct {
	exact map[string]string     // canonical name -> entry
	wild  map[string]string     // base -> entry
	ips   map[netip.Addr]string // address -> entry
	n     int
}

// NewDomainSet compiles patterns; allow says whether they form an allowlist
// (see ParseDomainPattern). The first bad entry is an error naming its index.
func NewDomainSet(patterns []string, allow bool) (*DomainSet, error) {
	s := &DomainSet{exact: map[string]string{}, wild: map[string]string{}, ips: map[netip.Addr]string{}}
	for i, raw := range patterns {
		p, err := ParseDomainPattern(raw, allow)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		switch {
		case p.IP.IsValid():
			s.ips[p.IP] = raw
		case p.Wildcard:
			s.wild[p.Base] = raw
		default:
			s.exact[p.Base] = raw
		}
		s.n++
	}
	return s, nil
}

// Len returns the number of entries.
func (s *DomainSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

// Match returns the entry (as written) that matches h.
func (s *DomainSet) Match(h Host) (string, bool) {
	if s == nil {
		return "", false
	}
	if h.IP.IsValid() {
		e, ok := s.ips[h.IP]
		return e, ok
	}
	if e, ok := s.exact[h.Name]; ok {
		return e, true
	}
	name := h.Name
	for {
		i := strings.IndexByte(name, '.')
		if i < 0 {
			return "", false
		}
		name = name[i+1:]
		if e, ok := s.wild[name]; ok {
			return e, true
		}
	}
}

// IntersectDomainPatterns returns the entries that both allowlists permit:
// for each pair, the narrower of the two when one covers the other
// (*.a.com ∩ api.a.com = api.a.com), nothing when they are disjoint. Entries
// are returned canonical, deduplicated and sorted. Entries that do not parse
// are dropped, which only narrows the result.
func IntersectDomainPatterns(a, b []string) []string {
	pa := parsePatterns(a)
	pb := parsePatterns(b)
	seen := map[string]bool{}
	out := []string{}
	for _, x := range pa {
		for _, y := range pb {
			var keep DomainPattern
			switch {
			case x.coveredBy(y):
				keep = x
			case y.coveredBy(x):
				keep = y
			default:
				continue
			}
			if k := keep.String(); !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func parsePatterns(list []string) []DomainPattern {
	out := make([]DomainPattern, 0, len(list))
	for _, s := range list {
		if p, err := ParseDomainPattern(s, false); err == nil {
			out = append(out, p)
		}
	}
	return out
}
