package policy

import (
	"fmt"
	"testing"
)

// TestNetworkDeciderHostRules: a decider reports the entries that decide
// hosts (network.actions only when it denies every action) and whether it
// has an allowlist.
func TestNetworkDeciderHostRules(t *testing.T) {
	for _, c := range []struct {
		n         *NetworkRules
		sandboxed bool
		want      string
		allowlist bool
	}{
		{nil, false, "[] [] []", false},
		{nil, true, "[] [] []", true},
		{&NetworkRules{AllowDomains: []string{"a.test"}, Domains: []string{"b.test"}, Actions: []string{ActionWrite}}, false, "[a.test] [b.test] []", true},
		{&NetworkRules{Domains: []string{"b.test"}, Actions: []string{ActionAll}}, false, "[] [b.test] [all]", false},
	} {
		d, err := CompileNetwork(c.n, c.sandboxed)
		if err != nil {
			t.Fatal(err)
		}
		allow, deny, actions := d.HostRules()
		if got := fmt.Sprint(allow, deny, actions); got != c.want || d.HasAllowlist() != c.allowlist {
			t.Errorf("%+v (sandboxed %v): %s, allowlist %v; want %s, %v", c.n, c.sandboxed, got, d.HasAllowlist(), c.want, c.allowlist)
		}
	}
}
