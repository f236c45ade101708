package policy

import "testing"

func TestDecisionZeroValueDenies(t *testing.T) {
	var d Decision
	if d.Allowed() || d.Verdict.String() != "deny" {
		t.Fatal("zero Decision must deny")
	}
	if d := AllowedBy("ok", "r"); !d.Allowed() || d.Verdict.String() != "allow" || d.Rule != "r" {
		t.Fatalf("%+v", d)
	}
	if d := Denied("no", "r"); d.Allowed() || d.Reason != "no" {
		t.Fatalf("%+v", d)
	}
	if Ask.String() != "ask" || Verdict(9).String() != "deny" {
		t.Fatal("verdict strings")
	}
}

func TestSplitHostPort(t *testing.T) {
	cases := []struct{ in, host, port string }{
		{"a.com", "a.com", ""},
		{"a.com:443", "a.com", "443"},
		{"[::1]:80", "::1", "80"},
		{"[::1]", "::1", ""},
		{"::1", "::1", ""},
		{"a.com:", "a.com", ""},
	}
	for _, c := range cases {
		h, p, err := SplitHostPort(c.in)
		if err != nil || h != c.host || p != c.port {
			t.Errorf("SplitHostPort(%q) = %q, %q, %v", c.in, h, p, err)
		}
	}
	if _, _, err := SplitHostPort("[::1"); err == nil {
		t.Error("unclosed bracket accepted")
	}
}

func TestDomainSetLen(t *testing.T) {
	s, err := NewDomainSet([]string{"a.com", "*.b.com", "10.0.0.1"}, true)
	if err != nil || s.Len() != 3 {
		t.Fatalf("%v %v", s, err)
	}
	var nilSet *DomainSet
	if nilSet.Len() != 0 {
		t.Fatal("nil set")
	}
	if _, ok := nilSet.Match(Host{Name: "a.com"}); ok {
		t.Fatal("nil set matched")
	}
	if _, err := NewDomainSet([]string{"a.com", "*.com"}, true); err == nil || err.Error() != `[1]: invalid pattern: "*.com": "com" is a public suffix, so the wildcard would allow every domain registered under it` {
		t.Fatalf("bad entry: %v", err)
	}
}
