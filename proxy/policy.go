package proxy

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/barry-rocks/sandbox/policy"
)

// Policy is what the proxies enforce: an allowlist and a deny list of domain
// patterns (policy.ParseDomainPattern grammar), and the address ranges an
// operator opened past the dial guard. An empty Allow means no egress at all:
// the proxies only run under enforce: sandbox, where an absent allowlist is
// an empty one. Deny wins over Allow. A Policy is a plain value; Server and
// DNSServer compile it.
type Policy struct {
	Allow []string
	Deny  []string
	// Actions are the bound's network.actions: one that denies every
	// action leaves no egress.
	Actions      []string
	AllowPrivate []netip.Prefix
	// Fingerprint names the policy in audit lines; when empty it is derived
	// from the other fields.
	Fingerprint string
}

// PolicyFromBound builds the proxy policy from a resolved bound's network
// rules: network.allowDomains is the allowlist (absent means empty: no
// egress), network.domains the deny list, and network.actions that cover
// every action ("all", or "read" and "write") deny everything. allowPrivate comes from the operator (--allow-private).
func PolicyFromBound(b *policy.Bound, allowPrivate []netip.Prefix) (Policy, error) {
	p := Policy{AllowPrivate: slices.Clone(allowPrivate)}
	if err := policy.CheckSandboxEnforceable(b); err != nil {
		return Policy{}, err
	}
	if b != nil && b.Network != nil {
		n := b.Network
		p.Allow = slices.Clone(n.AllowDomains)
		p.Deny = slices.Clone(n.Domains)
		if policy.DeniesAllActions(n.Actions) {
			p.Actions = slices.Clone(n.Actions)
		}
	}
	if _, err := compilePolicy(p); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// Names is policy's one reading of p's network fields, as the proxies
// decide names with it: inside the egress sandbox, where an absent
// allowlist is empty. A caller deciding a name "as the proxy would" (a
// credential's hosts) asks this one.
func (p Policy) Names() (*policy.NetworkDecider, error) {
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
	var pr []string
	for _, x := range p.AllowPrivate {
		pr = append(pr, x.Masked().String())
	}
	return policy.ScopeFingerprint(map[string]any{
		"allow": sorted(p.Allow), "deny": sorted(p.Deny), "actions": sorted(p.Actions), "private": sorted(pr),
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
