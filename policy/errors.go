package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by this package that falls in one of
// these classes wraps the sentinel, so callers test with errors.Is.
var (
	// ErrInvalidPolicy marks a policy document that does not decode or validate.
	ErrInvalidPolicy = errors.New("invalid policy")
	// ErrInvalidHost marks a host name or address that cannot be matched safely.
	ErrInvalidHost = errors.New("invalid host")
	// ErrInvalidPattern marks a domain or file pattern that is refused.
	ErrInvalidPattern = errors.New("invalid pattern")
	// ErrUnknownTrait marks a selected trait that does not exist.
	ErrUnknownTrait = errors.New("unknown trait")
	// ErrUnknownBound marks a selected named bound that does not exist.
	ErrUnknownBound = errors.New("unknown bound")
	// ErrTraitCycle marks trait includes that form a cycle.
	ErrTraitCycle = errors.New("trait include cycle")
	// ErrNoHarnessBranch marks a per-harness trait with no branch for the session's harness.
	ErrNoHarnessBranch = errors.New("trait has no branch for harness")
	// ErrNotAllowed marks a refused tool call, node or delegation.
	ErrNotAllowed = errors.New("not allowed")
)

// FieldError is a problem at one place in a policy document. Path is the
// dotted field path ("bounds.readonly.network.actions[1]"); Line and Column are
// 1-based positions in the source when known (0 otherwise).
type FieldError struct {
	Path   string
	Line   int
	Column int
	Msg    string
}

// Error renders "line:col: path: msg", or "path: msg" without a position.
func (e *FieldError) Error() string {
	p := e.Path
	if p == "" {
		p = "(document)"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%d:%d: %s: %s", e.Line, e.Column, p, e.Msg)
	}
	return fmt.Sprintf("%s: %s", p, e.Msg)
}

// Unwrap makes every FieldError match ErrInvalidPolicy.
func (e *FieldError) Unwrap() error { return ErrInvalidPolicy }

// FieldErrors is every problem found in one document, in document order.
type FieldErrors []*FieldError

// Error joins the problems one per line.
func (es FieldErrors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// Unwrap makes FieldErrors match ErrInvalidPolicy and each FieldError.
func (es FieldErrors) Unwrap() []error {
	out := make([]error, 0, len(es)+1)
	out = append(out, ErrInvalidPolicy)
	for _, e := range es {
		out = append(out, e)
	}
	return out
}
