package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

const syntaxBash = syntax.LangBash

// The aliasing class of inline interpreter code: code that
// reaches an exec or network module under another name. A primitive list
// (rePrimitive) sees "os.system(…)" but not "import os as o; o.system(…)",
// "from os import system as s", getattr(os, "sys"+"tem"), a module bound
// to a variable, or a computed member name. aliasCode reads what it can
// (a renaming import becomes the full name, so the primitive check sees
// the call) and refuses the rest: reflection, a module name or member
// that is not a literal, a module passed around as a value. Code that
// cannot be read is Unparseable, never "runs nothing".

// aliasCode rewrites bare code (string literals already replaced by
// markers, see splitStrings) so that names bound by renaming imports read
// as the full names they stand for, with the import statements blanked;
// why is set when the code reaches a module in a way that cannot be read.
// strs are the code's string literals, in order.
func aliasCode(lang, bare string, strs []strLit) (string, string) {
	switch lang {
	case "python":
		return pythonAliases(bare)
	case "js":
		return jsAliases(bare, strs)
	case "perl":
		if m := rePerlOpaque.FindString(bare); m != "" {
			return bare, "reaches a function by reference or name (" + strings.TrimSpace(m) + ")"
		}
		if m := rePerlExecModule.FindStringSubmatch(bare); m != nil {
			return bare, "loads " + m[2] + ", which runs programs"
		}
	case "ruby":
		if why := rubyPipeOpens(bare, strs); why != "" {
			return bare, why
		}
		if m := reRubyOpaque.FindString(bare); m != "" {
			return bare, "reaches a method by name or evaluates code (" + strings.TrimSpace(m) + ")"
		}
		if m := reRubyModuleValue.FindStringSubmatch(bare); m != nil {
			return bare, "uses the " + m[1] + " module as a value"
		}
	case "php":
		if m := rePHPOpaque.FindString(bare); m != "" {
			return bare, "calls a function by name (" + strings.TrimSpace(m) + ")"
		}
	case "lua":
		if m := reLuaOpaque.FindString(bare); m != "" {
			return bare, "loads code or reaches a library by name (" + strings.TrimSpace(m) + ")"
		}
		if m := reLuaModuleValue.FindStringSubmatch(bare); m != nil {
			return bare, "uses the " + m[1] + " library as a value"
		}
	case "r":
		if m := reROpaque.FindString(bare); m != "" {
			return bare, "calls a function by name or opens a pipe (" + strings.TrimSpace(m) + ")"
		}
		for _, s := range strs {
			if s.quote == '`' {
				return bare, "names a function in backquotes (`" + s.text + "`)"
			}
		}
	case "julia":
		if m := reJuliaOpaque.FindString(bare); m != "" {
			return bare, "builds a command or loads code (" + strings.TrimSpace(m) + ")"
		}
	}
	return bare, ""
}

// --- python ---

// pyExecModules are the modules whose members run programs or reach code
// by name; such a module used as a value (bound to another name, passed
// to a function) is a module the primitive check cannot follow.
var pyExecModules = map[string]bool{"os": true, "posix": true, "nt": true, "subprocess": true, "pty": true}

var (
	// reImport is a python import statement: "import a.b as c, d" or
	// "from a import (b as c, d)" up to the end of the statement.
	reImport = &lazyRegexp{pattern: `(?m)(^|[;:]|\n)[ \t]*(from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^;\n]*)|import[ \t]+([^;\n]*))`}
	reAsName = &lazyRegexp{pattern: `^([\w.]+|\*)(?:\s+as\s+(\w+))?$`}
	// rePyOpaque is python reflection: a name or attribute reached by a
	// string (getattr, vars, the __dict__ of a module), the import machinery,
	// code objects, deserialisation that calls what the data names, the
	// interpreter's own process-spawning internals.
	rePyOpaque = &lazyRegexp{pattern: `\b(getattr|setattr|delattr|vars|globals|locals|__import__|importlib|imp|ctypes|cffi|compile|sys\s*\.\s*modules|operator|pickle|cPickle|marshal|shelve|dill|runpy|code|codeop|_posixsubprocess|_winapi|multiprocessing\s*\.\s*util|builtins|__builtins__|breakpoint|pdb|webbrowser|pexpect|plumbum|sh)\b|__(\w+)__`}
)

// pyDunderOK are the double-underscore names that do not reach code.
var pyDunderOK = map[string]bool{"name": true, "main": true, "file": true, "doc": true, "version": true, "init": true}

// pythonAliases resolves python's renaming imports ("import subprocess as
// sp", "from os import system as s", "from subprocess import run") into
// full names, blanks the import statements, and refuses reflection, a star
// import of an exec module and an exec module used as a value.
func pythonAliases(bare string) (string, string) {
	alias := map[string]string{}
	var why string
	out := reImport.ReplaceAllStringFunc(bare, func(stmt string) string {
		m := reImport.FindStringSubmatch(stmt)
		lead := m[1]
		if m[3] != "" { // from M import …
			mod := m[3]
			if o := rePyOpaque.FindString(mod); o != "" {
				why = "imports from " + mod + ", which reaches code by name or reflection"
			}
			for _, item := range strings.Split(strings.Trim(strings.TrimSpace(m[4]), "()"), ",") {
				item = strings.TrimSpace(item)
				if item == "" {
					continue
				}
				p := reAsName.FindStringSubmatch(item)
				if p == nil {
					why = "imports names the classifier cannot read (" + item + ")"
					continue
				}
				if p[1] == "*" {
					why = "runs from " + mod + " import *, which binds names the classifier cannot follow"
					continue
				}
				name := p[1]
				if p[2] != "" {
					name = p[2]
				}
				alias[name] = mod + "." + p[1]
			}
		} else {
			for _, item := range strings.Split(m[5], ",") {
				item = strings.TrimSpace(item)
				if item == "" {
					continue
				}
				p := reAsName.FindStringSubmatch(item)
				if p == nil || p[1] == "*" {
					why = "imports names the classifier cannot read (" + item + ")"
					continue
				}
				if o := rePyOpaque.FindString(p[1]); o != "" {
					why = "imports " + p[1] + ", which reaches code by name or reflection"
				}
				if p[2] != "" {
					alias[p[2]] = p[1]
				}
			}
		}
		// The statement is blanked, its length kept: nothing in it is a
		// call, and the string markers before later code keep their count.
		return lead + strings.Repeat(" ", len(stmt)-len(lead))
	})
	if why != "" {
		return out, why
	}
	if len(alias) > 0 {
		out = renameIdents(out, alias)
	}
	for _, m := range rePyOpaque.FindAllStringSubmatch(out, -1) {
		if m[2] != "" && pyDunderOK[m[2]] {
			continue
		}
		return out, "reaches code by name or reflection (" + m[0] + ")"
	}
	if mod := moduleAsValue(out, pyExecModules); mod != "" {
		return out, "uses the " + mod + " module as a value"
	}
	return out, ""
}

var reIdent = &lazyRegexp{pattern: `[A-Za-z_][A-Za-z0-9_]*`}

// renameIdents replaces each identifier of bare code named in alias (not
// an attribute: no "." before it) by what it stands for.
func renameIdents(bare string, alias map[string]string) string {
	var b strings.Builder
	last := 0
	for _, loc := range reIdent.FindAllStringIndex(bare, -1) {
		name := bare[loc[0]:loc[1]]
		full, ok := alias[name]
		if !ok || full == name || precededByDot(bare, loc[0]) {
			continue
		}
		b.WriteString(bare[last:loc[0]])
		b.WriteString(full)
		last = loc[1]
	}
	b.WriteString(bare[last:])
	return b.String()
}

func precededByDot(s string, i int) bool {
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t') {
		i--
	}
	return i > 0 && s[i-1] == '.'
}

// moduleAsValue returns the first module of mods (those set true) that
// bare code names other than as "MODULE.member": bound to a variable,
// passed to a function, indexed.
func moduleAsValue(bare string, mods map[string]bool) string {
	for _, loc := range reIdent.FindAllStringIndex(bare, -1) {
		name := bare[loc[0]:loc[1]]
		if !mods[name] || precededByDot(bare, loc[0]) {
			continue
		}
		rest := strings.TrimLeft(bare[loc[1]:], " \t")
		if strings.HasPrefix(rest, ".") {
			continue
		}
		return name
	}
	return ""
}

// --- javascript ---

var (
	// reJSLoad finds a module load: require(…), import(…), and its
	// argument up to the closing parenthesis.
	reJSLoad = &lazyRegexp{pattern: `\b(require|import)\s*\(([^)]*)\)`}
	// reJSImportFrom is a static import: import … from "m".
	reJSImportFrom = &lazyRegexp{pattern: `\bimport\s+([^;]*?)\s*from\s*\x00`}
	// reJSBinding is a module bound to a name: const cp = require("m").
	reJSBinding = &lazyRegexp{pattern: `\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=\s*(?:require|import)\s*\(\s*\x00\s*\)`}
	// reJSDestructure is a destructuring load: const {a: b, c} = require("m").
	reJSDestructure = &lazyRegexp{pattern: `\{([^{}]*)\}\s*=\s*(?:require|import)\s*\(\s*\x00\s*\)`}
	// reJSOpaque is node's reflection and its ways to code or a process
	// the primitive check does not see: the native bindings, the module
	// loader's internals, the Function constructor reached through
	// .constructor, Reflect, a worker given code, the global object
	// indexed by a computed name.
	reJSOpaque = &lazyRegexp{pattern: `\bprocess\s*\.\s*(binding|_linkedBinding|dlopen|mainModule\s*\.\s*constructor)\b|\.\s*constructor\b|\b(_load|createRequire|Reflect|Worker|globalThis\s*\[|global\s*\[|wasi|WASI|ffi-napi|node-pty)\b|\brequire\s*\.\s*(cache|main\s*\.\s*constructor)|\brequire\s*\[`}
	// reJSComputed is a computed member access: x[…], f()[…], a[0][…].
	reJSComputed = &lazyRegexp{pattern: `[\w$)\]]\s*\[`}
	// reJSComputedCall is a member reached by a computed name and called
	// (x[k](…), x[k].call(…)): the name may be "constructor", which
	// reaches the Function constructor from any value.
	reJSComputedCall = &lazyRegexp{pattern: `[\w$)\]]\s*\[([^\[\]]*)\]\s*(\(|\.\s*(call|apply|bind)\b|\[)`}
)

// jsReflective are the member names that reach code or the module
// loader from any value.
var jsReflective = map[string]bool{"constructor": true, "__proto__": true, "prototype": true, "mainModule": true,
	"binding": true, "_linkedBinding": true, "dlopen": true, "_load": true, "require": true, "call": true, "apply": true, "bind": true}

// jsExecModules are node's modules whose members run programs.
var jsExecModules = map[string]bool{"child_process": true, "cluster": true, "worker_threads": true}

// jsAliases refuses a module load whose name is not one literal, and for
// code that loads a module that runs programs: a computed member name, a
// binding of the module used as other than "name.member", cluster, and
// child_process's fork (a node script the line does not show). It
// resolves destructuring renames ({execSync: run}) to the member's name.
func jsAliases(bare string, strs []strLit) (string, string) {
	if m := reJSOpaque.FindString(bare); m != "" {
		return bare, "reaches code by reflection or a native binding (" + strings.TrimSpace(m) + ")"
	}
	for _, loc := range reJSComputedCall.FindAllStringSubmatchIndex(bare, -1) {
		key := strings.TrimSpace(bare[loc[2]:loc[3]])
		if key != "\x00" || jsReflective[nthString(strs, bare[:loc[3]])] {
			return bare, "calls a member reached by a computed name (" + bare[loc[0]:loc[1]] + ")"
		}
	}
	execMod := false
	for _, loc := range reJSLoad.FindAllStringSubmatchIndex(bare, -1) {
		arg := strings.TrimSpace(bare[loc[4]:loc[5]])
		if arg != "\x00" {
			return bare, "loads a module whose name is not a literal (" + bare[loc[0]:loc[1]] + ")"
		}
		if jsExecModules[jsModule(nthString(strs, bare[:loc[5]]))] {
			execMod = true
		}
	}
	for _, loc := range reJSImportFrom.FindAllStringIndex(bare, -1) {
		if jsExecModules[jsModule(nthString(strs, bare[:loc[1]]))] {
			execMod = true
		}
	}
	if !execMod {
		return bare, ""
	}
	if strings.Contains(bare, "fork") {
		return bare, "forks a node script the line does not show"
	}
	if reJSComputed.MatchString(bare) {
		return bare, "loads child_process and reaches members by a computed name"
	}
	alias := map[string]string{}
	for _, m := range reJSDestructure.FindAllStringSubmatch(bare, -1) {
		for _, item := range strings.Split(m[1], ",") {
			k, v, ok := strings.Cut(item, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" || v == "" {
				continue
			}
			if !reIdent.MatchString(k) || !reIdent.MatchString(v) {
				return bare, "destructures a member the classifier cannot read (" + strings.TrimSpace(item) + ")"
			}
			alias[v] = k
		}
	}
	names := map[string]bool{}
	for _, m := range reJSBinding.FindAllStringSubmatch(bare, -1) {
		names[m[1]] = true
	}
	out := bare
	if len(alias) > 0 {
		out = renameIdents(reJSDestructure.ReplaceAllStringFunc(bare, func(s string) string {
			// The pattern itself keeps its member names: {execSync, spawn}.
			return reJSDestructure.ReplaceAllString(s, "{ } = require(\x00)")
		}), alias)
	}
	for _, loc := range reIdent.FindAllStringIndex(out, -1) {
		name := out[loc[0]:loc[1]]
		if !names[name] || precededByDot(out, loc[0]) {
			continue
		}
		rest := strings.TrimLeft(out[loc[1]:], " \t")
		if strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==") {
			continue
		}
		return out, "uses the module bound to " + name + " as a value"
	}
	return out, ""
}

// jsModule is a module specifier without node's "node:" scheme.
func jsModule(s string) string { return strings.TrimPrefix(s, "node:") }

// nthString returns the literal whose marker ends prefix (the last
// marker in it), "" when there is none.
func nthString(strs []strLit, prefix string) string {
	k := strings.Count(prefix, "\x00") + strings.Count(prefix, "\x01")
	if k == 0 || k > len(strs) {
		return ""
	}
	return strs[k-1].text
}

// --- perl, ruby, php, lua, R, julia ---

var (
	// rePerlOpaque is a sub reached by reference or name (\&f, &$f, &{…},
	// $f->(…), *{"…"}, goto &…, ->can), an indirect-object exec or system
	// ({PROG} LIST), a raw syscall, and code run from a file or a string
	// the primitive check does not read.
	rePerlOpaque = &lazyRegexp{pattern: `\\\s*&|(^|[^&])&\s*[\$\{]|->\s*[\(\$]|\*\s*\{|\bgoto\s*&|->\s*can\b|\bCORE::GLOBAL\b|\b(exec|system)\s*\{|\bsyscall\b|\bdo\s+[\$\x00]|\brequire\s+[\$\x00]`}
	// rePerlExecModule is a module that runs programs, loaded by use or
	// require (or -M, which interpreter turns into a use).
	rePerlExecModule = &lazyRegexp{pattern: `\b(use|require|no)\s+((IPC|Proc|Expect|IO::Pipe|Shell|System|Capture::Tiny|Sys::Cmd|Command::Runner|Term::ReadLine)\b[\w:]*)`}

	// reRubyOpaque is a method reached by name (send, public_send,
	// method, const_get, instance_variable_get), code evaluated from a
	// string or a binding, and raw syscalls.
	reRubyOpaque = &lazyRegexp{pattern: `\b(send|__send__|public_send|method|methods|public_method|instance_method|const_get|instance_eval|class_eval|module_eval|instance_exec|class_exec|define_method|binding|ObjectSpace|syscall|Fiddle|FFI|DL|load)\b`}
	// reRubyModuleValue is an exec module used as a value (not followed by
	// "." or "::").
	reRubyModuleValue = &lazyRegexp{pattern: `\b(Kernel|Process|Open3|PTY|IO|Socket|TCPSocket|UDPSocket)\b\s*([^.:\s]|$)`}

	// rePHPOpaque is a function called through a variable or by a name
	// string, and code loaded from a file or run through a library.
	rePHPOpaque = &lazyRegexp{pattern: `\$\$|\$\{|\$\w+\s*\(|->\s*\$|::\s*\$|\b(call_user_func|call_user_func_array|forward_static_call|forward_static_call_array|array_map|array_walk|array_walk_recursive|array_filter|array_reduce|usort|uasort|uksort|register_shutdown_function|register_tick_function|set_error_handler|set_exception_handler|iterator_apply|preg_replace_callback|Closure|ReflectionFunction|ReflectionMethod|create_function|assert|FFI|dl|mail|mb_send_mail|include|include_once|require|require_once|expect_popen)\b`}

	// reLuaOpaque is code loaded from a string or file, the global table,
	// the debug and package libraries, and a C library through ffi.
	reLuaOpaque = &lazyRegexp{pattern: `\b(_G|_ENV|load|loadstring|loadfile|dofile|package|debug|getfenv|setfenv|rawget|require)\b`}
	// reLuaModuleValue is os or io used as a value.
	reLuaModuleValue = &lazyRegexp{pattern: `\b(os|io)\b\s*([^.:\s]|$)`}

	// reROpaque is a function reached by name, a pipe connection and the
	// interfaces to native code and other processes.
	reROpaque = &lazyRegexp{pattern: `\b(pipe|do\.call|match\.fun|get|get0|mget|getFunction|getAnywhere|\.Internal|\.Call|\.External|\.Primitive|processx|callr|sys|shell|shell\.exec|parse|str2lang|str2expression|source|sys\.source|dyn\.load|library|require|requireNamespace|loadNamespace|environment|as\.name|as\.symbol|body|formals)\s*(\(|::)`}

	// reJuliaOpaque is a command built other than from a backquoted
	// literal, a C call, and code loaded from a string or a file.
	reJuliaOpaque = &lazyRegexp{pattern: `\bCmd\s*\(|@cmd|\bccall\b|@ccall|\binclude(_string)?\s*\(|\bMeta\.|\bgetfield\b|\bgetproperty\b|\binvokelatest\b|\bSockets\b|\bDownloads\b|\bdownload\s*\(|\bLibc\b|\bBase\.\w+\s*\(`}
)

// --- perl's open ---

var rePerlOpen = &lazyRegexp{pattern: `\bopen\b`}

// perlOpens reads perl's open calls, which run a command when the mode or
// the file is a pipe ("-|", "|-", "cmd |", "| cmd"): a literal command is
// analysed, as a shell line when it is one string and as argv when it is
// a list. why is set for an open whose mode or file is not a literal (it
// may be a pipe) and for a forking open with no command.
func (a *analyzer) perlOpens(bare string, strs []strLit, depth int) (why string) {
	for _, loc := range rePerlOpen.FindAllStringIndex(bare, -1) {
		if precededByDot(bare, loc[0]) || loc[0] >= 2 && (bare[loc[0]-2:loc[0]] == "->" || bare[loc[0]-2:loc[0]] == "::") {
			continue
		}
		rest := bare[loc[1]:]
		t := strings.TrimLeft(rest, " \t")
		off := loc[1] + len(rest) - len(t)
		var argsText string
		if strings.HasPrefix(t, "(") {
			inner, ok := callArgs(t)
			if !ok {
				return "open with arguments the classifier cannot read"
			}
			argsText, off = inner, off+1
		} else {
			end := strings.IndexAny(t, ";\n")
			if end < 0 {
				end = len(t)
			}
			argsText = t[:end]
			if i := reOrDie.FindStringIndex(argsText); i != nil {
				argsText = argsText[:i[0]]
			}
		}
		parts, starts := splitTopCommas(argsText)
		lit := func(k int) (string, bool) {
			if strings.TrimSpace(parts[k]) != "\x00" {
				return "", false
			}
			return nthString(strs, bare[:off+starts[k]+strings.Index(parts[k], "\x00")+1]), true
		}
		if len(parts) < 2 {
			return "open with one argument, whose file may be a pipe"
		}
		mode, ok := lit(1)
		if !ok {
			return "open with a mode or file that is not a literal (it may be a pipe)"
		}
		mode = strings.TrimSpace(mode)
		if len(parts) == 2 {
			switch {
			case mode == "-|" || mode == "|-":
				return "open forks perl itself (" + mode + ")"
			case strings.HasPrefix(mode, "|"):
				a.source(strings.TrimPrefix(mode, "|"), syntaxBash, depth+1)
			case strings.HasSuffix(mode, "|"):
				a.source(strings.TrimSuffix(mode, "|"), syntaxBash, depth+1)
			}
			continue
		}
		if !strings.Contains(mode, "|") {
			continue
		}
		var ws []word
		for k := 2; k < len(parts); k++ {
			v, ok := lit(k)
			if !ok {
				return "open runs a command that is not a literal"
			}
			ws = append(ws, staticWord(v))
		}
		if len(ws) == 1 {
			a.source(ws[0].val, syntaxBash, depth+1)
		} else {
			a.command(ws, stdin{}, depth+1)
		}
	}
	return ""
}

var reOrDie = &lazyRegexp{pattern: `\s(or|\|\|)\s`}

// splitTopCommas splits argument text at the commas outside brackets,
// with each part's offset.
func splitTopCommas(s string) ([]string, []int) {
	var parts []string
	var starts []int
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts, starts = append(parts, s[start:i]), append(starts, start)
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" || len(parts) > 0 {
		parts, starts = append(parts, s[start:]), append(starts, start)
	}
	return parts, starts
}

// reRubyOpen is a ruby call that runs a command when its first argument
// starts with "|": Kernel#open and IO's class methods that open a path.
var reRubyOpen = &lazyRegexp{pattern: `(\bKernel\s*\.\s*|(^|[^.\w:]))open\b|\bIO\s*\.\s*(read|readlines|write|foreach|binread|binwrite)\b`}

// rubyPipeOpens refuses ruby's open and IO.read family when the first
// argument is not a literal (it may be "|cmd") or is a literal pipe
// ("|cmd"); a literal path opens a file.
func rubyPipeOpens(bare string, strs []strLit) string {
	for _, loc := range reRubyOpen.FindAllStringIndex(bare, -1) {
		args, ok := callArgs(bare[loc[1]:])
		if !ok {
			return "opens a path that is not a literal (it may be a pipe)"
		}
		parts, starts := splitTopCommas(args)
		if len(parts) == 0 || strings.TrimSpace(parts[0]) != "\x00" {
			return "opens a path that is not a literal (it may be a pipe)"
		}
		at := loc[1] + strings.Index(bare[loc[1]:], args) + starts[0] + strings.Index(parts[0], "\x00") + 1
		if strings.HasPrefix(strings.TrimSpace(nthString(strs, bare[:at])), "|") {
			return "opens a pipe to a command"
		}
	}
	return ""
}
