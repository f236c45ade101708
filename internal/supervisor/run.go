package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/policywatch"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// Options are what "sandboxd run" was asked to do.
type Options struct {
	// PolicyFile is the session policy; "" means none (flags only).
	PolicyFile string
	// AllowDomains and DenyDomains come from --allow-domain/--deny-domain;
	// they merge with the policy file's bound toward more restriction.
	AllowDomains, DenyDomains []string
	DNSUpstream               string
	AllowPrivate              []netip.Prefix
	AllowUnixSockets          []string
	// Write are extra write roots (--write), before the policy file's
	// filesystem.write.
	Write []string
	// UnsetEnv are variable names or globs (--unset-env) left out of the
	// command's environment, before the policy file's environment.unset.
	UnsetEnv []string
	// Credentials are --credential's (before the policy file's
	// credentials section): variables the sandbox gets as placeholders,
	// whose real values the proxy puts into requests to their hosts.
	Credentials []policy.CredentialSpec
	// Read are host paths kept visible, read-only, where the sandbox's
	// private /tmp would cover them (--read).
	Read []string
	// Publish are the host's ways in: servers inside the sandbox on
	// 127.0.0.1 that the host reaches at a host address (--publish).
	Publish []Publish

	// AuditPath: "" none, "-" standard error, else a file appended to.
	AuditPath string
	Dir       string
	Command   []string
	Stdin     *os.File
	Stdout    *os.File
	Stderr    *os.File
	// Debounce of the policy file watcher (0: policywatch.DefaultDebounce).
	Debounce time.Duration
	// Started, when set, is told the sandbox's mode (ModeNested or
	// ModeContainer) and /proc (procjail.ProcMode) just before the
	// command starts ("sandboxd doctor" reports them).
	Started func(mode, proc string)
	// AgentUID is container mode's uid for the command (--agent-uid
	// UID[:GID]); "" is the working directory's owner.
	AgentUID string
	// Launch, when set, starts a harness under the session policy
	// ("sandboxd launch"): Command is then the harness's program (its
	// session configuration's arguments are added after it).
	Launch *LaunchSpec

	// noFileLayer: the session's commands run with no filesystem layer
	// of sandboxd's (Sidecar): its rulings decide file rules alone.
	noFileLayer bool
	// agentHome expands "~/" in the rulings' file patterns when the
	// agent's home is not sandboxd's own (Sidecar); "" is sandboxd's.
	agentHome string
}

// Run starts the proxies, the hook ruling server (with a policy file) and
// the jail, keeps the policy live, and waits for the command. It returns the
// command's exit status; an error means the command never ran.
func Run(opts Options) (int, error) {
	if len(opts.Command) == 0 {
		return 0, errors.New("no command to run")
	}
	s := &session{opts: opts, stderr: opts.Stderr}
	if s.stderr == nil {
		s.stderr = os.Stderr
	}
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	// The session takes its caller's signals from its first step: one
	// that comes during the setup aborts it (the command never starts),
	// later ones are the command's (sigRelay). The subscription itself
	// runs beside the setup (Notify).
	s.setupCtx, s.abortSetup = context.WithCancel(context.Background())
	var reload func()
	if s.opts.PolicyFile != "" {
		reload = func() { s.live.Reload() } // only once committed, after resolve set s.live
	}
	s.sig = newSigRelay(s.abortSetup, reload)
	s.sig.Notify()
	cleanups = append(cleanups, func() { s.abortSetup(); s.sig.Stop() })
	// The steps, in order; each file of the package holds one concern's.
	steps := []func() (func(), error){
		s.prestart,       // the sandbox's init, starting beside the setup (sandbox.go)
		s.resolve,        // the policy file watched, the first session policy (policy.go)
		s.procMode,       // the sandbox's /proc (sandbox.go)
		s.runtimeDir,     // the runtime directory and the audit stream (status.go)
		s.containerHome,  // container mode: the command's own home (container.go)
		s.credentials,    // the credentials, their placeholders, the sandbox CA (credentials.go)
		s.launchConfig,   // a launched harness's session configuration (launch.go)
		s.publish,        // the published ports' host listeners (publish.go)
		s.startProxies,   // the egress and DNS proxies (network.go)
		s.jailSpec,       // environment, forwards, read-only paths, ruling server, file plan (jail.go, hooks.go)
		s.containerSetup, // container mode: its home and checks in the spec (container.go)
		s.openGate,       // the open gate: opens of files.deny matches that appear later refused, as root (opengate.go)
		s.firstStatus,    // the status file, before the sandbox starts (status.go)
		s.start,          // the jail, and the command once ready (below)
		s.servePublished, // the published ports' connections handed inside (publish.go)
		s.livePolicy,     // policy changes applied until the command exits (policy.go)
	}
	for _, step := range steps {
		cleanup, err := step()
		if cleanup != nil {
			cleanups = append(cleanups, cleanup)
		}
		// A signal during the setup ends it at the next step, or made
		// this one fail: its reason is the interruption.
		if aerr := s.sig.Aborted(); aerr != nil {
			return 0, aerr
		}
		if err != nil {
			return 0, err
		}
	}
	code := s.wait()
	// The command is gone: signals have their default action again during
	// the teardown, so that one can still end a teardown that hangs.
	s.sig.Stop()
	return code, nil
}

// session is one "sandboxd run", set up step by step (Run calls them in
// order); each step returns its cleanup and an error.
type session struct {
	opts   Options
	stderr *os.File

	live      *policywatch.Live[*sessionPolicy]
	allowUnix []string

	dir, id string
	stream  *Audit
	log     *slog.Logger

	proxySock, dnsSock string
	pln, dln           net.Listener
	// pass receives the proxy forward's connections themselves (Linux):
	// the proxy serves the clients' own sockets, with no relay between.
	pass   *procjail.PassListener
	pre    *procjail.Prestarted // the init, started first (prestart)
	secret string
	upc    chan proxies
	up     proxies
	upDone bool
	// proxiesClosed: closeProxies ran.
	proxiesClosed bool

	env         []string
	envPatterns []string            // --unset-env and environment.unset at start
	hostEnv     []string            // sandboxd's environment less what they remove
	envRemoved  []policy.EnvRemoval // what they left out
	cred        *credState          // nil without credentials
	forwards    []procjail.Forward
	readOnly    []string
	hsrv        *hooks.Server
	fsPlan      *fsState
	landlockABI int
	proc        procjail.ProcMode // the sandbox's /proc (procMode)
	// container is container mode's identity for the command, nil in
	// nested mode (prestart, containerFallback).
	container *procjail.ContainerMode
	agentHome string // container mode: the command's home (containerHome)

	status       Status
	statusFailed bool

	sig         *sigRelay
	setupCtx    context.Context // canceled by a signal during the setup (sig)
	abortSetup  context.CancelFunc
	startLogged bool // set by ready, read after Start returns
	sb          *procjail.Sandbox
	openGateOn  *procjail.OpenGate // the open gate, nil when off (openGate)
	// openGateState is the start line's open_gate: "on", or "off: " and
	// why ("" before openGate ran).
	openGateState string
	// refusals caps the open gate's refusal lines (openRefused).
	refusals refusalLines

	stopLive func()

	launched  *launched          // nil unless Options.Launch
	inbound   []procjail.Inbound // the published ports inside
	published []net.Listener     // their host listeners
}

// start starts the jail, unless a signal aborted the setup (s.sig, from
// Run's start; SIGHUP under a policy file reloads once committed); the
// command starts once ready says so. The sandbox's lifetime is not tied to
// the CLI's interrupt context.
func (s *session) start() (func(), error) {
	opts := s.opts
	// The descriptors are those the init was started with (prestart).
	sb, err := s.pre.Start(s.setupCtx, procjail.Spec{
		Command: opts.Command[0], Args: opts.Command[1:], Env: s.env, Dir: opts.Dir,
		Forwards:         s.forwards,
		Pass:             s.pass,
		Inbound:          s.inbound,
		ResolvConf:       procjail.ResolvConf(),
		RuntimeDir:       s.dir,
		ReadOnlyPaths:    s.readOnly,
		AllowUnixSockets: s.allowUnix,
		FileSystem:       s.fsPlan.jail(),
		Proc:             s.jailProc(),
		Container:        s.container,
		Ready:            s.ready,
		OnCreateRefused:  s.createRefused,
		OnOpenRefused:    s.openRefused,
		OpenGate:         s.openGateOn,
	})
	if err != nil {
		var se *procjail.SetupError
		if ierr := s.sig.Aborted(); ierr != nil {
			err = ierr
		} else if errors.As(err, &se) && se.Step == "ready" {
			err = se.Err
		}
		if s.startLogged {
			// The start line is written; the audit says the session ended
			// without the command, and why.
			code := 125
			var ce *procjail.CommandError
			if errors.As(err, &ce) {
				code = ce.ExitCode
			}
			audit.Event(context.Background(), s.log, slog.LevelInfo, audit.KindSession, audit.MsgSessionExit,
				slog.Int(audit.AttrExitStatus, code), slog.String(audit.AttrReason, policy.OneLine(err.Error())))
		}
		return nil, err
	}
	s.sb = sb
	s.sig.Attach(sb)
	return nil, nil
}

// ready is the last step before the command starts: the proxies are up
// (and the credentials' trust files written), the session's first audit
// line is written, and the signals become the command's.
func (s *session) ready() error {
	if err := s.awaitProxies(); err != nil {
		return err
	}
	if err := s.cred.awaitTrust(); err != nil {
		return err
	}
	// The session's first audit line is written before the command
	// starts: an audit file that cannot take it (a full disk) refuses
	// the session rather than run it unaudited.
	audit.Event(context.Background(), s.log, slog.LevelInfo, audit.KindSession, audit.MsgSessionStart,
		append(append([]slog.Attr{slog.Any(audit.AttrCommand, s.opts.Command), slog.String(audit.AttrPolicyFile, s.status.PolicyFile)},
			s.fsPlan.auditAttrs(s.landlockABI)...), append(append(append(s.launched.auditAttrs(), s.envAuditAttrs()...), s.procAuditAttrs()...), append(s.modeAuditAttrs(), s.openGateAuditAttrs()...)...)...)...)
	if err := s.stream.Err(); err != nil {
		return fmt.Errorf("audit file %s: %w", s.opts.AuditPath, err)
	}
	s.startLogged = true
	if s.opts.Started != nil {
		s.opts.Started(s.sandboxMode(), string(s.proc))
	}
	// From here on a lost line is reported once and the session goes on.
	s.stream.OnWriteError(func(err error) {
		fmt.Fprintf(s.stderr, "sandboxd: audit %s: %s; audit lines are being lost\n", s.opts.AuditPath, policy.OneLine(err.Error()))
	})
	return s.sig.Commit()
}

// wait waits for the command, stops the live policy, and writes the
// session's last lines. It returns the command's status.
func (s *session) wait() int {
	code, err := s.sb.Wait()
	if s.openGateOn != nil {
		// Nothing inside opens any more. Closing the group waits for the
		// kernel to reap its marks (an SRCU grace period: 6-24 ms here),
		// which runs beside the rest of the teardown; the step's cleanup
		// waits for it.
		go s.openGateOn.Close()
	}
	s.stopLive()
	// Nothing inside runs any more: the proxies write their last lines
	// (a request the command read whole just before it exited) before the
	// session's own exit line and the summary count them.
	s.closeProxies()
	if err != nil {
		// The command ran; report how waiting failed but keep its status.
		fmt.Fprintf(s.stderr, "sandboxd: %s\n", policy.OneLine(err.Error()))
	}
	for _, p := range s.fsPlan.createdProtected() {
		msg := fmt.Sprintf("%s was created during the session (a protected path that did not exist at start, so the sandbox could not make it read-only); review it before running anything there outside the sandbox", p)
		audit.Event(context.Background(), s.log, slog.LevelWarn, audit.KindSession, audit.MsgProtectedCreated,
			slog.String(audit.AttrReason, msg))
		fmt.Fprintf(s.stderr, "sandboxd: %s\n", msg)
	}
	for _, msg := range s.fsPlan.changedGitConfigs(context.Background()) {
		audit.Event(context.Background(), s.log, slog.LevelWarn, audit.KindSession, audit.MsgGitConfigChanged,
			slog.String(audit.AttrReason, msg))
		fmt.Fprintf(s.stderr, "sandboxd: %s\n", msg)
	}
	// The refusals counted and not yet written (openRefused), before
	// the exit line; one the gate decides after this (an event read
	// after its process died) is written when the gate's step ends.
	s.flushRefusals()
	exit := []slog.Attr{slog.Int(audit.AttrExitStatus, code)}
	if s.openGateOn != nil {
		exit = append(exit, slog.Int(audit.AttrOpenGateDecided, s.openGateOn.Decided()))
	}
	if err != nil {
		// The session failed under the command (the open gate could not
		// decide any more and killed the sandbox): the exit line says why.
		exit = append(exit, slog.String(audit.AttrReason, policy.OneLine(err.Error())))
	}
	audit.Event(context.Background(), s.log, slog.LevelInfo, audit.KindSession, audit.MsgSessionExit, exit...)
	if s.opts.AuditPath != "" {
		fmt.Fprintf(s.stderr, "sandboxd: %s: %s\n", s.id, s.stream.Summary())
	}
	return code
}
