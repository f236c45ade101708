package shell

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Limits on the work one line can cause.
const (
	// MaxLineBytes is the longest line Classify analyses; a longer one is
	// Unparseable.
	MaxLineBytes = 64 << 10
	// MaxDepth is how deeply code strings (bash -c, eval, here-strings,
	// wrappers) may nest before the line is Unparseable.
	MaxDepth  = 8
	maxParses = 64
)

// Classification is what one command line does, as far as a static reading
// can tell. The zero value means "runs nothing"; callers must check
// Unparseable first. A Classification is not modified after Classify
// returns it, so it may be read concurrently.
type Classification struct {
	// Argvs are the quote-removed argument vectors of every command the
	// line runs, including nested ones (a wrapper and the command it wraps
	// both appear). A dynamic word is kept as its shell source ("$X").
	Argvs [][]string
	// Programs are the normalized program basenames run anywhere in the
	// line ("/usr/bin/GIT.exe" → "git"), deduplicated in order of appearance.
	Programs []string
	// Subcommands maps a program to its subcommand chains, colon-joined and
	// with global options skipped: "git -C x push origin" gives
	// "git" → ["push"], "gh pr create" gives "gh" → ["pr:create"].
	Subcommands map[string][]string
	// Unparseable is true when part of the line cannot be resolved exactly;
	// the caller must fail closed.
	Unparseable bool
	// Reason says why the line is Unparseable (the first cause found).
	Reason string
	// Opaque lists programs that run code the line does not show (a script
	// file, a build tool, git hooks); it is a report, not a denial.
	Opaque []string

	invs     []invocation
	suspects []invocation
	writes   []FileWriteFinding
	analyzed bool // made by Classify: invs is complete even when empty
}

// invocation is one command the line runs.
type invocation struct {
	prog  string
	args  []word // args[0] is the program word as written
	chain []string
	// also are the chains the invocation does under other names ("gh api
	// repos/o/r/pulls -f …" is gh pr create): a rule on one denies it.
	also [][]string
	// hosts are the hosts the program's entry worked out while reading the
	// line, from more than its own words (gh api's GH_HOST), for its
	// hosts answer.
	hosts []string
	// env is the static variables assigned for this command only
	// ("GOPROXY=x go get", "env GOPROXY=x go get"), and vars what the
	// whole line assigns, for the entries whose hosts depend on a variable
	// (a package manager's registry): see invocation.setting.
	env  map[string]string
	vars *lineVars
}

// lineVars are the values a line assigns to variables anywhere (an export
// reaches later commands, a function body runs after a later export): by
// name, the static values, and whether any value is not static. The walk
// fills it; it is complete when Classify returns, and read-only after.
type lineVars struct {
	vals map[string][]string
	dyn  map[string]bool
}

func (l *lineVars) add(name string, v *word) {
	if l.vals == nil {
		l.vals, l.dyn = map[string][]string{}, map[string]bool{}
	}
	if v.dyn {
		l.dyn[name] = true
		return
	}
	l.vals[name] = append(l.vals[name], v.val)
}

// setting is what a variable may hold when the invocation runs, read from
// the line only (the gate's own environment is not the command's, and a
// classifier that read it would not be a function of the line): the value
// assigned for this command alone when there is one; otherwise def (the
// value it has when the line sets none; "" for none) and every static
// value the line assigns it anywhere. dyn reports a value that is not
// static, so what it holds cannot be read. fold matches the name without
// regard to case (npm reads npm_config_* so).
func (inv invocation) setting(name, def string, fold bool) (vals []string, dyn bool) {
	match := func(k string) bool { return k == name || fold && strings.EqualFold(k, name) }
	for k, v := range inv.env {
		if match(k) {
			return []string{v}, false
		}
	}
	if def != "" {
		vals = append(vals, def)
	}
	if inv.vars != nil {
		for _, k := range slices.Sorted(maps.Keys(inv.vars.vals)) {
			if match(k) {
				vals = append(vals, inv.vars.vals[k]...)
			}
		}
		for k := range inv.vars.dyn {
			if match(k) {
				dyn = true
			}
		}
	}
	return vals, dyn
}

// assignsHere reports whether one of the variables named (without regard
// to case) is assigned for this command alone.
func (inv invocation) assignsHere(names ...string) bool {
	for k := range inv.env {
		for _, n := range names {
			if strings.EqualFold(k, n) {
				return true
			}
		}
	}
	return false
}

// assigns reports whether the line assigns a variable whose name the
// predicate accepts, for this command or anywhere.
func (inv invocation) assigns(pred func(name string) bool) bool {
	for k := range inv.env {
		if pred(k) {
			return true
		}
	}
	if inv.vars != nil {
		for k := range inv.vars.vals {
			if pred(k) {
				return true
			}
		}
		for k := range inv.vars.dyn {
			if pred(k) {
				return true
			}
		}
	}
	return false
}

// Classify reads a command line (bash syntax) without running it. It never
// panics; any input it cannot resolve exactly is Unparseable with a reason.
// It is safe for concurrent use.
func Classify(line string) Classification {
	a := &analyzer{c: Classification{Subcommands: map[string][]string{}}}
	if len(line) > MaxLineBytes {
		a.fail(fmt.Sprintf("command line longer than %d bytes", MaxLineBytes))
	} else {
		a.source(line, syntax.LangBash, 0)
	}
	a.c.analyzed = true
	return a.c
}

type analyzer struct {
	c          Classification
	parses     int
	src        string // the source being walked, for word text
	noSuspects bool   // set on the analyzers suspect uses: no recursion
	progSet    map[string]bool
	subSet     map[string]bool
	copies     map[string]string // program name of a copy or link made earlier in the line → original program
	// curIn is the stdin of the command being analysed; a code string it
	// runs (`sh -c 'sh' <<< 'git push'`, `eval cat`) inherits it, so source
	// starts its walk from it instead of from no stdin.
	curIn stdin
	// prefixEnv holds the static variables assigned for the command being
	// analysed only ("GH_HOST=h gh api", "env GH_HOST=h gh api"), and for
	// the commands it runs; it is replaced, never changed in place.
	prefixEnv map[string]string
	// codePrefix is code an interpreter's options load before the inline
	// code being read (perl -MMOD, ruby -rLIB, node -r MOD), in its
	// language; inlineCode reads the two together.
	codePrefix string
	// ghHostVals are the static values the line assigns to GH_HOST
	// anywhere (an export reaches every later gh).
	ghHostVals []string
	// vars collects every assignment of the line (invocation.vars).
	vars *lineVars
}

// setPrefix adds NAME=val to the environment of the command being
// analysed (and of those it runs).
func (a *analyzer) setPrefix(name, val string) {
	env := make(map[string]string, len(a.prefixEnv)+1)
	for k, v := range a.prefixEnv {
		env[k] = v
	}
	env[name] = val
	a.prefixEnv = env
}

// maxReason bounds a Reason's length; the dynamic word it quotes may be long.
const maxReason = 200

func (a *analyzer) fail(reason string) {
	if !a.c.Unparseable {
		if len(reason) > maxReason {
			cut := maxReason
			for cut > 0 && !utf8.RuneStart(reason[cut]) {
				cut--
			}
			reason = reason[:cut] + "…"
		}
		a.c.Unparseable = true
		a.c.Reason = reason
	}
}

func (a *analyzer) write(path, reason string) {
	a.c.writes = append(a.c.writes, FileWriteFinding{Path: path, Reason: reason})
}

func (a *analyzer) opaque(prog string) {
	if !slices.Contains(a.c.Opaque, prog) {
		a.c.Opaque = append(a.c.Opaque, prog)
	}
}

// stdin is where a command's standard input comes from.
type stdin struct {
	kind string // "", "pipe", "here" (static text in body), "dynamic", "file", "dynfile" (a file named by an expansion)
	body string
}

var reSubstInData = &lazyRegexp{pattern: "\\$\\(|`"}

// source parses src in the given dialect and analyses every command in it.
func (a *analyzer) source(src string, lang syntax.LangVariant, depth int) {
	if depth > MaxDepth {
		a.fail(fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
		return
	}
	if a.parses++; a.parses > maxParses {
		a.fail(fmt.Sprintf("more than %d nested code strings", maxParses))
		return
	}
	defer func(old string) { a.src = old }(a.src)
	a.src = src
	outerIn := a.curIn // the stdin the nested code's commands inherit
	f, err := syntax.NewParser(syntax.Variant(lang), syntax.KeepComments(false)).Parse(strings.NewReader(src), "")
	if err != nil {
		a.fail("syntax error: " + oneLine(err.Error()))
		return
	}
	piped := map[*syntax.Stmt]bool{}
	callIn := map[*syntax.CallExpr]stdin{} // each simple command's stdin
	assigned := map[*syntax.Assign]bool{}
	// Walk calls f(nil) when it leaves a node: nodeIsStmt tracks the nodes
	// entered, inStack the stdin of the enclosing statements.
	var nodeIsStmt []bool
	var inStack []stdin
	hasArith, dataSubst := false, false
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			if k := len(nodeIsStmt) - 1; k >= 0 {
				if nodeIsStmt[k] {
					inStack = inStack[:len(inStack)-1]
				}
				nodeIsStmt = nodeIsStmt[:k]
			}
			return true
		}
		_, isStmt := n.(*syntax.Stmt)
		nodeIsStmt = append(nodeIsStmt, isStmt)
		switch n := n.(type) {
		case *syntax.Stmt:
			// A statement's stdin: its own redirections and pipe, else the
			// enclosing statement's (a group, loop or substitution inherits
			// it: "{ bash; } <<< 'git push'", "curl … | (sh)").
			in := stdinOf(n, piped, src)
			if in.kind == "" && len(inStack) > 0 {
				in = inStack[len(inStack)-1]
			}
			if in.kind == "" {
				in = outerIn
			}
			if execRedirectsStdin(n, src) {
				// "exec <<< 'git push'; bash": a bare exec's input redirection
				// is every later command's stdin, which the walk does not follow.
				a.fail("exec without a command redirects standard input for the rest of the line")
			}
			inStack = append(inStack, in)
			if c, ok := n.Cmd.(*syntax.CallExpr); ok {
				callIn[c] = in
			}
			for _, r := range n.Redirs {
				a.redirect(r)
			}
		case *syntax.BinaryCmd:
			if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
				s := n.Y
				for {
					if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
						s = b.X
						continue
					}
					break
				}
				piped[s] = true
			}
		case *syntax.ParamExp:
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && strings.ContainsAny(n.Exp.Word.Lit(), "PE") {
				a.fail("${x@P} expands prompt escapes, which run command substitutions")
			}
			if n.Flags != nil && strings.Contains(n.Flags.Value, "e") {
				a.fail("${(e)x} evaluates a parameter's value as code")
			}
		case *syntax.ExtGlob:
			if reZshQual.MatchString(n.Pattern.Value) {
				a.fail("zsh glob qualifier runs code: " + n.Pattern.Value)
			}
		case *syntax.Lit:
			if lang == syntax.LangZsh && reZshQualLit.MatchString(n.Value) {
				a.fail("zsh glob qualifier runs code: " + n.Value)
			}
		case *syntax.SglQuoted:
			if reSubstInData.MatchString(n.Value) {
				dataSubst = true
				if strings.Contains(n.Value, "[") {
					a.fail("subscript injection: quoted data holds [ and a command substitution")
				}
			}
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.CStyleLoop:
			hasArith = true
		case *syntax.BinaryTest:
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLss, syntax.TsLeq, syntax.TsGtr, syntax.TsGeq:
				hasArith = true
			}
		case *syntax.Assign:
			if !assigned[n] {
				a.assign(n, depth)
			}
		case *syntax.DeclClause:
			a.record(invocation{prog: n.Variant.Value, args: []word{staticWord(n.Variant.Value)}})
		case *syntax.LetClause:
			hasArith = true
			a.record(invocation{prog: "let", args: []word{staticWord("let")}})
		case *syntax.CallExpr:
			for _, as := range n.Assigns {
				assigned[as] = true
				a.assign(as, depth)
			}
			if len(n.Args) == 0 {
				return true
			}
			args := make([]word, len(n.Args))
			for i, w := range n.Args {
				args[i] = resolveWord(w, src)
			}
			outerEnv := a.prefixEnv
			for _, as := range n.Assigns {
				if as.Name != nil && as.Value != nil {
					if w := resolveWord(as.Value, src); !w.dyn {
						a.setPrefix(as.Name.Value, w.val)
					}
				}
			}
			a.command(args, callIn[n], depth)
			a.prefixEnv = outerEnv
		}
		return true
	})
	if hasArith && dataSubst {
		a.fail("arithmetic evaluation with data that holds a command substitution")
	}
}

var (
	reZshQual    = &lazyRegexp{pattern: `(^|[^a-zA-Z])e[:'"]|^\+|[^a-zA-Z]\+[a-zA-Z_]`}
	reZshQualLit = &lazyRegexp{pattern: `\((\^|[a-zA-Z#.])*(e[:'"]|\+[a-zA-Z_])`}
)

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// stdinOf works out a command's standard input from its statement.
func stdinOf(s *syntax.Stmt, piped map[*syntax.Stmt]bool, src string) stdin {
	if s == nil {
		return stdin{}
	}
	in := stdin{}
	if piped[s] {
		in.kind = "pipe"
	}
	for _, r := range s.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.WordHdoc:
			w := resolveWord(r.Word, src)
			if w.dyn {
				in = stdin{kind: "dynamic"}
			} else {
				in = stdin{kind: "here", body: w.val + "\n"}
			}
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				in = stdin{kind: "here"}
				continue
			}
			if hdocQuoted(r.Word) {
				in = stdin{kind: "here", body: r.Hdoc.Lit()}
				if len(r.Hdoc.Parts) > 0 && in.body == "" {
					if l, ok := r.Hdoc.Parts[0].(*syntax.Lit); ok {
						in.body = l.Value
					}
				}
			} else if body, ok := hdocBody(r.Hdoc); ok {
				in = stdin{kind: "here", body: body}
			} else {
				in = stdin{kind: "dynamic"}
			}
		case syntax.RdrIn, syntax.RdrInOut:
			in = stdin{kind: "file"}
			if w := resolveWord(r.Word, src); w.dyn {
				// "sh < <(echo git push)": a process substitution is a pipe;
				// another dynamic name is a file the line does not show.
				in = stdin{kind: "pipe"}
				if w.why != "process substitution" {
					in = stdin{kind: "dynfile"}
				}
			}
		case syntax.DplIn:
			in = stdin{kind: "dynamic"}
		}
	}
	return in
}

// execRedirectsStdin reports a bare "exec" (no command) that redirects
// file descriptor 0.
func execRedirectsStdin(s *syntax.Stmt, src string) bool {
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Args) != 1 {
		return false
	}
	if w := resolveWord(c.Args[0], src); w.dyn || w.val != "exec" {
		return false
	}
	for _, r := range s.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.WordHdoc, syntax.Hdoc, syntax.DashHdoc:
			return true
		}
	}
	return false
}

// isStdinPath reports a path that names the reading process's stdin.
func isStdinPath(p string) bool {
	return p == "/dev/stdin" || p == "/dev/fd/0" || p == "/proc/self/fd/0"
}

func hdocQuoted(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.SglQuoted, *syntax.DblQuoted:
			return true
		case *syntax.Lit:
			if strings.Contains(p.Value, "\\") {
				return true
			}
		}
	}
	return false
}

// redirect records file writes made by output redirections.
func (a *analyzer) redirect(r *syntax.Redirect) {
	a.netRedirect(r)
	var op string
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
		op = r.Op.String()
	case syntax.DplOut:
		w := resolveWord(r.Word, a.src)
		if !w.dyn && (w.val == "-" || isDigits(strings.TrimSuffix(w.val, "-"))) {
			return
		}
		op = ">&"
	default:
		return
	}
	w := resolveWord(r.Word, a.src)
	if w.dyn {
		a.write("", op+" to a file whose name is not static")
		return
	}
	if harmlessSink(w.val) {
		return
	}
	a.write(w.val, op+" "+w.val)
}

// netRedirect fails the line when a redirection may open a socket: bash
// connects to HOST:PORT when a redirection's target is /dev/tcp/HOST/PORT
// or /dev/udp/HOST/PORT, for input as well as output (`cat </dev/tcp/h/80`,
// `exec 3<>/dev/tcp/h/80`), so the line contacts the network with no
// network program in it. A target whose static start could still become
// such a path (`cat <$F` after `F=/dev/tcp/h/80`) fails too. Heredocs and a
// bare process substitution (/dev/fd/N) open no file.
func (a *analyzer) netRedirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	}
	if r.Word == nil {
		return
	}
	w := resolveWord(r.Word, a.src)
	if w.dyn && w.why == "process substitution" && w.lead == "" {
		return
	}
	for _, dev := range []string{"/dev/tcp/", "/dev/udp/"} {
		if w.dyn && (strings.HasPrefix(w.lead, dev) || strings.HasPrefix(dev, w.lead)) {
			a.fail("redirection target " + w.val + " is not static and may be " + dev + "HOST/PORT, a network connection")
			return
		}
		if !w.dyn && strings.HasPrefix(w.val, dev) {
			a.fail("redirection to " + w.val + " opens a network connection")
			return
		}
	}
}

func harmlessSink(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") && isDigits(p[len("/dev/fd/"):])
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Variables whose value is a command some program runs later.
var commandVars = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"GIT_SSH_COMMAND": true, "GIT_SSH": true, "GIT_PAGER": true, "PAGER": true, "GIT_EDITOR": true,
		"EDITOR": true, "VISUAL": true, "GIT_EXTERNAL_DIFF": true, "GIT_SEQUENCE_EDITOR": true,
		"GIT_ASKPASS": true, "SSH_ASKPASS": true, "GIT_PROXY_COMMAND": true, "MANPAGER": true,
		"BROWSER": true, "LESSOPEN": true, "SUDO_ASKPASS": true,
	}
})

// Variables that change what later code runs, in ways the line does not show.
var hijackVars = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"LD_PRELOAD": "", "LD_LIBRARY_PATH": "", "LD_AUDIT": "", "DYLD_INSERT_LIBRARIES": "", "DYLD_LIBRARY_PATH": "",
		"BASH_ENV": "", "ENV": "", "PROMPT_COMMAND": "", "PS4": " (evaluated under set -x)", "PS1": "", "PS0": "",
		"SHELLOPTS": "", "BASHOPTS": "", "GIT_CONFIG_PARAMETERS": "", "GIT_CONFIG_COUNT": "",
		"GIT_CONFIG_GLOBAL": "", "GIT_CONFIG_SYSTEM": "", "GIT_EXEC_PATH": "", "GIT_TEMPLATE_DIR": "",
		"PERL5OPT": "", "PERL5LIB": "", "RUBYOPT": "", "PYTHONSTARTUP": "", "PYTHONPATH": "", "ZDOTDIR": "", "IFS": " (word splitting)",
		"BASH_FUNC": "",
	}
})

// assign checks one NAME=VALUE, wherever it appears.
func (a *analyzer) assign(as *syntax.Assign, depth int) {
	if as.Name == nil {
		return
	}
	var v *word
	if as.Value != nil {
		w := resolveWord(as.Value, a.src)
		v = &w
	} else if as.Array != nil {
		v = &word{dyn: true, why: "array", val: "(...)"}
	}
	a.assignValue(as.Name.Value, v, depth)
}

func (a *analyzer) assignValue(name string, v *word, depth int) {
	if v == nil {
		return // export NAME: no new value
	}
	if a.vars == nil {
		a.vars = &lineVars{}
	}
	a.vars.add(name, v)
	if why, ok := hijackVars()[name]; ok {
		a.fail(name + " assignment changes what later commands run" + why)
		return
	}
	switch strings.ToLower(name) {
	case "http_proxy", "https_proxy", "all_proxy", "ftp_proxy", "rsync_proxy":
		// "HTTPS_PROXY=http://evil.example curl https://good.example": the
		// request goes to the proxy, a host the domain check never sees.
		a.fail(name + " assignment sends network traffic through a proxy the classifier does not check")
		return
	}
	if name == "GH_HOST" {
		if v.dyn {
			a.fail("GH_HOST assignment is not static: the host gh contacts cannot be read")
			return
		}
		a.ghHostVals = append(a.ghHostVals, v.val)
	}
	if strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
		a.fail(name + " assignment sets git configuration")
		return
	}
	if name == "NODE_OPTIONS" && (v.dyn || reNodeRequire.MatchString(v.val)) {
		a.fail("NODE_OPTIONS loads code into every node process")
		return
	}
	if commandVars()[name] {
		if v.dyn {
			a.fail(name + " holds a command that is not static")
			return
		}
		a.source(v.val, syntax.LangBash, depth+1)
	}
}

var reNodeRequire = &lazyRegexp{pattern: `(^|\s)(-r|--require|--import|--loader|--experimental-loader)\b`}

// record adds one invocation to the classification.
func (a *analyzer) record(inv invocation) {
	if a.progSet == nil {
		a.progSet, a.subSet = map[string]bool{}, map[string]bool{}
	}
	if !a.progSet[inv.prog] {
		a.progSet[inv.prog] = true
		a.c.Programs = append(a.c.Programs, inv.prog)
	}
	argv := make([]string, len(inv.args))
	for i, w := range inv.args {
		argv[i] = w.val
	}
	a.c.Argvs = append(a.c.Argvs, argv)
	if len(inv.chain) > 0 {
		j := strings.Join(inv.chain, ":")
		if k := inv.prog + "\x00" + j; !a.subSet[k] {
			a.subSet[k] = true
			a.c.Subcommands[inv.prog] = append(a.c.Subcommands[inv.prog], j)
		}
	}
	a.c.invs = append(a.c.invs, inv)
}
