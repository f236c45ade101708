package hooks

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/policy/shell"
)

// Engine rules on one normalized tool call. A Rule that cannot decide
// returns the zero Decision, which denies. Implementations are safe for
// concurrent use.
type Engine interface {
	Rule(ctx context.Context, c Call) policy.Decision
}

// ShellRuler rules on one shell command line under a bound: bash.deny,
// bash.denyPrograms, network actions and domains, file writes under the
// files rules. cwd is the command's working directory. Implementations are
// safe for concurrent use.
type ShellRuler interface {
	// RuleCommand rules on a command line under b, whose network rules
	// net is (compiled once per engine).
	RuleCommand(command, cwd string, b *policy.Bound, net *policy.NetworkDecider, files policy.FileMatcher) policy.Decision
}

// FailClosedShell is a ShellRuler without a classifier:
// it allows a command only when the bound has no rule a command could
// break (no bash, files or network rule), and denies every command
// otherwise, which is also what a classifier does with an unparseable line.
type FailClosedShell struct{}

// RuleCommand implements ShellRuler.
func (FailClosedShell) RuleCommand(command, cwd string, b *policy.Bound, _ *policy.NetworkDecider, _ policy.FileMatcher) policy.Decision {
	if rule := ShellRuleIn(b); rule != "" {
		return policy.Denied(policy.Because(policy.ReasonShellUnclassified, "no classifier here, and the bound has %s rules", rule), policy.RuleShellUnclassified)
	}
	return policy.AllowedBy(policy.Because(policy.ReasonShellAllowed, "the bound has no shell, file or network rule"), "")
}

// caseInsensitiveFS is whether the platform's usual filesystem ignores case
// (macOS's default APFS volume), so deny patterns must too.
const caseInsensitiveFS = runtime.GOOS == "darwin"

// Ruler is the Engine for one resolved Session. It is immutable after
// NewEngine and safe for concurrent use.
type Ruler struct {
	s      Session
	files  policy.FileMatcher
	net    *policy.NetworkDecider
	shell  ShellRuler
	mcp    map[string]bool
	native map[string]bool
	denied map[string]bool
}

// NewEngine builds the engine for s. shell rules on shell commands; nil
// means ClassifierShell.
func NewEngine(s *Session, shell ShellRuler) (*Ruler, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil session", ErrNoPolicy)
	}
	if shell == nil {
		shell = ClassifierShell{}
	}
	home := s.Home
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("%w: home directory: %v", ErrNoPolicy, err)
		}
		home = h
	}
	r := &Ruler{s: *s, shell: shell, files: policy.FileMatcher{Home: home, DenyAnywhere: true, FoldCase: caseInsensitiveFS, HeldBelow: s.FilesHeld, AllowEdit: slices.Clone(s.AllowEdit)},
		mcp: map[string]bool{}, native: map[string]bool{}, denied: map[string]bool{}}
	r.s.Bound = s.Bound.Clone()
	var nr *policy.NetworkRules
	if r.s.Bound != nil {
		nr = r.s.Bound.Network
	}
	net, err := policy.CompileNetwork(nr, false)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPolicy, err)
	}
	r.net = net
	for _, id := range s.MCPTools {
		r.mcp[id] = true
	}
	for _, t := range s.Native.Allowed {
		r.native[t] = true
	}
	for _, t := range s.Native.Denied {
		r.denied[t] = true
	}
	return r, nil
}

// Rule decides one call. Checks, in order, each an early return:
//
//  1. the context is not done (a ruling after the deadline is a deny);
//  2. events that are not gated are allowed (no opinion);
//     a session whose policy asks for the sandbox and runs without one is
//     refused: every call denied (policy.DecideSandboxed);
//  3. a session bound to one harness refuses calls from another;
//  4. MCP tools (mcp__server__tool, Cursor MCP:tool) go to ruleMCP: the
//     qualified id must be in the session's set, not in deniedTools, and
//     its URL and path parameters pass the guards;
//  5. a native tool must be in the native policy's allowed list and not in
//     its denied list; a tool the harness table does not know is refused
//     unless allowed by name;
//  6. the guard of the tool's category: shell → ShellRuler; file reads →
//     files rules; searches → files rules on every root, and no files.deny
//     pattern may reach below it; writes → deniedAccess, then files rules;
//     apply_patch → every path of the patch as a write; fetches → http:read
//     and the domain rules on every URL; web search → http:read and domains
//     confined by allowed_domains when any domain rule exists.
func (r *Ruler) Rule(ctx context.Context, c Call) (d policy.Decision) {
	if err := ctx.Err(); err != nil {
		return policy.Denied(policy.Because(policy.ReasonDeadline, "%v", err), policy.RuleDeadline)
	}
	if c.Kind == KindOther {
		return policy.AllowedBy(policy.Because(policy.ReasonNotGated, "%s", c.Event), "")
	}
	if d := policy.DecideSandboxed(r.s.Bound, r.s.Sandboxed); !d.Allowed() {
		return d
	}
	if r.s.Harness != "" && c.Harness != r.s.Harness {
		return policy.Denied(policy.Because(policy.ReasonOtherHarness, "the session is for %s, not %s", r.s.Harness, c.Harness), policy.RuleSessionHarness)
	}
	if ids, ok := r.mcpIDs(c); ok {
		return r.ruleMCP(c, ids)
	}
	if strings.HasPrefix(c.Tool, "mcp__") || strings.HasPrefix(c.Tool, "MCP:") || c.Tool == "MCP" {
		return policy.Denied(policy.Because(policy.ReasonUnknownMCPServer, "%q", c.Tool), policy.RuleMCP)
	}
	if r.denied[c.Tool] {
		why := ""
		if reason := r.s.Native.Reasons[c.Tool]; reason != "" {
			why = ": " + reason
		}
		return policy.Denied(policy.Because(policy.ReasonNativeDenied, "%s for %s%s", c.Tool, c.Harness, why), policy.RuleNativeDenied+":"+c.Tool)
	}
	if !r.native[c.Tool] {
		return policy.Denied(policy.Because(policy.ReasonNativeNotGranted, "%s for %s", c.Tool, c.Harness), policy.RuleNativeAllowed)
	}
	t, known := policy.NativeToolOf(string(c.Harness), c.Tool)
	if !known {
		return policy.Denied(policy.Because(policy.ReasonNativeNotKnown, "%s for %s", c.Tool, c.Harness), policy.RuleNativeAllowed)
	}
	return r.guard(ctx, c, t)
}

func (r *Ruler) bound() *policy.Bound { return r.s.Bound }

func (r *Ruler) fileRules() *policy.FileRules {
	if b := r.bound(); b != nil {
		return b.Files
	}
	return nil
}

func (r *Ruler) guard(ctx context.Context, c Call, t policy.NativeTool) policy.Decision {
	in := input{m: c.Input}
	switch t.Reach {
	case policy.ReachNone, policy.ReachShellSession:
		return policy.AllowedBy(policy.Because(policy.ReasonNativeGranted, "%s", c.Tool), policy.RuleNativeAllowed+":"+c.Tool)
	case policy.ReachShell, policy.ReachShellOpaque:
		cmd := in.str(t.CommandKey, true)
		dir := in.first(t.DirKeys)
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		if t.Reach == policy.ReachShellOpaque {
			if rule := ShellRuleIn(r.bound()); rule != "" {
				return policy.Denied(policy.Because(policy.ReasonShellUnclassified, "%s commands, and the bound has %s rules", c.Tool, rule), policy.RuleShellUnclassified)
			}
			return policy.AllowedBy(policy.Because(policy.ReasonShellAllowed, "%s commands, and the bound has no shell, file or network rule", c.Tool), "")
		}
		cwd := c.Cwd
		if dir != "" {
			cwd = r.abs(dir, c.Cwd)
		}
		if !strings.HasPrefix(cwd, "/") && r.fileRules() != nil {
			// Relative paths in the command would be checked against the
			// wrong directory.
			return policy.Denied(policy.Because(policy.ReasonShellNoCwd, "%s has cwd %q", c.Tool, cwd), policy.RuleInput)
		}
		if mustProtocol(c.Harness).typedShells && ShellRuleIn(r.bound()) != "" {
			if prog := shell.InteractiveReader(cmd); prog != "" {
				return policy.Denied(policy.Because(policy.ReasonShellInteractive, "%s, which Codex's write_stdin would type into without a hook; give it its script or -c", prog), policy.RuleShellInteractive)
			}
		}
		return r.shell.RuleCommand(cmd, cwd, r.bound(), r.net, r.matcher(cwd))
	case policy.ReachFileRead, policy.ReachFileWrite:
		paths := append(harnessPaths(c.Harness, in.paths(t.PathKeys)), t.FixedPaths...)
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		if len(paths) == 0 {
			return policy.Denied(policy.Because(policy.ReasonNoPath, "%s", c.Tool), policy.RuleInput)
		}
		return r.checkPaths(c, paths, t.Reach == policy.ReachFileWrite)
	case policy.ReachPatch:
		text := in.str(t.CommandKey, true)
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		paths, err := PatchPaths(text)
		if err != nil {
			return policy.Denied(err.Error(), policy.RuleApplyPatch)
		}
		return r.checkPaths(c, paths, true)
	case policy.ReachSearch:
		var roots []string
		for _, r := range harnessPaths(c.Harness, in.paths(t.DirKeys)) {
			// A root given as a glob (read_many_files paths) is searched
			// from the directory the glob cannot climb above.
			roots = append(roots, policy.GlobRoot(r))
		}
		globs := in.paths(t.GlobKeys)
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		if len(roots) == 0 {
			if t.RequireDir {
				return policy.Denied(policy.Because(policy.ReasonNoSearchRoot, "%s", c.Tool), policy.RuleInput)
			}
			if c.Cwd == "" {
				return policy.Denied(policy.Because(policy.ReasonNoSearchRoot, "%s has no path and the call no cwd", c.Tool), policy.RuleInput)
			}
			roots = []string{c.Cwd}
		}
		// The tool's patterns are resolved from its first root, itself
		// from the call's cwd when relative ("path": "calc").
		base := r.abs(roots[0], c.Cwd)
		if p, ok := c.Input["pattern"].(string); ok && (strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || slices.Contains(strings.Split(p, "/"), "..")) {
			roots = append(roots, r.abs(policy.LiteralPrefix(p), base))
		}
		for _, g := range globs {
			// A glob resolved from the root ("*/../../etc/*",
			// "{/etc,x}/*") reaches what it can climb to.
			roots = append(roots, r.abs(policy.GlobRoot(g), base))
		}
		return r.checkSearch(c, t, roots)
	case policy.ReachFetch:
		urls := in.all(t.URLKeys)
		for _, k := range t.TextURLKeys {
			text := in.str(k, false)
			urls = append(urls, urlsIn(text)...)
			// The harness takes a URL up to the next white space
			// ("https://ok.example\"@evil.net/"): check that reading too.
			urls = append(urls, urlTokens(text)...)
		}
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		if len(urls) == 0 {
			return policy.Denied(policy.Because(policy.ReasonNoURL, "%s", c.Tool), policy.RuleInput)
		}
		if extra := mustProtocol(c.Harness).extraURLs; extra != nil {
			urls = append(urls, extra(urls)...)
		}
		// The destinations first, as the proxy decides them, then the
		// action the proxy cannot tell apart.
		d := r.checkURLs(c.Tool, urls)
		if !d.Allowed() {
			return d
		}
		if a, denied := r.checkAction(policy.ActionHTTPRead); denied {
			return a
		}
		return d
	case policy.ReachWebSearch:
		if d, denied := r.checkAction(policy.ActionHTTPRead); denied {
			return d
		}
		domains := in.list("allowed_domains")
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		if r.net.HasDomainRules() {
			if len(domains) == 0 {
				return policy.Denied(policy.Because(policy.ReasonUnconfinedSearch, "%s", c.Tool), policy.RuleNetworkDomains)
			}
			for _, dom := range domains {
				if d := r.checkHost(c.Tool, dom); !d.Allowed() {
					return d
				}
			}
		}
		return policy.AllowedBy(policy.Because(policy.ReasonWebSearchAllowed, "%s, http:read is not denied", c.Tool), "")
	}
	return policy.Denied(policy.ReasonUnknownReach, "")
}

// matcher returns the file matcher for one ruling on a call made in cwd
// (with its own memo of the filesystem: see policy.FileMatcher.Memo).
func (r *Ruler) matcher(cwd string) policy.FileMatcher {
	m := r.files
	m.Cwd = cwd
	return m.Memo()
}

// abs makes p absolute against cwd ("" when p is relative and cwd unknown).
func (r *Ruler) abs(p, cwd string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		return r.files.Home + p[1:]
	}
	if strings.HasPrefix(p, "/") {
		return p
	}
	if cwd == "" || !strings.HasPrefix(cwd, "/") {
		return ""
	}
	return path.Join(cwd, p)
}

func (r *Ruler) checkPaths(c Call, paths []string, write bool) policy.Decision {
	if write {
		if d := policy.DecideWrite(r.bound(), c.Tool, string(c.Harness), true); !d.Allowed() {
			return d
		}
	}
	last := policy.AllowedBy(policy.ReasonNoFileRules, "")
	m := r.matcher(c.Cwd)
	for _, p := range paths {
		ap := r.abs(p, c.Cwd)
		if ap == "" {
			return policy.Denied(policy.Because(policy.ReasonRelativeNoCwd, "%q", p), policy.RuleInput)
		}
		if d, denied := r.processView(m, c.Tool, ap); denied {
			return d
		}
		d := m.Check(ap, r.fileRules())
		if !d.Allowed() {
			return d
		}
		// The sandbox's protected paths, in a session with any rule.
		if write && ShellRuleIn(r.bound()) != "" {
			if d := m.DecideProtectedWrite(ap); !d.Allowed() {
				return d
			}
		}
		last = d
	}
	return last
}

// processView denies, under files rules, a path that goes through
// /proc/self, /proc/<pid> or /dev/fd: hookgate (or a ruling server outside
// the sandbox's PID namespace) would resolve it as itself, not as the
// harness that opens it.
func (r *Ruler) processView(m policy.FileMatcher, tool, p string) (policy.Decision, bool) {
	if r.fileRules() == nil || !m.ThroughProcessView(p) {
		return policy.Decision{}, false
	}
	return policy.Denied(policy.Because(policy.ReasonProcessView, "%s path %s", tool, clipField(p)), policy.RuleFiles), true
}

// checkSearch decides a search from roots. A tool the harness lets a
// hook rewrite with exclusion globs (ExcludeKey) is allowed leaving out
// what files.deny matches below its roots, where the policy can say how
// (policy.FileMatcher.DecideSearchExcluding): the decision's Exclude are
// the globs the call must carry.
func (r *Ruler) checkSearch(c Call, t policy.NativeTool, roots []string) policy.Decision {
	fr := r.fileRules()
	m := r.matcher(c.Cwd)
	// A glob the policy cannot split as the harness does is not
	// rewritten: the walk decides.
	have, rewritable := t.Excluding(c.Input)
	out := policy.AllowedBy(policy.Because(policy.ReasonSearchAllowed, "%s", c.Tool), "")
	var exclude []string
	for _, root := range roots {
		ar := r.abs(root, c.Cwd)
		if ar == "" {
			return policy.Denied(policy.Because(policy.ReasonRelativeNoCwd, "%q", root), policy.RuleInput)
		}
		if d, denied := r.processView(m, c.Tool, ar); denied {
			return d
		}
		d := m.Check(ar, fr)
		if !d.Allowed() {
			return d
		}
		if rewritable {
			d = m.DecideSearchExcluding(m.Canonicalize(ar), fr, c.Tool, have)
		} else {
			d = m.DecideBelow(m.Canonicalize(ar), fr, c.Tool)
		}
		if !d.Allowed() {
			return d
		}
		if strings.HasPrefix(d.Reason, policy.ReasonSearchExcludes) && out.Rule == "" {
			out = d // the first root that leaves files out says so
		}
		for _, g := range strings.Fields(d.Exclude) {
			if !slices.Contains(exclude, g) {
				exclude = append(exclude, g)
			}
		}
	}
	out.Exclude = strings.Join(exclude, " ")
	return out
}

// harnessPaths rewrites paths the way harness h reads them before use.
func harnessPaths(h Harness, paths []string) []string {
	if p := mustProtocol(h); p.paths != nil {
		return p.paths(paths)
	}
	return paths
}

func (r *Ruler) checkAction(action string) (policy.Decision, bool) {
	d := r.net.DecideAction(action)
	return d, !d.Allowed()
}

// urlPattern is compiled on first use: most calls carry no free text to
// scan, and hookgate starts once per call.
var urlPattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\bhttps?://[^\s<>"'` + "`" + `]+`)
})

// urlTokens reads URLs in free text the way Gemini CLI's web_fetch does:
// the text split at JavaScript's white space (\s), every token that holds
// "://" parsed as a whole URL ("https:\\evil.net/?://" is a URL to
// evil.net for it). At most 64 tokens are returned; more are one token that
// fails to parse, so the call is denied.
func urlTokens(text string) []string {
	var out []string
	for _, t := range strings.FieldsFunc(text, jsSpace) {
		if !strings.Contains(t, "://") {
			continue
		}
		if len(out) == 64 {
			return append(out, "too many URLs")
		}
		out = append(out, t)
	}
	return out
}

// jsSpace is JavaScript's \s, which is not Go's unicode.IsSpace: it has
// U+FEFF and not U+0085.
func jsSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u00a0', '\u1680', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff':
		return true
	}
	return r >= '\u2000' && r <= '\u200a'
}

func urlsIn(text string) []string { return urlPattern().FindAllString(text, 64) }

// checkURLs decides every URL's host; it returns the first denial, or the
// last host's allow (for one URL, the proxy's own words for that host).
func (r *Ruler) checkURLs(tool string, urls []string) policy.Decision {
	d := policy.AllowedBy(policy.Because(policy.ReasonNoDestination, "%s", tool), "")
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return policy.Denied(policy.Because(policy.ReasonNotHTTPURL, "%s URL %q", tool, clipField(raw)), policy.RuleInput)
		}
		if d = r.checkHost(tool, u.Hostname()); !d.Allowed() {
			return d
		}
	}
	return d
}

// checkHost decides one host with the session's network decider
// (policy.NetworkDecider, the proxy's own).
func (r *Ruler) checkHost(tool, host string) policy.Decision {
	return r.net.DecideHostName(host)
}

// mcpIDs returns the qualified ids a call's MCP tool could be.
func (r *Ruler) mcpIDs(c Call) ([]string, bool) {
	if p := mustProtocol(c.Harness); p.mcpIDs != nil {
		return p.mcpIDs(c, &r.s, r.mcp)
	}
	return MCPQualifiedIDs(c.Tool)
}

// barryNamespace reads the namespace from a Barry MCP endpoint URL on
// loopback, http://127.0.0.1:PORT/mcp/ns/<namespace>?sessionId=…, the only
// way a Cursor beforeMCPExecution names its server. Anything else is "".
func barryNamespace(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" {
		return ""
	}
	h, err := policy.ParseHost(u.Hostname())
	if err != nil || !h.IP.IsValid() || !h.IP.IsLoopback() {
		return ""
	}
	ns, ok := strings.CutPrefix(u.Path, "/mcp/ns/")
	if !ok || ns == "" || strings.ContainsAny(ns, "/:") {
		return ""
	}
	return ns
}

// mcpURLKeys and mcpPathKeys are the MCP tool parameters the URL and file
// guards read at the top level, where a non-string value is an error.
// Beyond them, scanMCPInput reads the whole input.
var (
	mcpURLKeys  = []string{"url", "uri", "href", "endpoint"}
	mcpPathKeys = []string{"path", "file_path", "filePath", "filename", "file", "directory", "dir", "paths", "source", "destination"}
)

// maxScannedValues bounds scanMCPInput; a larger input is denied unread.
const maxScannedValues = 10000

// scanMCPInput reads an MCP tool's whole input the way the guards need it,
// since servers name their parameters as they like ("target_url",
// {"request": {"url": …}}): every http(s) URL inside any string, every
// string under a key whose words name a host (host, hostname, domain), and
// every string under a key whose words name a file (keyKind: "srcPath",
// "output_file", "workDir", "target"). ok is false
// when the input has more than maxScannedValues values.
func scanMCPInput(v any) (urls, hosts, paths []string, ok bool) {
	n := 0
	var walk func(v any, key string) bool
	walk = func(v any, key string) bool {
		if n++; n > maxScannedValues {
			return false
		}
		switch x := v.(type) {
		case string:
			urls = append(urls, urlPattern().FindAllString(x, -1)...)
			switch keyKind(key) {
			case "host":
				hosts = append(hosts, x)
			case "path":
				paths = append(paths, x)
			}
		case []any:
			for _, e := range x {
				if !walk(e, key) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				if !walk(e, k) {
					return false
				}
			}
		}
		return true
	}
	ok = walk(v, "")
	return urls, hosts, paths, ok
}

// keyKind sorts a parameter name by its words (split at _, -, . and
// lower-to-upper case changes): "host" for host, hostname or domain, "path"
// for path, paths, file, files, filename, filepath, dir, dirs, directory,
// folder, src, dst, dest, source, destination, target, root, cwd; ""
// otherwise ("profile" is one word, not "file").
func keyKind(key string) string {
	var words []string
	start := 0
	for i := 1; i <= len(key); i++ {
		if i == len(key) || strings.ContainsRune("_-. ", rune(key[i])) ||
			(key[i] >= 'A' && key[i] <= 'Z' && key[i-1] >= 'a' && key[i-1] <= 'z') {
			if w := strings.Trim(key[start:i], "_-. "); w != "" {
				words = append(words, strings.ToLower(w))
			}
			start = i
		}
	}
	kind := ""
	for _, w := range words {
		switch w {
		case "host", "hostname", "domain":
			return "host"
		case "path", "paths", "file", "files", "filename", "filepath", "dir", "dirs", "directory", "folder",
			"src", "dst", "dest", "source", "destination", "target", "root", "cwd":
			kind = "path"
		}
	}
	return kind
}

// ruleMCP allows an MCP call only when every reading of its name is a
// granted qualified id that deniedTools does not name, and its URL and path
// parameters pass the guards.
func (r *Ruler) ruleMCP(c Call, ids []string) policy.Decision {
	for _, id := range ids {
		if !r.mcp[id] {
			return policy.Denied(policy.Because(policy.ReasonMCPNotInTools, "%s", id), policy.RuleMCPTools)
		}
		server, tool, _ := splitQualified(id)
		if d := policy.DecideToolDenied(r.bound(), server, tool); !d.Allowed() {
			return d
		}
		for _, a := range policy.NetworkToolActions[tool] {
			if d, denied := r.checkAction(a); denied {
				return d
			}
		}
		in := input{m: c.Input}
		urls := in.all(mcpURLKeys)
		if k, ok := policy.NetworkToolURLParams[tool]; ok {
			urls = append(urls, in.all([]string{k})...)
		}
		paths := in.paths(mcpPathKeys)
		if in.err != nil {
			return policy.Denied(in.err.Error(), policy.RuleInput)
		}
		deepURLs, hosts, deepPaths, ok := scanMCPInput(c.Input)
		if !ok {
			return policy.Denied(policy.Because(policy.ReasonInputTooMany, "MCP tool %s has more than %d", id, maxScannedValues), policy.RuleInput)
		}
		pin := input{m: map[string]any{"paths": toAny(deepPaths)}}
		paths = append(paths, pin.paths([]string{"paths"})...)
		if pin.err != nil {
			return policy.Denied(pin.err.Error(), policy.RuleInput)
		}
		if d := r.checkURLs(id, append(urls, deepURLs...)); !d.Allowed() {
			return d
		}
		for _, h := range hosts {
			if d := r.checkHost(id, h); !d.Allowed() {
				return d
			}
		}
		if r.fileRules() != nil && len(paths) > 0 {
			cc := c
			cc.Tool = id
			if d := r.checkPaths(cc, paths, false); !d.Allowed() {
				return d
			}
		}
	}
	return policy.AllowedBy(policy.Because(policy.ReasonMCPInTools, "%s", strings.Join(ids, ", ")), policy.RuleMCPTools)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// input reads typed values from a tool input, keeping the first error.
type input struct {
	m   map[string]any
	err error
}

// fail keeps the first error: a policy.ReasonInput* phrase and its
// details.
func (in *input) fail(phrase, format string, args ...any) {
	if in.err == nil {
		in.err = errors.New(policy.Because(phrase, format, args...))
	}
}

func (in *input) str(key string, required bool) string {
	v, ok := in.m[key]
	if !ok || v == nil {
		if required {
			in.fail(policy.ReasonInputMissing, "%s", key)
		}
		return ""
	}
	s, ok := v.(string)
	if !ok {
		in.fail(policy.ReasonInputNotString, "%s", key)
		return ""
	}
	if required && s == "" {
		in.fail(policy.ReasonInputEmpty, "%s", key)
	}
	return s
}

// first returns the string present under keys. Two keys with different
// values are an error: the harness may read either (Gemini CLI's
// run_shell_command took "directory", then "dir_path").
func (in *input) first(keys []string) string {
	found, key := "", ""
	for _, k := range keys {
		s := in.str(k, false)
		if s == "" {
			continue
		}
		if found != "" && s != found {
			in.fail(policy.ReasonInputDisagree, "%s and %s", key, k)
			return ""
		}
		found, key = s, k
	}
	return found
}

// all returns every string (or list of strings) found under keys.
func (in *input) all(keys []string) []string {
	var out []string
	for _, k := range keys {
		v, ok := in.m[k]
		if !ok || v == nil {
			continue
		}
		switch x := v.(type) {
		case string:
			if x != "" {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					in.fail(policy.ReasonInputNotStrings, "%s", k)
					return nil
				}
				out = append(out, s)
			}
		default:
			in.fail(policy.ReasonInputNotString, "%s", k)
			return nil
		}
	}
	return out
}

// paths is all with a NUL check.
func (in *input) paths(keys []string) []string {
	out := in.all(keys)
	for _, p := range out {
		if strings.ContainsRune(p, 0) {
			in.fail(policy.ReasonInputNUL, "%q", clipField(p))
			return nil
		}
		if strings.Contains(p, `\`) {
			// Windows separators: matching them as Unix names would let
			// C:\x\.env past a "**/.env" rule.
			in.fail(policy.ReasonInputBackslash, "%q", clipField(p))
			return nil
		}
	}
	return out
}

func (in *input) list(key string) []string { return in.all([]string{key}) }
