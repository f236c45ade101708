package policy

import (
	"strings"
	"testing"
)

// TestNetworkDecider: the one reading of network.domains, allowDomains
// and actions. An absent allowDomains is the empty allowlist under the
// sandbox (sandboxed, or enforce: sandbox) and no allowlist elsewhere;
// the deny list wins; a network.actions denying every action leaves no
// egress; a host that cannot be read is denied.
func TestNetworkDecider(t *testing.T) {
	cases := []struct {
		name      string
		n         *NetworkRules
		sandboxed bool
		host      string
		allowed   bool
		reason    string
		rule      string
	}{
		{"no rules outside the sandbox", nil, false, "a.test", true, "no network rule denies it: a.test", ""},
		{"no rules in the sandbox", nil, true, "a.test", false, "not in allowlist: the allowlist is empty (no egress)", "network.allowDomains"},
		{"enforce sandbox without an allowlist", &NetworkRules{Enforce: EnforceSandbox}, false, "a.test", false, "not in allowlist: the allowlist is empty (no egress)", "network.allowDomains"},
		{"deny list only, outside", &NetworkRules{Domains: []string{"*.bad.test"}}, false, "x.bad.test", false, `denied domain: x.bad.test matches network.domains entry "*.bad.test"`, "network.domains:*.bad.test"},
		{"deny list only, outside, other host", &NetworkRules{Domains: []string{"*.bad.test"}}, false, "good.test", true, "no network rule denies it: good.test", ""},
		{"allowlist hit", &NetworkRules{AllowDomains: []string{"*.a.test"}, Enforce: EnforceSandbox}, false, "API.A.test.", true, `allowed by entry "*.a.test"`, "network.allowDomains:*.a.test"},
		{"allowlist miss", &NetworkRules{AllowDomains: []string{"*.a.test"}, Enforce: EnforceSandbox}, false, "a.test.evil.net", false, "not in allowlist: a.test.evil.net", "network.allowDomains"},
		{"deny wins over allow", &NetworkRules{AllowDomains: []string{"*.a.test"}, Domains: []string{"x.a.test"}, Enforce: EnforceSandbox}, false, "x.a.test", false, `denied domain: x.a.test matches network.domains entry "x.a.test"`, "network.domains:x.a.test"},
		{"every action denied", &NetworkRules{AllowDomains: []string{"a.test"}, Actions: []string{ActionRead, ActionWrite}}, true, "a.test", false, `denied network action: network.actions "read, write" denies every action (no egress)`, "network.actions:all"},
		{"an inet_aton spelling of a denied address", &NetworkRules{Domains: []string{"169.254.169.254"}}, false, "2852039166", false, `denied domain: 169.254.169.254 matches network.domains entry "169.254.169.254"`, "network.domains:169.254.169.254"},
		{"unreadable host", nil, false, "a\x00b", false, "invalid host: ", "network.host"},
	}
	for _, c := range cases {
		d, err := CompileNetwork(c.n, c.sandboxed)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := d.DecideHostName(c.host)
		if got.Allowed() != c.allowed || !strings.HasPrefix(got.Reason, c.reason) || got.Rule != c.rule {
			t.Errorf("%s: %+v, want allowed=%v reason %q rule %q", c.name, got, c.allowed, c.reason, c.rule)
		}
	}
	if _, err := CompileNetwork(&NetworkRules{Domains: []string{"ok.test", "bad host!"}}, false); err == nil || !strings.Contains(err.Error(), "network.domains[1]") {
		t.Errorf("a bad entry: %v, want one naming network.domains[1]", err)
	}
	var nilDecider *NetworkDecider
	if d := nilDecider.DecideHostName("a.test"); d.Allowed() {
		t.Error("a nil decider allowed")
	}
	if d, _ := CompileNetwork(&NetworkRules{Actions: []string{"http:read"}}, false); d.DecideAction(ActionHTTPRead).Allowed() || !d.DecideAction(ActionGitPush).Allowed() {
		t.Error("DecideAction")
	}
}
