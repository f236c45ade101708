// Command hookgate answers agent harnesses' tool-call hooks (Claude Code,
// Codex, Cursor, Gemini CLI, Pi) with allow or deny in each harness's own
// protocol, within a deadline. It is wiring only: the logic lives in package
// hooks.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/cli"
)

// version is set at link time with -ldflags "-X main.version=...".
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
			{Name: "version", Summary: "print the version", Run: func(ctx context.Context, io cli.IO, args []string) int {
				fmt.Fprintf(io.Out, "hookgate %s\n", version)
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
ruling server at PATH, unix:PATH or tcp:127.0.0.1:PORT. Neither, or any
failure, is a deny.`

func checkCmd(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "check", checkUsage)
	harness := fs.String("harness", "", "harness protocol: claude-code, codex, cursor, gemini or pi")
	policyPath := fs.String("policy", os.Getenv("BARRY_POLICY"), "session policy file (env BARRY_POLICY)")
	socket := fs.String("socket", os.Getenv("BARRY_HOOK_SOCKET"), "ruling server address (env BARRY_HOOK_SOCKET)")
	deadline := fs.Duration("deadline", hooks.DefaultDeadline, "deadline for the whole ruling")
	if code, stop := cli.Parse(fs, args); stop {
		if code == 0 {
			return 0
		}
		// A harness that runs hookgate with bad flags still gets a deny.
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: bad command line; denied"))
	}
	if fs.NArg() > 0 {
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: unexpected arguments; denied"))
	}
	var src hooks.Source
	switch {
	case *socket != "" && *policyPath != "":
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: both a policy file and a socket are set; denied"))
	case *socket != "":
		src = hooks.ClientSource{Addr: *socket}
	case *policyPath != "":
		src = hooks.LocalSource{Path: *policyPath}
	}
	if *deadline <= 0 || *deadline > 10*time.Minute {
		return write(io, hooks.Fail(hooks.Harness(*harness), "hookgate: --deadline must be in (0, 10m]; denied"))
	}
	out := hooks.Check(ctx, hooks.CheckArgs{
		Harness: *harness, Payload: io.In, Source: src, Deadline: *deadline, Fault: hooks.FaultFromEnv(),
	})
	return write(io, out)
}

func write(io cli.IO, out hooks.Output) int {
	if len(out.Stdout) > 0 {
		io.Out.Write(out.Stdout)
	}
	if len(out.Stderr) > 0 {
		io.Err.Write(out.Stderr)
	}
	return out.Code
}
