package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Reason phrases of the network decisions: each reason starts with one of
// them, details follow after ": " (or a space, for ReasonAllowedBy).
const (
	ReasonInvalidHost   = "invalid host"
	ReasonDeniedDomain  = "denied domain"
	ReasonNotAllowed    = "not in allowlist"
	ReasonAllowedBy     = "allowed by entry"
	ReasonNoNetworkRule = "no network rule denies it"
	ReasonDeniedAction  = "denied network action"
)

// Rule codes of the network decisions; RuleAt adds the entry.
const (
	RuleNetworkDomains      = "network.domains"
	RuleNetworkAllowDomains = "network.allowDomains"
	RuleNetworkActions      = "network.actions"
	RuleNetworkHost         = "network.host"
	RuleNetworkEnforce      = "network.enforce"
)

// RuleAt is the rule code of one entry of a bound field: "field:entry".
func RuleAt(field, entry string) string { return field + ":" + entry }

// InSandbox returns a copy of b as a session inside sandboxd's sandbox
// rules on it: network.enforce is sandbox (an absent allowDomains is the
// empty allowlist, as the proxies read it), whatever b said.
func InSandbox(b *Bound) *Bound {
	b = b.Clone()
	if b == nil {
		b = &Bound{}
	}
	if b.Network == nil {
		b.Network = &NetworkRules{}
	}
	b.Network.Enforce = EnforceSandbox
	return b
}

// DecideSandboxed decides whether a session may run where it runs:
// network.enforce: sandbox asks for sandboxd's sandbox, and a session
// with none (hooks only: hookgate with a policy file, or serve-hooks'
// rulings) is refused, every call denied, rather than run its network
// rules unsandboxed.
func DecideSandboxed(b *Bound, sandboxed bool) Decision {
	if sandboxed || b == nil || b.Network == nil || b.Network.Enforce != EnforceSandbox {
		return AllowedBy("the session runs where its policy asks", "")
	}
	return Denied(Because(ReasonNoSandbox, "start the harness with sandboxd launch (or the command with sandboxd run --policy)"), RuleAt(RuleNetworkEnforce, string(EnforceSandbox)))
}

// NetworkDecider decides destinations by name for one bound's network
// rules: network.domains (denied; it wins), then network.allowDomains (the
// allowlist). It is the one reading of those fields; the proxies, the hook
// gate and the CLIs that explain a decision all call it. Immutable and safe
// for concurrent use.
type NetworkDecider struct {
	deny, allow *DomainSet
	// allowlist is false when there is no allowlist at all (everything not
	// denied is allowed).
	allowlist bool
	// allActions is the network.actions entry that denies every action, if
	// any: no destination is allowed.
	allActions string
	actions    []string
	// hostRules are the entries that decide hosts, as given (HostRules).
	hostRules NetworkRules
}

// CompileNetwork compiles n (nil: no network rules). sandboxed says the
// decision is made for the egress sandbox (sandboxd run's proxies, and the
// rulings of a session running inside it), or n says enforce: sandbox: an
// absent allowDomains is then the empty allowlist (no egress), as Barry's
// policy model has it. Elsewhere an absent allowDomains is no allowlist. An entry that
// does not parse is an error naming its field and index.
func CompileNetwork(n *NetworkRules, sandboxed bool) (*NetworkDecider, error) {
	d := &NetworkDecider{}
	if n == nil {
		n = &NetworkRules{}
	}
	var err error
	if d.deny, err = NewDomainSet(n.Domains, false); err != nil {
		return nil, fmt.Errorf("network.domains%w", err)
	}
	if d.allow, err = NewDomainSet(n.AllowDomains, true); err != nil {
		return nil, fmt.Errorf("network.allowDomains%w", err)
	}
	d.allowlist = n.AllowDomains != nil || sandboxed || n.Enforce == EnforceSandbox
	d.actions = n.Actions
	d.hostRules = NetworkRules{AllowDomains: slices.Clone(n.AllowDomains), Domains: slices.Clone(n.Domains)}
	if DeniesAllActions(n.Actions) {
		d.allActions = strings.Join(n.Actions, ", ")
		d.hostRules.Actions = slices.Clone(n.Actions)
	}
	return d, nil
}

// DecideHost decides h (canonical: see ParseHost), in this order: a
// network.actions that denies every action, the deny list, then the
// allowlist (an empty one allows nothing).
func (d *NetworkDecider) DecideHost(h Host) Decision {
	switch {
	case d == nil:
		return Denied(ReasonNotAllowed+": no network rules were compiled", RuleNetworkAllowDomains)
	case d.allActions != "":
		return Denied(fmt.Sprintf("%s: network.actions %q denies every action (no egress)", ReasonDeniedAction, d.allActions), RuleAt(RuleNetworkActions, ActionAll))
	}
	if e, ok := d.deny.Match(h); ok {
		return Denied(fmt.Sprintf("%s: %s matches network.domains entry %q", ReasonDeniedDomain, h, e), RuleAt(RuleNetworkDomains, e))
	}
	if !d.allowlist {
		return AllowedBy(fmt.Sprintf("%s: %s", ReasonNoNetworkRule, h), "")
	}
	if d.allow.Len() == 0 {
		return Denied(ReasonNotAllowed+": the allowlist is empty (no egress)", RuleNetworkAllowDomains)
	}
	e, ok := d.allow.Match(h)
	if !ok {
		return Denied(fmt.Sprintf("%s: %s", ReasonNotAllowed, h), RuleNetworkAllowDomains)
	}
	return AllowedBy(fmt.Sprintf("%s %q", ReasonAllowedBy, e), RuleAt(RuleNetworkAllowDomains, e))
}

// DecideHostName parses host (a name or an address, as a client wrote it)
// and decides it; a host that cannot be read is denied.
func (d *NetworkDecider) DecideHostName(host string) Decision {
	h, err := ParseHost(host)
	if err != nil {
		return Denied(fmt.Sprintf("%s: %q: %v", ReasonInvalidHost, clipHost(host), err), RuleNetworkHost)
	}
	return d.DecideHost(h)
}

// DecideAction decides one network action tag (ActionHTTPRead, ...)
// against network.actions.
func (d *NetworkDecider) DecideAction(action string) Decision {
	if d != nil {
		if tag := IsActionDenied(action, d.actions); tag != "" {
			return Denied(fmt.Sprintf("%s: %s is denied by network.actions", ReasonDeniedAction, action), RuleAt(RuleNetworkActions, tag))
		}
	}
	return AllowedBy(fmt.Sprintf("network action %s is not denied", action), "")
}

// Matches reports the deny and allow entries that match h, for callers
// that need the entry itself (the proxy's address checks); it decides
// nothing.
func (d *NetworkDecider) Matches(h Host) (denied, allowed string) {
	if d == nil {
		return "", ""
	}
	denied, _ = d.deny.Match(h)
	allowed, _ = d.allow.Match(h)
	return denied, allowed
}

// HasDomainRules reports whether any destination can be denied by name: a
// deny list, an allowlist (also the empty one), or every action denied.
func (d *NetworkDecider) HasDomainRules() bool {
	return d == nil || d.deny.Len() > 0 || d.allowlist || d.allActions != ""
}

// HasAllowlist reports whether a name must be in the allowlist to be
// allowed (an empty one allows nothing): always so for a decider compiled
// for the sandbox.
func (d *NetworkDecider) HasAllowlist() bool { return d == nil || d.allowlist }

// HostRules are the entries that decide hosts, as compiled:
// network.allowDomains, network.domains, and network.actions when it
// denies every action (nil otherwise). The lists are copies; they name a
// decider's content (a fingerprint), and only DecideHost decides.
func (d *NetworkDecider) HostRules() (allow, deny, actions []string) {
	if d == nil {
		return nil, nil, nil
	}
	r := d.hostRules
	return slices.Clone(r.AllowDomains), slices.Clone(r.Domains), slices.Clone(r.Actions)
}

// AllowCount is the number of allowlist entries.
func (d *NetworkDecider) AllowCount() int {
	if d == nil {
		return 0
	}
	return d.allow.Len()
}

func clipHost(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// DeniesAllActions reports whether the denied network actions cover every
// leaf action ("all", or e.g. "read" and "write" together), which is no
// network at all.
func DeniesAllActions(actions []string) bool {
	if len(actions) == 0 {
		return false
	}
	denied := ExpandActions(actions)
	for _, leaf := range ExpandActions([]string{ActionAll}) {
		if _, parent := actionChildren[leaf]; !parent && !slices.Contains(denied, leaf) {
			return false
		}
	}
	return true
}

// CheckSandboxEnforceable refuses a bound that asks the egress sandbox to
// enforce a split it cannot see: with network.enforce: sandbox, denying only
// some network actions (say write, not read) depends on telling a read from
// a write to the same host, which a hostname filter cannot.
func CheckSandboxEnforceable(b *Bound) error {
	if b == nil || b.Network == nil || b.Network.Enforce != EnforceSandbox || len(b.Network.Actions) == 0 {
		return nil
	}
	if DeniesAllActions(b.Network.Actions) {
		return nil
	}
	return fmt.Errorf("%w: network.actions denies only some actions (%s) under enforce: sandbox; the egress sandbox filters by host and cannot tell a read from a write, so deny all actions or enforce this with the guards",
		ErrNotAllowed, strings.Join(b.Network.Actions, ", "))
}
