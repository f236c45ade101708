package policy

import (
	"errors"
	"fmt"
	"testing"
)

// TestWithModelHosts: a model API host joins the allowlist (an absent
// one too: under the sandbox it is empty) unless the allowlist already
// allows it; a host the bound denies, or one that does not parse, is
// refused naming it; the bound passed in is not changed.
func TestWithModelHosts(t *testing.T) {
	b, err := WithModelHosts(nil, []string{"api.anthropic.com"})
	if err != nil || b.Network.Enforce != EnforceSandbox || fmt.Sprint(b.Network.AllowDomains) != "[api.anthropic.com]" {
		t.Fatalf("no bound: %+v, %v", b, err)
	}
	in := &Bound{Network: &NetworkRules{AllowDomains: []string{"*.example.com"}}}
	if b, err = WithModelHosts(in, []string{"gw.example.com", "api.test"}); err != nil || fmt.Sprint(b.Network.AllowDomains) != "[*.example.com api.test]" {
		t.Errorf("an allowlist: %+v, %v", b.Network, err)
	}
	if fmt.Sprint(in.Network.AllowDomains) != "[*.example.com]" || in.Network.Enforce != "" {
		t.Errorf("the bound passed in changed: %+v", in.Network)
	}
	for _, c := range []struct {
		b    *Bound
		host string
		want string
		is   error
	}{
		{&Bound{Network: &NetworkRules{Domains: []string{"gw.example.com"}}}, "gw.example.com",
			`the model API host gw.example.com is denied: denied domain: gw.example.com matches network.domains entry "gw.example.com"`, ErrNotAllowed},
		{nil, "", `model API host "": invalid host: empty host`, ErrInvalidHost},
	} {
		var refused *ModelHostError
		_, err := WithModelHosts(c.b, []string{c.host})
		if !errors.As(err, &refused) || err.Error() != c.want || !errors.Is(err, c.is) {
			t.Errorf("%q: %v, want %q", c.host, err, c.want)
		}
	}
}
