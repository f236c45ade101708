package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/policy/shell"
)

// classifyOutput is the JSON shape of "sandboxd policy classify --json",
// documented in docs/reference/sandboxd.md.
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
	Decision       decisionOutput      `json:"decision"`
}

type fileWriteOutput struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// decisionOutput is shell.Decide's ruling: hookgate's for the same line,
// bound and working directory.
type decisionOutput struct {
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule"`
}

const classifyUsage = "sandboxd policy classify [--policy FILE] [--cwd DIR] [--deny-program RULE]... [--bash-deny PATTERN]... [--deny-action ACTION]...\n" +
	"    [--deny-domain D]... [--allow-domain D]... [--deny-file GLOB]... [--allow-file GLOB]... [--deny-access ACCESS]... [--json] -- 'COMMAND LINE'"

// classifyCommand is "sandboxd policy classify": it shows what a command
// line does as the shell classifier reads it, and how shell.Decide (the
// ruling hookgate applies) rules on it under a bound built from a policy
// file's effective bound and the rule flags. It exits 0 whether or not the
// line is denied.
func classifyCommand() *cli.Command {
	return &cli.Command{
		Name:    "classify",
		Summary: "show how the shell classifier reads a command line and whether rules deny it",
		Run:     runClassify,
	}
}

// classifyFlags are the rules "sandboxd policy classify" rules under.
type classifyFlags struct {
	policyFile, cwd                                        string
	programs, patterns, actions, denyDomains, allowDomains cli.Strings
	denyFiles, allowFiles, deniedAccess                    cli.Strings
}

func runClassify(_ context.Context, sio cli.IO, args []string) int {
	fs := cli.NewFlagSet(sio, "classify", classifyUsage)
	var f classifyFlags
	fs.StringVar(&f.policyFile, "policy", "", "a session policy file whose effective bound the line is ruled under (the flags' rules are added to it)")
	fs.StringVar(&f.cwd, "cwd", "", "the command's working directory (default: the current one)")
	fs.Var(&f.programs, "deny-program", "a bash.denyPrograms rule (git, git:push, gh:pr:create); repeatable")
	fs.Var(&f.patterns, "bash-deny", "a bash.deny substring pattern; repeatable")
	fs.Var(&f.actions, "deny-action", "a network.actions tag to deny (write, git:push, ...); repeatable")
	fs.Var(&f.denyDomains, "deny-domain", "a network.domains entry; repeatable")
	fs.Var(&f.allowDomains, "allow-domain", "a network.allowDomains entry; repeatable")
	fs.Var(&f.denyFiles, "deny-file", "a files.deny pattern; repeatable")
	fs.Var(&f.allowFiles, "allow-file", "a files.allowOnly pattern; repeatable")
	fs.Var(&f.deniedAccess, "deny-access", "a deniedAccess entry (write, *, ...); repeatable")
	inSandbox := fs.Bool("in-sandbox", false, "rule as a session inside sandboxd run or launch does (the filesystem layer holds files.deny below a directory; network.enforce: sandbox is met); default: as hookgate with a policy file, outside it")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, stop := cli.Parse(fs, args); stop {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(sio.Err, "sandboxd policy classify: missing command line (usage: %s)\n", classifyUsage)
		return 2
	}
	line := strings.Join(fs.Args(), " ")
	b, err := f.bound()
	if err != nil {
		printPolicyError(sio.Err, f.policyFile, err)
		return 1
	}
	cwd, m, err := classifyMatcher(f.cwd)
	if err != nil {
		fmt.Fprintf(sio.Err, "sandboxd policy classify: %v\n", err)
		return 1
	}
	if *inSandbox {
		b, m.HeldBelow = policy.InSandbox(b), true
	}
	out := classify(line, cwd, b, m, *inSandbox)
	if *asJSON {
		enc := json.NewEncoder(sio.Out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(sio.Err, "sandboxd policy classify: %v\n", err)
			return 1
		}
		return 0
	}
	printClassify(sio.Out, out, b != nil)
	return 0
}

// bound is the bound the line is ruled under: the policy file's effective
// bound (nil without --policy), merged with the flags' rules as
// policy.MergeBounds merges (the stricter of both). Without --policy the
// flags' bound is used as given, its lists in the order typed. nil when
// there is neither.
func (f *classifyFlags) bound() (*policy.Bound, error) {
	var base *policy.Bound
	if f.policyFile != "" {
		r, err := policy.ResolveFile(f.policyFile)
		if err != nil {
			return nil, err
		}
		base = r.Bound
		if base == nil {
			base = &policy.Bound{}
		}
	}
	var fb *policy.Bound
	add := func() *policy.Bound {
		if fb == nil {
			fb = &policy.Bound{}
		}
		return fb
	}
	if len(f.programs)+len(f.patterns) > 0 {
		add().Bash = &policy.BashRules{Deny: f.patterns, DenyPrograms: f.programs}
	}
	if len(f.actions)+len(f.denyDomains)+len(f.allowDomains) > 0 {
		n := &policy.NetworkRules{Actions: f.actions, Domains: f.denyDomains}
		if len(f.allowDomains) > 0 {
			n.AllowDomains = f.allowDomains
		}
		add().Network = n
	}
	if len(f.denyFiles)+len(f.allowFiles) > 0 {
		fr := &policy.FileRules{Deny: f.denyFiles}
		if len(f.allowFiles) > 0 {
			fr.AllowOnly = f.allowFiles
		}
		add().Files = fr
	}
	if len(f.deniedAccess) > 0 {
		add().DeniedAccess = f.deniedAccess
	}
	switch {
	case base == nil:
		return fb, nil
	case fb == nil:
		return base, nil
	}
	return policy.MergeBounds(base, fb), nil
}

// classifyMatcher is the file matcher hookgate's engine rules with
// (hooks.NewEngine: the user's home, deny patterns "**/..." anywhere, case
// folded where the filesystem folds it), anchored at cwd (default: the
// current directory), which it returns absolute.
func classifyMatcher(cwd string) (string, policy.FileMatcher, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", policy.FileMatcher{}, fmt.Errorf("working directory: %w", err)
		}
		cwd = wd
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", policy.FileMatcher{}, fmt.Errorf("--cwd %s: %w", cwd, err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", policy.FileMatcher{}, fmt.Errorf("home directory: %w", err)
	}
	m := policy.FileMatcher{Home: home, Cwd: abs, DenyAnywhere: true, FoldCase: runtime.GOOS == "darwin"}
	return abs, m.Memo(), nil
}

// classify builds the output for one line: what the classifier reads, and
// shell.Decide's ruling under b in cwd, after the session's refusal when
// its policy asks for a sandbox it does not have (policy.DecideSandboxed). deniedBy is the denying rule's
// entry (the rule code after its field: "git:push" for
// "bash.denyPrograms:git:push"), "unparseable: REASON" for an unparseable
// line, or the whole rule code when it names no entry.
func classify(line, cwd string, b *policy.Bound, m policy.FileMatcher, sandboxed bool) classifyOutput {
	c := shell.Classify(line)
	out := classifyOutput{
		Programs:       nonNil(c.Programs),
		Argvs:          c.Argvs,
		Subcommands:    c.Subcommands,
		Unparseable:    c.Unparseable,
		Reason:         c.Reason,
		Opaque:         nonNil(c.Opaque),
		NetworkActions: nonNil(shell.ClassifyNetworkActions(c, line)),
		Domains:        nonNil(c.Domains()),
	}
	if out.Argvs == nil {
		out.Argvs = [][]string{}
	}
	if out.Subcommands == nil {
		out.Subcommands = map[string][]string{}
	}
	if f := c.FileWrite(); f != nil {
		out.FileWrite = &fileWriteOutput{Path: f.Path, Reason: f.Reason}
	}
	d := policy.DecideSandboxed(b, sandboxed)
	if d.Allowed() {
		d = shell.Decide(line, cwd, b, nil, m)
	}
	out.Decision = decisionOutput{Verdict: d.Verdict.String(), Reason: d.Reason, Rule: d.Rule}
	if !d.Allowed() {
		out.Denied, out.DeniedBy = true, deniedBy(d.Rule, c)
	}
	return out
}

// deniedBy renders a denying rule code the way the deniedBy field has
// always read.
func deniedBy(rule string, c shell.Classification) string {
	if rule == shell.RuleUnparseable {
		return "unparseable: " + c.Reason
	}
	if _, entry, ok := strings.Cut(rule, ":"); ok && entry != "" {
		return entry
	}
	return rule
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func or(s, alt string) string {
	if s == "" {
		return alt
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
	if haveRules {
		fmt.Fprintf(w, "rule:            %s\n", or(o.Decision.Rule, "none"))
		fmt.Fprintf(w, "reason:          %s\n", o.Decision.Reason)
	}
}
