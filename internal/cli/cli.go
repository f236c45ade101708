// Package cli is the small command-line shape shared by sandboxd and
// hookgate: "prog <command> [flags]", --help on each command, one-line human
// errors, and exit codes (0 success, 1 refusal or failure, 2 usage).
package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// IO is a command's standard streams.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// StdIO returns the process's standard streams.
func StdIO() IO { return IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr} }

// Command is one subcommand. Run receives the arguments after the command
// name and returns the exit code.
type Command struct {
	Name    string
	Summary string
	Hidden  bool
	Run     func(ctx context.Context, io IO, args []string) int
}

// App dispatches to its commands.
type App struct {
	Name     string
	Summary  string
	Commands []*Command
}

// Main runs the command named by args[0].
func (a *App) Main(ctx context.Context, io IO, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		a.usage(io.Err)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range a.Commands {
		if c.Name == args[0] {
			return c.Run(ctx, io, args[1:])
		}
	}
	fmt.Fprintf(io.Err, "%s: unknown command %q (see %s --help)\n", a.Name, args[0], a.Name)
	return 2
}

func (a *App) usage(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n\nusage: %s <command> [flags]\n\ncommands:\n", a.Name, a.Summary, a.Name)
	for _, c := range a.Commands {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-12s %s\n", c.Name, c.Summary)
		}
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n", a.Name)
}

// NewFlagSet returns a flag set that prints usage to io.Err and returns
// errors instead of exiting.
func NewFlagSet(io IO, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Err)
	fs.Usage = func() {
		fmt.Fprintf(io.Err, "usage: %s\n", usage)
		var b strings.Builder
		fs.SetOutput(&b)
		fs.PrintDefaults()
		fs.SetOutput(io.Err)
		if b.Len() > 0 {
			fmt.Fprintf(io.Err, "\nflags:\n%s", b.String())
		}
	}
	return fs
}

// Parse parses flags; it returns (exit code, true) when the caller should
// return at once (help asked: 0; bad usage: 2).
func Parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// Strings is a repeatable string flag.
type Strings []string

// String implements flag.Value.
func (s *Strings) String() string { return strings.Join(*s, ",") }

// Set implements flag.Value.
func (s *Strings) Set(v string) error { *s = append(*s, v); return nil }
