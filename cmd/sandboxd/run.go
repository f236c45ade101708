package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/netip"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/supervisor"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

const runUsage = `sandboxd run [--policy FILE] [--allow-domain D]... [--deny-domain D]... [--dns-upstream ADDR]
       [--allow-private CIDR]... [--allow-unix-socket PATH]... [--write PATH]... [--read PATH]...
       [--unset-env NAME]... [--credential ENV@HOST[,HOST...]]... [--audit FILE] [--cwd DIR]
       [--agent-uid UID[:GID]] [--] COMMAND [ARGS...]

Run COMMAND with its whole process tree inside the egress sandbox: its only way
out is sandboxd's proxy (127.0.0.1:3128 inside) and DNS proxy (127.0.0.1:53
inside), which allow traffic by hostname. With no policy and no flags nothing
is allowed. With --policy, sandboxd also serves hookgate's rulings for that
session policy (BARRY_HOOK_SOCKET=tcp:127.0.0.1:3129 inside) and keeps the
policy live: an edit that resolves applies to the proxy, the DNS proxy and the
rulings at once (connections to hosts no longer allowed are closed); one that
does not keeps the last good policy and is reported. SIGHUP reloads the file
(under --policy it is not forwarded to COMMAND). The policy file and sandboxd's
runtime directory are read-only inside. If the sandbox cannot start, COMMAND
does not run and sandboxd exits 125. Otherwise sandboxd exits with COMMAND's
status (128+N for signal N). With --audit, a one-line summary of the session's
decisions goes to stderr at exit. --credential ENV@HOST keeps the value of
sandboxd's variable ENV out of the sandbox: ENV holds a placeholder inside, and
the proxy puts the real value into requests to HOST (TLS terminated with a
per-sandbox CA that the sandbox trusts); every HOST must be allowed. Where the
kernel or a container refuses user namespaces, sandboxd run as root with
CAP_NET_ADMIN falls back to container mode: COMMAND runs under a uid of its own
(--agent-uid, default the working directory's owner) confined by netfilter
rules matched on that uid, Landlock and seccomp (see "sandboxd doctor").`

func runCommand() *cli.Command {
	return &cli.Command{Name: "run", Summary: "run a command inside the egress sandbox", Run: runMain}
}

func runMain(ctx context.Context, io cli.IO, args []string) int {
	var opts supervisor.Options
	fs := cli.NewFlagSet(io, "run", runUsage)
	rf := addRunFlags(fs, &opts)
	fs.StringVar(&opts.Dir, "cwd", "", "working `DIR`ectory of COMMAND (default: the current one)")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(io.Err, "sandboxd run: COMMAND is required (see sandboxd run --help)")
		return 2
	}
	opts.Command = fs.Args()
	if err := rf.apply(&opts); err != nil {
		fmt.Fprintf(io.Err, "sandboxd: sandbox could not start: %s\n", err)
		return 125
	}
	return runExit(io, opts)
}

// runFlags are the flags sandboxd run and sandboxd launch share.
type runFlags struct {
	allow, deny, priv, unixS, write, read, publish, unset, cred cli.Strings
}

// addRunFlags declares run's flags on fs (opts takes the plain ones;
// apply completes it after parsing).
func addRunFlags(fs *flag.FlagSet, opts *supervisor.Options) *runFlags {
	f := &runFlags{}
	fs.Var(&onceString{p: &opts.PolicyFile}, "policy", "policy `FILE` whose effective bound applies (watched for changes)")
	fs.Var(&f.allow, "allow-domain", "allow egress to domain pattern `D` (repeatable)")
	fs.Var(&f.deny, "deny-domain", "deny egress to domain pattern `D` (repeatable)")
	fs.StringVar(&opts.DNSUpstream, "dns-upstream", "", "upstream DNS server `ADDR` (host:port; default: the first of /etc/resolv.conf)")
	fs.Var(&f.priv, "allow-private", "let allowed names resolve into `CIDR` (repeatable)")
	fs.Var(&f.unixS, "allow-unix-socket", "let the command connect to the host Unix socket `PATH` (repeatable)")
	fs.StringVar(&opts.AuditPath, "audit", "", "append JSON audit lines to `FILE` (\"-\": stderr; default: none)")
	fs.Var(&f.write, "write", "make `PATH` writable inside (repeatable; \"/\": the whole host)")
	fs.Var(&f.read, "read", "keep host `PATH` visible, read-only, where the sandbox's private /tmp would cover it (repeatable)")
	fs.Var(&f.unset, "unset-env", "leave variable `NAME` (or a glob: GITHUB_*) out of COMMAND's environment (repeatable)")
	fs.Var(&f.cred, "credential", "keep variable ENV's value outside: the sandbox gets a placeholder, the proxy puts the value into requests to each HOST of `ENV@HOST[,HOST...]` (repeatable)")
	fs.Var(&f.publish, "publish", "let the host reach a server inside on 127.0.0.1:PORT at `[HOSTADDR:]HOSTPORT:PORT` (HOSTADDR default 127.0.0.1; repeatable)")
	fs.StringVar(&opts.AgentUID, "agent-uid", "", "container mode (no user namespaces): run COMMAND as `UID[:GID]`, a uid no process runs as (default: the working directory's owner)")
	return f
}

// apply puts the parsed flags into opts.
func (f *runFlags) apply(opts *supervisor.Options) error {
	opts.AllowDomains, opts.DenyDomains, opts.AllowUnixSockets, opts.Write, opts.Read = f.allow, f.deny, f.unixS, f.write, f.read
	for _, u := range f.unset {
		if err := policy.CheckEnvPattern(u); err != nil {
			return fmt.Errorf("--unset-env: %v", err)
		}
	}
	opts.UnsetEnv = f.unset
	if opts.AgentUID != "" {
		if _, _, _, err := supervisor.ParseAgentID(opts.AgentUID); err != nil {
			return err
		}
	}
	for _, v := range f.cred {
		c, err := policy.ParseCredentialFlag(v)
		if err != nil {
			return fmt.Errorf("--credential: %v", err)
		}
		opts.Credentials = append(opts.Credentials, c)
	}
	for _, c := range f.priv {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fmt.Errorf("--allow-private %q: %v", c, err)
		}
		opts.AllowPrivate = append(opts.AllowPrivate, p)
	}
	for _, v := range f.publish {
		p, err := supervisor.ParsePublish(v)
		if err != nil {
			return err
		}
		opts.Publish = append(opts.Publish, p)
	}
	return nil
}

// runExit runs the session and turns its outcome into sandboxd's exit
// status: the command's, 125 when the sandbox could not start, 126/127
// when the command could not be run.
func runExit(io cli.IO, opts supervisor.Options) int {
	code, err := supervisor.Run(opts)
	if err != nil {
		var ce *procjail.CommandError
		if errors.As(err, &ce) {
			fmt.Fprintf(io.Err, "sandboxd: cannot run %s\n", policy.OneLine(ce.Error()))
			return ce.ExitCode
		}
		fmt.Fprintf(io.Err, "sandboxd: sandbox could not start: %s\n", policy.OneLine(err.Error()))
		return 125
	}
	return code
}

// onceString is a string flag that refuses to be given twice: a second
// --policy would otherwise silently replace the first, dropping whatever the
// first one restricts.
type onceString struct {
	p   *string
	set bool
}

// String implements flag.Value.
func (o *onceString) String() string {
	if o.p == nil {
		return ""
	}
	return *o.p
}

// Set implements flag.Value.
func (o *onceString) Set(v string) error {
	if o.set {
		return errors.New("given more than once (policy files do not merge on the command line)")
	}
	o.set, *o.p = true, v
	return nil
}
