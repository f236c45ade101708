package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
	"github.com/barry-rocks/sandbox/proxy"
)

const runUsage = `sandboxd run [--policy FILE] [--allow-domain D]... [--deny-domain D]... [--dns-upstream ADDR]
       [--allow-private CIDR]... [--allow-unix-socket PATH]... [--audit FILE] [--cwd DIR] [--] COMMAND [ARGS...]

Run COMMAND with its whole process tree inside the egress sandbox: its only way
out is sandboxd's proxy (127.0.0.1:3128 inside) and DNS proxy (127.0.0.1:53
inside), which allow traffic by hostname. With no policy and no flags nothing
is allowed. With --policy, sandboxd also serves hookgate's rulings for that
session policy (BARRY_HOOK_SOCKET=tcp:127.0.0.1:3129 inside; a policy edit
applies to the next call). If the sandbox cannot start, COMMAND does not run
and sandboxd exits 125. Otherwise sandboxd exits with COMMAND's status (128+N
for signal N).`

// proxyInsidePort is where the proxy forwarder listens inside the sandbox.
const proxyInsidePort = 3128

// hookInsidePort is where the hook ruling server is forwarded inside the
// sandbox (BARRY_HOOK_SOCKET=tcp:127.0.0.1:3129 for hookgate).
const hookInsidePort = 3129

func runCommand() *cli.Command {
	return &cli.Command{Name: "run", Summary: "run a command inside the egress sandbox", Run: runMain}
}

// runFlags are the parsed flags of "sandboxd run".
type runFlags struct {
	policyFile   string
	allow, deny  cli.Strings
	dnsUpstream  string
	allowPrivate cli.Strings
	allowUnix    cli.Strings
	audit        string
	cwd          string
}

func runMain(ctx context.Context, io cli.IO, args []string) int {
	var f runFlags
	fs := cli.NewFlagSet(io, "run", runUsage)
	fs.StringVar(&f.policyFile, "policy", "", "policy `FILE` whose effective bound applies")
	fs.Var(&f.allow, "allow-domain", "allow egress to domain pattern `D` (repeatable)")
	fs.Var(&f.deny, "deny-domain", "deny egress to domain pattern `D` (repeatable)")
	fs.StringVar(&f.dnsUpstream, "dns-upstream", "", "upstream DNS server `ADDR` (host:port; default: the first of /etc/resolv.conf)")
	fs.Var(&f.allowPrivate, "allow-private", "let allowed names resolve into `CIDR` (repeatable)")
	fs.Var(&f.allowUnix, "allow-unix-socket", "let the command connect to the host Unix socket `PATH` (repeatable)")
	fs.StringVar(&f.audit, "audit", "", "append JSON audit lines to `FILE` (\"-\": stderr; default: none)")
	fs.StringVar(&f.cwd, "cwd", "", "working `DIR`ectory of COMMAND (default: the current one)")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(io.Err, "sandboxd run: COMMAND is required (see sandboxd run --help)")
		return 2
	}
	code, err := runSandboxed(&f, fs.Args())
	if err != nil {
		var ce *procjail.CommandError
		if errors.As(err, &ce) {
			fmt.Fprintf(io.Err, "sandboxd: cannot run %s\n", oneLine(ce.Error()))
			return ce.ExitCode
		}
		fmt.Fprintf(io.Err, "sandboxd: sandbox could not start: %s\n", oneLine(err.Error()))
		return 125
	}
	return code
}

// effectiveBound merges the policy file's bound with the flags' (only toward
// more restriction).
func effectiveBound(f *runFlags) (*policy.Bound, error) {
	var b *policy.Bound
	if f.policyFile != "" {
		r, err := policy.ResolveFile(f.policyFile)
		if err != nil {
			return nil, err
		}
		b = r.Bound
	}
	if len(f.allow) > 0 || len(f.deny) > 0 {
		nr := &policy.NetworkRules{Domains: f.deny, Enforce: policy.EnforceSandbox}
		if len(f.allow) > 0 {
			nr.AllowDomains = f.allow
		}
		b = policy.MergeBounds(b, &policy.Bound{Network: nr})
	}
	if err := policy.CheckSandboxEnforceable(b); err != nil {
		return nil, err
	}
	return b, nil
}

// runSandboxed starts the proxies and the jail and waits for COMMAND. An
// error means COMMAND never ran.
func runSandboxed(f *runFlags, argv []string) (int, error) {
	bound, err := effectiveBound(f)
	if err != nil {
		return 0, err
	}
	var private []netip.Prefix
	for _, c := range f.allowPrivate {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return 0, fmt.Errorf("--allow-private %q: %w", c, err)
		}
		private = append(private, p)
	}
	pol, err := proxy.PolicyFromBound(bound, private)
	if err != nil {
		return 0, err
	}
	auditLog, closeAudit, err := openAudit(f.audit)
	if err != nil {
		return 0, err
	}
	defer closeAudit()
	var allowUnix []string
	for _, p := range f.allowUnix {
		a, err := filepath.Abs(p)
		if err != nil {
			return 0, err
		}
		allowUnix = append(allowUnix, a)
	}

	base := runtimeBase()
	dir, err := os.MkdirTemp(base, "sandboxd-")
	if err != nil {
		return 0, fmt.Errorf("runtime directory: %w", err)
	}
	defer os.RemoveAll(dir)
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
	id := filepath.Base(dir)
	creds := proxyCredentials{user: id, secret: randomSecret()}
	if creds.secret == "" {
		return 0, errors.New("proxy credentials: no randomness")
	}
	type proxies struct {
		px  *proxy.Server
		dns *proxy.DNSServer
		err error
	}
	upc := make(chan proxies, 1)
	go func() {
		px, err := proxy.New(proxy.Config{SandboxID: id, Policy: pol, User: creds.user, Secret: creds.secret,
			DNSUpstream: f.dnsUpstream, Audit: auditLog})
		if err != nil {
			upc <- proxies{err: fmt.Errorf("proxy: %w", err)}
			return
		}
		dnsSrv, err := proxy.NewDNS(proxy.DNSConfig{SandboxID: id, Policy: pol, Upstream: f.dnsUpstream, Audit: auditLog})
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
		Port: proxyInsidePort, User: creds.user, Password: creds.secret, ConnectHelper: self,
	})
	forwards := []procjail.Forward{
		{InsidePort: proxyInsidePort, Network: "tcp", Target: proxySock},
		{InsidePort: 53, Network: "udp", Target: dnsSock},
		{InsidePort: 53, Network: "tcp", Target: dnsSock},
	}
	// With a session policy, hookgate inside the sandbox asks sandboxd for
	// rulings (a policy edit applies to the next call); a host socket named
	// by an outer BARRY_HOOK_SOCKET is out of reach inside and is dropped.
	env = withoutEnv(env, "BARRY_HOOK_SOCKET")
	if f.policyFile != "" {
		hookSock := filepath.Join(dir, "hooks.sock")
		hln, err := hooks.ListenUnix(hookSock)
		if err != nil {
			return 0, fmt.Errorf("hook ruling server: %w", err)
		}
		defer hln.Close()
		hctx, hcancel := context.WithCancel(context.Background())
		defer hcancel()
		hsrv := hooks.NewServer(nil, auditLog)
		if _, err := hooks.ServePolicyFile(hctx, hsrv, f.policyFile, auditLog); err != nil {
			return 0, fmt.Errorf("hook ruling server: %w", err)
		}
		go hsrv.Serve(hctx, hln)
		forwards = append(forwards, procjail.Forward{InsidePort: hookInsidePort, Network: "tcp", Target: hookSock})
		env = append(env, fmt.Sprintf("BARRY_HOOK_SOCKET=tcp:127.0.0.1:%d", hookInsidePort))
	}

	// Signals: until the sandbox is told to start the command (Spec.Ready),
	// SIGINT, SIGTERM, SIGHUP or SIGQUIT abort the setup and the command
	// never starts; from then on every signal is forwarded to the command
	// (held until Start returns), and the sandbox's lifetime is not tied to
	// the CLI's interrupt context.
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
			switch {
			case sb != nil:
			case committed:
				pending = append(pending, sig)
			case aborted == nil && sig != syscall.SIGWINCH && sig != syscall.SIGUSR1 && sig != syscall.SIGUSR2:
				aborted = sig
				abortSetup()
			}
			sigMu.Unlock()
			if sb != nil {
				sb.Signal(sig)
			}
		}
	}()
	ready := func() error {
		if err := awaitProxies(); err != nil {
			return err
		}
		sigMu.Lock()
		defer sigMu.Unlock()
		if aborted != nil {
			return fmt.Errorf("interrupted by %v before the command started", aborted)
		}
		committed = true
		return nil
	}

	sb, err := procjail.Start(setupCtx, procjail.Spec{
		Command: argv[0], Args: argv[1:], Env: env, Dir: f.cwd,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Forwards:         forwards,
		ResolvConf:       procjail.ResolvConf(),
		RuntimeDir:       dir,
		AllowUnixSockets: allowUnix,
		Ready:            ready,
	})
	if err != nil {
		sigMu.Lock()
		defer sigMu.Unlock()
		if aborted != nil {
			return 0, fmt.Errorf("interrupted by %v before the command started", aborted)
		}
		var se *procjail.SetupError
		if errors.As(err, &se) && se.Step == "ready" {
			return 0, se.Err
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
	code, err := sb.Wait()
	if err != nil {
		// The command ran; report how waiting failed but keep its status.
		fmt.Fprintf(os.Stderr, "sandboxd: %v\n", err)
	}
	return code, nil
}

func openAudit(path string) (*slog.Logger, func(), error) {
	switch path {
	case "":
		return slog.New(slog.NewJSONHandler(io.Discard, nil)), func() {}, nil
	case "-":
		return slog.New(slog.NewJSONHandler(os.Stderr, nil)), func() {}, nil
	}
	fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("audit file: %w", err)
	}
	return slog.New(slog.NewJSONHandler(fh, nil)), func() { fh.Close() }, nil
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

func oneLine(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' {
			b[i] = ' '
		}
	}
	return string(b)
}

// proxyCredentials are the per-sandbox proxy credentials.
type proxyCredentials struct{ user, secret string }

// randomSecret returns 32 random bytes in hex ("" if randomness fails).
func randomSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ""
	}
	return hex.EncodeToString(b[:])
}

// runtimeBase is where the per-sandbox runtime directory (proxy and DNS
// sockets, resolv.conf) goes: $XDG_RUNTIME_DIR, else /run for root, else
// the temporary directory. The first two are memory file systems made for
// sockets; the directory itself is 0700.
func runtimeBase() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	if os.Geteuid() == 0 {
		if fi, err := os.Stat("/run"); err == nil && fi.IsDir() {
			return "/run"
		}
	}
	return os.TempDir()
}
