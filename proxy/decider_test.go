package proxy_test

import (
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy"
)

// TestPolicyDeciderNeedsAllowlist: a decider compiled outside the sandbox
// (an absent allowlist allowing every name) is refused, never enforced.
func TestPolicyDeciderNeedsAllowlist(t *testing.T) {
	nd, err := policy.CompileNetwork(&policy.NetworkRules{Domains: []string{"bad.test"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := proxy.New(proxy.Config{Policy: proxy.Policy{Decider: nd}}); err == nil || !strings.Contains(err.Error(), "no allowlist") {
		t.Errorf("a decider without an allowlist: %v", err)
	}
}
