package policy

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// SandboxSection is the policy file's top-level "sandbox" section: what the
// sandbox itself must be for the session to start (sandboxd run and
// launch). It lives outside Bound so that the bound keeps the SDK's wire
// format.
type SandboxSection struct {
	// Proc is the /proc the sandbox may start with: ProcFresh requires a
	// procfs of the sandbox's own, which lists only its processes;
	// ProcAny (the default) also accepts the container's /proc, read-only,
	// where the kernel refuses a fresh one (docs/limits.md says what that
	// shows).
	Proc string `json:"proc,omitempty"`
}

// The values of sandbox.proc.
const (
	ProcFresh = "fresh"
	ProcAny   = "any"
)

func (d *decoder) sandboxSection(n *yaml.Node, p string) *SandboxSection {
	s := &SandboxSection{}
	d.fields(n, p, map[string]func(*yaml.Node, string){
		"proc": func(v *yaml.Node, p string) {
			s.Proc = d.str(v, p)
			if s.Proc != ProcFresh && s.Proc != ProcAny && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "%q is not a /proc requirement (%s or %s)", s.Proc, ProcFresh, ProcAny)
			}
		},
	})
	return s
}

// ErrFreshProcRequired is wrapped by CheckProc's refusal.
var ErrFreshProcRequired = errors.New("the policy requires a /proc of the sandbox's own (sandbox.proc: " + ProcFresh + ")")

// CheckProc decides whether a sandbox whose /proc would be the container's
// (container true) may start under s (nil: no section, the defaults). The
// error is one line naming the field; why says what keeps the fresh /proc
// away and fix how to get it.
func (s *SandboxSection) CheckProc(container bool, why, fix string) error {
	if !container || s == nil || s.Proc != ProcFresh {
		return nil
	}
	return fmt.Errorf("%w, but %s: %s", ErrFreshProcRequired, why, fix)
}
