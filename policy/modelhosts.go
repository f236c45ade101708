package policy

import "fmt"

// WithModelHosts returns a copy of b as a session inside the sandbox
// (InSandbox) with the model API hosts a harness cannot work without in
// its allowlist (a host the allowlist already allows is not added again).
// In this order, for each host: one that does not parse, or one the bound
// denies otherwise than by leaving it out of its allowlist (a
// network.domains entry, network.actions denying every action), is a
// *ModelHostError: deny wins, and a session that cannot reach its model
// is not one. b itself is not changed.
func WithModelHosts(b *Bound, hosts []string) (*Bound, error) {
	b = InSandbox(b)
	nd, err := CompileNetwork(b.Network, true)
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		ph, err := ParseHost(h)
		if err != nil {
			return nil, &ModelHostError{Host: h, Err: err}
		}
		d := nd.DecideHostName(ph.String())
		if d.Allowed() {
			continue
		}
		if d.Rule != RuleNetworkAllowDomains {
			return nil, &ModelHostError{Host: ph.String(), Denied: d}
		}
		b.Network.AllowDomains = append(b.Network.AllowDomains, ph.String())
	}
	return b, nil
}

// ModelHostError is a model API host a bound cannot be widened to: one
// that does not parse (Err), or one the bound denies (Denied). It matches
// ErrInvalidHost or ErrNotAllowed.
type ModelHostError struct {
	Host   string
	Err    error
	Denied Decision
}

// Error names the host and why.
func (e *ModelHostError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("model API host %q: %v", e.Host, e.Err)
	}
	return fmt.Sprintf("the model API host %s is denied: %s", e.Host, e.Denied.Reason)
}

// Unwrap returns the parse error, or ErrNotAllowed for a denied host.
func (e *ModelHostError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrNotAllowed
}
