package shell

import (
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// interpSpec is an interpreter's option grammar: which options carry inline
// code and which take other values.
type interpSpec struct {
	optSpec        // str/strLong: options whose value is inline code
	lang    string // "python", "js", "perl", "ruby", "php", "lua", "r", "julia", "applescript", "pwsh", "tcl", "awk", "sed"
}

// versionedBase returns the interpreter a versioned name runs ("python3.12"
// → "python"), for the names python, pypy, ruby, perl, php, lua and node
// followed by digits and dots; "" for anything else. It is the regexp
// ^(python|pypy|ruby|perl|php|lua|node)[0-9.]*$ without the regexp, which
// cost a compile on almost every command line.
func versionedBase(prog string) string {
	base := strings.TrimRight(prog, "0123456789.")
	switch base {
	case "python", "pypy", "ruby", "perl", "php", "lua", "node":
		return base
	}
	return ""
}

var interpreters = sync.OnceValue(func() map[string]interpSpec {
	return map[string]interpSpec{
		"python":     {optSpec{short: "WXQ", str: "c"}, "python"},
		"pypy":       {optSpec{short: "WXQ", str: "c"}, "python"},
		"node":       {optSpec{short: "r", long: []string{"require", "import", "loader", "input-type", "env-file"}, str: "ep", strLong: []string{"eval", "print"}}, "js"},
		"nodejs":     {optSpec{short: "r", long: []string{"require", "import", "loader"}, str: "ep", strLong: []string{"eval", "print"}}, "js"},
		"bun":        {optSpec{str: "ep", strLong: []string{"eval", "print"}}, "js"},
		"ruby":       {optSpec{short: "IrCEF", str: "e"}, "ruby"},
		"perl":       {optSpec{short: "IMmxl0", str: "eE"}, "perl"},
		"php":        {optSpec{short: "dcz", str: "r"}, "php"},
		"lua":        {optSpec{short: "l", str: "e"}, "lua"},
		"osascript":  {optSpec{short: "ls", str: "e"}, "applescript"},
		"pwsh":       {optSpec{strLong: []string{"command", "Command", "c"}, str: "c", long: []string{"File", "file"}}, "pwsh"},
		"powershell": {optSpec{strLong: []string{"command", "Command", "c"}, str: "c", long: []string{"File", "file"}}, "pwsh"},
		"rscript":    {optSpec{str: "e"}, "r"},
		"julia":      {optSpec{str: "e"}, "julia"},
		"expect":     {optSpec{str: "c"}, "tcl"},
		"tclsh":      {optSpec{}, "tcl"},
		"awk":        {optSpec{short: "vFfW", long: []string{"assign", "field-separator", "file"}}, "awk"},
		"gawk":       {optSpec{short: "vFfWEil", long: []string{"assign", "field-separator", "file", "include", "load"}}, "awk"},
		"mawk":       {optSpec{short: "vFfW"}, "awk"},
		"nawk":       {optSpec{short: "vFf"}, "awk"},
		"sed":        {optSpec{short: "lfs", long: []string{"line-length", "file"}, str: "e", strLong: []string{"expression"}}, "sed"},
		"gsed":       {optSpec{short: "lf", long: []string{"line-length", "file"}, str: "e", strLong: []string{"expression"}}, "sed"},
	}
})

// interpreter handles interpreters with inline code; false when prog is not one.
func (a *analyzer) interpreter(inv invocation, in stdin, depth int) bool {
	prog := inv.prog
	key := prog
	if base := versionedBase(prog); base != "" {
		key = base
	}
	if key == "python" || strings.HasPrefix(prog, "python") {
		key = "python"
	}
	sp, ok := interpreters()[key]
	if !ok {
		if prog == "deno" && len(inv.args) > 2 && inv.args[1].val == "eval" {
			a.record(inv)
			a.inlineCode(prog, "js", inv.args[2], depth)
			return true
		}
		return false
	}
	args := inv.args
	a.record(inv)
	if sp.lang == "pwsh" {
		a.pwsh(inv, in, depth)
		return true
	}
	if key == "perl" || key == "sed" || key == "gsed" {
		if inPlace(args, sp.short+sp.str) {
			a.write(lastOperand(args), prog+" -i")
		}
	}
	if key == "python" {
		// python -m MODULE args: the module is the program.
		for j := 1; j < len(args); j++ {
			v := args[j].val
			if v == "-m" && j+1 < len(args) {
				a.command(args[j+1:], in, depth+1)
				return true
			}
			if !strings.HasPrefix(v, "-") || args[j].dyn {
				break
			}
		}
	}
	o := scanOpts(args, 1, sp.optSpec)
	if o.bad != "" {
		a.fail(fmt.Sprintf("option of %s is not static: %s", prog, o.bad))
		return true
	}
	pre, file := preloads(sp.lang, args[1:o.next])
	if file != "" {
		a.opaque(prog) // node -r ./hook.js: code the line does not show
	}
	defer func(p string) { a.codePrefix = p }(a.codePrefix)
	a.codePrefix = pre
	if len(o.strs) > 0 {
		for _, s := range o.strs {
			if sp.lang == "sed" {
				a.sedScript(prog, s)
			} else {
				a.inlineCode(prog, sp.lang, s, depth)
			}
		}
		return true
	}
	hasFile := o.has("-f", "--file", "-File", "--File")
	fromStdin := false // "awk -f - <<< …", "perl /dev/stdin <<< …": the code is stdin
	if f, ok := o.val("-f", "--file", "-File", "--File"); ok && !f.dyn && (f.val == "-" || isStdinPath(f.val)) {
		hasFile, fromStdin = false, true
	}
	if sp.lang == "awk" || sp.lang == "sed" {
		if hasFile {
			a.opaque(prog)
			return true
		}
		if fromStdin {
			a.stdinCode(prog, sp.lang, in, depth)
			return true
		}
		if o.next < len(args) {
			if sp.lang == "sed" {
				a.sedScript(prog, args[o.next])
			} else {
				a.inlineCode(prog, sp.lang, args[o.next], depth)
			}
		}
		return true
	}
	if hasFile || (o.next < len(args) && args[o.next].val != "-" && !isStdinPath(args[o.next].val)) {
		if o.next < len(args) && args[o.next].dyn {
			a.fail(fmt.Sprintf("%s runs a script whose path is not static: %s", prog, args[o.next].val))
			return true
		}
		a.opaque(prog)
		return true
	}
	a.stdinCode(prog, sp.lang, in, depth)
	return true
}

// pwsh reads PowerShell's command line: a script file is opaque; any
// other option may carry code (-Command, -EncodedCommand, and the unique
// prefixes PowerShell accepts for them: -c, -comm, -e, -enc), and every
// PowerShell statement runs a command by names and quoting the classifier
// does not read, so the line is Unparseable, as it is when no file is
// given (the code is stdin).
func (a *analyzer) pwsh(inv invocation, in stdin, depth int) {
	args := inv.args
scan:
	for i := 1; i < len(args); i++ {
		w := args[i]
		v := strings.ToLower(strings.TrimLeft(w.val, "-/"))
		switch {
		case w.dyn:
			a.fail(inv.prog + " argument is not static: " + w.val)
			return
		case v == "noprofile" || v == "nop" || v == "nologo" || v == "noninteractive" || v == "noni":
			continue
		case (v == "file" || v == "f") && i+1 < len(args):
			a.opaque(inv.prog)
			return
		case !strings.HasPrefix(w.val, "-"):
			a.opaque(inv.prog) // pwsh script.ps1
			return
		}
		break scan
	}
	a.fail(inv.prog + " code is PowerShell, whose commands the classifier cannot read")
}

// preloads returns the modules an interpreter's options load before its
// code (perl -MMOD and -mMOD, ruby -rLIB, node -r/--require/--import), as
// code of its language to read before the inline code, and the first one
// that is a file (node -r ./hook.js), whose code the line does not show.
func preloads(lang string, opts []word) (code, file string) {
	var b strings.Builder
	for i := 0; i < len(opts); i++ {
		v := opts[i].val
		next := func() string {
			if i+1 < len(opts) {
				i++
				return opts[i].val
			}
			return ""
		}
		var mod string
		switch {
		case lang == "perl" && (strings.HasPrefix(v, "-M") || strings.HasPrefix(v, "-m")):
			if mod = v[2:]; mod == "" {
				mod = next()
			}
			mod, _, _ = strings.Cut(strings.TrimPrefix(mod, "-"), "=")
			mod, _, _ = strings.Cut(mod, " ")
			fmt.Fprintf(&b, "use %s;\n", mod)
		case lang == "ruby" && strings.HasPrefix(v, "-r"):
			if mod = v[2:]; mod == "" {
				mod = next()
			}
			fmt.Fprintf(&b, "require '%s'\n", mod)
		case lang == "js" && (v == "-r" || v == "--require" || v == "--import" || v == "--loader" || v == "--experimental-loader"):
			mod = next()
			fallthrough
		case lang == "js" && (strings.HasPrefix(v, "--require=") || strings.HasPrefix(v, "--import=") || strings.HasPrefix(v, "--loader=")):
			if mod == "" {
				_, mod, _ = strings.Cut(v, "=")
			}
			if strings.HasPrefix(mod, ".") || strings.HasPrefix(mod, "/") || strings.HasPrefix(mod, "file:") {
				if file == "" {
					file = mod
				}
				continue
			}
			fmt.Fprintf(&b, "require('%s');\n", mod)
		}
	}
	return b.String(), file
}

// stdinCode analyses code an interpreter reads from its standard input.
func (a *analyzer) stdinCode(prog, lang string, in stdin, depth int) {
	switch in.kind {
	case "pipe":
		a.fail(prog + " reads its code from a pipe")
	case "dynamic":
		a.fail(prog + " reads code with expansions from a here-document or here-string")
	case "here":
		if lang == "sed" {
			a.sedScript(prog, staticWord(in.body))
		} else {
			a.inlineCode(prog, lang, staticWord(in.body), depth)
		}
	case "file":
		a.opaque(prog)
	case "dynfile":
		a.fail(prog + " reads its code from a file whose name is not static")
	}
}

// inPlace reports a -i (or --in-place) flag in argv's option clusters;
// letters in valueLetters end a cluster (the rest is their value).
func inPlace(args []word, valueLetters string) bool {
	for _, w := range args[1:] {
		v := w.val
		if w.dyn || v == "--" {
			return false
		}
		if v == "--in-place" || strings.HasPrefix(v, "--in-place=") {
			return true
		}
		if len(v) < 2 || v[0] != '-' || v[1] == '-' {
			continue
		}
		for _, c := range []byte(v[1:]) {
			if c == 'i' {
				return true
			}
			if strings.IndexByte(valueLetters, c) >= 0 {
				break
			}
		}
	}
	return false
}

func (a *analyzer) sedScript(prog string, w word) {
	if w.dyn {
		a.fail(prog + " script is not static: " + w.val)
		return
	}
	if reSedExecCmd.MatchString(w.val) || reSedSubstE.MatchString(w.val) {
		a.fail(prog + " script runs a command (e)")
	}
	if f, ok := sedWriteFile(w.val); ok && !harmlessSink(f) {
		// "sed -n 'w out' f", "sed 's/a/b/w out' f": the w command and the
		// s///w flag write a file.
		a.write(f, prog+" w")
	}
}

// sedWriteFile finds a w/W command or an s///w flag in a sed script and
// returns the file it writes. It walks commands, addresses and s/y
// sections; the file name runs to the end of the line.
func sedWriteFile(sc string) (string, bool) {
	i := 0
	n := len(sc)
	toEOL := func() string {
		j := strings.IndexByte(sc[i:], '\n')
		if j < 0 {
			j = n - i
		}
		v := strings.TrimSpace(sc[i : i+j])
		i += j
		return v
	}
	// section skips a delimited section starting after its opening delimiter.
	section := func(d byte) {
		for i < n && sc[i] != d {
			if sc[i] == '\\' {
				i++
			}
			i++
		}
		i++ // the closing delimiter
	}
	address := func() {
		switch {
		case i < n && sc[i] >= '0' && sc[i] <= '9':
			for i < n && (sc[i] >= '0' && sc[i] <= '9' || sc[i] == '~') {
				i++
			}
		case i < n && sc[i] == '$':
			i++
		case i < n && sc[i] == '/':
			i++
			section('/')
		case i+1 < n && sc[i] == '\\':
			d := sc[i+1]
			i += 2
			section(d)
		}
		for i < n && (sc[i] == 'I' || sc[i] == 'M') {
			i++
		}
	}
	for i < n {
		c := sc[i]
		if strings.IndexByte(" \t\n;{}!", c) >= 0 {
			i++
			continue
		}
		address()
		for i < n && (sc[i] == ' ' || sc[i] == ',' || sc[i] == '!' || sc[i] == '+' || sc[i] == '~') {
			i++
			address()
		}
		if i >= n {
			break
		}
		c = sc[i]
		i++
		switch c {
		case 'w', 'W':
			return toEOL(), true
		case 's', 'y':
			if i >= n {
				return "", false
			}
			d := sc[i]
			i++
			section(d)
			section(d)
			for i < n && strings.IndexByte(";\n}", sc[i]) < 0 {
				if sc[i] == 'w' && c == 's' {
					i++
					return toEOL(), true
				}
				i++
			}
		case 'a', 'i', 'c', 'r', 'R', 'e', 'q', 'Q', 'l', 'L':
			toEOL()
		case 'b', 't', 'T', ':', 'v':
			for i < n && strings.IndexByte(";\n", sc[i]) < 0 {
				i++
			}
		case '#':
			toEOL()
		}
	}
	return "", false
}

var (
	reSedExecCmd = &lazyRegexp{pattern: `(^|[;\n{}])\s*([0-9]+|\$|/[^/]*/)?(,([0-9]+|\$|/[^/]*/))?\s*e(\s|;|$)`}
	reSedSubstE  = &lazyRegexp{pattern: `(^|[;\n{}])\s*([0-9]+|\$|/[^/]*/)?\s*s/([^/\\]|\\.)*/([^/\\]|\\.)*/[gpiImM0-9]*e`}
)

// Exec primitives: calls whose arguments are a command to run.
var rePrimitive = &lazyRegexp{pattern: `\b(os\.system|os\.popen|os\.exec[lv]p?e?|os\.spawn[lv]p?e?|os\.posix_spawnp?|subprocess\.[A-Za-z_]+|pty\.spawn|commands\.getoutput|system|popen|shell_exec|passthru|proc_open|pcntl_exec|exec|execSync|execFileSync|execFile|spawn|spawnSync|Open3\.[a-z0-9_]+|IO\.popen|Process\.spawn|Kernel\.[a-z]+|ProcessBuilder|Runtime\.getRuntime\(\)\.exec|Deno\.run|Deno\.Command|Bun\.spawn(Sync)?|os\.execute|system2|asyncio\.create_subprocess_(exec|shell)|readpipe|eval)\b`}

// reNetPrimitive finds inline code that opens network connections (a
// socket, an HTTP client, a mail or FTP client) in the languages inline
// code is read for; it runs against the whole code, module names being
// strings in some of them (require("net")).
var reNetPrimitive = &lazyRegexp{pattern: `\b(import|from)\s+(socket|ssl|urllib[\w.]*|http\.client|http|requests|httpx|aiohttp|urllib3|ftplib|smtplib|poplib|imaplib|telnetlib|paramiko|websockets?|xmlrpc[\w.]*)\b|\basyncio\.open_connection\b|` +
	`\b(require|import)\s*\(\s*['"](node:)?(net|http|https|http2|dgram|tls|dns|undici|axios|node-fetch|ws)['"]\s*\)|\bfrom\s+['"](node:)?(net|http|https|http2|dgram|tls|dns|undici)['"]|['"]node:(net|http|https|http2|dgram|tls|dns)['"]|\bfetch\s*\(|\bnew\s+WebSocket\b|\bXMLHttpRequest\b|` +
	`\bIO::Socket\b|\buse\s+Socket\b|\bLWP\b|\bHTTP::Tiny\b|\bNet::[A-Z]\w*|` +
	`\b(TCPSocket|UDPSocket|Socket\.(new|tcp|udp))\b|\brequire\s+['"](socket|net/http|open-uri)['"]|\bURI\.open\b|` +
	`\b(fsockopen|stream_socket_client|socket_create|curl_init)\b|\bfile_get_contents\s*\(\s*['"](https?|ftp)://|` +
	`\brequire\s*\(?\s*['"]socket['"]|\b(download\.file|socketConnection|url)\s*\(`}

// Primitives whose target the heuristic cannot read at all.
var reOpaquePrimitive = &lazyRegexp{pattern: `\b(__import__|importlib|ctypes|getattr|compile|Invoke-Expression|iex|Start-Process|Function|vm\.run\w*|require\s*\(\s*['"]child_process['"]\s*\)\s*\[)\b|child_process['"]\s*\)\s*\[`}

var (
	reDoShell       = &lazyRegexp{pattern: `(?i)do\s+shell\s+script\s+"((?:[^"\\]|\\.)*)"`}
	reQx            = &lazyRegexp{pattern: `\bqx\s*[^\s\w]|%x\s*[^\s\w]`}
	reAwkLiteralCmd = &lazyRegexp{pattern: `system\s*\(\s*\x00\s*\)|\x00\s*\|\s*getline|\|\s*\x00`}
)

// reTclExec finds the Tcl commands that run a program or code, open a
// pipe or a socket, or rename a command, and a command word that is a
// substitution ($cmd, which may name any of them).
var reTclExec = &lazyRegexp{pattern: `(^|[\s;\[{])(exec|spawn|open|socket|eval|uplevel|interp|rename|subst|source|load|package|namespace|after|trace|fileevent|send|system|apply|proc)\b|(^|[;\[\n{])\s*\$`}

// reAwkIndirect is gawk's indirect call (@name(…), which may name
// system) and its @include/@load/@namespace directives.
var reAwkIndirect = &lazyRegexp{pattern: `@\s*[A-Za-z_]\w*\s*\(|@(include|load|namespace)\b`}

var (
	reDoShellWord = &lazyRegexp{pattern: `(?i)do\s+shell\s+script`}
	// reAppleOpaque is AppleScript's other ways to run a command or code:
	// Terminal's do script, run script, System Events keystrokes, and
	// JavaScript for Automation's doShellScript and Objective-C bridge.
	reAppleOpaque = &lazyRegexp{pattern: `(?i)\bdo\s+script\b|\brun\s+script\b|\bkeystroke\b|doShellScript|\bObjC\b|NSTask|\bload\s+script\b`}
)

// appleScript reads osascript code: the command of every do shell script
// whose command is one literal is analysed; one built at run time (a
// literal joined with &, a variable) and the other ways AppleScript runs
// a command or code make the line Unparseable.
func (a *analyzer) appleScript(prog, code string, depth int) {
	if m := reAppleOpaque.FindString(code); m != "" {
		a.fail(prog + " code runs a command or script the classifier cannot read (" + m + ")")
		return
	}
	ms := reDoShell.FindAllStringSubmatchIndex(code, -1)
	if len(reDoShellWord.FindAllStringIndex(code, -1)) != len(ms) {
		a.fail(prog + " code runs a shell script the classifier cannot read")
		return
	}
	for _, m := range ms {
		if strings.HasPrefix(strings.TrimLeft(code[m[1]:], " \t"), "&") {
			a.fail(prog + " code runs a shell script built at run time")
			return
		}
		a.source(unescapeLit(code[m[2]:m[3]]), syntax.LangBash, depth+1)
	}
}

// reAwkRedirect finds awk output redirection to a file: print > "f",
// printf(…) >> f.
var reAwkRedirect = &lazyRegexp{pattern: `\bprintf?\b[^;}|\n]*>`}

// reCodeWrite finds file-writing calls in inline interpreter code
// (heuristic, fail closed: the path is not read).
var reCodeWrite = &lazyRegexp{pattern: `\bopen\s*\([^)]*['"][rbtU]*[wax+]|\bopen\s*\(?\s*(my\s+)?[$\w]+\s*,\s*['"]?\s*(\+?[>|]|>>)|\b(write_text|write_bytes|writeFile|writeFileSync|appendFile|appendFileSync|createWriteStream|copyFile|copyFileSync|file_put_contents|fopen|fwrite|unlink|unlinkSync|rmSync|rmdir|rmtree|remove|rename|renameSync|makedirs|mkdir|mkdirSync|symlink|truncate|chmod|copyfile|copy2|copytree|move|writelines|savetxt|to_csv|to_json|dump)\s*\(|\bFile\.(write|open\s*\([^)]*['"][wa])|\bIO\.write|Deno\.write\w*|Bun\.write`}

var reAwkPipe = &lazyRegexp{pattern: `\|\s*getline|\|&|print[^;|}]*\|`}

// reAwkPrintPipe finds awk's print or printf to a command.
var reAwkPrintPipe = &lazyRegexp{pattern: `\bprintf?\b[^;|}]*\|`}

// inlineCode applies the inline-code heuristic: code with no exec primitive
// is data; a primitive whose command is a string literal is classified; any
// other primitive makes the line unparseable. Before the primitives are
// looked for, aliasCode reads names bound by renaming imports as the full
// names they stand for and refuses reflection and modules reached by a
// name that is not a literal (the aliasing class).
func (a *analyzer) inlineCode(prog, lang string, w word, depth int) {
	if w.dyn {
		if reSubstLike.MatchString(w.val) || rePrimitive.MatchString(w.val) || strings.Contains(w.val, "$") {
			a.fail(fmt.Sprintf("%s code is not static: %s", prog, w.val))
		}
		return
	}
	code := a.codePrefix + w.val
	strs, bare := splitStrings(code)
	if lang == "pwsh" {
		// Every PowerShell statement runs a command (a cmdlet, an alias, a
		// program), by names and quoting the classifier does not read.
		a.fail(prog + " code is PowerShell, whose commands the classifier cannot read")
		return
	}
	if lang == "tcl" && reTclExec.MatchString(bare) {
		a.fail(prog + " code runs a command or code the classifier cannot read")
		return
	}
	if lang == "applescript" {
		a.appleScript(prog, code, depth)
		return
	}
	if reOpaquePrimitive.MatchString(bare) {
		a.fail(prog + " code loads or calls code the classifier cannot read")
		return
	}
	if lang != "awk" && lang != "sed" && reNetPrimitive.MatchString(code) {
		// Where it connects and what it sends cannot be read: every
		// program and network rule denies it (a script file, which the
		// line does not show, is opaque instead).
		a.fail(prog + " code opens network connections the classifier cannot read")
		return
	}
	if lang == "awk" && reAwkIndirect.MatchString(bare) {
		a.fail(prog + " program calls a function by name or loads code (gawk @), which the classifier cannot read")
		return
	}
	bare, why := aliasCode(lang, bare, strs)
	if why != "" {
		a.fail(fmt.Sprintf("%s code %s: the classifier cannot read what it runs", prog, why))
		return
	}
	if lang == "perl" {
		if why := a.perlOpens(bare, strs, depth); why != "" {
			a.fail(fmt.Sprintf("%s code %s: the classifier cannot read what it runs", prog, why))
			return
		}
	}
	found := false
	// Backticks and qx// in perl/ruby/php, %x() in ruby, julia's command
	// literals.
	if lang == "perl" || lang == "ruby" || lang == "js" || lang == "php" || lang == "julia" {
		for _, s := range strs {
			if s.quote == '`' {
				found = true
				if lang == "js" {
					continue // template literal: data unless passed to a primitive
				}
				if strings.Contains(s.text, "#{") || strings.Contains(s.text, "$") || strings.Contains(s.text, "{") && lang == "php" {
					a.fail(prog + " backtick command is not static: " + s.text)
					return
				}
				a.source(s.text, syntax.LangBash, depth+1)
			}
		}
		if reQx.MatchString(bare) {
			a.fail(prog + " qx or %x command the classifier cannot read")
			return
		}
	}
	if lang == "awk" && (strings.Contains(bare, "system") || reAwkPipe.MatchString(bare)) {
		lits := stringsOnly(strs, '"')
		if len(lits) == 0 {
			a.fail(prog + " program runs a command the classifier cannot read")
			return
		}
		if !reAwkLiteralCmd.MatchString(bare) {
			a.fail(prog + " program runs a command the classifier cannot read")
			return
		}
		// A command awk prints to (print … | "cmd", a |& coprocess)
		// reads awk's output: a shell there runs a script the line does
		// not show, unless it is only static text the literals hold too.
		outer := a.curIn
		if reAwkPrintPipe.MatchString(bare) || strings.Contains(bare, "|&") {
			a.curIn = stdin{kind: "pipe"}
		}
		for _, l := range lits {
			a.source(l, syntax.LangBash, depth+1)
		}
		a.curIn = outer
		return
	}
	if lang == "awk" || lang == "sed" {
		if lang == "awk" && reAwkRedirect.MatchString(bare) {
			a.write("", prog+" print > file") // awk '{print > "out"}'
		}
		return
	}
	if reCodeWrite.MatchString(code) {
		// python -c 'open("f","w")', node -e 'fs.writeFileSync(…)': the
		// notes' §1.8 "interpreter code with open(…, 'w')" write.
		a.write("", prog+" code writes a file")
	}
	locs := rePrimitive.FindAllStringIndex(bare, -1)
	if len(locs) == 0 {
		if found {
			return
		}
		return
	}
	// Each primitive must be called with literal arguments only.
	for _, loc := range locs {
		name := bare[loc[0]:loc[1]]
		rest := bare[loc[1]:]
		argsText, ok := callArgs(rest)
		if !ok {
			if strings.HasPrefix(name, "subprocess.") && !strings.Contains(rest, "(") {
				continue
			}
			if destructured(bare[:loc[0]], rest) {
				continue // const {execSync} = require(...): the later call is checked
			}
			a.fail(fmt.Sprintf("%s code calls %s with a command the classifier cannot read", prog, name))
			return
		}
		n := strings.Count(argsText, "\x00")
		left := reArgNoise.ReplaceAllString(argsText, "")
		if n == 0 || left != "" {
			a.fail(fmt.Sprintf("%s code calls %s with a command the classifier cannot read", prog, name))
			return
		}
		lits := nextStrings(strs, bare[:loc[1]], n)
		if len(lits) != n {
			a.fail(fmt.Sprintf("%s code calls %s with a command the classifier cannot read", prog, name))
			return
		}
		if name == "eval" || (name == "exec" && lang == "python") {
			for _, l := range lits {
				a.inlineCode(prog, lang, staticWord(l), depth+1)
			}
			continue
		}
		if n == 1 && !strings.Contains(argsText, "[") {
			a.source(lits[0], syntax.LangBash, depth+1)
			continue
		}
		ws := make([]word, len(lits))
		for i, l := range lits {
			ws[i] = staticWord(l)
		}
		if depth+1 > MaxDepth {
			a.fail(fmt.Sprintf("nesting deeper than %d levels", MaxDepth))
			return
		}
		a.command(ws, stdin{}, depth+1)
	}
}

// destructured reports a primitive named inside a destructuring pattern
// ("{execSync, spawn}") without renaming.
func destructured(before, after string) bool {
	b := strings.TrimRight(before, " \t")
	a := strings.TrimLeft(after, " \t")
	return (strings.HasSuffix(b, "{") || strings.HasSuffix(b, ",")) && (strings.HasPrefix(a, "}") || strings.HasPrefix(a, ","))
}

var reSubstLike = &lazyRegexp{pattern: "`|\\$\\("}

// reArgNoise is what may surround literal arguments: separators, list
// brackets and keyword arguments with constant values.
var reArgNoise = &lazyRegexp{pattern: `[\s,\[\]()\x00]|\b[a-z_]+\s*=\s*(True|False|None|true|false|\d+)\b|\b(shell|check|text|capture_output)\b|=`}

type strLit struct {
	quote byte
	text  string
}

// splitStrings separates string literals from code. The returned code has
// each literal replaced by a NUL byte, so primitives inside strings are not
// seen as calls.
func splitStrings(code string) ([]strLit, string) {
	var lits []strLit
	var b strings.Builder
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c != '"' && c != '\'' && c != '`' {
			if c == 0 || c == 1 {
				c = '?' // the markers below must be unambiguous
			}
			b.WriteByte(c)
			continue
		}
		// f-strings and template interpolation are dynamic text; keep the
		// literal but mark it with its quote.
		j := i + 1
		var t strings.Builder
		for j < len(code) && code[j] != c {
			if code[j] == '\\' && j+1 < len(code) {
				t.WriteByte(code[j+1])
				j += 2
				continue
			}
			t.WriteByte(code[j])
			j++
		}
		lits = append(lits, strLit{quote: c, text: t.String()})
		// An f-string prefix or ${} interpolation makes the literal dynamic.
		if (i > 0 && (code[i-1] == 'f' || code[i-1] == 'F')) || (c == '`' && strings.Contains(t.String(), "${")) || (c == '"' && strings.Contains(t.String(), "#{")) {
			b.WriteByte(1)
		} else {
			b.WriteByte(0)
		}
		i = j
	}
	return lits, b.String()
}

func stringsOnly(lits []strLit, q byte) []string {
	var out []string
	for _, l := range lits {
		if l.quote == q {
			out = append(out, l.text)
		}
	}
	return out
}

// nextStrings returns the n literals that follow the prefix of bare code.
func nextStrings(lits []strLit, prefix string, n int) []string {
	k := strings.Count(prefix, "\x00") + strings.Count(prefix, "\x01")
	var out []string
	for j := k; j < len(lits) && len(out) < n; j++ {
		out = append(out, lits[j].text)
	}
	return out
}

// callArgs returns the argument text of a call: "(…)" balanced, or a
// perl/ruby style bare list up to ";" or a newline.
func callArgs(rest string) (string, bool) {
	t := strings.TrimLeft(rest, " \t")
	if strings.HasPrefix(t, "(") {
		depth := 0
		for i := 0; i < len(t); i++ {
			switch t[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return t[1:i], true
				}
			}
		}
		return "", false
	}
	if strings.HasPrefix(t, "\x00") {
		end := strings.IndexAny(t, ";\n}")
		if end < 0 {
			end = len(t)
		}
		return t[:end], true
	}
	return "", false
}

func unescapeLit(s string) string {
	return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
}
