package shell

import (
	"slices"
	"strings"

	"github.com/barry-rocks/sandbox/policy"
)

// The package-manager family: go, npm, pnpm, yarn, pip, pip3, uv, cargo,
// gem and bundle. Each reports the registry hosts it contacts when it
// fetches: the registry the line names (an option, or a variable the line
// assigns: GOPROXY, npm_config_registry, PIP_INDEX_URL) or else the tool's
// default, and the hosts of URLs among its arguments (a git or tarball
// package). Three things are not on the line, and each is answered apart:
//
//   - The gate's own environment (hookgate runs with the harness's): it
//     is not the command's shell's and is never read, so the classifier
//     stays a function of the line. A registry set there (a corporate
//     GOPROXY) is not seen: docs/limits.md.
//   - What the line cannot say: a registry or a package in a variable
//     ("npm install $PKG", "GOPROXY=$P go get"), GOPROXY=direct with no
//     module path named. The entry's unread answer says so, and Decide
//     refuses the line under domain rules, as it refused every package
//     manager before.
//   - The tool's configuration files (a project's .npmrc or
//     .cargo/config.toml, the user's pip.conf), which can send it to any
//     host: configs names them, and Decide (which reads the filesystem
//     already) refuses when one that may redirect the tool exists.
//
// A manifest or lockfile that names a package's own URL (package-lock's
// resolved URLs, a Cargo.toml git dependency, a requirements file's
// --index-url) is not read: docs/limits.md.
func pkgPrograms() map[string]*program {
	npm := &program{globals: &optSpec{short: "wC", long: []string{"prefix", "workspace", "userconfig", "registry", "cache", "loglevel"}},
		nonExec: true, actions: pkgActions(setOf(`install i ci add update upgrade outdated view info show audit dlx exec create init x`),
			setOf(`publish unpublish deprecate dist-tag owner`), false),
		hosts: npmHosts("registry.npmjs.org", "npm_config_registry"), unread: npmUnread("npm_config_userconfig", "npm_config_globalconfig"),
		configs: npmConfigs}
	pnpm := &program{globals: &optSpec{short: "CF", long: []string{"dir", "filter", "workspace", "reporter", "loglevel"}},
		nonExec: true, actions: pkgActions(setOf(`install i add update up upgrade outdated view info audit dlx exec create`), setOf(`publish`), false),
		hosts: npmHosts("registry.npmjs.org", "npm_config_registry"), unread: npmUnread("npm_config_userconfig", "npm_config_globalconfig"),
		configs: append([]configFile{{name: "pnpm-workspace.yaml", up: true, redirects: anyWord("registr", "proxy")}}, npmConfigs...)}
	yarn := &program{globals: &optSpec{long: []string{"cwd", "registry", "cache-folder", "modules-folder"}},
		nonExec: true, actions: pkgActions(setOf(`install add upgrade up outdated info dlx create`), setOf(`publish npm`), true),
		hosts:   npmHosts("registry.yarnpkg.com", "YARN_NPM_REGISTRY_SERVER", "YARN_REGISTRY", "npm_config_registry"),
		unread:  npmUnread("YARN_RC_FILENAME", "npm_config_userconfig", "npm_config_globalconfig"),
		configs: append([]configFile{{name: ".yarnrc.yml", up: true, redirects: anyWord("registr", "proxy", "npmscopes")}, {name: ".yarnrc", up: true, redirects: anyWord("registr", "proxy")}}, npmConfigs...)}
	pipGlobals := optSpec{long: []string{"proxy", "cert", "client-cert", "cache-dir", "log", "timeout", "retries", "python", "index-url", "exists-action"}}
	pip3Globals := optSpec{long: []string{"proxy", "cert", "client-cert", "cache-dir", "log", "timeout", "retries", "python", "index-url"}}
	pipRead := setOf(`install download index search wheel`)
	pip := func(g optSpec) *program {
		return &program{globals: &g, nonExec: true, actions: pkgActions(pipRead, nil, false), hosts: pipHosts, unread: pipUnread, configs: pipConfigs}
	}
	gems := &program{globals: &optSpec{}, nonExec: true, actions: pkgActions(setOf(`install update fetch`), setOf(`push yank owner`), false),
		hosts: gemHosts, unread: pkgUnread("GEMRC"), configs: []configFile{{name: "~/.gemrc", redirects: anyWord("source", "proxy")}}}
	return map[string]*program{
		"go":   {globals: &optSpec{short: "C"}, actions: goActions, hosts: goHosts, unread: goUnread, configs: goConfigs},
		"npm":  npm,
		"pnpm": pnpm,
		"yarn": yarn,
		"pip":  pip(pipGlobals),
		"pip3": pip(pip3Globals),
		"uv": {globals: &optSpec{long: []string{"directory", "project", "cache-dir", "python", "config-file"}}, runs: map[string]int{"run": 0},
			actions: pkgActions(setOf(`add sync lock pip tool run venv python`), setOf(`publish`), false), hosts: uvHosts, unread: uvUnread, configs: uvConfigs},
		"cargo": {globals: &optSpec{short: "ZC", long: []string{"config", "color", "manifest-path"}},
			actions: pkgActions(setOf(`fetch install update add search`), setOf(`publish yank owner`), false), hosts: cargoHosts, unread: cargoUnread, configs: cargoConfigs},
		"gem": gems,
		"bundle": {runs: map[string]int{"exec": 0}, actions: pkgActions(setOf(`install update`), nil, false), hosts: bundleHosts,
			unread: pkgUnread("BUNDLE_GEMFILE", "BUNDLE_APP_CONFIG", "BUNDLE_MIRROR__"), configs: bundleConfigs},
	}
}

// pkgActions is a package manager's actions by its subcommand (its chain,
// or for one with no globals its first operand): write reads and writes
// (publish), read reads; bare says the program run with no subcommand
// installs (yarn).
func pkgActions(read, write map[string]bool, bare bool) func(inv invocation) []string {
	return func(inv invocation) []string {
		first := pkgSub(inv)
		switch {
		case write[first]:
			return []string{policy.ActionHTTPWrite}
		case read[first] || bare && first == "":
			return []string{policy.ActionHTTPRead}
		}
		return nil
	}
}

// pkgSub is the subcommand of a package manager's invocation.
func pkgSub(inv invocation) string {
	if len(inv.chain) > 0 {
		return inv.chain[0]
	}
	var sp optSpec
	if p := programs()[inv.prog]; p != nil && p.globals != nil {
		sp = *p.globals
	}
	return firstOperand(inv.args, sp)
}

// fetches reports whether an invocation performs network actions: a
// package manager reports hosts only then ("npm test" contacts nothing).
func fetches(inv invocation) bool {
	p := programs()[inv.prog]
	return p != nil && p.actions != nil && len(p.actions(inv)) > 0
}

// dynamicArg returns the first argument that is not static: it may be an
// option naming another registry, or a package that is a URL.
func dynamicArg(inv invocation) string {
	for _, w := range inv.args[1:] {
		if w.dyn {
			return w.val
		}
	}
	return ""
}

// varsUnread says why the variables a tool reads its registry from cannot
// be read: a value that is not static, or a variable (matched by
// prefix) that names a configuration file or a registry by name.
func varsUnread(inv invocation, values []string, fold bool, files ...string) string {
	for _, name := range values {
		if _, dyn := inv.setting(name, "", fold); dyn {
			return name + " is not static"
		}
	}
	for _, f := range files {
		if inv.assigns(func(k string) bool {
			return strings.HasPrefix(k, f) || fold && len(k) >= len(f) && strings.EqualFold(k[:len(f)], f)
		}) {
			return f + " is assigned: it names configuration the line does not show"
		}
	}
	return ""
}

// pkgUnread is the unread answer of a tool whose registry no variable
// names: a dynamic argument, or one of files (variables, by prefix, that
// name its configuration) assigned.
func pkgUnread(files ...string) func(inv invocation) string {
	return func(inv invocation) string {
		if !fetches(inv) {
			return ""
		}
		if d := dynamicArg(inv); d != "" {
			return "argument " + d + " is not static"
		}
		return varsUnread(inv, nil, false, files...)
	}
}

// longOpt matches a long option word against the names given, as the tools
// read it: "--name=value", "--name" (value in the next word), or a unique
// abbreviation (npm's nopt and pip's optparse accept one). It returns
// the name matched, the value when inline, and whether it matched.
func longOpt(v string, names ...string) (name, val string, inline, ok bool) {
	if !strings.HasPrefix(v, "--") || len(v) < 4 {
		return "", "", false, false
	}
	n, val, inline := strings.Cut(v[2:], "=")
	for _, cand := range names {
		if n == cand {
			return cand, val, inline, true
		}
	}
	for _, cand := range names {
		if strings.HasPrefix(cand, n) {
			return cand, val, inline, true
		}
	}
	return "", "", false, false
}

// optValues collects, from anywhere in argv, the static values of the long
// options named (and of the short letters given, "-iURL" or "-i URL"),
// by option name; a value that is not static is reported in dyn.
func optValues(args []word, short string, shortName map[byte]string, names ...string) (vals map[string][]string, dyn string) {
	vals = map[string][]string{}
	for i := 1; i < len(args); i++ {
		w := args[i]
		if w.dyn || w.val == "--" {
			continue
		}
		v := w.val
		if name, val, inline, ok := longOpt(v, names...); ok {
			if !inline {
				if i+1 >= len(args) {
					break
				}
				i++
				if args[i].dyn {
					return vals, args[i].val
				}
				val = args[i].val
			}
			vals[name] = append(vals[name], val)
			continue
		}
		if len(v) < 2 || v[0] != '-' || v[1] == '-' {
			continue
		}
		for j := 1; j < len(v); j++ {
			if !strings.ContainsRune(short, rune(v[j])) {
				continue
			}
			name := shortName[v[j]]
			val := v[j+1:]
			if val == "" {
				if i+1 >= len(args) {
					break
				}
				i++
				if args[i].dyn {
					return vals, args[i].val
				}
				val = args[i].val
			}
			if name != "" {
				vals[name] = append(vals[name], val)
			}
			break
		}
	}
	return vals, ""
}

// --- go ---

// goProxyDefault and goSumDBDefault are GOPROXY's and GOSUMDB's values
// when nothing sets them (cmd/go's defaults).
const (
	goProxyDefault = goDefaultProxy + ",direct"
	goDefaultProxy = "https://proxy.golang.org"
	goSumDBDefault = "sum.golang.org"
)

// goValueFlags are the go command's flags that take a value (-flag value),
// skipped when reading its operands.
var goValueFlags = setOf(`C o p tags ldflags gcflags asmflags gccgoflags mod modfile overlay pgo pkgdir buildmode compiler exec toolexec coverpkg covermode coverprofile run bench benchtime count cpu parallel timeout skip shuffle fuzz fuzztime fuzzminimizetime list outputdir blockprofile blockprofilerate cpuprofile memprofile memprofilerate mutexprofile mutexprofilefraction trace f`)

// goOperands returns the operands after go's subcommand (and, for "go mod
// X", after X).
func goOperands(inv invocation) []word {
	args := inv.args
	i := 1
	for i < len(args) && strings.HasPrefix(args[i].val, "-") && !args[i].dyn {
		if args[i].val == "-C" {
			i++
		}
		i++
	}
	i += len(inv.chain)
	if len(inv.chain) > 0 && inv.chain[0] != "mod" {
		i-- // the chain's second word is an operand, not a subcommand
	}
	var ops []word
	for ; i < len(args); i++ {
		w := args[i]
		if w.dyn {
			ops = append(ops, w)
			continue
		}
		v := w.val
		if v == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if strings.HasPrefix(v, "-") && len(v) > 1 {
			name, _, eq := strings.Cut(strings.TrimLeft(v, "-"), "=")
			if !eq && goValueFlags[name] {
				i++
			}
			continue
		}
		ops = append(ops, w)
	}
	return ops
}

// goActions: go get and go mod (but edit and init) fetch modules; a build
// command (install, run, build, test, list, vet) fetches when it names a
// module at a version ("go install x@v1", "go run x@latest") or, for list,
// asks for module versions or updates (-m with -u, -versions,
// -retracted). A build of the main module ("go test ./...") is no network:
// it downloads only a requirement missing from the module cache, which the
// line cannot tell (docs/limits.md). GOPROXY=off fetches nothing.
func goActions(inv invocation) []string {
	if len(inv.chain) == 0 {
		return nil
	}
	fetch := false
	switch sub := inv.chain[0]; sub {
	case "get":
		fetch = true
	case "mod":
		fetch = len(inv.chain) < 2 || inv.chain[1] != "edit" && inv.chain[1] != "init"
	case "install", "run", "build", "test", "list", "vet":
		for _, w := range goOperands(inv) {
			if w.dyn && (sub == "install" || sub == "run") || !w.dyn && !strings.HasPrefix(w.val, ".") && strings.Contains(w.val, "@") {
				fetch = true
			}
		}
		if sub == "list" && slices.ContainsFunc(inv.args, func(w word) bool { return w.val == "-m" }) &&
			slices.ContainsFunc(inv.args, func(w word) bool { return w.val == "-u" || w.val == "-versions" || w.val == "-retracted" }) {
			fetch = true
		}
	}
	if !fetch {
		return nil
	}
	if lists, dyn := goProxyLists(inv); !dyn && !slices.ContainsFunc(lists, func(l []string) bool {
		return slices.ContainsFunc(l, func(e string) bool { return e != "off" })
	}) {
		return nil // GOPROXY=off: every download is refused
	}
	return []string{policy.ActionHTTPRead}
}

// goProxyLists returns the lists GOPROXY may hold for the invocation
// (split at "," and "|"), and whether a value is not static.
func goProxyLists(inv invocation) ([][]string, bool) {
	vals, dyn := inv.setting("GOPROXY", goProxyDefault, false)
	var lists [][]string
	for _, v := range vals {
		var l []string
		for _, e := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '|' }) {
			if e = strings.TrimSpace(e); e != "" {
				l = append(l, e)
			}
		}
		if len(l) == 0 {
			l = []string{goDefaultProxy, "direct"} // GOPROXY= is the default
		}
		lists = append(lists, l)
	}
	return lists, dyn
}

// goDirectFirst reports whether some module is fetched from its own host
// first, not after a proxy's 404: GOPROXY starts with direct, or the line
// sets GOPRIVATE or GONOPROXY (the modules they match skip the proxy).
func goDirectFirst(inv invocation) bool {
	lists, _ := goProxyLists(inv)
	for _, l := range lists {
		if l[0] == "direct" {
			return true
		}
	}
	return inv.assigns(func(k string) bool { return k == "GOPRIVATE" || k == "GONOPROXY" })
}

// goModuleHosts are the hosts of the module paths the line names
// ("example.com/m@v1" → example.com); a path whose first element has no
// dot (std, all, ./x) names none.
func goModuleHosts(inv invocation) []string {
	var h hostList
	for _, w := range goOperands(inv) {
		if w.dyn || strings.HasPrefix(w.val, ".") || strings.HasPrefix(w.val, "/") {
			continue
		}
		p, _, _ := strings.Cut(w.val, "@")
		first, _, _ := strings.Cut(p, "/")
		if strings.Contains(first, ".") {
			h.url(first)
		}
	}
	return h
}

// goHosts: the hosts of every proxy GOPROXY may list (the default
// proxy.golang.org), the module paths' own hosts when the list holds
// direct (first, or as the fallback after a proxy's 404), and the
// checksum database's (GOSUMDB, default sum.golang.org; off: none).
func goHosts(inv invocation) []string {
	if !fetches(inv) {
		return nil
	}
	var h hostList
	lists, _ := goProxyLists(inv)
	// named: direct comes from the line (GOPROXY, GOPRIVATE), not from
	// the default's fallback, which inside the sandbox is the
	// environment's, the proxy's to decide.
	direct := goDirectFirst(inv)
	named := direct
	for i, l := range lists {
		deflt := i == 0 && !inv.assignsHere("GOPROXY")
		for _, e := range l {
			switch e {
			case "direct":
				direct = true
				named = named || !deflt
			case "off":
			case goDefaultProxy:
				if deflt {
					h.dflt(urlHost(e, false))
				} else {
					h.url(e)
				}
			default:
				h.url(e)
			}
		}
	}
	if direct {
		for _, m := range goModuleHosts(inv) {
			if named {
				h.add(m)
			} else {
				h.dflt(m)
			}
		}
	}
	sums, _ := inv.setting("GOSUMDB", goSumDBDefault, false)
	if !inv.assignsHere("GOSUMDB") {
		h.dflt(goSumDBDefault)
		sums = sums[1:]
	}
	for _, s := range sums {
		// "name", "name+key" or "name+key URL": the URL's host, else the name's.
		f := strings.Fields(s)
		switch {
		case len(f) == 0 || f[0] == "off":
		case len(f) > 1:
			h.url(f[1])
		default:
			name, _, _ := strings.Cut(f[0], "+")
			h.url(name)
		}
	}
	return h
}

// goUnread: a GOPROXY, GOSUMDB, GOPRIVATE or GONOPROXY that is not
// static, GOENV assigned (another go env file), or modules fetched from
// their own hosts first (GOPROXY=direct, GOPRIVATE) with no module path
// on the line or one that is not static. A module that the default proxy
// cannot serve falls back to its own host too, but that is the module
// the proxy itself fetches from that host, on the line's behalf: reading
// it would add nothing the proxy does not already reach.
func goUnread(inv invocation) string {
	if !fetches(inv) {
		return ""
	}
	if why := varsUnread(inv, []string{"GOPROXY", "GOSUMDB", "GOPRIVATE", "GONOPROXY"}, false, "GOENV"); why != "" {
		return why
	}
	if !goDirectFirst(inv) {
		return ""
	}
	for _, w := range goOperands(inv) {
		if w.dyn {
			return "go fetches modules from their own hosts and module path " + w.val + " is not static"
		}
	}
	if len(goModuleHosts(inv)) == 0 {
		return "go fetches modules from their own hosts and the line names no module path"
	}
	return ""
}

var goConfigs = []configFile{{name: "~/.config/go/env", redirects: anyWord("goproxy", "gosumdb", "goprivate", "gonoproxy", "goinsecure")}}

// --- npm, pnpm, yarn ---

// npmHosts: the registry of --registry (or a unique abbreviation) when
// the line gives one, else of the variables named (npm_config_registry,
// read without regard to case) or def; the hosts of scoped registries
// (--@scope:registry) and proxies (--proxy, --https-proxy, and their
// npm_config_ variables); and of URL arguments (a tarball, a git package).
func npmHosts(def string, vars ...string) func(inv invocation) []string {
	return func(inv invocation) []string {
		if !fetches(inv) {
			return nil
		}
		var h hostList
		vals, _ := optValues(inv.args, "", nil, "registry", "proxy", "https-proxy")
		if len(vals["registry"]) > 0 {
			for _, r := range vals["registry"] {
				h.url(r)
			}
		} else {
			// A value assigned for this command replaces the default.
			if !inv.assignsHere(vars...) {
				h.dflt(def)
			}
			for _, v := range vars {
				vs, _ := inv.setting(v, "", true)
				for _, r := range vs {
					h.url(r)
				}
			}
		}
		for _, r := range append(vals["proxy"], vals["https-proxy"]...) {
			h.url(r)
		}
		for _, w := range inv.args[1:] {
			if name, val, ok := strings.Cut(w.val, "="); ok && !w.dyn && strings.HasPrefix(name, "--@") && strings.HasSuffix(name, ":registry") {
				h.url(val)
			}
		}
		for _, v := range []string{"npm_config_proxy", "npm_config_https_proxy"} {
			vs, _ := inv.setting(v, "", true)
			for _, r := range vs {
				h.url(r)
			}
		}
		return append(h, pkgURLHosts(inv)...)
	}
}

// npmUnread: an argument that is not static (an option naming a registry,
// a package that is a URL), a registry variable that is not static, or a
// variable or option naming another configuration file (--userconfig).
func npmUnread(files ...string) func(inv invocation) string {
	return func(inv invocation) string {
		if !fetches(inv) {
			return ""
		}
		if d := dynamicArg(inv); d != "" {
			return "argument " + d + " is not static"
		}
		for _, w := range inv.args[1:] {
			if name, _, _, ok := longOpt(w.val, "userconfig", "globalconfig"); ok {
				return "--" + name + " names configuration the line does not show"
			}
		}
		return varsUnread(inv, []string{"npm_config_registry", "npm_config_proxy", "npm_config_https_proxy", "YARN_NPM_REGISTRY_SERVER", "YARN_REGISTRY"}, true, files...)
	}
}

// npmrcRedirects reports whether an .npmrc (ini) sets a key that sends
// npm elsewhere: registry, a scope's registry (@scope:registry), a proxy,
// or another configuration file. An auth token for a registry
// ("//registry.npmjs.org/:_authToken=…") does not.
func npmrcRedirects(content string) bool {
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == ';' || line[0] == '#' {
			continue
		}
		key, _, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		if strings.HasPrefix(key, "//") {
			continue
		}
		if key == "registry" || strings.HasSuffix(key, ":registry") || strings.Contains(key, "proxy") ||
			strings.Contains(key, "config") || strings.HasPrefix(key, "[") {
			return true
		}
	}
	return false
}

var npmConfigs = []configFile{{name: ".npmrc", up: true, redirects: npmrcRedirects}, {name: "~/.npmrc", redirects: npmrcRedirects}}

// --- pip, pip3, uv ---

// pypiHosts are PyPI's: the index and the host its files are served from.
var pypiHosts = []string{"pypi.org", "files.pythonhosted.org"}

// pipHosts: the index of --index-url/-i (else PIP_INDEX_URL, else PyPI,
// with its file host; --no-index: none), every --extra-index-url
// (PIP_EXTRA_INDEX_URL), --find-links/-f URL (PIP_FIND_LINKS), --proxy
// (PIP_PROXY), and URL arguments (git+https://, a wheel's URL). A
// custom index's pages may link files on another host, which is not read.
func pipHosts(inv invocation) []string {
	if !fetches(inv) {
		return nil
	}
	vals, _ := optValues(inv.args, "if", map[byte]string{'i': "index-url", 'f': "find-links"}, "index-url", "extra-index-url", "find-links", "proxy", "no-index")
	return pyIndexHosts(inv, vals, "index-url", []string{"PIP_INDEX_URL"}, []string{"PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_PROXY"}, "extra-index-url", "find-links", "proxy")
}

// pyIndexHosts is the hosts answer of pip and uv: main is the option that
// replaces the default index (its variables mainVars), extra the options
// and variables (space-separated lists) that add hosts.
func pyIndexHosts(inv invocation, vals map[string][]string, main string, mainVars, extraVars []string, extra ...string) []string {
	var h hostList
	_, noIndex := vals["no-index"]
	switch {
	case len(vals[main]) > 0:
		for _, v := range vals[main] {
			h.url(v)
		}
	case noIndex:
	default:
		var set []string
		for _, v := range mainVars {
			vs, _ := inv.setting(v, "", false)
			set = append(set, vs...)
		}
		if len(set) == 0 || !slices.ContainsFunc(mainVars, func(v string) bool { _, ok := inv.env[v]; return ok }) {
			for _, d := range pypiHosts {
				h.dflt(d)
			}
		}
		for _, v := range set {
			h.url(v)
		}
	}
	for _, o := range extra {
		for _, v := range vals[o] {
			h.url(indexURL(v))
		}
	}
	for _, name := range extraVars {
		vs, _ := inv.setting(name, "", false)
		for _, v := range vs {
			for _, f := range strings.Fields(v) {
				h.url(indexURL(f))
			}
		}
	}
	return append(h, pkgURLHosts(inv)...)
}

// indexURL is the URL of a uv index entry ("name=https://…" or a URL); a
// local path gives no host (urlHost of "./wheels" is none).
func indexURL(v string) string {
	if i := strings.Index(v, "="); i > 0 && !strings.Contains(v[:i], "/") {
		return v[i+1:]
	}
	if !strings.Contains(v, "://") {
		return "" // --find-links ./wheels: a directory
	}
	return v
}

// pipUnread: a dynamic argument, a dynamic index variable, or
// PIP_CONFIG_FILE naming a file other than /dev/null (its settings are
// not on the line).
func pipUnread(inv invocation) string {
	if !fetches(inv) {
		return ""
	}
	if d := dynamicArg(inv); d != "" {
		return "argument " + d + " is not static"
	}
	if why := varsUnread(inv, []string{"PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS", "PIP_PROXY"}, false); why != "" {
		return why
	}
	if vs, dyn := inv.setting("PIP_CONFIG_FILE", "", false); dyn || slices.ContainsFunc(vs, func(v string) bool { return v != "/dev/null" && v != "" }) {
		return "PIP_CONFIG_FILE names configuration the line does not show"
	}
	return ""
}

var pipConfigs = []configFile{
	{name: "~/.config/pip/pip.conf", redirects: anyWord("index", "find-links", "proxy")},
	{name: "~/.pip/pip.conf", redirects: anyWord("index", "find-links", "proxy")},
	// pip in a virtual environment reads its pip.conf (sys.prefix).
	{name: ".venv/pip.conf", up: true, redirects: anyWord("index", "find-links", "proxy")},
	{name: "venv/pip.conf", up: true, redirects: anyWord("index", "find-links", "proxy")},
}

// uvHosts is pipHosts for uv: --index-url/-i and --default-index replace
// PyPI (UV_INDEX_URL, UV_DEFAULT_INDEX), --extra-index-url and --index add
// (UV_EXTRA_INDEX_URL, UV_INDEX), --find-links/-f adds (UV_FIND_LINKS).
func uvHosts(inv invocation) []string {
	if !fetches(inv) {
		return nil
	}
	vals, _ := optValues(inv.args, "if", map[byte]string{'i': "index-url", 'f': "find-links"}, "index-url", "default-index", "extra-index-url", "index", "find-links", "no-index")
	vals["index-url"] = append(vals["index-url"], vals["default-index"]...)
	for i, v := range vals["index-url"] {
		vals["index-url"][i] = indexURL(v)
	}
	return pyIndexHosts(inv, vals, "index-url", []string{"UV_INDEX_URL", "UV_DEFAULT_INDEX"}, []string{"UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_FIND_LINKS"}, "extra-index-url", "index", "find-links")
}

// uvUnread: pipUnread's reasons for uv's variables and --config-file /
// UV_CONFIG_FILE; uv python downloads interpreters from a mirror it
// chooses (or UV_PYTHON_INSTALL_MIRROR), which the line does not name.
func uvUnread(inv invocation) string {
	if !fetches(inv) {
		return ""
	}
	if pkgSub(inv) == "python" {
		return "uv python downloads interpreters from hosts the line does not name"
	}
	if d := dynamicArg(inv); d != "" {
		return "argument " + d + " is not static"
	}
	for _, w := range inv.args[1:] {
		if w.val == "--config-file" || strings.HasPrefix(w.val, "--config-file=") {
			return "--config-file names configuration the line does not show"
		}
	}
	return varsUnread(inv, []string{"UV_INDEX_URL", "UV_DEFAULT_INDEX", "UV_EXTRA_INDEX_URL", "UV_INDEX", "UV_FIND_LINKS"}, false, "UV_CONFIG_FILE", "UV_PYTHON_INSTALL_MIRROR")
}

// uvPyproject reports whether a pyproject.toml configures uv's indexes.
func uvPyproject(content string) bool {
	return strings.Contains(content, "tool.uv") && (strings.Contains(content, "index") || strings.Contains(content, "find-links"))
}

var uvConfigs = []configFile{
	{name: "uv.toml", up: true, redirects: anyWord("index", "find-links", "proxy")},
	{name: "pyproject.toml", up: true, redirects: uvPyproject},
	{name: "~/.config/uv/uv.toml", redirects: anyWord("index", "find-links", "proxy")},
}

// --- cargo ---

// cargoHosts: crates.io's sparse index and its download host, or
// --index's; crates.io itself for search and the publishing commands; and
// URL arguments (--git URL).
func cargoHosts(inv invocation) []string {
	if !fetches(inv) {
		return nil
	}
	var h hostList
	vals, _ := optValues(inv.args, "", nil, "index")
	switch sub := pkgSub(inv); {
	case len(vals["index"]) > 0:
		for _, v := range vals["index"] {
			h.url(strings.TrimPrefix(v, "sparse+"))
		}
	case sub == "search" || sub == "publish" || sub == "yank" || sub == "owner":
		h.dflt("crates.io")
	default:
		h.dflt("index.crates.io")
		h.dflt("static.crates.io")
	}
	return append(h, pkgURLHosts(inv)...)
}

// cargoUnread: a dynamic argument, --registry NAME (a registry its
// configuration names) other than crates-io, --config (configuration on
// the command line, which can replace the source), or a variable that
// sets registries, sources or the configuration's home.
func cargoUnread(inv invocation) string {
	if !fetches(inv) {
		return ""
	}
	if d := dynamicArg(inv); d != "" {
		return "argument " + d + " is not static"
	}
	vals, _ := optValues(inv.args, "", nil, "registry", "config")
	if slices.ContainsFunc(vals["registry"], func(r string) bool { return r != "crates-io" }) {
		return "--registry names a registry of cargo's configuration"
	}
	if len(vals["config"]) > 0 {
		return "--config sets configuration that may replace the registry"
	}
	return varsUnread(inv, nil, false, "CARGO_HOME", "CARGO_REGISTRIES_", "CARGO_REGISTRY_", "CARGO_SOURCE_", "CARGO_HTTP_PROXY")
}

var cargoConfigs = []configFile{
	{name: ".cargo/config.toml", up: true, redirects: cargoConfigRedirects},
	{name: ".cargo/config", up: true, redirects: cargoConfigRedirects},
	{name: "~/.cargo/config.toml", redirects: cargoConfigRedirects},
	{name: "~/.cargo/config", redirects: cargoConfigRedirects},
}

var cargoConfigRedirects = anyWord("source", "registr", "proxy", "include", "http")

// --- gem, bundle ---

// gemHosts: rubygems.org, unless --clear-sources leaves only --source's
// (-s) hosts; --host (or RUBYGEMS_HOST) for gem push.
func gemHosts(inv invocation) []string {
	if !fetches(inv) {
		return nil
	}
	var h hostList
	vals, _ := optValues(inv.args, "s", map[byte]string{'s': "source"}, "source", "host")
	if !slices.ContainsFunc(inv.args, func(w word) bool { return w.val == "--clear-sources" }) || len(vals["source"]) == 0 {
		h.dflt("rubygems.org")
	}
	for _, v := range append(vals["source"], vals["host"]...) {
		h.url(v)
	}
	hs, _ := inv.setting("RUBYGEMS_HOST", "", false)
	for _, v := range hs {
		h.url(v)
	}
	return append(h, pkgURLHosts(inv)...)
}

// bundleHosts: rubygems.org and the compact index bundler reads it
// through (index.rubygems.org); the Gemfile's other sources are checked by
// Decide (bundleConfigs: a Gemfile with another source refuses).
func bundleHosts(inv invocation) []string {
	if !fetches(inv) {
		return nil
	}
	var h hostList
	h.dflt("rubygems.org")
	h.dflt("index.rubygems.org")
	return h
}

// gemfileRedirects reports whether a Gemfile sends bundler to another
// host than rubygems.org: a source other than it, or a git or github
// gem or source.
func gemfileRedirects(content string) bool {
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.Contains(line, "git") {
			return true
		}
		if strings.HasPrefix(line, "source") {
			rest := strings.TrimSpace(strings.TrimPrefix(line, "source"))
			rest = strings.TrimSpace(strings.TrimPrefix(rest, "("))
			if !strings.HasPrefix(rest, `"https://rubygems.org"`) && !strings.HasPrefix(rest, `'https://rubygems.org'`) &&
				!strings.HasPrefix(rest, `"https://rubygems.org/"`) && !strings.HasPrefix(rest, `'https://rubygems.org/'`) {
				return true
			}
		}
	}
	return false
}

var bundleConfigs = []configFile{
	{name: "Gemfile", up: true, redirects: gemfileRedirects},
	{name: "gems.rb", up: true, redirects: gemfileRedirects},
	{name: ".bundle/config", up: true, redirects: anyWord("mirror", "gemfile", "proxy", "app_config")},
	{name: "~/.bundle/config", redirects: anyWord("mirror", "gemfile", "proxy", "app_config")},
}
