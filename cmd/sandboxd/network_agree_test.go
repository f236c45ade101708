package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// networkAgreeCases are destinations decided by every enforcer and
// explainer of the network rules: the proxy (sandboxd explain HOST, the
// proxy's own decision code), hookgate on a WebFetch to the host (hookgate
// check's answer, and sandboxd explain --harness, as the ruling server of
// a sandboxd session rules: --in-sandbox), and the shell ruling on a curl
// to it (sandboxd policy classify --policy --in-sandbox). hookgate with
// the policy file outside the sandbox refuses them all: the policies say
// enforce: sandbox. Each must give the
// same verdict, rule and reason phrase (the reason up to its details).
// Policy "sandbox" has enforce: sandbox, an allowlist and a deny list;
// "nolist" enforce: sandbox and a deny list only (so no egress); "noaction"
// an allowlist and every network action denied.
var networkAgreeCases = []struct {
	policy, host string
	allowed      bool
	rule, phrase string
}{
	{"sandbox", "api.example.test", true, "network.allowDomains:*.example.test", `allowed by entry "*.example.test"`},
	{"sandbox", "API.Example.TEST.", true, "network.allowDomains:*.example.test", `allowed by entry "*.example.test"`},
	{"sandbox", "bad.example.test", false, "network.domains:bad.example.test", "denied domain: bad.example.test"},
	{"sandbox", "x.paste.test", false, "network.domains:*.paste.test", "denied domain: x.paste.test"},
	{"sandbox", "example.test.evil.net", false, "network.allowDomains", "not in allowlist: example.test.evil.net"},
	{"sandbox", "example.test", false, "network.allowDomains", "not in allowlist: example.test"},
	{"nolist", "api.example.test", false, "network.allowDomains", "not in allowlist: the allowlist is empty"},
	{"nolist", "bad.example.test", false, "network.domains:bad.example.test", "denied domain: bad.example.test"},
	{"noaction", "api.example.test", false, "network.actions:all", "denied network action: network.actions"},
}

func TestNetworkDecisionsAgree(t *testing.T) {
	dns := proxytest.NewDNS(t)
	dns.Add(t, "api.example.test. 60 IN A 127.0.0.1")
	dir := t.TempDir()
	policies := map[string]string{
		"sandbox":  "{enforce: sandbox, allowDomains: ['*.example.test'], domains: [bad.example.test, '*.paste.test']}",
		"nolist":   "{enforce: sandbox, domains: [bad.example.test]}",
		"noaction": "{enforce: sandbox, allowDomains: ['*.example.test'], actions: [all]}",
	}
	path := map[string]string{}
	for name, network := range policies {
		path[name] = filepath.Join(dir, name+".yaml")
		doc := fmt.Sprintf("version: 1\nharness: claude-code\nsession:\n  traits: [web]\n  bound: {network: %s}\n", network)
		if err := os.WriteFile(path[name], []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type verdict struct{ Verdict, Reason, Rule string }
	for _, c := range networkAgreeCases {
		t.Run(c.policy+"/"+c.host, func(t *testing.T) {
			check := func(who string, got verdict) {
				t.Helper()
				want := "deny"
				if c.allowed {
					want = "allow"
				}
				if got.Verdict != want || got.Rule != c.rule || !strings.HasPrefix(got.Reason, c.phrase) {
					t.Errorf("%s: %+v; want %s, rule %q, reason starting %q", who, got, want, c.rule, c.phrase)
				}
			}
			// The proxy.
			_, out, stderr := runApp(t, "", "explain", "--policy", path[c.policy], "--allow-private", "127.0.0.0/8", "--dns-upstream", dns.Addr, "--json", c.host)
			var px verdict
			if err := json.Unmarshal([]byte(out), &px); err != nil {
				t.Fatalf("explain %s: %v: %s %s", c.host, err, out, stderr)
			}
			check("proxy (sandboxd explain)", px)
			// hookgate on a WebFetch, as sandboxd explain --harness reports it.
			payload := fmt.Sprintf(`{"hook_event_name":"PreToolUse","session_id":"s","cwd":%q,"tool_name":"WebFetch","tool_input":{"url":"https://%s/x","prompt":"p"}}`, dir, c.host)
			_, out, _ = runApp(t, payload, "explain", "--policy", path[c.policy], "--harness", "claude-code", "--in-sandbox", "--json")
			var hk verdict
			if err := json.Unmarshal([]byte(out), &hk); err != nil {
				t.Fatalf("explain --harness: %v: %s", err, out)
			}
			check("hookgate (sandboxd explain --harness)", hk)
			// hookgate check's answer carries the same reason.
			ans := hooks.Check(context.Background(), hooks.CheckArgs{Harness: "claude-code", Payload: strings.NewReader(payload), Source: hooks.LocalSource{Path: path[c.policy], InSandbox: true}})
			if !c.allowed && !bytes.Contains(ans.Stdout, []byte(`"permissionDecision":"deny"`)) || !c.allowed && !strings.Contains(string(ans.Stdout), jsonText(c.phrase)) {
				t.Errorf("hookgate check: %s; want a deny with %q", ans.Stdout, c.phrase)
			}
			if c.allowed && len(ans.Stdout) != 0 {
				t.Errorf("hookgate check: %s; want no objection", ans.Stdout)
			}
			// hookgate with the policy file outside the sandbox: every
			// policy here says enforce: sandbox, so the session is refused.
			hooksOnly := hooks.Check(context.Background(), hooks.CheckArgs{Harness: "claude-code", Payload: strings.NewReader(payload), Source: hooks.LocalSource{Path: path[c.policy]}})
			if !bytes.Contains(hooksOnly.Stdout, []byte(`"permissionDecision":"deny"`)) || !bytes.Contains(hooksOnly.Stdout, []byte("runs without sandboxd's sandbox")) {
				t.Errorf("hookgate check outside the sandbox: %s; want the refusal", hooksOnly.Stdout)
			}
			// The shell ruling, for a denied destination (an allowed line
			// is allowed by the line's rules as a whole).
			if !c.allowed {
				out, _, _ := runClassifyArgs(t, "--policy", path[c.policy], "--cwd", dir, "--in-sandbox", "--json", "--", "curl -s https://"+c.host+"/x")
				var cl struct{ Decision verdict }
				if err := json.Unmarshal([]byte(out), &cl); err != nil {
					t.Fatalf("classify: %v: %s", err, out)
				}
				if c.policy == "noaction" {
					// A curl is an http:read: denied by network.actions
					// under its own tag, before its destination.
					if cl.Decision.Verdict != "deny" || !strings.HasPrefix(cl.Decision.Reason, "denied network action") {
						t.Errorf("classify: %+v", cl.Decision)
					}
					return
				}
				check("shell (sandboxd policy classify)", cl.Decision)
			}
		})
	}
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
