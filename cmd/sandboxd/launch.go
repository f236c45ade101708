package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/supervisor"
)

const launchUsage = `sandboxd launch HARNESS --policy FILE [run's flags] [--relax] [--api-host HOST]...
       [--mcp-url URL [--mcp-secret-env NAME]] [--program PATH] [--hookgate PATH] [-- HARNESS ARGS...]

Start an agent harness (claude-code, codex, gemini, pi) under a session policy in one step: the
session is resolved as the launch enforces it (the policy file's harness must be
HARNESS; a bound that needs a native tool taken back that neither the gate nor
the launch can take back refuses the launch); the harness's session
configuration is written into sandboxd's runtime directory (Codex: a private
CODEX_HOME beside it), read-only inside: the
fail-closed hook entry asking sandboxd's ruling server, the native tools the
ceiling takes back, and a strict MCP configuration holding only the session's
MCP servers (--relax lets the user's own servers load too); and the harness runs
under sandboxd run with the model API host(s) added to the allowlist
(--api-host replaces the harness's default, for a gateway) and its own state
directories writable. Harness arguments that would override the session
configuration are refused (exit 2). Exit status as for sandboxd run.`

func launchCommand() *cli.Command {
	return &cli.Command{Name: "launch", Summary: "start an agent harness under a session policy, gated and sandboxed", Run: launchMain}
}

func launchMain(ctx context.Context, io cli.IO, args []string) int {
	if len(args) == 0 || args[0] == "" || args[0][0] == '-' {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(io.Out, launchUsage)
			return 0
		}
		fmt.Fprintln(io.Err, "sandboxd launch: HARNESS is required first (see sandboxd launch --help)")
		return 2
	}
	h, err := hooks.ParseHarness(args[0])
	if err != nil {
		fmt.Fprintf(io.Err, "sandboxd launch: %v\n", err)
		return 2
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(io.Err, "sandboxd launch: home directory: %v\n", err)
		return 125
	}
	info, ok := hooks.LaunchInfoOf(h, home)
	if !ok {
		fmt.Fprintf(io.Err, "sandboxd launch: %s is not launched by sandboxd launch; install its hook with hookgate install\n", h)
		return 2
	}
	var (
		opts            supervisor.Options
		apiHosts        cli.Strings
		mcpURL, mcpEnv  string
		program, hgPath string
	)
	spec := &supervisor.LaunchSpec{Harness: h}
	fs := cli.NewFlagSet(io, "launch", launchUsage)
	rf := addRunFlags(fs, &opts)
	fs.BoolVar(&spec.Relax, "relax", false, "let the user's own MCP servers load beside the session's")
	fs.BoolVar(&spec.PassAPIKey, "pass-api-key", false, "give the harness its model API key itself, not as a credential the proxy puts in")
	fs.Var(&apiHosts, "api-host", "the model API `HOST` to allow instead of the harness's default (repeatable)")
	fs.StringVar(&mcpURL, "mcp-url", "", "the session's Barry MCP server `URL`")
	fs.StringVar(&mcpEnv, "mcp-secret-env", "", "environment variable `NAME` holding the MCP server's bearer token")
	fs.StringVar(&program, "program", "", "the harness's executable `PATH` (default: "+info.Program+" on PATH)")
	fs.StringVar(&hgPath, "hookgate", "", "hookgate's `PATH` (default: beside sandboxd, else on PATH)")
	if code, stop := cli.Parse(fs, args[1:]); stop {
		return code
	}
	if err := hooks.CheckLaunchArgs(h, fs.Args()); err != nil {
		fmt.Fprintf(io.Err, "sandboxd launch: %v\n", err)
		return 2
	}
	if err := rf.apply(&opts); err != nil {
		fmt.Fprintf(io.Err, "sandboxd: sandbox could not start: %s\n", err)
		return 125
	}
	if mcpEnv != "" && mcpURL == "" {
		fmt.Fprintln(io.Err, "sandboxd launch: --mcp-secret-env goes with --mcp-url")
		return 2
	}
	if mcpURL != "" {
		spec.MCP = []hooks.LaunchMCPServer{{Name: "barry", URL: mcpURL, BearerEnv: mcpEnv}}
	}
	if len(apiHosts) > 0 {
		spec.APIHosts = apiHosts
	}
	if program == "" {
		program = info.Program
	}
	if program, err = exec.LookPath(program); err != nil {
		fmt.Fprintf(io.Err, "sandboxd launch: %s: %v\n", h, err)
		return 127
	}
	if program, err = filepath.Abs(program); err != nil {
		fmt.Fprintf(io.Err, "sandboxd launch: %v\n", err)
		return 127
	}
	if spec.Hookgate, err = findHookgate(hgPath); err != nil {
		fmt.Fprintf(io.Err, "sandboxd launch: %v\n", err)
		return 125
	}
	spec.Args = fs.Args()
	opts.Command = []string{program}
	opts.Launch = spec
	return runExit(io, opts)
}

// findHookgate returns hookgate's absolute path: the one given, else the
// one beside sandboxd's own executable, else the one on PATH. The hook
// entry names it; one that does not run would deny every call.
func findHookgate(given string) (string, error) {
	cands := []string{given}
	if given == "" {
		cands = nil
		if self, err := os.Executable(); err == nil {
			cands = append(cands, filepath.Join(filepath.Dir(self), "hookgate"))
		}
		cands = append(cands, "hookgate")
	}
	for _, c := range cands {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if p, err = filepath.Abs(p); err == nil {
			return p, nil
		}
	}
	if given != "" {
		return "", fmt.Errorf("hookgate %s: not an executable", given)
	}
	return "", errors.New("hookgate not found beside sandboxd or on PATH (--hookgate PATH)")
}
