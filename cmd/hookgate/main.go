// Command hookgate answers agent harnesses' tool-call hooks (Claude Code,
// Codex, Cursor, Gemini CLI, Pi) with allow or deny in each harness's own
// protocol, within a deadline. It is wiring only: the logic lives in package
// hooks.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/cli"
)

// version is set at link time with -ldflags "-X main.version=..."; without
// it the version is the module's and the commit Go recorded (cli.Version).
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	app := &cli.App{
		Name:    "hookgate",
		Summary: "rule on agent harness tool calls (allow or deny) within a deadline",
		Commands: []*cli.Command{
			{Name: "check", Summary: "answer one hook call read on stdin", Run: checkCmd},
			{Name: "install", Summary: "add hookgate to a harness's hook configuration", Run: installCmd(false)},
			{Name: "uninstall", Summary: "remove hookgate's entry from a harness's hook configuration", Run: installCmd(true)},
			{Name: "verify", Summary: "check that the harness really runs hookgate on its tool calls", Run: verifyCmd},
			{Name: "version", Summary: "print the version", Run: func(ctx context.Context, io cli.IO, args []string) int {
				fmt.Fprintf(io.Out, "hookgate %s\n", cli.Version(version))
				return 0
			}},
		},
	}
	return app.Main(context.Background(), cli.StdIO(), args)
}

const checkUsage = `hookgate check --harness claude-code|codex|cursor|gemini|pi [--policy FILE | --socket ADDR] [--deadline DURATION]

Reads one hook payload on stdin and answers on stdout, stderr and the exit
code exactly as the harness expects. Policy: --policy (or BARRY_POLICY), a
session policy file ruled on locally; or --socket (or BARRY_HOOK_SOCKET), a
ruling server at PATH, unix:PATH or tcp:127.0.0.1:PORT. A flag beats the
environment; both flags deny; with both variables set the socket is used.
Neither, or any failure, is a deny. --deadline must be positive and at most
8s, under the 9 s of the wrapper and the 30 s hook timeout install writes, so hookgate answers before
the harness gives up on it; a longer one is a deny.

check --help prints this on stderr and exits 2: every harness reads exit 2
as a deny (an exit 0 with nothing on stdout would be "no objection").`

func checkCmd(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "check", checkUsage)
	harness := fs.String("harness", "", "harness protocol: claude-code, codex, copilot, cursor, gemini or pi")
	protocol := fs.String("protocol", "", "alias of --harness (the spelling of the hook-protocol notes)")
	policyPath := fs.String("policy", "", "session policy file (env BARRY_POLICY)")
	socket := fs.String("socket", "", "ruling server address (env BARRY_HOOK_SOCKET)")
	deadline := fs.Duration("deadline", hooks.DefaultDeadline, "deadline for the whole ruling")
	if code, stop := cli.Parse(fs, args); stop {
		if code == 0 {
			// --help: the usage is on stderr; exit 2 so that a harness
			// configured with it blocks instead of reading "no objection".
			return 2
		}
		// A harness that runs hookgate with bad flags still gets a deny.
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: bad command line; denied"))
	}
	if *protocol != "" {
		if *harness != "" && *harness != *protocol {
			return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: --harness and --protocol disagree; denied"))
		}
		*harness = *protocol
	}
	if fs.NArg() > 0 {
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: unexpected arguments; denied"))
	}
	// Flags beat the environment; both flags is ambiguous and denies. With
	// only the environment, the ruling server (which sandboxd run sets and
	// which sees revocations) beats a policy file.
	if *socket != "" && *policyPath != "" {
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: both --policy and --socket are set; denied"))
	}
	if *socket == "" && *policyPath == "" {
		*socket = os.Getenv("BARRY_HOOK_SOCKET")
		if *socket == "" {
			*policyPath = os.Getenv("BARRY_POLICY")
		}
	}
	var src hooks.Source
	switch {
	case *socket != "":
		src = hooks.ClientSource{Addr: *socket}
	case *policyPath != "":
		src = hooks.LocalSource{Path: *policyPath}
	}
	if *deadline <= 0 || *deadline > hooks.MaxDeadline {
		return write(io, hooks.Fail(hooks.Harness(*harness), fmt.Sprintf(
			"hookgate: --deadline %s must be positive and at most %s, under the harness's hook timeout; denied", *deadline, hooks.MaxDeadline)))
	}
	out := hooks.Check(ctx, hooks.CheckArgs{
		Harness: *harness, Payload: io.In, Source: src, Deadline: *deadline, Fault: hooks.FaultFromEnv(),
	})
	return write(io, out)
}

// write writes an answer. A stdout that cannot take it (a full disk under
// the wrapper's temporary file) is exit 1, which the wrapper turns into a
// deny. Under the wrapper (HOOKGATE_DONE names a file) the answer counts
// only once that file exists: a stand-in that exits 0 without writing
// anything (an empty file at hookgate's path) is then a deny too.
func write(io cli.IO, out hooks.Output) int {
	if len(out.Stdout) > 0 {
		if _, err := io.Out.Write(out.Stdout); err != nil {
			return 1
		}
	}
	if len(out.Stderr) > 0 {
		io.Err.Write(out.Stderr)
	}
	if done := os.Getenv(hooks.DoneEnv); done != "" {
		if f, ok := io.Out.(interface{ Sync() error }); ok && f.Sync() != nil {
			return 1
		}
		if err := os.WriteFile(done, nil, 0o600); err != nil {
			return 1
		}
	}
	return out.Code
}

const installUsage = `hookgate install|uninstall --harness claude-code|codex|cursor|gemini|pi [--scope user|project] [--policy FILE] [--project DIR] [--trust-project]

install merges hookgate's hook entry into the harness's configuration
(~/.claude/settings.json or $CLAUDE_CONFIG_DIR/settings.json,
~/.cursor/hooks.json with failClosed: true, $CODEX_HOME/hooks.json (default
~/.codex) with its trust recorded in $CODEX_HOME/config.toml,
~/.gemini/settings.json; with --scope project the same files under the
project directory; for Pi an extension file), keeping every other setting
and hook, after a timestamped backup. Running it twice changes nothing.
uninstall removes only hookgate's entries. The entry runs this binary by its
absolute path inside a POSIX wrapper that turns any failure of hookgate
(missing, crashed, hung, unreadable answer) into the harness's deny.`

func installCmd(remove bool) func(ctx context.Context, io cli.IO, args []string) int {
	name := "install"
	if remove {
		name = "uninstall"
	}
	return func(ctx context.Context, io cli.IO, args []string) int {
		fs := cli.NewFlagSet(io, name, installUsage)
		harness := fs.String("harness", "", "harness: claude-code, codex, copilot, cursor, gemini or pi")
		scope := fs.String("scope", "user", "user (home directory) or project")
		policyPath := fs.String("policy", "", "session policy file the hook passes as --policy (default: the harness's BARRY_POLICY or BARRY_HOOK_SOCKET)")
		project := fs.String("project", "", "project directory for --scope project (default: the working directory)")
		trustProject := fs.Bool("trust-project", false, "with --scope project: mark the project trusted for Codex or Gemini CLI, which ignore an untrusted project's hooks")
		if code, stop := cli.Parse(fs, args); stop {
			return code
		}
		h, err := hooks.ParseHarness(*harness)
		if err != nil || fs.NArg() > 0 {
			fmt.Fprintf(io.Err, "hookgate %s: --harness is required and must be claude-code, codex, copilot, cursor, gemini or pi\n", name)
			return 2
		}
		home, err := os.UserHomeDir()
		if err != nil {
			fmt.Fprintf(io.Err, "hookgate %s: home directory: %v\n", name, err)
			return 1
		}
		if *project == "" {
			*project, _ = os.Getwd()
		}
		a := hooks.InstallArgs{Harness: h, Scope: *scope, Home: home, Project: absPath(*project), Policy: *policyPath,
			ClaudeConfigDir: os.Getenv("CLAUDE_CONFIG_DIR"), CodexHome: os.Getenv("CODEX_HOME"), CopilotHome: os.Getenv("COPILOT_HOME"), PiAgentDir: os.Getenv("PI_CODING_AGENT_DIR"), TrustProject: *trustProject,
			GeminiTrustWorkspace: os.Getenv("GEMINI_CLI_TRUST_WORKSPACE")}
		if a.Policy != "" {
			a.Policy = absPath(a.Policy)
		}
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			fmt.Fprintf(io.Err, "hookgate %s: locating this binary: %v\n", name, err)
			return 1
		}
		a.Binary = exe
		op := hooks.Install
		if remove {
			op = hooks.Uninstall
		}
		path, changed, err := op(a)
		if err != nil {
			fmt.Fprintf(io.Err, "hookgate %s: %v\n", name, err)
			return 1
		}
		switch {
		case !changed:
			fmt.Fprintf(io.Out, "%s: unchanged\n", path)
		case remove:
			fmt.Fprintf(io.Out, "%s: hookgate removed\n", path)
		default:
			fmt.Fprintf(io.Out, "%s: hookgate installed\n", path)
		}
		return 0
	}
}

const verifyUsage = `hookgate verify --harness claude-code|codex|cursor|gemini|pi [--scope user|project] [--project DIR] [--codex PATH]

verify checks the configuration the harness itself reads: hookgate's entry
present for every gated event and first in line, inside its fail-closed
wrapper, its binary executable; Claude Code's settings not disabling hooks;
for Codex the project trusted (project scope) and hookgate's entries trusted,
asked from Codex's own app-server (hooks/list) when a codex binary is found
(--codex, else codex on PATH), else recomputed from its files. Exit 0 when
the harness will run hookgate, 1 with the reason when it will not, 2 on bad
usage.`

func verifyCmd(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "verify", verifyUsage)
	harness := fs.String("harness", "", "harness: claude-code, codex, copilot, cursor, gemini or pi")
	scope := fs.String("scope", "user", "user (home directory) or project")
	project := fs.String("project", "", "project directory (default: the working directory)")
	codex := fs.String("codex", "", "codex binary to ask (default: codex on PATH, if any)")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	h, err := hooks.ParseHarness(*harness)
	if err != nil || fs.NArg() > 0 {
		fmt.Fprintln(io.Err, "hookgate verify: --harness is required and must be claude-code, codex, copilot, cursor, gemini or pi")
		return 2
	}
	home, err := os.UserHomeDir()
	if err != nil {
		fmt.Fprintf(io.Err, "hookgate verify: home directory: %v\n", err)
		return 1
	}
	if *project == "" {
		*project, _ = os.Getwd()
	}
	a := hooks.VerifyArgs{InstallArgs: hooks.InstallArgs{Harness: h, Scope: *scope, Home: home, Project: absPath(*project),
		ClaudeConfigDir: os.Getenv("CLAUDE_CONFIG_DIR"), CodexHome: os.Getenv("CODEX_HOME"), CopilotHome: os.Getenv("COPILOT_HOME"), PiAgentDir: os.Getenv("PI_CODING_AGENT_DIR"),
		GeminiTrustWorkspace: os.Getenv("GEMINI_CLI_TRUST_WORKSPACE")}, Codex: *codex}
	if h == hooks.Codex && a.Codex == "" {
		a.Codex, _ = exec.LookPath("codex")
	}
	path, err := hooks.Verify(ctx, a)
	if err != nil {
		fmt.Fprintf(io.Err, "hookgate verify: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	fmt.Fprintf(io.Out, "%s: hookgate is installed and %s runs it\n", path, h)
	return 0
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
