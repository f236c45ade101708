package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
// line's not_covered says so, unless the policy file's filesystem.openGate
// is always: then the seccomp route decides every open in the sandbox's
// init instead (openRoute), and a session that can have neither does not
// start. As root, a gate that cannot be made refuses the session.
func (s *session) openGate() (func(), error) {
	roots := s.fsPlan.OpenGateRoots()
	if roots == nil {
		// No group, no marks: no start-up or per-open cost.
		s.openGateState = "off: " + policy.ReasonNoOpenGate
		return nil, nil
	}
	always := s.fsPlan.openGateMode == policy.OpenGateAlways
	off := func(why string) {
		s.openGateState = "off: " + why
		s.fsPlan.NotCovered = append(s.fsPlan.NotCovered, "open gate off: a files.deny match the host creates during the session, or a host hard link to a file hidden at start, is readable inside (the hooks still refuse it by name): "+why)
	}
	if s.container != nil {
		if always {
			return s.openRoute("container mode has no mount namespace of its own to mark")
		}
		off("container mode has no mount namespace of its own to mark")
		return nil, nil
	}
	if err := procjail.OpenGateAvailable(); err != nil {
		if always {
			return s.openRoute(err.Error())
		}
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
	s.fsPlan.openMarks = true
	s.fsPlan.GateOpens()
	return func() { gate.Close(); s.flushRefusals() }, nil
}

// OpenRouteState is the start line's open_gate when the seccomp route
// decides the opens.
const OpenRouteState = "on (seccomp: every open decided, no cache)"

// openRoute turns the open gate's seccomp route on, where the fanotify
// gate cannot be had (noFanotify says why) and filesystem.openGate is
// always: the seccomp filter sends every open to the sandbox's init,
// which decides each opened regular file by the plan's OpenGuardSpec
// (procjail's FileSystem.OpenGuard; its refusals come to openRefused).
// It runs on the create gate's machinery: where that is off (container
// mode without what it needs, noCreateGate) the session does not start.
// The cleanup writes the summary lines of refusals counted and not
// written (refusalLines), as the fanotify gate's does.
func (s *session) openRoute(noFanotify string) (func(), error) {
	if s.fsPlan.noCreateGate != "" {
		return nil, fmt.Errorf("filesystem.openGate is %s, and neither route can be had: no fanotify gate (%s), and no seccomp route (it needs the create gate, which is off: %s)",
			policy.OpenGateAlways, noFanotify, s.fsPlan.noCreateGate)
	}
	s.fsPlan.openRoute = true
	s.openGateState = OpenRouteState
	s.fsPlan.GateOpens()
	return s.flushRefusals, nil
}

// openGateAuditAttrs says in the start line whether the open gate is on,
// and if not why (openGate).
func (s *session) openGateAuditAttrs() []slog.Attr {
	if s.openGateState == "" {
		return nil
	}
	return []slog.Attr{slog.String(audit.AttrOpenGate, s.openGateState)}
}

// openRefused writes the audit line of one open the open gate refused,
// unless that path already had refusalLinesPerSecond lines in the current
// second (refusalLines): then the refusal is counted, and the count goes
// in a summary line.
func (s *session) openRefused(r procjail.OpenRefusal) { s.openRefusedAt(r, time.Now()) }

// openRefusedAt is openRefused at now.
func (s *session) openRefusedAt(r procjail.OpenRefusal, now time.Time) {
	write, summary := s.refusals.take(r, now)
	if summary != nil {
		s.openRefusedLine(summary.last, summary.n)
	}
	if write {
		s.openRefusedLine(r, 0)
	}
}

// flushRefusals writes the summary line of every path whose last
// refusals were counted and not written yet (the session's end).
func (s *session) flushRefusals() {
	for _, sum := range s.refusals.flush() {
		s.openRefusedLine(sum.last, sum.n)
	}
}

// openRefusedLine writes one open refused line; repeated, when not 0, is
// how many refusals of r's path it stands for (the last of them is r).
func (s *session) openRefusedLine(r procjail.OpenRefusal, repeated int) {
	attrs := []slog.Attr{slog.String(audit.AttrDecision, "deny"), slog.String(audit.AttrPath, r.Path),
		slog.Int(audit.AttrPID, r.Pid), slog.String(audit.AttrComm, r.Comm),
		slog.String(audit.AttrRule, r.Rule), slog.String(audit.AttrReason, policy.OneLine(r.Reason))}
	if repeated > 0 {
		attrs = append(attrs, slog.Int(audit.AttrRepeated, repeated))
	}
	audit.Event(context.Background(), s.log, slog.LevelWarn, audit.KindSession, audit.MsgOpenRefused, attrs...)
}

// refusalLinesPerSecond is how many open refused lines one path gets in a
// second before its refusals are only counted (20,000 refused opens of
// one path in 0.86 s wrote 8.26 MB of audit).
const refusalLinesPerSecond = 100

// refusalLines decides which open refusals get a line of their own: per
// path, the first refusalLinesPerSecond in a second (a window that starts
// at the path's first refusal after the last window ended); past that the
// refusals are counted, and the count is written as one summary line (the
// last refusal's line with "repeated": N) at the path's first refusal in a
// later window, or at the session's end (flush). A path that had more than
// refusalLinesPerSecond refusals in a window gets only that summary line
// in the next one, until a window with fewer. The zero value is ready;
// safe for concurrent use.
type refusalLines struct {
	mu    sync.Mutex
	paths map[string]*refusalWindow
}

// refusalWindow is one path's current window.
type refusalWindow struct {
	start      time.Time
	count      int  // refusals in the window
	suppressed int  // of those, counted and not written
	flooding   bool // the previous window had more than the limit: none written
	last       procjail.OpenRefusal
}

// refusalSummary is a summary line due: n refusals, the last being last.
type refusalSummary struct {
	last procjail.OpenRefusal
	n    int
}

// take counts r at now and says whether it gets a line of its own, and
// which summary line is due first, if any.
func (l *refusalLines) take(r procjail.OpenRefusal, now time.Time) (write bool, summary *refusalSummary) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.paths == nil {
		l.paths = map[string]*refusalWindow{}
	}
	w := l.paths[r.Path]
	if w == nil {
		if len(l.paths) >= 4096 {
			l.sweep(now)
		}
		w = &refusalWindow{start: now}
		l.paths[r.Path] = w
	}
	if now.Sub(w.start) >= time.Second {
		if w.suppressed > 0 {
			summary = &refusalSummary{last: w.last, n: w.suppressed}
		}
		*w = refusalWindow{start: now, flooding: w.count > refusalLinesPerSecond}
	}
	w.count++
	w.last = r
	if w.flooding || w.count > refusalLinesPerSecond {
		w.suppressed++
		return false, summary
	}
	return true, summary
}

// sweep forgets the paths whose window ended with nothing left to write.
func (l *refusalLines) sweep(now time.Time) {
	for p, w := range l.paths {
		if w.suppressed == 0 && now.Sub(w.start) >= time.Second {
			delete(l.paths, p)
		}
	}
}

// flush returns the summary lines due for every path (in no order) and
// forgets them.
func (l *refusalLines) flush() []refusalSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []refusalSummary
	for _, w := range l.paths {
		if w.suppressed > 0 {
			out = append(out, refusalSummary{last: w.last, n: w.suppressed})
		}
	}
	l.paths = nil
	return out
}
