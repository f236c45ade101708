package shell

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// confusablePairs are lookalike letters, each followed by the ASCII letter
// it imitates. Every lookalike is non-ASCII (TestConfusablesAreNotASCII),
// so normalizeProgram skips the replacer for an ASCII word.
var confusablePairs = []string{
	"а", "a", "е", "e", "і", "i", "о", "o", "р", "p", "с", "c", "у", "y", "х", "x", "ѕ", "s",
	"ј", "j", "ԁ", "d", "ɡ", "g", "һ", "h", "ӏ", "l", "ո", "n", "ս", "u", "ν", "v", "ο", "o",
	"α", "a", "ι", "i", "κ", "k", "τ", "t", "Ꭲ", "t", "ｇ", "g", "ｉ", "i", "ｔ", "t",
}

// confusables maps lookalike letters to the ASCII letter they imitate.
var confusables = sync.OnceValue(func() *strings.Replacer { return strings.NewReplacer(confusablePairs...) })

// normalizeProgram maps a program word to the basename rules match on (a
// registered alias to its program), and returns the subcommand a dashed
// form implies ("git-push" → "git", "push").
func normalizeProgram(p string) (string, string) {
	p = strings.TrimRight(p, "/")
	p = path.Base(p)
	p = strings.TrimPrefix(p, "=")
	p = strings.ToLower(p)
	if !isASCII(p) { // an ASCII word has no lookalike (and no replacer to build)
		p = confusables().Replace(p)
	}
	p = strings.TrimSuffix(p, ".exe")
	reg := registry()
	if name, ok := reg.aliases[p]; ok {
		return name, ""
	}
	for _, name := range reg.dashed {
		if sub, ok := strings.CutPrefix(p, name+"-"); ok && reg.programs[name].dashed(sub) {
			return name, sub
		}
	}
	return p, ""
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// setOf is the set of the space-separated words of s.
func setOf(s string) map[string]bool {
	// Sized once and filled without a slice of the words: the tables are
	// built on a command's first use, in hookgate on every call.
	m := make(map[string]bool, strings.Count(s, " ")+strings.Count(s, "\n")+1)
	for f := range strings.FieldsSeq(s) {
		m[f] = true
	}
	return m
}

var shells = sync.OnceValue(func() map[string]syntax.LangVariant {
	return map[string]syntax.LangVariant{
		"bash": syntax.LangBash, "sh": syntax.LangBash, "dash": syntax.LangBash, "ash": syntax.LangBash,
		"rbash": syntax.LangBash, "yash": syntax.LangBash, "posh": syntax.LangBash, "fish": syntax.LangBash,
		"csh": syntax.LangBash, "tcsh": syntax.LangBash, "zsh": syntax.LangZsh,
		"ksh": syntax.LangMirBSDKorn, "mksh": syntax.LangMirBSDKorn, "ksh93": syntax.LangMirBSDKorn,
	}
})

// wrapperSpec is a wrapper's grammar: its value-taking options, the
// number of operands before the command it runs, and what else it does.
type wrapperSpec struct {
	optSpec
	operands int
	// output says -o/--output names a file the wrapper writes.
	output bool
	// pid says -p/--pid acts on a running process: no command runs.
	pid bool
	// shell says that, given no command, it starts an interactive shell,
	// which reads its script from stdin.
	shell bool
}

// Wrappers that run the rest of their argv as a command after their own
// options and a fixed number of operands.
var wrappers = sync.OnceValue(func() map[string]wrapperSpec {
	return map[string]wrapperSpec{
		"nohup":            {},
		"noglob":           {}, // zsh precommand modifiers
		"-":                {},
		"nocorrect":        {},
		"repeat":           {operands: 1},
		"setsid":           {},
		"builtin":          {},
		"unbuffer":         {},
		"catchsegv":        {},
		"time":             {optSpec: optSpec{short: "fo", long: []string{"format", "output"}}, output: true},
		"nice":             {optSpec: optSpec{short: "n", long: []string{"adjustment"}}},
		"timeout":          {optSpec: optSpec{short: "ks", long: []string{"kill-after", "signal"}}, operands: 1},
		"stdbuf":           {optSpec: optSpec{short: "ioe", long: []string{"input", "output", "error"}}},
		"ionice":           {optSpec: optSpec{short: "cnp", long: []string{"class", "classdata", "pid", "pgid", "uid"}}, pid: true},
		"chrt":             {optSpec: optSpec{short: "TPD", long: []string{"sched-runtime", "sched-period", "sched-deadline"}}, operands: 1, pid: true},
		"taskset":          {operands: 1, pid: true},
		"chroot":           {optSpec: optSpec{long: []string{"userspec", "groups"}}, operands: 1, shell: true},
		"unshare":          {optSpec: optSpec{short: "SGRw", long: []string{"setuid", "setgid", "root", "wd"}}, shell: true},
		"nsenter":          {optSpec: optSpec{short: "tSG", long: []string{"target", "setuid", "setgid"}}, shell: true},
		"doas":             {optSpec: optSpec{short: "uC"}, shell: true},
		"caffeinate":       {optSpec: optSpec{short: "tw"}},
		"torsocks":         {optSpec: optSpec{short: "uapP"}},
		"proxychains":      {optSpec: optSpec{short: "f"}},
		"proxychains4":     {optSpec: optSpec{short: "f"}},
		"firejail":         {shell: true},
		"proot":            {optSpec: optSpec{short: "rbwvkq", long: []string{"rootfs", "bind", "cwd", "verbose", "kernel-release", "qemu"}}},
		"systemd-run":      {optSpec: optSpec{short: "upEMHs", long: []string{"unit", "property", "setenv", "machine", "host", "uid", "gid", "working-directory", "slice", "description", "nice", "service-type", "on-calendar", "on-active", "timer-property", "path-property", "socket-property"}}},
		"xvfb-run":         {optSpec: optSpec{short: "nsfepw", long: []string{"server-num", "server-args", "auth-file", "error-file", "xauth-protocol", "wait"}}},
		"dbus-run-session": {optSpec: optSpec{long: []string{"config-file", "dbus-daemon"}}},
		"sshpass":          {optSpec: optSpec{short: "pfdP"}},
		"strace":           {optSpec: optSpec{short: "oeEpsuabIXPSU", long: []string{"output", "trace", "signal", "attach", "string-limit", "user", "env"}}, output: true},
		"ltrace":           {optSpec: optSpec{short: "oepsualnwA", long: []string{"output", "library"}}, output: true},
		"exec":             {optSpec: optSpec{short: "a"}},
	}
})

// opaqueExecutors run code the line does not show (build files, scripts).
var opaqueExecutors = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"make": true, "gmake": true, "just": true, "task": true, "gradle": true, "gradlew": true,
		"mvn": true, "mvnw": true, "pytest": true, "tox": true, "nox": true, "rake": true, "ant": true, "bazel": true,
		"ninja": true, "cmake": true, "meson": true, "ctest": true, "jest": true, "vitest": true, "mocha": true,
		"tsx": true, "ts-node": true, "phpunit": true, "rspec": true, "sbt": true, "dotnet": true, "swift": true,
	}
})

// scriptRunners maps a program to its subcommands that run project scripts
// (reported opaque); "" is the program run with no subcommand.
var scriptRunners = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"npm":  {"run": true, "run-script": true, "test": true, "start": true, "install": true, "i": true, "ci": true, "t": true, "restart": true, "stop": true},
		"pnpm": {"run": true, "test": true, "start": true, "install": true, "i": true},
		"yarn": {"run": true, "test": true, "start": true, "install": true, "": true},
		"bun":  {"run": true, "test": true, "install": true},
		"go":   {"run": true, "test": true, "generate": true},
		"deno": {"run": true, "task": true, "test": true},
		"uv":   {"run": true},
	}
})

// Global options (value-taking) of programs whose subcommands matter. (A
// program in the registry says so in its entry's globals instead.)
var globalOpts = sync.OnceValue(func() map[string]optSpec {
	return map[string]optSpec{
		"docker":    {short: "Hcl", long: []string{"host", "context", "config", "log-level", "tlscacert", "tlscert", "tlskey"}},
		"podman":    {short: "c", long: []string{"connection", "url", "root", "runroot", "log-level", "storage-driver", "identity"}},
		"brew":      {},
		"apt":       {short: "ot", long: []string{"option", "target-release"}},
		"apt-get":   {short: "ot", long: []string{"option", "target-release"}},
		"poetry":    {short: "C", long: []string{"directory", "project"}},
		"twine":     {},
		"terraform": {},
		"systemctl": {short: "HMt", long: []string{"host", "machine", "type", "state", "property"}},
		"deno":      {},
		"bun":       {},
	}
})

// nonExec are common programs that never run their arguments as commands:
// their arguments are not scanned for program names. (A program in the
// registry says so in its entry instead.)
var nonExec = sync.OnceValue(func() map[string]bool {
	return map[string]bool{
		"echo": true, "cat": true, "grep": true, "egrep": true, "fgrep": true,
		"ls": true, "head": true, "tail": true, "wc": true, "cut": true, "tr": true,
		"diff": true, "cd": true, "pwd": true, "test": true, "[": true, "true": true, "false": true,
		"export": true, "declare": true, "local": true, "readonly": true, "typeset": true, "let": true, "set": true,
		"unset": true, "shift": true, "wait": true, "jobs": true, "kill": true, "sleep": true,
		"date": true, "basename": true, "dirname": true, "realpath": true, "readlink": true, "stat": true,
		"file": true, "du": true, "df": true, "less": true, "more": true, "jq": true, "yq": true,
		"base64": true, "sha256sum": true, "md5sum": true, "ps": true, "id": true, "whoami": true, "uname": true,
		"hostname": true, "column": true, "fold": true, "nl": true, "paste": true, "join": true, "comm": true, "seq": true,
		"yes": true, "exit": true, "return": true, "break": true, "continue": true, "pushd": true, "popd": true,
		"brew": true, "apt": true, "apt-get": true, "code": true, "open": true,
		"xdg-open": true, "tree": true, "awk": true, "sed": true, "docker": true,
		"podman": true, "printenv": true, "umask": true, "ulimit": true,
	}
})

// command analyses one argv (args[0] is the program word): it normalises
// the program's name, follows a copy of a program to the original, then
// reads a shell, a wrapper, a registered program by its entry, or any
// other program by the generic tables.
func (a *analyzer) command(args []word, in stdin, depth int) {
	if depth > MaxDepth {
		a.fail(fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
		return
	}
	if len(args) == 0 {
		return
	}
	w0 := args[0]
	if w0.dyn {
		a.fail(fmt.Sprintf("program name %s is not static (%s)", w0.val, w0.why))
		return
	}
	prog, dashed := normalizeProgram(w0.val)
	if dashed != "" {
		args = append([]word{staticWord(prog), staticWord(dashed)}, args[1:]...)
	}
	if orig, ok := a.copies[prog]; ok && orig != prog {
		// "cp /usr/bin/git x && ./x push": the copy runs as the original.
		delete(a.copies, prog) // a copy of a copy cannot loop
		a.command(append([]word{staticWord(orig)}, args[1:]...), in, depth+1)
		a.copies[prog] = orig
		a.opaque(prog)
	}
	if a.vars == nil {
		a.vars = &lineVars{}
	}
	inv := invocation{prog: prog, args: args, env: a.prefixEnv, vars: a.vars}
	a.curIn = in
	if lang, ok := shells()[prog]; ok {
		a.shell(inv, in, lang, depth)
		return
	}
	if w, ok := wrappers()[prog]; ok {
		a.wrapper(inv, w, in, depth)
		return
	}
	if p := programs()[prog]; p != nil {
		a.registered(p, inv, in, depth)
		return
	}
	a.unregistered(inv, in, depth)
}

// wrapper analyses a wrapper's invocation: its options, then the command
// after its operands (or, for one that starts a shell when given no
// command, the script that shell reads from stdin).
func (a *analyzer) wrapper(inv invocation, w wrapperSpec, in stdin, depth int) {
	prog, args := inv.prog, inv.args
	a.record(inv)
	o := scanOpts(args, 1, w.optSpec)
	if o.bad != "" {
		a.fail(fmt.Sprintf("option of %s is not static: %s", prog, o.bad))
		return
	}
	if w.output {
		if v, ok := o.val("-o", "--output"); ok {
			a.write(v.val, prog+" -o")
		}
	}
	if w.pid && o.has("-p", "--pid") {
		return
	}
	i := o.next
	for k := 0; k < w.operands && i < len(args); k++ {
		if args[i].dyn && !args[i].quoted {
			a.fail(fmt.Sprintf("operand of %s is not static: %s", prog, args[i].val))
			return
		}
		i++
	}
	if i >= len(args) && w.shell {
		// "chroot / <<< 'git push'", "doas -s <<< …": with no command
		// these start a shell, which reads its script from stdin.
		a.stdinScript(prog, in, syntax.LangBash, depth)
		return
	}
	a.rest(args, i, in, depth)
}

// unregistered analyses one invocation of a program the registry does not
// hold, by the generic tables: an interpreter's inline code, a runner's
// command, or else the generic reading.
func (a *analyzer) unregistered(inv invocation, in stdin, depth int) {
	if a.interpreter(inv, in, depth) || a.runner(inv, in, depth) {
		return
	}
	a.generic(inv, in, depth)
}

// generic records a program with no special grammar: its chain is the
// first operands after its known global options (globalsOf: its entry's
// globals or its globalOpts row).
func (a *analyzer) generic(inv invocation, in stdin, depth int) {
	prog, args := inv.prog, inv.args
	sp, hasSubs := globalsOf(prog)
	i := 1
	if prog == "cargo" && i < len(args) && strings.HasPrefix(args[i].val, "+") {
		i++
	}
	o := scanOpts(args, i, sp)
	if hasSubs && o.bad != "" {
		a.fail(fmt.Sprintf("subcommand or option of %s is not static: %s", prog, o.bad))
		return
	}
	i = o.next
	if hasSubs {
		// Chain: the subcommand and, when it has one, its sub-subcommand.
		if i < len(args) {
			if args[i].dyn {
				a.fail(fmt.Sprintf("subcommand of %s is not static: %s", prog, args[i].val))
				return
			}
			inv.chain = []string{args[i].val}
			o2 := scanOpts(args, i+1, optSpec{})
			if o2.next < len(args) && !args[o2.next].dyn {
				inv.chain = append(inv.chain, args[o2.next].val)
			}
			if sub := scriptRunners()[prog]; sub != nil && sub[inv.chain[0]] {
				a.opaque(prog)
			}
		} else if sub := scriptRunners()[prog]; sub != nil && sub[""] {
			a.opaque(prog)
		}
		if prog == "npm" || prog == "pnpm" || prog == "yarn" {
			// "npm pkg set scripts.x='git push' && npm run x": like
			// `git config alias.*`, a script defined in the line runs later.
			if len(inv.chain) > 1 && inv.chain[0] == "pkg" && inv.chain[1] == "set" {
				for _, w := range args {
					if w.dyn || strings.HasPrefix(w.val, "scripts") {
						a.fail(prog + " pkg set defines a package script, which changes what a later run executes")
						return
					}
				}
			}
			if len(inv.chain) > 0 && (inv.chain[0] == "exec" || inv.chain[0] == "dlx" || inv.chain[0] == "x") {
				a.record(inv)
				a.afterSub(prog, args, i+1, in, depth)
				return
			}
		}
		a.record(inv)
		a.commandWrites(inv)
		return
	}
	if opaqueExecutors()[prog] || strings.Contains(args[0].val, "/") {
		a.opaque(prog)
	}
	if prog == "make" || prog == "gmake" || prog == "just" {
		if why := inlineMakefile(args, in); why != "" {
			a.record(inv)
			a.fail(why)
			return
		}
	}
	a.record(inv)
	a.commandWrites(inv)
	a.suspect(inv, depth)
}

// inlineMakefile reports make/just reading recipes from the line itself:
// `make --eval=…`/`-E …`, or a makefile from stdin (`make -f - <<< …`,
// `just --justfile /dev/stdin`). The recipes are shell commands in make's
// syntax, which the classifier does not parse, so the line fails closed
// (notes §1.8 lists `make -f -`/`--eval` with the inline interpreters).
func inlineMakefile(args []word, in stdin) string {
	prog := args[0].val
	for j := 1; j < len(args); j++ {
		v := args[j].val
		if args[j].dyn {
			continue
		}
		if v == "--eval" || strings.HasPrefix(v, "--eval=") || v == "-E" || strings.HasPrefix(v, "-E") && len(v) > 2 && !strings.HasPrefix(v, "--") {
			if prog != "just" {
				return "make --eval runs recipes given on the command line"
			}
		}
		file := ""
		switch {
		case v == "-f" || v == "--file" || v == "--makefile" || v == "--justfile":
			if j+1 < len(args) {
				file = args[j+1].val
			}
		case strings.HasPrefix(v, "--file=") || strings.HasPrefix(v, "--makefile=") || strings.HasPrefix(v, "--justfile="):
			_, file, _ = strings.Cut(v, "=")
		case strings.HasPrefix(v, "-f") && len(v) > 2 && !strings.HasPrefix(v, "--"):
			file = v[2:]
		}
		if file == "-" || isStdinPath(file) {
			return prog + " reads a makefile from standard input"
		}
	}
	return ""
}

// afterSub analyses the command a runner subcommand runs: after "--" when
// present, otherwise from the first operand.
func (a *analyzer) afterSub(prog string, args []word, i int, in stdin, depth int) {
	for j := i; j < len(args); j++ {
		if !args[j].dyn && args[j].val == "--" {
			if j+1 < len(args) {
				a.command(args[j+1:], in, depth+1)
			}
			return
		}
	}
	o := scanOpts(args, i, optSpec{})
	if o.bad != "" {
		a.fail(fmt.Sprintf("option of %s is not static: %s", prog, o.bad))
		return
	}
	if o.next < len(args) {
		a.command(args[o.next:], in, depth+1)
	}
}

// Runners: program → subcommands that run the rest of argv, and how many
// operands come before the command. (A program in the registry says so in
// its entry's runs instead.)
var runners = sync.OnceValue(func() map[string]map[string]int {
	return map[string]map[string]int{
		"poetry": {"run": 0}, "pipenv": {"run": 0}, "pdm": {"run": 0}, "hatch": {"run": 0},
		"conda": {"run": 0}, "pixi": {"run": 0}, "mise": {"exec": 0, "x": 0}, "asdf": {"exec": 0},
		"direnv": {"exec": 1}, "op": {"run": 0}, "doppler": {"run": 0}, "aws-vault": {"exec": 1},
		"infisical": {"run": 0}, "nix": {"shell": -1, "develop": -1},
		"bun": {"x": 0}, "docker": {"exec": 1, "run": 1}, "podman": {"exec": 1, "run": 1},
	}
})

// Value-taking options of runners' run/exec subcommands.
var runnerOpts = sync.OnceValue(func() map[string]optSpec {
	return map[string]optSpec{
		"uv":        {short: "pw", long: []string{"with", "with-requirements", "with-editable", "python", "package", "extra", "group", "only-group", "no-group", "env-file", "directory", "project", "index", "default-index", "index-url", "extra-index-url", "from", "find-links", "script"}},
		"poetry":    {short: "CP", long: []string{"directory", "project"}},
		"pdm":       {short: "p", long: []string{"project", "venv"}},
		"hatch":     {short: "e", long: []string{"env"}},
		"conda":     {short: "np", long: []string{"name", "prefix", "cwd"}},
		"pixi":      {short: "e", long: []string{"environment", "manifest-path"}},
		"mise":      {short: "C", long: []string{"cd", "jobs"}},
		"op":        {long: []string{"env-file", "account"}},
		"doppler":   {short: "pc", long: []string{"project", "config", "token"}},
		"infisical": {long: []string{"env", "projectId", "path", "token"}},
		"bundle":    {long: []string{"gemfile"}},
	}
})

var dockerRunOpts = optSpec{short: "aecmpuvwhlI", long: []string{"env", "volume", "publish", "name", "workdir", "user", "network", "entrypoint", "mount", "label", "env-file", "hostname", "platform", "cpus", "memory", "add-host", "cap-add", "cap-drop", "device", "dns", "gpus", "ipc", "pid", "restart", "runtime", "security-opt", "shm-size", "tmpfs", "ulimit", "volumes-from", "log-driver", "log-opt", "detach-keys", "cidfile", "group-add", "link", "network-alias", "pull", "stop-signal", "stop-timeout", "userns", "uts", "cgroupns", "health-cmd"}}

// runner handles "uv run CMD", "docker exec C CMD", "nix shell -c CMD"...
// (runnersOf: a registered program's runs, or its runners row).
func (a *analyzer) runner(inv invocation, in stdin, depth int) bool {
	subs, ok := runnersOf(inv.prog)
	if !ok {
		if inv.prog == "npx" || inv.prog == "bunx" || inv.prog == "pnpx" {
			a.record(inv)
			a.afterSub(inv.prog, inv.args, 1, in, depth)
			return true
		}
		return false
	}
	args := inv.args
	globals, _ := globalsOf(inv.prog)
	o := scanOpts(args, 1, globals)
	if o.bad != "" || o.next >= len(args) || args[o.next].dyn {
		return false
	}
	sub := args[o.next].val
	n, ok := subs[sub]
	if !ok {
		return false
	}
	inv.chain = []string{sub}
	a.record(inv)
	i := o.next + 1
	if n < 0 { // only after -- or -c/--command
		for j := i; j < len(args); j++ {
			v := args[j].val
			if !args[j].dyn && (v == "--" || inv.prog == "nix" && (v == "-c" || v == "--command")) {
				if j+1 < len(args) {
					a.command(args[j+1:], in, depth+1)
				}
				return true
			}
		}
		return true
	}
	sp := runnerOpts()[inv.prog]
	if inv.prog == "docker" || inv.prog == "podman" {
		sp = dockerRunOpts
	}
	for j := i; j < len(args); j++ {
		if !args[j].dyn && args[j].val == "--" {
			if j+1 < len(args) {
				a.command(args[j+1:], in, depth+1)
			}
			return true
		}
	}
	o2 := scanOpts(args, i, sp)
	if o2.bad != "" {
		a.fail(fmt.Sprintf("option of %s %s is not static: %s", inv.prog, sub, o2.bad))
		return true
	}
	j := o2.next + n
	if j < len(args) {
		a.command(args[j:], in, depth+1)
	}
	return true
}

// shell handles bash/sh/zsh...: -c STRING, a script file, or stdin.
func (a *analyzer) shell(inv invocation, in stdin, lang syntax.LangVariant, depth int) {
	a.record(inv)
	args := inv.args
	hasC, hasS := false, false
	i := 1
loop:
	for i < len(args) {
		w := args[i]
		if w.dyn {
			if w.mayBeOption() && !hasC {
				a.fail(fmt.Sprintf("option of %s is not static: %s", inv.prog, w.val))
				return
			}
			break
		}
		v := w.val
		switch {
		case v == "--" || v == "-":
			i++
			break loop
		case v == "--rcfile" || v == "--init-file":
			// A start-up file the line does not show runs before any
			// command the shell reads, as BASH_ENV's would: refused like
			// it (the file is the agent's to write; an opaque report
			// would let a program rule pass what it runs).
			a.fail(fmt.Sprintf("%s %s runs a start-up file the line does not show", inv.prog, v))
			return
		case strings.HasPrefix(v, "--"):
			i++
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			i++
			for _, c := range v[1:] {
				switch c {
				case 'c':
					hasC = true
				case 's':
					hasS = true
				case 'o', 'O':
					i++
				}
			}
		default:
			break loop
		}
	}
	if hasC {
		if i >= len(args) {
			return
		}
		a.codeString(inv.prog+" -c", args[i], lang, depth)
		return
	}
	if !hasS && i < len(args) && !isStdinPath(args[i].val) {
		if args[i].dyn {
			a.fail(fmt.Sprintf("%s runs a script whose path is not static: %s", inv.prog, args[i].val))
			return
		}
		a.opaque(inv.prog)
		return
	}
	a.stdinScript(inv.prog, in, lang, depth)
}

// stdinScript analyses a script a shell reads from its standard input.
func (a *analyzer) stdinScript(prog string, in stdin, lang syntax.LangVariant, depth int) {
	switch in.kind {
	case "pipe":
		a.fail(prog + " reads its script from a pipe")
	case "dynamic":
		a.fail(prog + " reads a script with expansions from a here-document or here-string")
	case "here":
		// The script's own commands read what is left of it, already parsed.
		a.curIn = stdin{}
		a.source(in.body, lang, depth+1)
	case "file":
		a.opaque(prog)
	case "dynfile":
		a.fail(prog + " reads its script from a file whose name is not static")
	}
}

// rest analyses args[i:], when there are any, as the command a program
// runs.
func (a *analyzer) rest(args []word, i int, in stdin, depth int) {
	if i < len(args) {
		a.command(args[i:], in, depth+1)
	}
}

// codeString parses a static shell string (bash -c, trap, su -c...).
func (a *analyzer) codeString(what string, w word, lang syntax.LangVariant, depth int) {
	if w.dyn {
		a.fail(fmt.Sprintf("%s with a script that is not static: %s", what, w.val))
		return
	}
	a.source(w.val, lang, depth+1)
}

// joinedString parses argv words joined by spaces as one shell string, the
// way watch, sg and sudo -s run them.
func (a *analyzer) joinedString(what string, ws []word, depth int) {
	var parts []string
	for _, w := range ws {
		if w.dyn {
			a.fail(fmt.Sprintf("%s with a command that is not static: %s", what, w.val))
			return
		}
		parts = append(parts, w.val)
	}
	if len(parts) > 0 {
		a.source(strings.Join(parts, " "), syntax.LangBash, depth+1)
	}
}

// lastOperand returns the last word of args after the program that does
// not start with "-" ("" when none).
func lastOperand(args []word) string {
	for j := len(args) - 1; j > 0; j-- {
		if !strings.HasPrefix(args[j].val, "-") {
			return args[j].val
		}
	}
	return ""
}
