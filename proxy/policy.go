package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/barry-rocks/sandbox/policy"
)

// Policy is what the proxies enforce: an allowlist and a deny list of domain
// patterns (policy.ParseDomainPattern grammar), and the address ranges an
// operator opened past the dial guard. An empty Allow means no egress at all:
// the proxies only run under enforce: sandbox, where an absent allowlist is
// an empty one. Deny wins over Allow. A Policy is a plain value; Server and
// DNSServer compile it.
type Policy struct {
	Allow        []string
	Deny         []string
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
			p.Allow = nil
		}
	}
	if _, err := compilePolicy(p); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// compiled is a Policy ready for matching. Immutable once built.
type compiled struct {
	src          Policy
	allow        *policy.DomainSet
	deny         *policy.DomainSet
	allowPrivate []netip.Prefix
	fingerprint  string
}

func compilePolicy(p Policy) (*compiled, error) {
	allow, err := policy.NewDomainSet(p.Allow, true)
	if err != nil {
		return nil, fmt.Errorf("proxy policy: allow%w", err)
	}
	deny, err := policy.NewDomainSet(p.Deny, false)
	if err != nil {
		return nil, fmt.Errorf("proxy policy: deny%w", err)
	}
	c := &compiled{src: p, allow: allow, deny: deny, fingerprint: p.Fingerprint}
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

func fingerprint(p Policy) string {
	h := sha256.New()
	w := func(tag string, list []string) {
		l := slices.Clone(list)
		slices.Sort(l)
		fmt.Fprintf(h, "%s:%d\n%s\n", tag, len(l), strings.Join(l, "\n"))
	}
	w("allow", p.Allow)
	w("deny", p.Deny)
	var pr []string
	for _, x := range p.AllowPrivate {
		pr = append(pr, x.Masked().String())
	}
	w("private", pr)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Reasons, the exact strings tests assert. Each is the start of a one-line
// reason; details follow after ": ".
const (
	ReasonInvalidHost     = "invalid host"
	ReasonInvalidPort     = "invalid port"
	ReasonDeniedDomain    = "denied domain"
	ReasonNotAllowed      = "not in allowlist"
	ReasonAllowedBy       = "allowed by entry"
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
)

// decideName is the name half of every decision, in this order: the deny
// list (wins), then the allowlist (empty: nothing is allowed). h must be
// canonical (policy.ParseHost).
func (c *compiled) decideName(h policy.Host) policy.Decision {
	if e, ok := c.deny.Match(h); ok {
		return policy.Denied(fmt.Sprintf("%s: %s matches network.domains entry %q", ReasonDeniedDomain, h, e), e)
	}
	if c.allow.Len() == 0 {
		return policy.Denied(ReasonNotAllowed+": the allowlist is empty (no egress)", "")
	}
	e, ok := c.allow.Match(h)
	if !ok {
		return policy.Denied(fmt.Sprintf("%s: %s", ReasonNotAllowed, h), "")
	}
	return policy.AllowedBy(fmt.Sprintf("%s %q", ReasonAllowedBy, e), e)
}

// openedAddr reports the operator range or explicit allowlist IP entry that
// opens addr past the special-purpose table, if any.
func (c *compiled) openedAddr(a netip.Addr) (string, bool) {
	for _, p := range c.allowPrivate {
		if p.Contains(a) {
			return "--allow-private " + p.String(), true
		}
	}
	if e, ok := c.allow.Match(policy.Host{IP: a}); ok {
		if _, denied := c.deny.Match(policy.Host{IP: a}); !denied {
			return "allowlist entry " + e, true
		}
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
	if _, ok := c.allow.Match(policy.Host{IP: a}); ok {
		if _, denied := c.deny.Match(policy.Host{IP: a}); !denied {
			return true
		}
	}
	return false
}
