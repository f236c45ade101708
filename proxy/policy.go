package proxy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"

	"github.com/barry-rocks/sandbox/policy"
)

// Policy is what the proxies enforce: how they decide names, and the
// address ranges an operator opened past the dial guard. Names are decided
// by Decider, policy's compiled reading of a bound's network rules
// (PolicyFromBound), or, without one, by the plain lists Allow and Deny
// (policy.ParseDomainPattern grammar) and Actions (sandboxd proxy's flags,
// tests). An empty Allow means no egress at all: the proxies only run
// under enforce: sandbox, where an absent allowlist is an empty one. Deny
// wins over Allow. A Policy is a value (its Decider is immutable); Server
// and DNSServer compile it.
type Policy struct {
	Allow []string
	Deny  []string
	// Actions are the bound's network.actions: one that denies every
	// action leaves no egress.
	Actions []string
	// Decider, when set, decides names in place of Allow, Deny and
	// Actions (PolicyFromBound sets those to its HostRules, for reports).
	// It must have an allowlist (compiled for the sandbox:
	// policy.CompileNetwork with sandboxed set).
	Decider      *policy.NetworkDecider
	AllowPrivate []netip.Prefix
	// Fingerprint names the policy in audit lines; when empty it is derived
	// from the other fields.
	Fingerprint string
}

// PolicyFromBound builds the proxy policy from a resolved bound: policy
// refuses what the egress sandbox cannot enforce
// (policy.CheckSandboxEnforceable) and compiles the bound's network rules
// as the sandbox reads them (an absent allowlist is empty: no egress),
// and the proxy decides names with that decider; Allow, Deny and Actions
// report its HostRules. allowPrivate comes from
// the operator (--allow-private).
func PolicyFromBound(b *policy.Bound, allowPrivate []netip.Prefix) (Policy, error) {
	if err := policy.CheckSandboxEnforceable(b); err != nil {
		return Policy{}, err
	}
	nd, err := policy.CompileNetwork(policy.InSandbox(b).Network, true)
	if err != nil {
		return Policy{}, fmt.Errorf("proxy policy: %w", err)
	}
	allow, deny, actions := nd.HostRules()
	p := Policy{Allow: allow, Deny: deny, Actions: actions, Decider: nd, AllowPrivate: slices.Clone(allowPrivate)}
	if _, err := compilePolicy(p); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Names is policy's one reading of p's network rules, as the proxies
// decide names with it: Decider, or p's lists compiled inside the egress
// sandbox, where an absent allowlist is empty. A caller deciding a name
// "as the proxy would" (a credential's hosts) asks this one.
func (p Policy) Names() (*policy.NetworkDecider, error) {
	if p.Decider != nil {
		return p.Decider, nil
	}
	return policy.CompileNetwork(&policy.NetworkRules{AllowDomains: p.Allow, Domains: p.Deny, Actions: p.Actions}, true)
}

// compiled is a Policy ready for matching. Immutable once built.
type compiled struct {
	src Policy
	// names is policy's one reading of the network fields: the proxies
	// run inside the egress sandbox, where an absent allowlist is empty.
	names        *policy.NetworkDecider
	allowPrivate []netip.Prefix
	fingerprint  string
}

func compilePolicy(p Policy) (*compiled, error) {
	names, err := p.Names()
	if err != nil {
		return nil, fmt.Errorf("proxy policy: %w", err)
	}
	if !names.HasAllowlist() {
		return nil, errors.New("proxy policy: the network decider has no allowlist (compile it for the sandbox)")
	}
	c := &compiled{src: p, names: names, fingerprint: p.Fingerprint}
	for i, pr := range p.AllowPrivate {
		if !pr.IsValid() {
			return nil, fmt.Errorf("proxy policy: allowPrivate[%d]: invalid prefix", i)
		}
		c.allowPrivate = append(c.allowPrivate, pr.Masked())
	}
	if c.fingerprint == "" {
		c.fingerprint = fingerprint(p)
	}
	return c, nil
}

// fingerprint is policy's one fingerprint (policy.ScopeFingerprint) of
// the proxy policy's content, lists sorted: a proxy run without a session
// (sandboxd proxy) names its policy the way a session does.
func fingerprint(p Policy) string {
	sorted := func(list []string) []string {
		l := append([]string{}, list...) // never nil: absent and empty are one
		slices.Sort(l)
		return l
	}
	allow, deny, actions := p.Allow, p.Deny, p.Actions
	if p.Decider != nil {
		allow, deny, actions = p.Decider.HostRules()
	}
	var pr []string
	for _, x := range p.AllowPrivate {
		pr = append(pr, x.Masked().String())
	}
	return policy.ScopeFingerprint(map[string]any{
		"allow": sorted(allow), "deny": sorted(deny), "actions": sorted(actions), "private": sorted(pr),
	})
}

// Reasons, the exact strings tests assert. Each is the start of a one-line
// reason; details follow after ": ".
const (
	ReasonInvalidHost     = policy.ReasonInvalidHost
	ReasonInvalidPort     = "invalid port"
	ReasonDeniedDomain    = policy.ReasonDeniedDomain
	ReasonNotAllowed      = policy.ReasonNotAllowed
	ReasonAllowedBy       = policy.ReasonAllowedBy
	ReasonDeniedAction    = policy.ReasonDeniedAction
	ReasonPrivateAddress  = "private address"
	ReasonResolveFailed   = "resolve failed"
	ReasonNoAddress       = "no address"
	ReasonSNIMismatch     = "sni mismatch"
	ReasonAuthRequired    = "proxy authentication required"
	ReasonTooManyConns    = "too many connections"
	ReasonBadRequest      = "bad request"
	ReasonHostMismatch    = "host header disagrees with the request target"
	ReasonDialFailed      = "dial failed"
	ReasonPolicyChanged   = "policy changed"
	ReasonRecordType      = "record type refused"
	ReasonUpstreamFailure = "upstream failure"
	// ReasonNotNamesAddress: a captured connection's original address is
	// not among the addresses of the name it carried (SNI, Host).
	ReasonNotNamesAddress = "address is not the name's"
)

// decideName is the name half of every decision: policy's
// NetworkDecider (a network.actions denying every action, the deny list,
// then the allowlist). h must be canonical (policy.ParseHost).
func (c *compiled) decideName(h policy.Host) policy.Decision { return c.names.DecideHost(h) }

// openedAddr reports the operator range or explicit allowlist IP entry that
// opens addr past the special-purpose table, if any.
func (c *compiled) openedAddr(a netip.Addr) (string, bool) {
	for _, p := range c.allowPrivate {
		if p.Contains(a) {
			return "--allow-private " + p.String(), true
		}
	}
	if denied, allowed := c.names.Matches(policy.Host{IP: a}); allowed != "" && denied == "" {
		return "allowlist entry " + allowed, true
	}
	return "", false
}

// openedExactly reports whether a is opened as a single address: an
// --allow-private prefix of one address, or an IP entry of the allowlist.
func (c *compiled) openedExactly(a netip.Addr) bool {
	for _, p := range c.allowPrivate {
		if p.IsSingleIP() && p.Addr().Unmap() == a {
			return true
		}
	}
	denied, allowed := c.names.Matches(policy.Host{IP: a})
	return allowed != "" && denied == ""
}
