package policy

import (
	"encoding/json"
	"slices"
	"testing"
)

// Documents whose resolution must not come out less strict than Barry's
// policy model says. Each case is a whole session policy document; want is the effective
// bound's JSON.
func TestResolveNeverWeakerThanSources(t *testing.T) {
	const base = "version: 1\nharness: claude-code\n"
	cases := []struct {
		name, doc, want string
	}{
		// The bounds SDK (network.allowDomains): "Omitting it under
		// enforce: "sandbox" means an EMPTY allowlist — no egress except
		// localhost. Opening a host is always an explicit act." and
		// (resolution) "Allowlists intersect ... keep only the entries every
		// source permits." A sandbox bound without allowDomains permits no
		// host, so no other source can open one.
		{"sandbox without allowDomains, named bounds",
			base + "bounds:\n  closed: {network: {enforce: sandbox}}\n  open: {network: {enforce: sandbox, allowDomains: [x.com]}}\nsession: {bounds: [closed, open]}\n",
			`{"name":"closed + open","network":{"allowDomains":[],"enforce":"sandbox"}}`},
		{"sandbox without allowDomains, reversed order",
			base + "bounds:\n  closed: {network: {enforce: sandbox}}\n  open: {network: {enforce: sandbox, allowDomains: [x.com]}}\nsession: {bounds: [open, closed]}\n",
			`{"name":"closed + open","network":{"allowDomains":[],"enforce":"sandbox"}}`},
		{"identity's closed sandbox, session's inline allowlist",
			base + "identity: {name: i, bound: {network: {enforce: sandbox}}}\nsession: {bound: {network: {enforce: sandbox, allowDomains: [x.com]}}}\n",
			`{"network":{"allowDomains":[],"enforce":"sandbox"}}`},
		{"trait's closed sandbox, session's inline allowlist",
			base + "traits:\n  offline: {bound: {network: {enforce: sandbox, domains: [evil.com]}}}\nsession: {traits: [offline], bound: {network: {enforce: sandbox, allowDomains: [x.com]}}}\n",
			`{"network":{"allowDomains":[],"domains":["evil.com"],"enforce":"sandbox"}}`},
		// A guard-level bound carries no allowlist, so it imposes none.
		{"guard side imposes no allowlist",
			base + "identity: {name: i, bound: {network: {enforce: guard, domains: [evil.com]}}}\nsession: {bound: {network: {enforce: sandbox, allowDomains: [x.com]}}}\n",
			`{"network":{"allowDomains":["x.com"],"domains":["evil.com"],"enforce":"sandbox"}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pf, err := DecodePolicyFile([]byte(c.doc), FormatYAML)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			r, err := ResolveSession(pf)
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			got, _ := json.Marshal(r.Bound)
			if string(got) != c.want {
				t.Fatalf("effective bound\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// Barry's policy resolution: "<bag>:read includes <bag> and carries the readonly
// bound. Because a bound applies to the whole session, selecting <bag>:read
// makes the entire session read-only", and "github:read carries readonly,
// which denies the Bash, Write, and Edit tools, denies write access, and
// denies network writes". A document's bound named readonly must not take
// those denials away, whether selected by name or through <bag>:read.
func TestDocumentBoundCannotWeakenBuiltin(t *testing.T) {
	const head = "version: 1\nharness: claude-code\nbags: {github: {namespaces: [github]}}\n" +
		"tools:\n  - {namespace: github, toolName: list_issues, access: read}\n  - {namespace: github, toolName: create_issue, access: write}\n" +
		"bounds:\n  readonly: {description: nothing denied, deniedTools: [WebFetch]}\n"
	builtin := BuiltinBounds()["readonly"]
	for _, sel := range []string{
		"identity: {name: i, bags: [github]}\nsession: {traits: [github], bounds: [readonly]}\n",
		"identity: {name: i, bags: [github]}\nsession: {traits: [\"github:read\"]}\n",
	} {
		pf, err := DecodePolicyFile([]byte(head+sel), FormatYAML)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		r, err := ResolveSession(pf)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		got, _ := json.Marshal(r.Bound)
		for _, tool := range append(builtin.DeniedTools, "WebFetch") {
			if !slices.Contains(r.Bound.DeniedTools, tool) {
				t.Errorf("%s: bound %s does not deny %s", sel, got, tool)
			}
		}
		if !slices.Contains(r.Bound.DeniedAccess, "write") || r.Bound.Network == nil || !slices.Contains(r.Bound.Network.Actions, ActionWrite) {
			t.Errorf("%s: bound %s lost readonly's write or network-write denial", sel, got)
		}
		if slices.ContainsFunc(r.Tools, func(a ToolAccess) bool { return a.ID == "github:create_issue" }) {
			t.Errorf("%s: write tool granted under readonly: %v", sel, r.Tools)
		}
	}
}
