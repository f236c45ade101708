// Command sandboxd runs an agent's whole process tree inside a sandbox whose
// only way out is Barry's egress proxy, and checks and resolves policies.
// It is wiring only: the logic lives in the policy, proxy, procjail and hooks
// packages.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// version is set at link time with -ldflags "-X main.version=..."; without
// it the version is the module's and the commit Go recorded (cli.Version).
var version = "dev"

func main() {
	// Internal subcommands are dispatched before any flag parsing or
	// signal handling: the sandbox's init and the ssh CONNECT helper.
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case procjail.InitCommand:
			// The create gate and the open route decide by policy (procjail
			// does not import it).
			procjail.CreateDecider = policy.CreateDeciderFor
			procjail.OpenGuardDecider = policy.OpenDeciderFor
			os.Exit(procjail.RunInit())
		case procjail.ConnectCommand:
			os.Exit(procjail.RunConnect(os.Args[2:]))
		}
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	app := &cli.App{
		Name:    "sandboxd",
		Summary: "run an agent's process tree behind Barry's egress sandbox",
		Commands: []*cli.Command{
			interruptible(serveHooksCommand()),
			versionCommand(),
			interruptible(policyCommand(classifyCommand())),
			interruptible(proxyCommand()),
			// run and launch take their signals themselves, from the
			// session's start (supervisor's relay: one during the setup
			// aborts it, later ones are the command's).
			runCommand(),
			launchCommand(),
			interruptible(statusCommand()),
			interruptible(explainCommand()),
			doctorCommand(),
			netinitCommand(),
			kubeCommand(),
		},
	}
	return app.Main(context.Background(), cli.StdIO(), args)
}

func versionCommand() *cli.Command {
	return &cli.Command{Name: "version", Summary: "print the version", Run: func(ctx context.Context, io cli.IO, args []string) int {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(io.Out, "usage: sandboxd version\n\nPrint sandboxd's version.")
			return 0
		}
		if len(args) > 0 {
			fmt.Fprintf(io.Err, "sandboxd version: unexpected argument %q (see sandboxd version --help)\n", args[0])
			return 2
		}
		fmt.Fprintf(io.Out, "sandboxd %s\n", cli.Version(version))
		return 0
	}}
}

// interruptible cancels c's context on SIGINT or SIGTERM. Only the commands
// that need it subscribe: a subscription costs a process ~0.4 ms, and one
// that run took would swallow a signal meant for its session's relay.
func interruptible(c *cli.Command) *cli.Command {
	run := c.Run
	c.Run = func(ctx context.Context, io cli.IO, args []string) int {
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return run(ctx, io, args)
	}
	return c
}
