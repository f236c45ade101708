package supervisor

import (
	"context"
	"slices"
	"testing"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/policy"
)

func resolveDoc(t *testing.T, doc string) *policy.Resolved {
	t.Helper()
	pf, err := policy.DecodePolicyFile([]byte(doc), policy.FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	r, err := policy.ResolveSession(pf)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The domain flags merge with the policy toward more restriction: a
// deny-only flag set adds denials and keeps the policy's allowlist, and
// allow flags cannot open a host a closed sandbox policy does not permit.
func TestDomainFlagsMergeWithPolicy(t *testing.T) {
	const head = "version: 1\nharness: claude-code\n"
	open := resolveDoc(t, head+"session: {bound: {network: {enforce: sandbox, allowDomains: [a.example.test]}}}\n")
	closed := resolveDoc(t, head+"session: {bound: {network: {enforce: sandbox}}}\n")

	sp, err := (&Options{DenyDomains: []string{"x.example.test"}}).compute(open)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sp.proxy.Allow, []string{"a.example.test"}) || !slices.Equal(sp.proxy.Deny, []string{"x.example.test"}) {
		t.Fatalf("deny flag with an allowlist policy: allow %q deny %q, want [a.example.test] [x.example.test]", sp.proxy.Allow, sp.proxy.Deny)
	}

	sp, err = (&Options{AllowDomains: []string{"a.example.test"}}).compute(closed)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.proxy.Allow) != 0 {
		t.Fatalf("allow flag opened %q under a policy whose sandbox allows no host", sp.proxy.Allow)
	}

	sp, err = (&Options{DenyDomains: []string{"x.example.test"}}).compute(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.proxy.Allow) != 0 {
		t.Fatalf("deny flag alone opened %q", sp.proxy.Allow)
	}
}

// The ruling server of "sandboxd run" rules under the flags merged into the
// policy's bound: --deny-domain denies a WebFetch the policy alone allows.
// (This is why "sandboxd explain --harness", which rules with the policy
// file alone, refuses the network flags.)
func TestDomainFlagsReachRulings(t *testing.T) {
	r := resolveDoc(t, "version: 1\nharness: claude-code\nsession: {traits: [web], bound: {network: {enforce: sandbox, allowDomains: ['*.example.test']}}}\n")
	c := hooks.Call{Harness: hooks.ClaudeCode, Event: "PreToolUse", Kind: hooks.KindTool, Tool: "WebFetch",
		Input: map[string]any{"url": "https://x.example.test/"}, Cwd: "/w"}
	for _, tc := range []struct {
		deny  []string
		allow bool
	}{{nil, true}, {[]string{"x.example.test"}, false}} {
		sp, err := (&Options{DenyDomains: tc.deny}).compute(r)
		if err != nil {
			t.Fatal(err)
		}
		e, err := sp.engine()
		if err != nil {
			t.Fatal(err)
		}
		if d := e.Rule(context.Background(), c); d.Allowed() != tc.allow {
			t.Errorf("--deny-domain %q: %+v, want allowed=%v", tc.deny, d, tc.allow)
		}
	}
}
