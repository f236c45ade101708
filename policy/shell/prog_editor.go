package shell

import (
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// The editor family: vim and its variants, ed and gdb, programs with a
// command language of their own that can run shell commands (vim's Ex
// commands, ed's !, gdb's shell). Commands they read from the line or
// from stdin are read where they can be, and fail the line closed where
// they cannot. vim's variants are entries of their own, not aliases: a
// rule or a message names the one the line runs.
func editorPrograms() map[string]*program {
	vim := &program{run: vimRun}
	ed := &program{run: edRun}
	return map[string]*program{
		"vim": vim, "vi": vim, "nvim": vim, "gvim": vim, "view": vim, "vimdiff": vim, "ex": vim, "rvim": vim,
		"rview": vim, "evim": vim, "vimx": vim,
		"ed": ed, "red": ed,
		"gdb": {run: gdbRun},
	}
}

// vimRun fails the line when vim runs Ex commands the line gives it: -c,
// --cmd, +CMD (`vim -c '!git push' -c q` runs git push), or keys and Ex
// commands read from a non-terminal stdin (`vim -es <<< '!git push'`).
// Ex commands run shell commands in too many ways (!, :r !, system(),
// :py, :lua, :terminal…) to read, so this fails closed. +N and +/pattern
// only move the cursor; -S and -s read a file (opaque).
func vimRun(a *analyzer, inv invocation, in stdin, _ int) {
	a.record(inv)
	args := inv.args
	for i := 1; i < len(args); i++ {
		w := args[i]
		v := w.val
		switch {
		case w.dyn && w.mayBeOption() || w.dyn && strings.HasPrefix(w.lead, "+"):
			a.fail("option of " + inv.prog + " is not static: " + v)
			return
		case v == "-c" || v == "--cmd" || strings.HasPrefix(v, "-c") && len(v) > 2 && !strings.HasPrefix(v, "--"):
			a.fail(inv.prog + " " + v + " runs Ex commands, which can run shell commands")
			return
		case strings.HasPrefix(v, "+") && len(v) > 1 && !isDigits(v[1:]) && v[1] != '/':
			a.fail(inv.prog + " " + v + " runs an Ex command, which can run shell commands")
			return
		case v == "-S" || v == "-s" || v == "-u" || v == "-W" || v == "-w" || v == "-i" || v == "-T" || v == "-U":
			if v == "-S" || v == "-s" || v == "-u" {
				a.opaque(inv.prog)
			}
			i++
		}
	}
	switch in.kind {
	case "", "file":
	default:
		a.fail(inv.prog + " reads keys or Ex commands from standard input, which can run shell commands")
	}
}

// edRun reads ed and red, whose commands come from stdin.
func edRun(a *analyzer, inv invocation, in stdin, _ int) {
	a.record(inv)
	a.edStdin(inv.prog, in)
}

// edStdin fails the line when ed reads commands that may run a shell
// command: `ed <<< '!git push'` (also `r !cmd`, `w !cmd`).
func (a *analyzer) edStdin(prog string, in stdin) {
	switch in.kind {
	case "here":
		if strings.Contains(in.body, "!") {
			a.fail(prog + " commands from standard input hold !, which runs a shell command")
		}
	case "pipe", "dynamic", "dynfile":
		a.fail(prog + " reads commands it may run a shell with from standard input the classifier cannot read")
	case "file":
		a.opaque(prog)
	}
}

// gdbSafe are gdb commands that run nothing outside gdb and the debugged
// program.
var gdbSafe = sync.OnceValue(func() map[string]bool {
	return setOf(`bt backtrace where info i thread frame f up down list l disassemble disas x quit q set show p print ptype whatis continue c next n step s finish break b tbreak delete watch kill detach core-file file symbol-file directory dir`)
})

// gdbRun analyses gdb's command-line commands: `-ex 'shell git push'` and
// `-ex '!git push'` run a shell command; `--args PROG…` (and a positional
// PROG with run/start) is a program gdb runs. Commands outside a short
// safe list (python, pipe, source, define, call, print with calls…) fail
// closed; `print`/`call` of a function runs code in the debuggee only,
// but `call`/`print system(…)` would run a shell: the safe list excludes
// call, and print is safe only without "(".
func gdbRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	args := inv.args
	var prog []word
	for i := 1; i < len(args); i++ {
		w := args[i]
		v := w.val
		if w.dyn {
			a.fail("argument of gdb is not static: " + v)
			return
		}
		name, val, hasEq := strings.Cut(strings.TrimLeft(v, "-"), "=")
		switch {
		case v == "--args" || v == "-args":
			prog = args[i+1:]
			i = len(args)
		case strings.HasPrefix(v, "-") && (name == "ex" || name == "iex" || name == "eval-command" || name == "init-eval-command"):
			if !hasEq {
				if i+1 >= len(args) {
					return
				}
				i++
				if args[i].dyn {
					a.fail("gdb command is not static: " + args[i].val)
					return
				}
				val = args[i].val
			}
			cmd := strings.TrimSpace(val)
			first, restCmd, _ := strings.Cut(cmd, " ")
			switch {
			case strings.HasPrefix(cmd, "!"):
				a.source(cmd[1:], syntax.LangBash, depth+1)
			case first == "shell":
				a.source(restCmd, syntax.LangBash, depth+1)
			case (first == "run" || first == "r" || first == "start") && strings.TrimSpace(restCmd) == "":
				// runs PROG with --args' arguments, analysed below
			case gdbSafe()[first] && !strings.ContainsAny(cmd, "(|$`"):
			default:
				a.fail("gdb command " + strconv.Quote(cmd) + " may run code the classifier cannot read")
				return
			}
		case strings.HasPrefix(v, "-") && (name == "x" || name == "command" || name == "ix" || name == "init-command" || name == "cd" || name == "p" || name == "pid" || name == "core" || name == "c" || name == "s" || name == "symbols" || name == "e" || name == "exec" || name == "se" || name == "d" || name == "directory" || name == "tty" || name == "data-directory"):
			if name == "x" || name == "command" || name == "ix" || name == "init-command" {
				a.opaque("gdb")
			}
			if !hasEq {
				i++
			}
		case strings.HasPrefix(v, "-"):
		default:
			if prog == nil {
				prog = args[i : i+1]
			}
		}
	}
	if len(prog) > 0 {
		a.command(prog, stdin{}, depth+1)
	}
}
