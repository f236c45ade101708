package shell

import (
	"slices"
	"strings"
	"sync"

	"github.com/barry-rocks/sandbox/policy"
)

var allLeafActions = []string{policy.ActionDNS, policy.ActionGitFetch, policy.ActionGitPush, policy.ActionHTTPRead,
	policy.ActionHTTPWrite, policy.ActionSSHRead, policy.ActionSSHWrite}

// ClassifyNetworkActions returns the network action tags (policy.Action*
// leaves such as "git:push", "http:read") that the commands in c perform,
// sorted and deduplicated. It uses c's own details when c came from
// Classify, and otherwise classifies rawCommand. A command whose network
// behaviour depends on a word it cannot read gets every tag it could have.
// It is safe for concurrent use.
func ClassifyNetworkActions(c Classification, rawCommand string) []string {
	invs := c.invs
	if invs == nil && !c.analyzed {
		if rawCommand != "" {
			invs = Classify(rawCommand).invs
		} else {
			invs = reanalyze(c.Argvs)
		}
	}
	set := map[string]bool{}
	for _, inv := range invs {
		for _, t := range networkActions(inv) {
			set[t] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// reanalyze rebuilds invocations from bare argument vectors.
func reanalyze(argvs [][]string) []invocation {
	a := &analyzer{c: Classification{Subcommands: map[string][]string{}}}
	for _, argv := range argvs {
		ws := make([]word, len(argv))
		for i, s := range argv {
			ws[i] = staticWord(s)
		}
		a.command(ws, stdin{}, 0)
	}
	return a.c.invs
}

// IsNetworkActionDenied reports the first network action of line that the
// denied actions cover (expanded with policy.ExpandActions, so "write"
// covers "git:push"), as the leaf tag. An Unparseable line is denied when
// any action is denied, with "unparseable: REASON" in place of a tag. It is
// safe for concurrent use.
func IsNetworkActionDenied(line string, actions []string) (string, bool) {
	if len(actions) == 0 {
		return "", false
	}
	return Classify(line).NetworkActionDenied(actions)
}

// NetworkActionDenied is IsNetworkActionDenied for a line already
// classified.
func (c Classification) NetworkActionDenied(actions []string) (string, bool) {
	if len(actions) == 0 {
		return "", false
	}
	if c.Unparseable {
		return "unparseable: " + c.Reason, true
	}
	denied := policy.ExpandActions(actions)
	for _, t := range ClassifyNetworkActions(c, "") {
		if slices.Contains(denied, t) {
			return t, true
		}
	}
	return "", false
}

var pkgRead = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"bun":      setOf(`install i add update upgrade x create outdated`),
		"pipx":     setOf(`install run upgrade inject`),
		"poetry":   setOf(`add install update lock`),
		"docker":   setOf(`pull search login build`),
		"podman":   setOf(`pull search login build`),
		"brew":     setOf(`install update upgrade fetch tap reinstall`),
		"apt":      setOf(`install update upgrade full-upgrade dist-upgrade download source`),
		"apt-get":  setOf(`install update upgrade dist-upgrade download source`),
		"composer": setOf(`install require update`),
		"npx":      {"": true},
		"bunx":     {"": true},
		"pnpx":     {"": true},
	}
})

var pkgWrite = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"bun":    setOf(`publish`),
		"twine":  setOf(`upload register`),
		"poetry": setOf(`publish`),
		"docker": setOf(`push`),
		"podman": setOf(`push`),
		"flit":   setOf(`publish`),
		"hatch":  setOf(`publish`),
	}
})

// networkActions returns the tags one invocation performs: a registered
// program's entry answers; of the others, package managers read or write
// by their subcommand (pkgRead, pkgWrite).
func networkActions(inv invocation) []string {
	if p := programs()[inv.prog]; p != nil {
		if p.actions == nil {
			return nil
		}
		return p.actions(inv)
	}
	var first string
	if len(inv.chain) > 0 {
		first = inv.chain[0]
	} else {
		first = firstOperand(inv.args, globalOpts()[inv.prog])
	}
	if pkgWrite()[inv.prog][first] {
		return []string{policy.ActionHTTPWrite}
	}
	if r := pkgRead()[inv.prog]; r != nil && (r[first] || r[""] || inv.prog == "yarn" && first == "") {
		return []string{policy.ActionHTTPRead}
	}
	return nil
}

func hasDynamic(args []word) bool {
	for _, w := range args {
		if w.dyn {
			return true
		}
	}
	return false
}

func firstOperand(args []word, sp optSpec) string {
	o := scanOpts(args, 1, sp)
	if o.next < len(args) && !args[o.next].dyn {
		return args[o.next].val
	}
	return ""
}

func readMethod(m string) bool {
	switch strings.ToUpper(m) {
	case "GET", "HEAD", "OPTIONS":
		return true
	}
	return false
}

// operands returns argv's non-option words, skipping option values.
func operands(args []word, sp optSpec) []word {
	var out []word
	i := 1
	for i < len(args) {
		o := scanOpts(args, i, sp)
		if o.next >= len(args) {
			break
		}
		out = append(out, args[o.next])
		i = o.next + 1
		if o.next > 0 && args[o.next-1].val == "--" {
			out = append(out, args[i:]...)
			break
		}
	}
	return out
}

// ExtractDomainsFromCommand returns the canonical hosts (policy.ParseHost)
// the line's network commands contact: URL arguments of curl, wget, httpie
// and git, git's repository argument (https://, ssh://, git://,
// user@host:path), ssh/scp/rsync destinations, curl --resolve and
// --connect-to hosts, DNS tools' query names and raw socket tools' hosts.
// Words that are not static or not valid hosts are skipped, so callers must
// also check Classify(line).Unparseable. It is safe for concurrent use.
func ExtractDomainsFromCommand(line string) []string {
	return Classify(line).Domains()
}

// unreadDestination returns the first program of the line whose entry
// says its destination cannot be read from the line (program.unread), and
// why.
func (c Classification) unreadDestination() (prog, why string) {
	for _, inv := range c.invs {
		if p := programs()[inv.prog]; p != nil && p.unread != nil {
			if why := p.unread(inv); why != "" {
				return inv.prog, why
			}
		}
	}
	return "", ""
}

// Domains is ExtractDomainsFromCommand for a line already classified.
// A package manager's default registry (the one it contacts when the line
// names none) is among them.
func (c Classification) Domains() []string { return c.domains(true) }

// namedDomains is Domains without the defaults: the hosts the line names.
// Inside the sandbox an unnamed destination is the egress proxy's to
// decide, so Decide checks these only.
func (c Classification) namedDomains() []string { return c.domains(false) }

func (c Classification) domains(defaults bool) []string {
	var out []string
	addHost := func(h string) {
		if d, ok := strings.CutPrefix(h, defaultMark); ok {
			if !defaults {
				return
			}
			h = d
		}
		if h == "" {
			return
		}
		ph, err := policy.ParseHost(h)
		if err != nil {
			return
		}
		if s := ph.String(); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, inv := range c.invs {
		if p := programs()[inv.prog]; p != nil {
			if p.hosts != nil {
				for _, h := range p.hosts(inv) {
					addHost(h)
				}
			}
			continue
		}
		switch inv.prog {
		case "pipx", "bun", "npx", "bunx", "poetry", "brew", "docker", "podman", "composer":
			for _, h := range pkgURLHosts(inv) {
				addHost(h)
			}
		}
	}
	return out
}

// pkgURLHosts returns the hosts of the URL arguments of a package manager
// (or helm): a scheme's host, after a prefix such as "git+" or "name=".
func pkgURLHosts(inv invocation) []string {
	var h hostList
	for _, w := range inv.args[1:] {
		if i := strings.Index(w.val, "://"); !w.dyn && i > 0 && !strings.HasPrefix(w.val, "-") {
			h.url(w.val[strings.LastIndexAny(w.val[:i], "+=")+1:])
		}
	}
	return h
}

// urlHost extracts the host from a URL, an scp-style [user@]host:path
// (when scp is true) or a bare host[:port][/path].
func urlHost(s string, scp bool) string {
	if s == "" {
		return ""
	}
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
		if j := strings.IndexAny(s, "/?#"); j >= 0 {
			s = s[:j]
		}
		if j := strings.LastIndexByte(s, '@'); j >= 0 {
			s = s[j+1:]
		}
		h, _, err := policy.SplitHostPort(s)
		if err != nil {
			return ""
		}
		return h
	}
	if scp {
		i := strings.IndexByte(s, ':')
		if i <= 0 || strings.Contains(s[:i], "/") {
			if strings.Contains(s, "@") && !strings.Contains(s, "/") {
				return s[strings.LastIndexByte(s, '@')+1:]
			}
			return ""
		}
		s = s[:i]
		if j := strings.LastIndexByte(s, '@'); j >= 0 {
			s = s[j+1:]
		}
		return s
	}
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		return ""
	}
	if j := strings.LastIndexByte(s, '@'); j >= 0 && !strings.Contains(s[:j], "/") {
		s = s[j+1:]
	}
	if j := strings.IndexAny(s, "/?#"); j >= 0 {
		s = s[:j]
	}
	h, _, err := policy.SplitHostPort(s)
	if err != nil {
		return ""
	}
	return h
}
