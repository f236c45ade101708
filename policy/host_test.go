package policy

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseHostCases is the specification of ParseHost: input → canonical form,
// or "!" for a refusal.
var parseHostCases = []struct{ in, want string }{
	{"example.com", "example.com"},
	{"Example.COM", "example.com"},
	{"example.com.", "example.com"},
	{"example.com:443", "example.com"},
	{"EXAMPLE.com.:8080", "example.com"},
	{"bücher.example", "xn--bcher-kva.example"},
	{"BÜCHER.example", "xn--bcher-kva.example"},
	{"xn--bcher-kva.example", "xn--bcher-kva.example"},
	{"_dmarc.example.com", "_dmarc.example.com"},
	{"127.0.0.1", "127.0.0.1"},
	{"127.1", "127.0.0.1"},
	{"0x7f.0.0.1", "127.0.0.1"},
	{"0x7f.1", "127.0.0.1"},
	{"2130706433", "127.0.0.1"},
	{"0177.0.0.1", "127.0.0.1"},
	{"017700000001", "127.0.0.1"},
	{"0x7f000001", "127.0.0.1"},
	{"169.254.169.254", "169.254.169.254"},
	{"127.0.0.1:80", "127.0.0.1"},
	{"::1", "::1"},
	{"[::1]", "::1"},
	{"[::1]:443", "::1"},
	{"[::ffff:127.0.0.1]", "127.0.0.1"},
	{"::ffff:7f00:1", "127.0.0.1"},
	{"[2001:DB8::1]:8443", "2001:db8::1"},
	{"a.b.c.d.example", "a.b.c.d.example"},
	{"", "!"},
	{".", "!"},
	{"a..b", "!"},
	{".example.com", "!"},
	{"example.com..", "!"},
	{"exa mple.com", "!"},
	{"example.com\x00.evil", "!"},
	{"example.com\r\nX: y", "!"},
	{"example.com\n", "!"},
	{"[fe80::1%25eth0]", "!"},
	{"fe80::1%eth0", "!"},
	{"exa%2ecom", "!"},
	{"user@example.com", "!"},
	{"example.com/path", "!"},
	{"256.0.0.1", "!"},
	{"1.2.3.4.5", "!"},
	{"0x100000000", "!"},
	{"1.2.3.256", "!"},
	{"example.com:99999", "!"},
	{"example.com:http", "!"},
	{"[::1", "!"},
	{"[::1]x", "!"},
	{strings.Repeat("a", 64) + ".com", "!"},
	{strings.Repeat("abcdefghi.", 26) + "com", "!"},
	{"exa$mple.com", "!"},
	{"xn--zz.example", "!"},
}

func TestParseHost(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range parseHostCases {
		if seen[c.in] {
			t.Fatalf("duplicate case %q", c.in)
		}
		seen[c.in] = true
		h, err := ParseHost(c.in)
		if c.want == "!" {
			if err == nil {
				t.Errorf("ParseHost(%q) = %q, want refusal", c.in, h)
			} else if !errors.Is(err, ErrInvalidHost) {
				t.Errorf("ParseHost(%q) error %v does not wrap ErrInvalidHost", c.in, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseHost(%q): %v", c.in, err)
			continue
		}
		if h.String() != c.want {
			t.Errorf("ParseHost(%q) = %q, want %q", c.in, h, c.want)
		}
	}
}

var patternCases = []struct {
	pattern string
	host    string
	match   bool
}{
	{"*.foo.com", "api.foo.com", true},
	{"*.foo.com", "x.y.foo.com", true},
	{"*.foo.com", "foo.com", false},
	{"*.foo.com", "evilfoo.com", false},
	{"*.foo.com", "foo.com.evil.com", false},
	{"*.x", "x", false},
	{"*.x", "a.x", true},
	{"staging.example.com", "staging.example.com", true},
	{"staging.example.com", "api.staging.example.com", false},
	{"staging.example.com", "STAGING.example.com.", true},
	{"example.com", "example.com:443", true},
	{"*.example.com", "127.0.0.1", false},
	{"127.0.0.1", "127.1", true},
	{"127.0.0.1", "2130706433", true},
	{"127.0.0.1", "[::ffff:127.0.0.1]", true},
	{"127.0.0.1", "localhost", false},
	{"::1", "[::1]:80", true},
	{"*.bücher.example", "www.xn--bcher-kva.example", true},
	{"api.foo.com", "API.FOO.COM", true},
}

func TestDomainPatternMatches(t *testing.T) {
	for _, c := range patternCases {
		p, err := ParseDomainPattern(c.pattern, false)
		if err != nil {
			t.Fatalf("ParseDomainPattern(%q): %v", c.pattern, err)
		}
		h, err := ParseHost(c.host)
		if err != nil {
			t.Fatalf("ParseHost(%q): %v", c.host, err)
		}
		if got := p.Matches(h); got != c.match {
			t.Errorf("%q matches %q = %v, want %v", c.pattern, c.host, got, c.match)
		}
		set, err := NewDomainSet([]string{c.pattern}, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := set.Match(h); got != c.match {
			t.Errorf("DomainSet{%q}.Match(%q) = %v, want %v", c.pattern, c.host, got, c.match)
		}
	}
}

func TestParseDomainPatternRefusals(t *testing.T) {
	cases := []struct {
		pattern string
		allow   bool
		want    string // substring of the error; "" for success
	}{
		{"*", true, "matches every host"},
		{"*", false, "matches every host"},
		{"*.com", true, "public suffix"},
		{"*.co.uk", true, "public suffix"},
		{"*.github.io", true, "public suffix"},
		{"*.com", false, ""},
		{"*.example.co.uk", true, ""},
		{"foo.github.io", true, ""},
		{"*.user.github.io", true, ""},
		{"api.*.com", true, "whole leading label"},
		{"*api.com", true, "whole leading label"},
		{"*.127.0.0.1", true, "wildcard cannot cover an IP"},
		{"example.com:443", true, "not ports"},
		{"exa mple.com", true, "invalid host"},
		{"10.0.0.1", true, ""},
	}
	for _, c := range cases {
		_, err := ParseDomainPattern(c.pattern, c.allow)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("ParseDomainPattern(%q, %v): %v", c.pattern, c.allow, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("ParseDomainPattern(%q, %v) = %v, want error containing %q", c.pattern, c.allow, err, c.want)
		}
	}
}

func TestIntersectDomainPatterns(t *testing.T) {
	cases := []struct {
		a, b []string
		want string
	}{
		{[]string{"*.a.com"}, []string{"api.a.com"}, "api.a.com"},
		{[]string{"api.a.com"}, []string{"*.a.com"}, "api.a.com"},
		{[]string{"*.a.com"}, []string{"*.x.a.com"}, "*.x.a.com"},
		{[]string{"*.a.com"}, []string{"a.com"}, ""},
		{[]string{"a.com", "b.com"}, []string{"b.com", "c.com"}, "b.com"},
		{[]string{"*.a.com", "b.com"}, []string{"*.a.com", "*.b.com"}, "*.a.com"},
		{[]string{"10.0.0.1"}, []string{"10.0.0.1", "*.a.com"}, "10.0.0.1"},
		{[]string{}, []string{"a.com"}, ""},
		{[]string{"API.A.COM."}, []string{"api.a.com"}, "api.a.com"},
	}
	for _, c := range cases {
		got := strings.Join(IntersectDomainPatterns(c.a, c.b), ",")
		if got != c.want {
			t.Errorf("IntersectDomainPatterns(%v, %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func TestDomainMatchingThroughTheDecider(t *testing.T) {
	deny, _ := CompileNetwork(&NetworkRules{Domains: []string{"*.internal.co"}}, false)
	if d := deny.DecideHostName("api.internal.co"); d.Allowed() || d.Rule != "network.domains:*.internal.co" {
		t.Errorf("subdomain of a wildcard: %+v", d)
	}
	if d := deny.DecideHostName("internal.co"); !d.Allowed() {
		t.Errorf("apex of a wildcard: %+v", d)
	}
	if d := deny.DecideHostName("bad\x00host"); d.Allowed() {
		t.Error("an invalid host was allowed")
	}
	// An unreadable entry, deny or allow, refuses the whole rule set (the
	// decoder refuses such entries before they reach a bound).
	if _, err := CompileNetwork(&NetworkRules{Domains: []string{"bad host!"}}, false); err == nil {
		t.Error("a bad deny entry compiled")
	}
	if _, err := CompileNetwork(&NetworkRules{AllowDomains: []string{"bad host!"}}, true); err == nil {
		t.Error("a bad allow entry compiled")
	}
	allow, _ := CompileNetwork(&NetworkRules{AllowDomains: []string{"github.com"}}, true)
	if d := allow.DecideHostName("github.com"); !d.Allowed() || d.Rule != "network.allowDomains:github.com" {
		t.Errorf("listed: %+v", d)
	}
	if d := allow.DecideHostName("evil.com"); d.Allowed() {
		t.Errorf("unlisted: %+v", d)
	}
}

// FuzzParseHost checks that canonicalization is idempotent, that a canonical
// name holds only safe bytes, and that it never panics.
func FuzzParseHost(f *testing.F) {
	for _, c := range parseHostCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseHost(s)
		if err != nil {
			return
		}
		if !h.IsValid() || (h.Name != "") == h.IP.IsValid() {
			t.Fatalf("ParseHost(%q) = %#v: exactly one of Name and IP must be set", s, h)
		}
		if h.Name != "" {
			if len(h.Name) > maxHostLen || !utf8.ValidString(h.Name) || strings.ContainsAny(h.Name, "\x00\r\n%:/ ") {
				t.Fatalf("ParseHost(%q) = %q: unsafe canonical name", s, h.Name)
			}
		}
		if h.IP.Is4In6() || h.IP.Zone() != "" {
			t.Fatalf("ParseHost(%q) = %v: not canonical", s, h.IP)
		}
		h2, err := ParseHost(h.String())
		if err != nil || h2 != h {
			t.Fatalf("ParseHost not idempotent on %q: %q -> %v, %v", s, h, h2, err)
		}
	})
}
