package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/supervisor"
	"github.com/barry-rocks/sandbox/policy"
)

func statusCommand() *cli.Command {
	return &cli.Command{Name: "status", Summary: "list this user's running sandboxes", Run: statusMain}
}

func statusMain(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "status", "sandboxd status [--json] [--all]\n\nList this user's running sandboxes (from the runtime directory): pid, command, start\ntime, policy file and fingerprint, and decision counters.")
	asJSON := fs.Bool("json", false, "print JSON")
	all := fs.Bool("all", false, "also list sandboxes whose sandboxd is gone (left by a killed sandboxd)")
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(io.Err, "sandboxd status: unexpected argument %q (see sandboxd status --help)\n", fs.Arg(0))
		return 2
	}
	list, err := supervisor.ListStatuses(supervisor.RuntimeBase())
	if err != nil {
		fmt.Fprintf(io.Err, "sandboxd: %v\n", err)
		return 1
	}
	shown := []supervisor.Status{}
	for _, s := range list {
		if s.Running || *all {
			shown = append(shown, s)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		enc.Encode(shown)
		return 0
	}
	if len(shown) == 0 {
		fmt.Fprintln(io.Out, "no running sandboxes")
		return 0
	}
	for _, s := range shown {
		state := ""
		if !s.Running {
			state = " (gone)"
		}
		launched := ""
		if s.Harness != "" {
			launched = fmt.Sprintf("  launched %s (%s)", s.Harness, s.Mode)
		}
		proc := ""
		if s.SandboxMode != "" {
			proc += "  mode: " + s.SandboxMode
		}
		if s.Proc != "" {
			proc += "  proc: " + s.Proc
		}
		fmt.Fprintf(io.Out, "%s%s  pid %d  started %s  policy %s  fingerprint %.16s%s%s\n  command: %s\n  %s\n",
			s.ID, state, s.PID, s.Started.Local().Format(time.DateTime), orNone(s.PolicyFile), s.Fingerprint, launched, proc,
			strings.Join(s.Command, " "), supervisor.FormatCounts(s.Counters))
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "(flags only)"
	}
	return s
}

func explainCommand() *cli.Command {
	return &cli.Command{Name: "explain", Summary: "say what the sandbox or the hook gate would decide, and why", Run: explainMain}
}

const explainUsage = `sandboxd explain [--policy FILE] [--allow-domain D]... [--deny-domain D]... [--dns-upstream ADDR]
                 [--allow-private CIDR]... [--json] HOST[:PORT]
sandboxd explain --policy FILE --harness H [--in-sandbox] [--json] < payload.json
sandboxd explain [--policy FILE] [--write PATH]... [--cwd DIR] --path PATH [--for-write] [--json]
sandboxd explain [--policy FILE] [--unset-env NAME]... [--credential ENV@HOST[,HOST...]]... --env [--json]

With HOST: decide a connection to HOST the way "sandboxd run" with the same
flags would (the policy resolution, then the proxy's own decision code: the
name, resolution of an allowed name, the address checks), without connecting.
With --harness: rule on a hook payload the way "hookgate check --policy FILE"
would (with --in-sandbox, the way the ruling server of a sandboxd run or
launch session with that policy would: searches below a directory left to
the filesystem layer, network.enforce: sandbox met), and show the decision
and the exact answer (the network flags do not apply to it and are
refused). With --path: what the sandbox's filesystem
layer would do with PATH (read, or with --for-write a write) in a sandbox
started now with the same policy, write roots and working directory, and
which rule decides it. With --env: the names of the variables COMMAND would
get from "sandboxd run" with the same policy and --unset-env flags (from the
host, or set by sandboxd), those --unset-env and the policy's
environment.unset leave out, and the credentials (--credential and the
policy's: a placeholder inside, the real value put in by the proxy for their
hosts); values are never printed. Exit 0 when allowed, 1 when denied, 2 on
bad usage.`

func explainMain(ctx context.Context, io cli.IO, args []string) int {
	var (
		opts              supervisor.Options
		allow, deny, priv cli.Strings
		harness, path     string
		write, unset      cli.Strings
		creds             cli.Strings
	)
	fs := cli.NewFlagSet(io, "explain", explainUsage)
	fs.Var(&onceString{p: &opts.PolicyFile}, "policy", "session policy `FILE`")
	fs.Var(&allow, "allow-domain", "as for sandboxd run (repeatable)")
	fs.Var(&deny, "deny-domain", "as for sandboxd run (repeatable)")
	fs.StringVar(&opts.DNSUpstream, "dns-upstream", "", "upstream DNS server `ADDR` for resolving an allowed name")
	fs.Var(&priv, "allow-private", "as for sandboxd run (repeatable)")
	fs.StringVar(&path, "path", "", "say what the sandbox's filesystem layer does with `PATH`")
	forWrite := fs.Bool("for-write", false, "with --path: for a write (default: a read)")
	fs.Var(&write, "write", "with --path: a write root, as for sandboxd run (repeatable)")
	fs.StringVar(&opts.Dir, "cwd", "", "with --path: the working `DIR`ectory, as for sandboxd run")
	fs.StringVar(&harness, "harness", "", "rule on a payload from stdin for harness `H` (claude-code, codex, copilot, cursor, gemini, pi)")
	fs.Var(&unset, "unset-env", "with --env: as for sandboxd run (repeatable)")
	fs.Var(&creds, "credential", "with --env: as for sandboxd run, `ENV@HOST[,HOST...]` (repeatable)")
	env := fs.Bool("env", false, "list the variables (names only) the sandbox's command would get")
	inSandbox := fs.Bool("in-sandbox", false, "with --harness: rule as the ruling server of a sandboxd run or launch session does (default: as hookgate check --policy, outside the sandbox)")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	opts.AllowDomains, opts.DenyDomains = allow, deny
	for _, c := range priv {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			fmt.Fprintf(io.Err, "sandboxd explain: --allow-private %q: %v\n", c, err)
			return 2
		}
		opts.AllowPrivate = append(opts.AllowPrivate, p)
	}
	print := func(v any, line string, allowed bool) int {
		if *asJSON {
			enc := json.NewEncoder(io.Out)
			enc.SetIndent("", "  ")
			enc.Encode(v)
		} else {
			fmt.Fprint(io.Out, line)
		}
		if allowed {
			return 0
		}
		return 1
	}
	if *env {
		if fs.NArg() != 0 || harness != "" || path != "" || len(allow) > 0 || len(deny) > 0 || len(priv) > 0 || opts.DNSUpstream != "" {
			fmt.Fprintln(io.Err, "sandboxd explain: --env takes no HOST, --harness, --path or network flags")
			return 2
		}
		for _, u := range unset {
			if err := policy.CheckEnvPattern(u); err != nil {
				fmt.Fprintf(io.Err, "sandboxd explain: --unset-env: %v\n", err)
				return 2
			}
		}
		opts.UnsetEnv = unset
		for _, v := range creds {
			c, err := policy.ParseCredentialFlag(v)
			if err != nil {
				fmt.Fprintf(io.Err, "sandboxd explain: --credential: %v\n", err)
				return 2
			}
			opts.Credentials = append(opts.Credentials, c)
		}
		e, err := supervisor.ExplainEnv(opts)
		if err != nil {
			fmt.Fprintf(io.Err, "sandboxd explain: %s\n", policy.OneLine(err.Error()))
			return 1
		}
		var b strings.Builder
		for _, v := range e.Variables {
			if len(v.Hosts) > 0 {
				fmt.Fprintf(&b, "%s\t%s for %s\n", v.Name, v.From, strings.Join(v.Hosts, ", "))
				continue
			}
			fmt.Fprintf(&b, "%s\t%s\n", v.Name, v.From)
		}
		for _, r := range e.Removed {
			fmt.Fprintf(&b, "%s\tremoved (%s)\n", r.Name, r.Pattern)
		}
		return print(e, b.String(), true)
	}
	if len(unset) > 0 || len(creds) > 0 {
		fmt.Fprintln(io.Err, "sandboxd explain: --unset-env and --credential go with --env")
		return 2
	}
	if harness != "" {
		if opts.PolicyFile == "" || fs.NArg() != 0 {
			fmt.Fprintln(io.Err, "sandboxd explain: --harness needs --policy FILE and the payload on stdin")
			return 2
		}
		// The ruling is the policy file's alone ("hookgate check --policy
		// FILE"); a network flag would be silently ignored here while
		// "sandboxd run" with it merges it into its rulings' bound.
		if len(allow) > 0 || len(deny) > 0 || len(priv) > 0 || opts.DNSUpstream != "" {
			fmt.Fprintln(io.Err, "sandboxd explain: --harness rules with the policy file alone; --allow-domain, --deny-domain, --allow-private and --dns-upstream do not apply to it")
			return 2
		}
		e := supervisor.ExplainCall(ctx, opts.PolicyFile, harness, *inSandbox, io.In)
		line := fmt.Sprintf("%s %s %s: %s", e.Harness, e.Event, e.Tool, e.Verdict)
		if e.Reason != "" {
			line += ": " + e.Reason
		}
		line += fmt.Sprintf("\nhookgate answers: exit %d", e.ExitCode)
		if e.Stdout != "" {
			line += ", stdout " + strings.TrimSpace(e.Stdout)
		}
		if e.Stderr != "" {
			line += ", stderr " + strings.TrimSpace(e.Stderr)
		}
		return print(e, line+"\n", e.Verdict == "allow" || e.Verdict == "pass")
	}
	if path != "" {
		if fs.NArg() != 0 || harness != "" || len(allow) > 0 || len(deny) > 0 || len(priv) > 0 || opts.DNSUpstream != "" {
			fmt.Fprintln(io.Err, "sandboxd explain: --path takes no HOST, --harness or network flags")
			return 2
		}
		opts.Write = write
		e, err := supervisor.ExplainPath(opts, path, *forWrite)
		if err != nil {
			fmt.Fprintf(io.Err, "sandboxd explain: %s\n", policy.OneLine(err.Error()))
			return 1
		}
		return print(e, fmt.Sprintf("%s: %s: %s\n", e.Path, e.Verdict, e.Reason), e.Decision.Allowed())
	}
	if len(write) > 0 || opts.Dir != "" || *forWrite {
		fmt.Fprintln(io.Err, "sandboxd explain: --write, --cwd and --for-write go with --path")
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	e, err := supervisor.ExplainHost(ctx, opts, fs.Arg(0))
	if err != nil {
		fmt.Fprintf(io.Err, "sandboxd explain: %s\n", policy.OneLine(err.Error()))
		return 1
	}
	line := fmt.Sprintf("%s: %s: %s\n", e.Target, e.Verdict, e.Reason)
	if e.Addr != "" {
		line = fmt.Sprintf("%s: %s: %s (would dial %s)\n", e.Target, e.Verdict, e.Reason, e.Addr)
	}
	return print(e, line, e.Decision.Allowed())
}
