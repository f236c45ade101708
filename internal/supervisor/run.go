package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
	"github.com/barry-rocks/sandbox/proxy"
)

// Ports inside the sandbox.
const (
	ProxyInsidePort = 3128 // the CONNECT/HTTP proxy forwarder
	HookInsidePort  = 3129 // the hook ruling server forwarder
)

// resolverFiles are read by the proxy's resolver on the host (Go's
// resolver: the hosts table, and nsswitch.conf for the order of files and
// DNS); they are read-only inside the sandbox. /etc/resolv.conf is already
// covered by the sandbox's own.
var resolverFiles = []string{"/etc/hosts", "/etc/nsswitch.conf"}

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
	// Read are host paths kept visible, read-only, where the sandbox's
	// private /tmp would cover them (--read).
	Read []string
	// AuditPath: "" none, "-" standard error, else a file appended to.
	AuditPath string
	Dir       string
	Command   []string
	Stdin     *os.File
	Stdout    *os.File
	Stderr    *os.File
	// Debounce of the policy file watcher (0: policy.DefaultDebounce).
	Debounce time.Duration
}

// sessionPolicy is one resolved state of the session: what every enforcer
// reads, computed once per policy version so they cannot disagree.
type sessionPolicy struct {
	resolved    *policy.Resolved // nil without a policy file
	bound       *policy.Bound
	proxy       proxy.Policy
	fingerprint string
}

// compute merges the flags' bound into the resolved policy's and derives
// the proxy policy and the session fingerprint.
func (o *Options) compute(r *policy.Resolved) (*sessionPolicy, error) {
	var b *policy.Bound
	fp := ""
	if r != nil {
		b, fp = r.Bound, r.Fingerprint
		if err := r.CheckLaunchable(); err != nil {
			return nil, err
		}
	}
	if len(o.AllowDomains) > 0 || len(o.DenyDomains) > 0 {
		// Only --allow-domain makes an allowlist. A deny-only flag set must
		// not say enforce: sandbox, under which an absent allowlist is the
		// empty one and would intersect the policy's allowlist to nothing.
		nr := &policy.NetworkRules{Domains: o.DenyDomains}
		if len(o.AllowDomains) > 0 {
			nr.AllowDomains = o.AllowDomains
			nr.Enforce = policy.EnforceSandbox
		}
		b = policy.MergeBounds(b, &policy.Bound{Network: nr})
	}
	if err := policy.CheckSandboxEnforceable(b); err != nil {
		return nil, err
	}
	pp, err := proxy.PolicyFromBound(b, o.AllowPrivate)
	if err != nil {
		return nil, err
	}
	sp := &sessionPolicy{resolved: r, bound: b, proxy: pp}
	sp.fingerprint = policy.ScopeFingerprint(map[string]any{"policy": fp, "bound": b, "allowPrivate": fmt.Sprint(o.AllowPrivate), "write": o.writeRoots(r)})
	sp.proxy.Fingerprint = sp.fingerprint
	return sp, nil
}

// engine builds the hook ruling engine of a session policy.
func (sp *sessionPolicy) engine() (hooks.Engine, error) {
	s, err := hooks.SessionFromResolved(sp.resolved)
	if err != nil {
		return nil, err
	}
	// The session runs inside the egress sandbox: its rulings read the
	// network rules as the proxies do (an absent allowDomains is the empty
	// allowlist), so a tool and the proxy cannot disagree about a host.
	s.Bound = sandboxed(sp.bound)
	return hooks.NewEngine(s, nil)
}

// Run starts the proxies, the hook ruling server (with a policy file) and
// the jail, keeps the policy live, and waits for the command. It returns the
// command's exit status; an error means the command never ran.
func Run(opts Options) (int, error) {
	if len(opts.Command) == 0 {
		return 0, errors.New("no command to run")
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	var (
		watcher *policy.Watcher
		first   *policy.Resolved
	)
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	// changes carries the watcher's reports to the apply loop, which starts
	// once the enforcers exist.
	changes := make(chan policy.Change, 16)
	if opts.PolicyFile != "" {
		w, err := policy.WatchFile(wctx, opts.PolicyFile, opts.Debounce, func(c policy.Change) {
			select {
			case changes <- c:
			case <-wctx.Done():
			}
		})
		if err != nil {
			return 0, err
		}
		defer w.Close()
		watcher, first = w, w.Current()
	}
	cur, err := opts.compute(first)
	if err != nil {
		return 0, err
	}
	var allowUnix []string
	for _, p := range opts.AllowUnixSockets {
		a, err := filepath.Abs(p)
		if err != nil {
			return 0, err
		}
		allowUnix = append(allowUnix, a)
	}

	PruneStale(RuntimeBase())
	dir, err := os.MkdirTemp(RuntimeBase(), runtimePrefix)
	if err != nil {
		return 0, fmt.Errorf("runtime directory: %w", err)
	}
	defer os.RemoveAll(dir)
	id := filepath.Base(dir)
	stream, err := OpenAudit(opts.AuditPath, id)
	if err != nil {
		return 0, err
	}
	defer stream.Close()
	stream.SetPolicy(cur.fingerprint)
	auditLog := stream.Logger()
	proxySock, dnsSock := filepath.Join(dir, "proxy.sock"), filepath.Join(dir, "dns.sock")

	// The listeners exist before the sandbox starts (its forwarders check
	// them); the proxies themselves come up while the namespaces are being
	// set up, and the command starts only once they are (Spec.Ready).
	pln, err := net.Listen("unix", proxySock)
	if err != nil {
		return 0, fmt.Errorf("proxy listener: %w", err)
	}
	defer pln.Close()
	dln, err := net.Listen("unix", dnsSock)
	if err != nil {
		return 0, fmt.Errorf("dns proxy listener: %w", err)
	}
	defer dln.Close()
	secret := randomSecret()
	if secret == "" {
		return 0, errors.New("proxy credentials: no randomness")
	}
	type proxies struct {
		px  *proxy.Server
		dns *proxy.DNSServer
		err error
	}
	upc := make(chan proxies, 1)
	go func() {
		px, err := proxy.New(proxy.Config{SandboxID: id, Policy: cur.proxy, User: id, Secret: secret,
			DNSUpstream: opts.DNSUpstream, Audit: auditLog})
		if err != nil {
			upc <- proxies{err: fmt.Errorf("proxy: %w", err)}
			return
		}
		dnsSrv, err := proxy.NewDNS(proxy.DNSConfig{SandboxID: id, Policy: cur.proxy, Upstream: opts.DNSUpstream, Audit: auditLog})
		if err != nil {
			px.Close()
			upc <- proxies{err: fmt.Errorf("dns proxy: %w", err)}
			return
		}
		go px.Serve(pln)
		go dnsSrv.ServeTCP(dln)
		upc <- proxies{px: px, dns: dnsSrv}
	}()
	var up proxies
	upDone := false
	awaitProxies := func() error {
		if !upDone {
			up, upDone = <-upc, true
		}
		return up.err
	}
	defer func() {
		awaitProxies()
		if up.px != nil {
			up.px.Close()
			up.dns.Close()
		}
	}()

	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("own executable: %w", err)
	}
	env := procjail.ProxyEnv(os.Environ(), procjail.ProxyEnvArgs{
		Port: ProxyInsidePort, User: id, Password: secret, ConnectHelper: self,
	})
	env = append(withoutEnv(env, "BARRY_SANDBOX_ID"), "BARRY_SANDBOX_ID="+id)
	forwards := []procjail.Forward{
		{InsidePort: ProxyInsidePort, Network: "tcp", Target: proxySock},
		{InsidePort: 53, Network: "udp", Target: dnsSock},
		{InsidePort: 53, Network: "tcp", Target: dnsSock},
	}
	// The runtime directory and the policy file's directory are read-only
	// inside: an agent cannot grant itself a domain by editing them.
	readOnly := []string{dir}
	// The proxy's resolver runs out here and reads the host's /etc/hosts
	// and nsswitch.conf: a sandbox started by root could otherwise add
	// "ADDR allowed.name" and have the proxy take an allowed name to any
	// address, or turn its DNS off. (A file bind is detached when the host
	// renames a new file over it, and a missing /etc/hosts cannot be bound;
	// a filesystem policy is what closes that for good.)
	for _, f := range resolverFiles {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			readOnly = append(readOnly, f)
		}
	}
	// With a session policy, hookgate inside the sandbox asks sandboxd for
	// rulings (a policy edit applies to the next call); a host socket named
	// by an outer BARRY_HOOK_SOCKET is out of reach inside and is dropped.
	env = withoutEnv(env, "BARRY_HOOK_SOCKET")
	var hsrv *hooks.Server
	if opts.PolicyFile != "" {
		// The policy's directory is bound read-only inside. Binding only the
		// file would not hold: when an editor on the host renames a new
		// version over it, the kernel detaches mounts on the replaced
		// dentry in every namespace, and the sandbox could then edit the
		// new file. The watcher holds the directory open, so moving it away
		// and putting another in its place substitutes nothing. A policy
		// directory that holds the working directory would make the
		// workspace read-only, so it is refused with a clear reason.
		roPolicy := filepath.Dir(watcher.Path())
		if real, err := filepath.EvalSymlinks(roPolicy); err == nil {
			roPolicy = real
		}
		cwd := opts.Dir
		if cwd == "" {
			cwd, _ = os.Getwd()
		}
		if real, err := filepath.EvalSymlinks(cwd); err == nil {
			cwd = real
		}
		if cwd == roPolicy || strings.HasPrefix(cwd, strings.TrimSuffix(roPolicy, "/")+"/") {
			return 0, fmt.Errorf("the policy file's directory %s holds the working directory %s; the sandbox makes the policy's directory read-only, so keep the policy in a directory of its own", roPolicy, cwd)
		}
		readOnly = append(readOnly, roPolicy)
		hookSock := filepath.Join(dir, "hooks.sock")
		hln, err := hooks.ListenUnix(hookSock)
		if err != nil {
			return 0, fmt.Errorf("hook ruling server: %w", err)
		}
		defer hln.Close()
		e, err := cur.engine()
		if err != nil {
			return 0, fmt.Errorf("hook ruling server: %w", err)
		}
		hsrv = hooks.NewServer(e, auditLog)
		hctx, hcancel := context.WithCancel(context.Background())
		defer hcancel()
		go hsrv.Serve(hctx, hln)
		forwards = append(forwards, procjail.Forward{InsidePort: HookInsidePort, Network: "tcp", Target: hookSock})
		env = append(env, fmt.Sprintf("BARRY_HOOK_SOCKET=tcp:127.0.0.1:%d", HookInsidePort))
	}

	fsPlan, err := planFilesystem(&opts, cur, readOnly)
	if err != nil {
		return 0, err
	}
	if fsPlan.AllWritable {
		fmt.Fprintln(stderr, "sandboxd: write root /: the whole host filesystem is writable inside this sandbox")
	}
	landlockABI := procjail.LandlockABI()

	// The live policy: every change that resolves is applied to the proxy,
	// the DNS proxy and the ruling server at once; one that does not keeps
	// the last good policy. Both are audited.
	var curMu sync.Mutex
	status := Status{ID: id, PID: os.Getpid(), Command: opts.Command, Started: time.Now().UTC(), PolicyFile: opts.PolicyFile}
	if watcher != nil {
		status.PolicyFile = watcher.Path()
	}
	// The first status is written before the sandbox starts: a sandbox that
	// "sandboxd status" cannot show (and PruneStale cannot find) does not
	// start. A later refresh that fails is reported once on stderr.
	statusFailed := false
	writeCurrent := func() error {
		curMu.Lock()
		s := status
		s.Fingerprint = cur.fingerprint
		curMu.Unlock()
		s.Counters, s.Updated = stream.Counts(), time.Now().UTC()
		return writeStatus(dir, s)
	}
	saveStatus := func() {
		if err := writeCurrent(); err != nil && !statusFailed {
			statusFailed = true
			fmt.Fprintf(stderr, "sandboxd: status file: %s; sandboxd status shows a stale state\n", policy.OneLine(err.Error()))
		}
	}
	if err := writeCurrent(); err != nil {
		return 0, fmt.Errorf("status file: %w", err)
	}
	refuse := func(err error) {
		curMu.Lock()
		fp := cur.fingerprint
		curMu.Unlock()
		audit.Decision(context.Background(), auditLog, audit.KindReload, policy.Decision{Verdict: policy.Deny, Reason: policy.OneLine(err.Error())},
			slog.String(audit.AttrOldPolicy, fp), slog.String(audit.AttrPolicyFile, status.PolicyFile))
		fmt.Fprintf(stderr, "sandboxd: policy %s: %s; keeping the last good policy\n", status.PolicyFile, policy.OneLine(err.Error()))
	}
	applyChange := func(c policy.Change) {
		if c.Err != nil {
			refuse(c.Err)
			return
		}
		next, err := opts.compute(c.New)
		var e hooks.Engine
		if err == nil {
			e, err = next.engine()
		}
		if err == nil {
			err = awaitProxies()
		}
		if err == nil {
			if err = up.px.SetPolicy(next.proxy); err == nil {
				err = up.dns.SetPolicy(next.proxy)
			}
		}
		if err != nil {
			refuse(err)
			return
		}
		hsrv.SetPolicy(e)
		if note := fsPlan.reloadNote(next); note != "" {
			audit.Event(context.Background(), auditLog, slog.LevelWarn, audit.KindSession, audit.MsgFileLayerFixed,
				slog.String(audit.AttrReason, note), slog.String(audit.AttrPolicyFile, status.PolicyFile))
			fmt.Fprintf(stderr, "sandboxd: policy %s: %s\n", status.PolicyFile, note)
		}
		curMu.Lock()
		old := cur
		cur = next
		curMu.Unlock()
		stream.SetPolicy(next.fingerprint)
		why := "policy file changed"
		if old.fingerprint == next.fingerprint {
			why = "policy reloaded, unchanged"
		}
		audit.Decision(context.Background(), auditLog, audit.KindReload, policy.Decision{Verdict: policy.Allow, Reason: why},
			slog.String(audit.AttrOldPolicy, old.fingerprint), slog.String(audit.AttrNewPolicy, next.fingerprint),
			slog.String(audit.AttrPolicyFile, status.PolicyFile))
		saveStatus()
	}

	// Signals: until the sandbox is told to start the command (Spec.Ready),
	// SIGINT, SIGTERM, SIGHUP or SIGQUIT abort the setup and the command
	// never starts; from then on every signal is forwarded to the command
	// (held until Start returns), except SIGHUP under a policy file, which
	// reloads the policy. The sandbox's lifetime is not tied to the CLI's
	// interrupt context.
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH,
		syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	setupCtx, abortSetup := context.WithCancel(context.Background())
	defer abortSetup()
	var (
		sigMu     sync.Mutex
		running   *procjail.Sandbox
		committed bool
		aborted   os.Signal
		pending   []os.Signal
	)
	go func() {
		for sig := range sigs {
			sigMu.Lock()
			sb := running
			reload := committed && sig == syscall.SIGHUP && watcher != nil
			switch {
			case reload:
				sb = nil
			case sb != nil:
			case committed:
				pending = append(pending, sig)
			case aborted == nil && sig != syscall.SIGWINCH && sig != syscall.SIGUSR1 && sig != syscall.SIGUSR2:
				aborted = sig
				abortSetup()
			}
			sigMu.Unlock()
			if reload {
				watcher.Reload()
			}
			if sb != nil {
				sb.Signal(sig)
			}
		}
	}()
	startLogged := false // set by ready, read after Start returns
	ready := func() error {
		if err := awaitProxies(); err != nil {
			return err
		}
		// The session's first audit line is written before the command
		// starts: an audit file that cannot take it (a full disk) refuses
		// the session rather than run it unaudited.
		audit.Event(context.Background(), auditLog, slog.LevelInfo, audit.KindSession, audit.MsgSessionStart,
			append([]slog.Attr{slog.Any(audit.AttrCommand, opts.Command), slog.String(audit.AttrPolicyFile, status.PolicyFile)},
				fsPlan.auditAttrs(landlockABI)...)...)
		if err := stream.Err(); err != nil {
			return fmt.Errorf("audit file %s: %w", opts.AuditPath, err)
		}
		startLogged = true
		// From here on a lost line is reported once and the session goes on.
		stream.OnWriteError(func(err error) {
			fmt.Fprintf(stderr, "sandboxd: audit %s: %s; audit lines are being lost\n", opts.AuditPath, policy.OneLine(err.Error()))
		})
		sigMu.Lock()
		defer sigMu.Unlock()
		if aborted != nil {
			return fmt.Errorf("interrupted by %v before the command started", aborted)
		}
		committed = true
		return nil
	}

	stdin, stdout := opts.Stdin, opts.Stdout
	if stdin == nil {
		stdin = os.Stdin
	}
	if stdout == nil {
		stdout = os.Stdout
	}
	sb, err := procjail.Start(setupCtx, procjail.Spec{
		Command: opts.Command[0], Args: opts.Command[1:], Env: env, Dir: opts.Dir,
		Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Forwards:         forwards,
		ResolvConf:       procjail.ResolvConf(),
		RuntimeDir:       dir,
		ReadOnlyPaths:    readOnly,
		AllowUnixSockets: allowUnix,
		FileSystem:       fsPlan.jail(),
		Ready:            ready,
	})
	if err != nil {
		sigMu.Lock()
		interrupted := aborted
		sigMu.Unlock()
		var se *procjail.SetupError
		switch {
		case interrupted != nil:
			err = fmt.Errorf("interrupted by %v before the command started", interrupted)
		case errors.As(err, &se) && se.Step == "ready":
			err = se.Err
		}
		if startLogged {
			// The start line is written; the audit says the session ended
			// without the command, and why.
			code := 125
			var ce *procjail.CommandError
			if errors.As(err, &ce) {
				code = ce.ExitCode
			}
			audit.Event(context.Background(), auditLog, slog.LevelInfo, audit.KindSession, audit.MsgSessionExit,
				slog.Int(audit.AttrExitStatus, code), slog.String(audit.AttrReason, policy.OneLine(err.Error())))
		}
		return 0, err
	}
	sigMu.Lock()
	running = sb
	held := pending
	pending = nil
	sigMu.Unlock()
	for _, sig := range held {
		sb.Signal(sig)
	}

	// Apply policy changes and refresh the status until the command exits.
	loopDone := make(chan struct{})
	stopLoop := make(chan struct{})
	go func() {
		defer close(loopDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case c := <-changes:
				applyChange(c)
			case <-tick.C:
				saveStatus()
			case <-stopLoop:
				return
			}
		}
	}()
	code, err := sb.Wait()
	close(stopLoop)
	<-loopDone
	if err != nil {
		// The command ran; report how waiting failed but keep its status.
		fmt.Fprintf(stderr, "sandboxd: %s\n", policy.OneLine(err.Error()))
	}
	for _, p := range fsPlan.createdProtected() {
		msg := fmt.Sprintf("%s was created during the session (a protected path that did not exist at start, so the sandbox could not make it read-only); review it before running anything there outside the sandbox", p)
		audit.Event(context.Background(), auditLog, slog.LevelWarn, audit.KindSession, audit.MsgProtectedCreated,
			slog.String(audit.AttrReason, msg))
		fmt.Fprintf(stderr, "sandboxd: %s\n", msg)
	}
	audit.Event(context.Background(), auditLog, slog.LevelInfo, audit.KindSession, audit.MsgSessionExit,
		slog.Int(audit.AttrExitStatus, code))
	if opts.AuditPath != "" {
		fmt.Fprintf(stderr, "sandboxd: %s: %s\n", id, stream.Summary())
	}
	return code, nil
}

// withoutEnv drops every NAME=... entry from env.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// randomSecret returns 32 random bytes in hex ("" if randomness fails).
func randomSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ""
	}
	return hex.EncodeToString(b[:])
}

// sandboxed returns a copy of b whose network rules say enforce: sandbox,
// which is what they are under sandboxd run whatever the policy says.
func sandboxed(b *policy.Bound) *policy.Bound {
	b = b.Clone()
	if b == nil {
		b = &policy.Bound{}
	}
	if b.Network == nil {
		b.Network = &policy.NetworkRules{}
	}
	b.Network.Enforce = policy.EnforceSandbox
	return b
}
