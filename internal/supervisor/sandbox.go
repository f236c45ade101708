package supervisor

import (
	"log/slog"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// procMode chooses the sandbox's /proc before it starts
// (procjail.ProbeProc), so that the session's first audit line and its
// status say what the init then does; a policy that requires a fresh
// /proc (sandbox.proc: fresh) where only the container's can be had
// refuses the session, naming the fix.
func (s *session) procMode() (func(), error) {
	mode, why := procjail.ProbeProc()
	if s.container != nil {
		mode, why = procjail.ProcContainer, "container mode shares the container's /proc"
	}
	var sec *policy.SandboxSection
	if r := s.live.Current().resolved; r != nil {
		sec = r.Sandbox
	}
	if err := sec.CheckProc(mode == procjail.ProcContainer, why, procjail.FreshProcFix); err != nil {
		return nil, err
	}
	s.proc = mode
	return nil, nil
}

func (s *session) procAuditAttrs() []slog.Attr {
	if s.proc == "" {
		return nil
	}
	return []slog.Attr{slog.String(audit.AttrProc, string(s.proc))}
}

// jailProc is the /proc the init mounts: container mode mounts none (the
// command shares the container's, as its processes do).
func (s *session) jailProc() procjail.ProcMode {
	if s.container != nil {
		return ""
	}
	return s.proc
}

// sandboxMode names the sandbox's mode.
func (s *session) sandboxMode() string {
	if s.container != nil {
		return ModeContainer
	}
	if s.opts.noFileLayer {
		return ModeSidecar
	}
	return ModeNested
}
