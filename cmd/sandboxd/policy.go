package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/policy"
)

// policyCommand is "sandboxd policy check|resolve|classify".
func policyCommand(extra ...*cli.Command) *cli.Command {
	sub := &cli.App{
		Name:    "sandboxd policy",
		Summary: "check and resolve policy files",
		Commands: append([]*cli.Command{
			{Name: "check", Summary: "check a policy file; exit 1 with one line per problem", Run: policyCheck},
			{Name: "resolve", Summary: "resolve a policy file into the session's effective policy", Run: policyResolve},
		}, extra...),
	}
	return &cli.Command{Name: "policy", Summary: sub.Summary, Run: func(ctx context.Context, io cli.IO, args []string) int {
		return sub.Main(ctx, io, args)
	}}
}

// printPolicyError prints one line per problem: "FILE:LINE:COL: path: problem".
func printPolicyError(w io.Writer, file string, err error) {
	var fes policy.FieldErrors
	if errors.As(err, &fes) {
		for _, fe := range fes {
			fmt.Fprintf(w, "%s:%s\n", file, prefixSpace(fe.Error()))
		}
		return
	}
	fmt.Fprintf(w, "%s: %v\n", file, err)
}

func prefixSpace(s string) string {
	if len(s) > 0 && s[0] >= '0' && s[0] <= '9' {
		return s
	}
	return " " + s
}

// resolveFileArg parses fs with args, takes the one FILE argument and
// resolves it. When ok is false the caller returns code (usage: 2, help: 0,
// a problem printed as FILE:LINE:COL lines: 1).
func resolveFileArg(io cli.IO, fs *flag.FlagSet, args []string) (file string, r *policy.Resolved, code int, ok bool) {
	if code, done := cli.Parse(fs, args); done {
		return "", nil, code, false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", nil, 2, false
	}
	file = fs.Arg(0)
	r, err := policy.ResolveFile(file)
	if err != nil {
		printPolicyError(io.Err, file, err)
		return file, nil, 1, false
	}
	return file, r, 0, true
}

func policyCheck(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "check", "sandboxd policy check FILE\n\nDecode FILE strictly and resolve it. Exit 0 when it resolves; otherwise exit 1\nwith one line per problem: FILE:LINE:COL: field.path: problem.")
	file, r, code, ok := resolveFileArg(io, fs, args)
	if !ok {
		return code
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(io.Err, "%s: warning: %s\n", file, w)
	}
	if r.CheckLaunchable() != nil {
		for _, t := range slices.Sorted(maps.Keys(r.Native.Refused)) {
			fmt.Fprintf(io.Err, "%s: native.%s: %s\n", file, t, r.Native.Refused[t])
		}
		return 1
	}
	fmt.Fprintf(io.Out, "%s: ok (fingerprint %s)\n", file, r.Fingerprint)
	return 0
}

func policyResolve(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "resolve", "sandboxd policy resolve FILE [--json]\n\nResolve FILE into the session's trait set, tools (and why each withheld tool is\nwithheld), effective bound, native-tool policy, warnings and fingerprint.")
	asJSON := fs.Bool("json", false, "print the stable JSON form (see docs/reference/policy.md)")
	file, r, code, ok := resolveFileArg(io, fs, reorder(args, map[string]bool{"--json": true, "-json": true}))
	if !ok {
		return code
	}
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			fmt.Fprintf(io.Err, "sandboxd: %v\n", err)
			return 1
		}
		return 0
	}
	w := io.Out
	fmt.Fprintf(w, "policy %s\n", file)
	if r.Identity != "" {
		fmt.Fprintf(w, "identity  %s\n", r.Identity)
	}
	fmt.Fprintf(w, "harness   %s (mode %s)\n", r.Harness, r.Mode)
	fmt.Fprintf(w, "traits    %s\n", strings.Join(r.Traits, ", "))
	fmt.Fprintf(w, "tools\n")
	for _, t := range r.Tools {
		fmt.Fprintf(w, "  listed    %-32s %s\n", t.ID, t.Access)
	}
	for _, t := range r.Withheld {
		fmt.Fprintf(w, "  withheld  %-32s %s\n", t.ID, t.Reason)
	}
	b, _ := json.Marshal(r.Bound)
	fmt.Fprintf(w, "bound     %s\n", b)
	fmt.Fprintf(w, "native    allowed: %s\n", strings.Join(r.Native.Allowed, ", "))
	for _, t := range r.Native.Denied {
		fmt.Fprintf(w, "          denied %s: %s\n", t, r.Native.Reasons[t])
	}
	for _, t := range slices.Sorted(maps.Keys(r.Native.Refused)) {
		fmt.Fprintf(w, "          REFUSED %s: %s\n", t, r.Native.Refused[t])
	}
	for _, t := range slices.Sorted(maps.Keys(r.Native.Uncontrolled)) {
		fmt.Fprintf(w, "          uncontrolled %s: %s\n", t, r.Native.Uncontrolled[t])
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(w, "warning   %s\n", x)
	}
	fmt.Fprintf(w, "fingerprint %s\n", r.Fingerprint)
	return 0
}

// reorder moves the named boolean flags in front of positional arguments,
// so "resolve FILE --json" works as well as "resolve --json FILE".
func reorder(args []string, flags map[string]bool) []string {
	var front, rest []string
	for _, a := range args {
		if flags[a] {
			front = append(front, a)
		} else {
			rest = append(rest, a)
		}
	}
	return append(front, rest...)
}
