package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/policy/shell"
)

// classifyOutput is the JSON shape of "sandboxd policy classify --json",
// documented in the README.
type classifyOutput struct {
	Programs       []string            `json:"programs"`
	Argvs          [][]string          `json:"argvs"`
	Subcommands    map[string][]string `json:"subcommands"`
	Unparseable    bool                `json:"unparseable"`
	Reason         string              `json:"reason"`
	Opaque         []string            `json:"opaque"`
	NetworkActions []string            `json:"networkActions"`
	Domains        []string            `json:"domains"`
	FileWrite      *fileWriteOutput    `json:"fileWrite"`
	Denied         bool                `json:"denied"`
	DeniedBy       string              `json:"deniedBy"`
}

type fileWriteOutput struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

const classifyUsage = "sandboxd policy classify [--deny-program RULE]... [--bash-deny PATTERN]... [--deny-action ACTION]... [--json] -- 'COMMAND LINE'"

// classifyCommand is "sandboxd policy classify": it shows what a command
// line does as the shell classifier reads it, and whether the given rules
// deny it. It exits 0 whether or not the line is denied.
func classifyCommand() *cli.Command {
	return &cli.Command{
		Name:    "classify",
		Summary: "show how the shell classifier reads a command line and whether rules deny it",
		Run:     runClassify,
	}
}

func runClassify(_ context.Context, sio cli.IO, args []string) int {
	fs := cli.NewFlagSet(sio, "classify", classifyUsage)
	var programs, patterns, actions cli.Strings
	fs.Var(&programs, "deny-program", "a bash.denyPrograms rule (git, git:push, gh:pr:create); repeatable")
	fs.Var(&patterns, "bash-deny", "a bash.deny substring pattern; repeatable")
	fs.Var(&actions, "deny-action", "a network.actions tag to deny (write, git:push, ...); repeatable")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(sio.Err, "sandboxd policy classify: missing command line (usage: %s)\n", classifyUsage)
		return 2
	}
	line := strings.Join(fs.Args(), " ")
	out := classify(line, programs, patterns, actions)
	if *asJSON {
		enc := json.NewEncoder(sio.Out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(sio.Err, "sandboxd policy classify: %v\n", err)
			return 1
		}
		return 0
	}
	printClassify(sio.Out, out, len(programs)+len(patterns)+len(actions) > 0)
	return 0
}

// classify builds the output for one line. Denial checks run in the order
// deny-program, bash-deny, deny-action; the first match names the rule.
func classify(line string, programs, patterns, actions []string) classifyOutput {
	c := shell.Classify(line)
	out := classifyOutput{
		Programs:       nonNil(c.Programs),
		Argvs:          c.Argvs,
		Subcommands:    c.Subcommands,
		Unparseable:    c.Unparseable,
		Reason:         c.Reason,
		Opaque:         nonNil(c.Opaque),
		NetworkActions: nonNil(shell.ClassifyNetworkActions(c, line)),
		Domains:        nonNil(shell.ExtractDomainsFromCommand(line)),
	}
	if out.Argvs == nil {
		out.Argvs = [][]string{}
	}
	if out.Subcommands == nil {
		out.Subcommands = map[string][]string{}
	}
	if f := shell.ClassifyFileWrite(line); f != nil {
		out.FileWrite = &fileWriteOutput{Path: f.Path, Reason: f.Reason}
	}
	if r, ok := shell.IsProgramDenied(line, programs); ok {
		out.Denied, out.DeniedBy = true, r
	} else if r, ok := shell.IsBashDenied(line, patterns); ok {
		out.Denied, out.DeniedBy = true, r
	} else if r, ok := shell.IsNetworkActionDenied(line, actions); ok {
		out.Denied, out.DeniedBy = true, r
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func printClassify(w io.Writer, o classifyOutput, haveRules bool) {
	list := func(s []string) string {
		if len(s) == 0 {
			return "none"
		}
		return strings.Join(s, ", ")
	}
	fmt.Fprintf(w, "programs:        %s\n", list(o.Programs))
	for _, a := range o.Argvs {
		fmt.Fprintf(w, "argv:            %q\n", a)
	}
	for _, p := range o.Programs {
		if subs := o.Subcommands[p]; len(subs) > 0 {
			fmt.Fprintf(w, "subcommands:     %s: %s\n", p, strings.Join(subs, ", "))
		}
	}
	if o.Unparseable {
		fmt.Fprintf(w, "unparseable:     yes: %s\n", o.Reason)
	} else {
		fmt.Fprintf(w, "unparseable:     no\n")
	}
	fmt.Fprintf(w, "opaque:          %s\n", list(o.Opaque))
	fmt.Fprintf(w, "network actions: %s\n", list(o.NetworkActions))
	fmt.Fprintf(w, "domains:         %s\n", list(o.Domains))
	if o.FileWrite != nil {
		fmt.Fprintf(w, "file write:      %s\n", o.FileWrite.Reason)
	} else {
		fmt.Fprintf(w, "file write:      none\n")
	}
	switch {
	case !haveRules:
		fmt.Fprintf(w, "verdict:         no rules given\n")
	case o.Denied:
		fmt.Fprintf(w, "verdict:         denied by %s\n", o.DeniedBy)
	default:
		fmt.Fprintf(w, "verdict:         allowed\n")
	}
}
