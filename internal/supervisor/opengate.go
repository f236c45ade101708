package supervisor

import (
	"context"
	"log/slog"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// openGate makes the open gate: as root (CAP_SYS_ADMIN in the initial
// user namespace), every open of a file on the sandbox's mounts where a
// files.deny match can appear is decided by the plan's OpenGuard, so that
// a match the host creates during the session, or a host hard link to a
// file hidden at start, is refused at open time (procjail marks the
// mounts once the init has made them, Spec.OpenGate). Where sandboxd
// cannot have it (rootless, a container without CAP_SYS_ADMIN) the start
// line's not_covered says so; as root, a gate that cannot be made refuses
// the session.
func (s *session) openGate() (func(), error) {
	roots := s.fsPlan.OpenGateRoots()
	if roots == nil {
		// No group, no marks: no start-up or per-open cost.
		s.openGateState = "off: " + policy.ReasonNoOpenGate
		return nil, nil
	}
	off := func(why string) {
		s.openGateState = "off: " + why
		s.fsPlan.NotCovered = append(s.fsPlan.NotCovered, "open gate off: a files.deny match the host creates during the session, or a host hard link to a file hidden at start, is readable inside (the hooks still refuse it by name): "+why)
	}
	if s.container != nil {
		off("container mode has no mount namespace of its own to mark")
		return nil, nil
	}
	if err := procjail.OpenGateAvailable(); err != nil {
		off(err.Error())
		return nil, nil
	}
	guard := s.fsPlan.OpenGuard()
	gate, err := procjail.NewOpenGate(procjail.OpenGateOptions{
		Roots:   roots,
		PreMark: s.fsPlan.OpenGatePreMark(),
		Decide: func(path string, id procjail.FileID, known bool) (bool, string, string) {
			if !known {
				d := guard.DecideOpenUnknownDevice(path, id.Ino)
				return !d.Allowed(), d.Rule, d.Reason
			}
			d := guard.DecideOpen(path, policy.FileID{Dev: id.Dev, Ino: id.Ino})
			return !d.Allowed(), d.Rule, d.Reason
		},
		Refused: s.openRefused,
	})
	if err != nil {
		return nil, err
	}
	s.openGateOn = gate
	s.openGateState = "on"
	s.fsPlan.GateOpens()
	return gate.Close, nil
}

// openGateAuditAttrs says in the start line whether the open gate is on,
// and if not why (openGate).
func (s *session) openGateAuditAttrs() []slog.Attr {
	if s.openGateState == "" {
		return nil
	}
	return []slog.Attr{slog.String(audit.AttrOpenGate, s.openGateState)}
}

// openRefused writes the audit line of one open the open gate refused.
func (s *session) openRefused(r procjail.OpenRefusal) {
	audit.Event(context.Background(), s.log, slog.LevelWarn, audit.KindSession, audit.MsgOpenRefused,
		slog.String(audit.AttrDecision, "deny"), slog.String(audit.AttrPath, r.Path),
		slog.Int(audit.AttrPID, r.Pid), slog.String(audit.AttrComm, r.Comm),
		slog.String(audit.AttrRule, r.Rule), slog.String(audit.AttrReason, policy.OneLine(r.Reason)))
}
