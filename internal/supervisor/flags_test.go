package supervisor

import (
	"slices"
	"testing"

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
