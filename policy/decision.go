package policy

// Verdict is the outcome of a decision. Its zero value is Deny, so a decision
// that was never made denies.
type Verdict uint8

const (
	// Deny refuses the action.
	Deny Verdict = iota
	// Allow permits the action.
	Allow
	// Ask defers the action to a person, where the caller supports it.
	Ask
)

// String returns "deny", "allow" or "ask".
func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	default:
		return "deny"
	}
}

// Decision is a verdict with the one-line reason for it and the rule that
// decided it (empty when no rule matched). The zero Decision is a denial with
// no reason; deciders always set Reason.
type Decision struct {
	Verdict Verdict
	Reason  string
	Rule    string
}

// Allowed reports whether the decision permits the action.
func (d Decision) Allowed() bool { return d.Verdict == Allow }

// Denied returns a denying decision with a reason and the rule that decided it.
func Denied(reason, rule string) Decision { return Decision{Verdict: Deny, Reason: reason, Rule: rule} }

// Allowed returns an allowing decision with a reason and the rule that decided it.
func AllowedBy(reason, rule string) Decision {
	return Decision{Verdict: Allow, Reason: reason, Rule: rule}
}
