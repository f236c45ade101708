package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The builtin family: shell builtins with a grammar of their own. Some run
// a command or a string (command, eval, source, trap, the -C callbacks of
// complete and mapfile), some change what a later command name runs (hash,
// alias, enable, fc, zmodload, emulate) and some assign variables that may
// (printf -v, read, mapfile, getopts). None reaches the network itself.
func builtinPrograms() map[string]*program {
	source := &program{run: sourceRun}
	zsh := &program{run: zshBuiltinRun}
	assigns := &program{run: assignBuiltinRun, nonExec: true}
	mapfile := &program{run: assignBuiltinRun}
	completes := &program{run: completeRun}
	return map[string]*program{
		"command": {run: commandRun}, "hash": {run: failOnOption("p", "hash -p rebinds a command name to another file")}, "alias": {run: aliasRun}, "enable": {run: enableRun},
		"eval": {run: evalRun}, "source": source, ".": source, "fc": {run: failOnOption("es", "fc re-runs commands from the shell's history")}, "zmodload": zsh, "emulate": zsh,
		"printf": assigns, "read": assigns, "getopts": assigns, "mapfile": mapfile, "readarray": mapfile,
		"trap": {run: trapRun}, "complete": completes, "compgen": completes,
	}
}

// commandRun reads `command CMD…`, which runs CMD; -v and -V only look
// the name up.
func commandRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	a.record(inv)
	o := scanOpts(args, 1, optSpec{})
	if o.has("-v", "-V") || o.bad != "" {
		if o.bad != "" {
			a.fail("option of command is not static: " + o.bad)
		}
		return // lookup only
	}
	a.rest(args, o.next, in, depth)
}

// failOnOption is the run of a builtin that fails the line, with reason,
// on an option word that holds one of chars or is not static (hash -p
// binds a command name to another file; fc -e and -s re-run commands from
// the shell's history).
func failOnOption(chars, reason string) func(a *analyzer, inv invocation, _ stdin, _ int) {
	return func(a *analyzer, inv invocation, _ stdin, _ int) {
		a.record(inv)
		for _, w := range inv.args[1:] {
			if w.mayBeOption() && (w.dyn || strings.ContainsAny(w.val, chars)) {
				a.fail(reason)
				return
			}
		}
	}
}

// aliasRun fails the line on an alias definition, which changes what a
// command name runs.
func aliasRun(a *analyzer, inv invocation, _ stdin, _ int) {
	a.record(inv)
	for _, w := range inv.args[1:] {
		if w.dyn || strings.Contains(w.val, "=") {
			a.fail("alias redefines a command name")
			return
		}
	}
}

// enableRun fails the line on enable with operands, which loads or toggles
// builtins.
func enableRun(a *analyzer, inv invocation, _ stdin, _ int) {
	a.record(inv)
	if len(inv.args) > 1 {
		a.fail("enable loads or toggles shell builtins")
	}
}

// evalRun parses eval's words, joined by spaces, as a shell line.
func evalRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	var parts []string
	ev := inv.args[1:]
	if len(ev) > 0 && ev[0].val == "--" {
		ev = ev[1:]
	}
	for _, w := range ev {
		if w.dyn {
			a.fail("eval with a string that is not static: " + w.val)
			return
		}
		parts = append(parts, w.val)
	}
	a.source(strings.Join(parts, " "), syntax.LangBash, depth+1)
}

// sourceRun reads source and ".": a script from stdin is analysed, a file
// is code the line does not show (opaque).
func sourceRun(a *analyzer, inv invocation, in stdin, depth int) {
	prog, args := inv.prog, inv.args
	a.record(inv)
	if len(args) < 2 {
		return
	}
	p := args[1]
	switch {
	case p.dyn:
		a.fail(fmt.Sprintf("%s of a file whose path is not static: %s", prog, p.val))
	case p.val == "/dev/stdin" || p.val == "/proc/self/fd/0" || p.val == "/dev/fd/0":
		a.stdinScript(prog, in, syntax.LangBash, depth)
	default:
		a.opaque(prog)
	}
}

// zshBuiltinRun fails the line on zmodload with operands (zsh modules add
// builtins) and on emulate -c (a string it evaluates).
func zshBuiltinRun(a *analyzer, inv invocation, _ stdin, _ int) {
	prog, args := inv.prog, inv.args
	a.record(inv)
	if prog == "zmodload" && len(args) > 1 {
		a.fail("zmodload loads zsh modules with their own builtins")
	}
	for _, w := range args[1:] {
		if w.val == "-c" {
			a.fail("emulate -c evaluates a string")
		}
	}
}

// assignBuiltinRun reads the builtins that assign variables (printf -v,
// read, mapfile, readarray, getopts): one that changes what later commands
// run cannot get a value the line does not show. mapfile -C's callback is
// a command.
func assignBuiltinRun(a *analyzer, inv invocation, _ stdin, depth int) {
	prog, args := inv.prog, inv.args
	a.record(inv)
	for j, w := range args[1:] {
		name := w.val
		if prog == "printf" {
			if w.val != "-v" || j+2 >= len(args) {
				if strings.HasPrefix(w.val, "-v") && len(w.val) > 2 {
					name = w.val[2:]
				} else {
					continue
				}
			} else {
				name = args[j+2].val
			}
		}
		if _, ok := hijackVars()[name]; ok || commandVars()[name] {
			a.fail(prog + " assigns " + name + ", which changes what later commands run")
			return
		}
	}
	if prog != "mapfile" && prog != "readarray" {
		return
	}
	o := scanOpts(args, 1, optSpec{short: "dnOsuctC"})
	for _, s := range o.seen["-C"] {
		a.codeString(prog+" -C", s, syntax.LangBash, depth)
	}
}

// trapRun parses trap's action as a shell string.
func trapRun(a *analyzer, inv invocation, _ stdin, depth int) {
	args := inv.args
	a.record(inv)
	o := scanOpts(args, 1, optSpec{})
	if o.bad != "" || o.next >= len(args) || o.has("-p", "-l") {
		if o.bad != "" {
			a.fail("trap with an action that is not static: " + o.bad)
		}
		return
	}
	if act := args[o.next]; act.dyn || (act.val != "-" && !isDigits(act.val)) {
		a.codeString("trap", act, syntax.LangBash, depth)
	}
}

// completeRun parses the commands complete -C and compgen -C run.
func completeRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	o := scanOpts(inv.args, 1, optSpec{short: "dnOsuctAGWFXPSo", str: "C"})
	for _, s := range o.strs {
		a.codeString(inv.prog+" -C", s, syntax.LangBash, depth)
	}
}
