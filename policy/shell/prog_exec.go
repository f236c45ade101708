package shell

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The exec family: programs that run another command, from their argv
// (env, sudo, xargs, find -exec, fd -x, watch -x, flock, busybox) or from
// a string or stdin they hand to a shell (env -S, sudo -s, parallel,
// watch, su -c, sg, newgrp, script). Each reads the command it runs as a
// command of the line; sudoedit is sudo -e's other name.
func execPrograms() map[string]*program {
	fd := &program{run: fdRun}
	su := &program{run: suRun}
	busybox := &program{run: busyboxRun}
	return map[string]*program{
		"env": {run: envRun}, "sudo": {run: sudoRun}, "sudoedit": {run: sudoeditRun},
		"xargs": {run: xargsRun}, "find": {run: findRun}, "fd": fd, "fdfind": fd, "parallel": {run: parallelRun},
		"watch": {run: watchRun}, "sg": {run: sgRun}, "newgrp": {run: newgrpRun}, "su": su, "runuser": su,
		"flock": {run: flockRun}, "script": {run: scriptRun}, "busybox": busybox, "toybox": busybox,
	}
}

// envRun reads env's options and assignments, then the command it runs;
// env -S's string is parsed as a shell line.
func envRun(a *analyzer, inv invocation, in stdin, depth int) {
	a.record(inv)
	args := inv.args
	i := 1
	for i < len(args) {
		w := args[i]
		if w.dyn {
			if w.mayBeOption() || strings.Contains(w.lead, "=") {
				a.fail("argument of env is not static: " + w.val)
				return
			}
			break
		}
		v := envOption(w.val)
		switch {
		case v == "--":
			i++
			goto cmd
		case v == "-u" || v == "-C" || v == "-P" || v == "-a" || v == "--unset" || v == "--chdir" || v == "--argv0":
			i += 2
		case v == "-S" || v == "--split-string" || strings.HasPrefix(v, "--split-string=") || (strings.HasPrefix(v, "-S") && len(v) > 2):
			var s word
			switch {
			case v == "-S" || v == "--split-string":
				if i+1 >= len(args) {
					return
				}
				s = args[i+1]
				i += 2
			case strings.HasPrefix(v, "--split-string="):
				s = staticWord(strings.TrimPrefix(v, "--split-string="))
				i++
			default:
				s = staticWord(v[2:])
				i++
			}
			if s.dyn {
				a.fail("env -S with a string that is not static: " + s.val)
				return
			}
			src := s.val
			for _, r := range args[i:] {
				if r.dyn {
					a.fail("argument of env is not static: " + r.val)
					return
				}
				q, err := syntax.Quote(r.val, syntax.LangBash)
				if err != nil {
					a.fail("argument of env cannot be quoted: " + r.val)
					return
				}
				src += " " + q
			}
			a.source(src, syntax.LangBash, depth+1)
			return
		case strings.HasPrefix(v, "-") && len(v) > 1:
			i++
		case isAssignment(v):
			name, val, _ := strings.Cut(v, "=")
			a.assignValue(name, &word{val: val}, depth)
			a.setPrefix(name, val)
			i++
		default:
			goto cmd
		}
	}
cmd:
	if i < len(args) {
		a.command(args[i:], in, depth+1)
	}
}

// envOption rewrites one env option word to the form env's own option
// loop reads: an abbreviated long option becomes its full name
// ("--spl=x" → "--split-string=x", getopt_long accepts unique prefixes),
// and a cluster of flags ending in a value letter loses the flags
// ("-iS x" → "-S x", "-0iu" → "-u"). Without this `env -iS 'git push'`
// and `env --s 'git push'` ran git push unseen (the cluster and
// abbreviation traps).
func envOption(v string) string {
	if strings.HasPrefix(v, "--") && len(v) > 2 {
		name, val, hasEq := strings.Cut(v[2:], "=")
		name = optSpec{long: []string{"unset", "chdir", "argv0"}, strLong: []string{"split-string"}}.longName(name)
		if hasEq {
			return "--" + name + "=" + val
		}
		return "--" + name
	}
	if len(v) < 2 || v[0] != '-' {
		return v
	}
	for j := 1; j < len(v); j++ {
		if strings.IndexByte("uCPaS", v[j]) >= 0 {
			return "-" + v[j:] // the value letter and its glued value
		}
	}
	return v
}

// reAssign matches a word that starts with a variable assignment (NAME=).
var reAssign = &lazyRegexp{pattern: `^[A-Za-z_][A-Za-z0-9_]*=`}

// isAssignment reports whether s is a variable assignment (NAME=VALUE).
func isAssignment(s string) bool { return reAssign.MatchString(s) }

// sudoRun reads sudo's options and assignments, then the command it runs
// (a shell's script for -s and -i) or the file -e edits.
func sudoRun(a *analyzer, inv invocation, in stdin, depth int) {
	a.record(inv)
	args := inv.args
	o := scanOpts(args, 1, optSpec{short: "ugCDpRrThUt", long: []string{"user", "group", "close-from", "chdir", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "host"}})
	if o.bad != "" {
		a.fail("option of sudo is not static: " + o.bad)
		return
	}
	i := o.next
	for i < len(args) && !args[i].dyn && isAssignment(args[i].val) {
		name, val, _ := strings.Cut(args[i].val, "=")
		a.assignValue(name, &word{val: val}, depth)
		a.setPrefix(name, val)
		i++
	}
	if o.has("-e", "--edit") {
		a.write(lastOperand(args), "sudo -e")
		return
	}
	if o.has("-l", "--list", "-v", "--validate", "-k", "-K") && i >= len(args) {
		return
	}
	if o.has("-s", "--shell", "-i", "--login") {
		if i < len(args) {
			a.joinedString("sudo -s", args[i:], depth)
		} else {
			a.stdinScript("sudo -s", in, syntax.LangBash, depth) // the shell reads stdin
		}
		return
	}
	if i < len(args) {
		a.command(args[i:], in, depth+1)
	}
}

// stdinArg stands for the arguments xargs reads from stdin.
var stdinArg = word{val: "(stdin)", dyn: true, why: "read from standard input"}

// xargsRun reads the command xargs runs, the arguments it reads from stdin
// standing as a word that is not static.
func xargsRun(a *analyzer, inv invocation, in stdin, depth int) {
	a.record(inv)
	args := inv.args
	o := scanOpts(args, 1, optSpec{short: "EIdLnPsa", long: []string{"eof", "delimiter", "max-lines", "max-args", "max-procs", "max-chars", "arg-file", "process-slot-var"}})
	if o.bad != "" {
		a.fail("option of xargs is not static: " + o.bad)
		return
	}
	repl := ""
	if v, ok := o.val("-I"); ok {
		repl = v.val
	}
	if v, ok := o.val("--replace"); ok {
		repl = v.val
		if repl == "" {
			repl = "{}"
		}
	}
	if o.has("-i") {
		repl = "{}"
		if v, _ := o.val("-i"); v.val != "" {
			repl = v.val
		}
	}
	tmpl := args[o.next:]
	if len(tmpl) == 0 {
		tmpl = []word{staticWord("echo")}
	}
	cmd := make([]word, 0, len(tmpl)+1)
	for _, w := range tmpl {
		if repl != "" && strings.Contains(w.val, repl) {
			w = word{val: w.val, dyn: true, why: "xargs replacement", lead: w.val[:strings.Index(w.val, repl)]}
		}
		cmd = append(cmd, w)
	}
	if repl == "" {
		cmd = append(cmd, stdinArg)
	}
	a.command(cmd, stdin{kind: "dynamic"}, depth+1)
}

// findRun reads find's actions: the commands -exec and -ok run, the files
// -delete and -fprint write.
func findRun(a *analyzer, inv invocation, in stdin, depth int) {
	a.record(inv)
	args := inv.args
	for i := 1; i < len(args); i++ {
		v := args[i].val
		switch v {
		case "-delete":
			a.write("", "find -delete")
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				a.write(args[i+1].val, "find "+v)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			var cmd []word
			for ; j < len(args); j++ {
				if !args[j].dyn && (args[j].val == ";" || args[j].val == "+") {
					break
				}
				w := args[j]
				if strings.Contains(w.val, "{}") {
					w = word{val: w.val, dyn: true, why: "found file name", lead: w.val[:strings.Index(w.val, "{}")]}
				}
				cmd = append(cmd, w)
			}
			if len(cmd) > 0 {
				if cmd[0].dyn && cmd[0].why == "found file name" {
					a.fail("find " + v + " runs the files it finds")
					return
				}
				// The command inherits find's stdin (-ok/-okdir read the
				// answer from it, but a shell given no tty still reads it).
				a.command(cmd, in, depth+1)
			}
			i = j
		}
	}
}

// fdRun reads the command fd -x and -X run on the files it finds.
func fdRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	args := inv.args
	for i := 1; i < len(args); i++ {
		v := args[i].val
		if v == "-x" || v == "-X" || v == "--exec" || v == "--exec-batch" {
			var cmd []word
			hasPh := false
			for _, w := range args[i+1:] {
				if !w.dyn && w.val == ";" {
					break
				}
				if strings.Contains(w.val, "{") && strings.Contains(w.val, "}") {
					hasPh = true
					w = word{val: w.val, dyn: true, why: "found file name"}
				}
				cmd = append(cmd, w)
			}
			if !hasPh {
				cmd = append(cmd, word{val: "{}", dyn: true, why: "found file name"})
			}
			if len(cmd) > 0 && cmd[0].dyn {
				a.fail("fd " + v + " runs the files it finds")
				return
			}
			a.command(cmd, stdin{}, depth+1)
			return
		}
	}
}

// reParallelRepl matches GNU parallel's replacement strings ({}, {.}, {1}…).
var reParallelRepl = &lazyRegexp{pattern: `\{[^{}\s]*\}`}

// parallelRun parses the command GNU parallel runs, its replacement
// strings standing for the arguments.
func parallelRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	args := inv.args
	o := scanOpts(args, 1, optSpec{short: "jSadIECnLs", long: []string{"jobs", "sshlogin", "arg-file", "delimiter", "colsep", "results", "joblog", "tmpdir", "workdir", "env", "halt", "timeout"}})
	if o.bad != "" {
		a.fail("option of parallel is not static: " + o.bad)
		return
	}
	var parts []string
	for _, w := range args[o.next:] {
		if !w.dyn && strings.HasPrefix(w.val, ":::") {
			break
		}
		if w.dyn {
			a.fail("parallel with a command that is not static: " + w.val)
			return
		}
		parts = append(parts, w.val)
	}
	if len(parts) == 0 {
		a.fail("parallel reads its commands from standard input")
		return
	}
	src := strings.Join(parts, " ")
	if reParallelRepl.MatchString(src) {
		src = reParallelRepl.ReplaceAllLiteralString(src, "$PARALLEL_ARG")
	} else {
		src += " $PARALLEL_ARG"
	}
	a.source(src, syntax.LangBash, depth+1)
}

// watchRun reads the command watch runs: its words joined as a shell
// line, or with -x as an argv.
func watchRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	a.record(inv)
	o := scanOpts(args, 1, optSpec{short: "nq", long: []string{"interval", "equexit"}})
	if o.bad != "" {
		a.fail("option of watch is not static: " + o.bad)
		return
	}
	if o.has("-x", "--exec") {
		a.rest(args, o.next, in, depth)
		return
	}
	a.joinedString("watch", args[o.next:], depth)
}

// sgRun reads the command sg GROUP runs, or the shell it starts on stdin.
func sgRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	a.record(inv)
	i := 2
	if i < len(args) && args[i].val == "-c" {
		i++
	}
	if len(args) > i {
		a.joinedString("sg", args[i:], depth)
	} else {
		a.stdinScript("sg", in, syntax.LangBash, depth) // a shell reading stdin
	}
}

// newgrpRun reads the shell newgrp starts on stdin, then reads newgrp
// generically as well (analyzer.generic: recorded again, its operands
// tried as commands).
func newgrpRun(a *analyzer, inv invocation, in stdin, depth int) {
	a.record(inv)
	a.stdinScript("newgrp", in, syntax.LangBash, depth) // a shell reading stdin
	a.generic(inv, in, depth)
}

// suRun reads su's and runuser's -c strings, runuser -u's command, or the
// login shell that reads stdin.
func suRun(a *analyzer, inv invocation, in stdin, depth int) {
	prog, args := inv.prog, inv.args
	a.record(inv)
	sp := optSpec{short: "ugGsw", long: []string{"user", "group", "supp-group", "shell", "whitelist-environment"}, str: "c", strLong: []string{"command", "session-command"}}
	if o := scanOpts(args, 1, sp); prog == "runuser" && o.bad == "" && o.has("-u", "--user") && len(o.strs) == 0 {
		a.rest(args, o.next, in, depth) // runuser -u USER [--] COMMAND...
		return
	}
	o := scanAll(args, 1, sp)
	if o.bad != "" {
		a.fail(fmt.Sprintf("option of %s is not static: %s", prog, o.bad))
		return
	}
	for _, s := range o.strs {
		a.codeString(prog+" -c", s, syntax.LangBash, depth)
	}
	if len(o.strs) == 0 {
		// "su <<< 'git push'": without -c, the login shell reads stdin.
		a.stdinScript(prog, in, syntax.LangBash, depth)
	}
}

// flockRun reads the command flock FILE runs (-c's string, or an argv).
func flockRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	a.record(inv)
	sp := optSpec{short: "wE", long: []string{"timeout", "conflict-exit-code"}, str: "c", strLong: []string{"command"}}
	o := scanOpts(args, 1, sp)
	if o.bad != "" {
		a.fail("option of flock is not static: " + o.bad)
		return
	}
	i := o.next
	if i < len(args) && isDigits(args[i].val) {
		return // flock FD: no command
	}
	i++
	if i < len(args) && (args[i].val == "-c" || args[i].val == "--command") {
		if i+1 < len(args) {
			a.codeString("flock -c", args[i+1], syntax.LangBash, depth)
		}
		return
	}
	for _, s := range o.strs {
		a.codeString("flock -c", s, syntax.LangBash, depth)
	}
	a.rest(args, i, in, depth)
}

// scriptRun reads script's -c string, or the shell it starts on stdin,
// and the typescript file it writes.
func scriptRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	a.record(inv)
	o := scanOpts(args, 1, optSpec{short: "TIOBEm", long: []string{"log-timing", "log-in", "log-out", "log-io", "echo", "logging-format"}, str: "c", strLong: []string{"command"}})
	for _, s := range o.strs {
		a.codeString("script -c", s, syntax.LangBash, depth)
	}
	if len(o.strs) == 0 {
		// "script -q /dev/null <<< 'git push'": without -c, script runs
		// a shell that reads stdin.
		a.stdinScript("script", in, syntax.LangBash, depth)
	}
	if o.next < len(args) {
		a.write(args[o.next].val, "script typescript")
	}
}

// busyboxRun reads busybox's and toybox's applet as the command they run.
func busyboxRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	a.record(inv)
	if len(args) > 1 && !args[1].mayBeOption() {
		a.rest(args, 1, in, depth)
	}
}

// sudoeditRun records the file sudoedit writes.
func sudoeditRun(a *analyzer, inv invocation, _ stdin, _ int) {
	a.record(inv)
	a.write(lastOperand(inv.args), "sudoedit")
}
