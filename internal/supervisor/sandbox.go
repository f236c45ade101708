package supervisor

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// prestart starts the sandbox's init first, so that it creates the
// namespaces and starts up (a Go process start, ~2.5 ms) while the rest of
// the session is set up; Start gives it its spec. On Linux it also makes
// the proxy forward's pass listener, which the init is started with.
func (s *session) prestart() (func(), error) {
	stdin, stdout := s.opts.Stdin, s.opts.Stdout
	if stdin == nil {
		stdin = os.Stdin
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if runtime.GOOS == "linux" {
		var err error
		if s.pass, err = procjail.NewPassListener(); err != nil {
			return nil, fmt.Errorf("proxy forward: %w", err)
		}
		undo = append(undo, func() {
			if s.pass != nil {
				s.pass.Close()
			}
		})
	}
	pre, err := procjail.Prestart(procjail.PrestartOptions{Stdin: stdin, Stdout: stdout, Stderr: s.stderr, Pass: s.pass})
	if errors.Is(err, procjail.ErrUserNamespaces) {
		// No nested sandbox here: container mode, if the container
		// allows it, else one refusal naming both modes' fixes.
		c, ferr := s.containerFallback(err)
		if ferr != nil {
			return cleanup, ferr
		}
		// The failed prestart took the pass listener's child end: a new
		// one (the first one's undo closes whichever s.pass is then).
		s.pass.Close()
		pass, perr := procjail.NewPassListener()
		if perr != nil {
			s.pass = nil
			return cleanup, fmt.Errorf("proxy forward: %w", perr)
		}
		s.pass = pass
		s.container = c
		pre, err = procjail.Prestart(procjail.PrestartOptions{Stdin: stdin, Stdout: stdout, Stderr: s.stderr, Pass: s.pass, Container: true})
	}
	if err != nil {
		return cleanup, err
	}
	if s.container == nil && s.opts.AgentUID != "" {
		fmt.Fprintln(s.stderr, "sandboxd: --agent-uid applies to container mode only: in this nested sandbox the command runs as sandboxd's own uid")
	}
	s.pre = pre
	undo = append(undo, func() {
		pre.Close() // a no-op once Start has the init
		if s.sb != nil {
			// The last cleanup: the init's exit (its namespaces coming
			// down) ran beside the session's own teardown.
			s.sb.Close()
		}
	})
	return cleanup, nil
}

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

// procAuditAttrs are the start line's /proc attribute (none where the
// session chose none: macOS).
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
