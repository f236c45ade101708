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

var ghWriteVerbs = sync.OnceValue(func() map[string]bool {
	return setOf(`create edit merge close reopen delete comment review ready lock unlock transfer archive unarchive rename upload set remove add fork sync cancel rerun enable disable run develop pin unpin login logout refresh setup-git`)
})

var pkgRead = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"npm":      setOf(`install i ci add update upgrade outdated view info show audit dlx exec create init x`),
		"pnpm":     setOf(`install i add update up upgrade outdated view info audit dlx exec create`),
		"yarn":     setOf(`install add upgrade up outdated info dlx create`),
		"bun":      setOf(`install i add update upgrade x create outdated`),
		"pip":      setOf(`install download index search wheel`),
		"pip3":     setOf(`install download index search wheel`),
		"pipx":     setOf(`install run upgrade inject`),
		"uv":       setOf(`add sync lock pip tool run venv python`),
		"poetry":   setOf(`add install update lock`),
		"go":       setOf(`get install mod`),
		"cargo":    setOf(`fetch install update add search`),
		"gem":      setOf(`install update fetch`),
		"bundle":   setOf(`install update`),
		"docker":   setOf(`pull search login build`),
		"podman":   setOf(`pull search login build`),
		"brew":     setOf(`install update upgrade fetch tap reinstall`),
		"apt":      setOf(`install update upgrade full-upgrade dist-upgrade download source`),
		"apt-get":  setOf(`install update upgrade dist-upgrade download source`),
		"helm":     setOf(`install pull upgrade repo dependency`),
		"composer": setOf(`install require update`),
		"npx":      {"": true},
		"bunx":     {"": true},
		"pnpx":     {"": true},
	}
})

var pkgWrite = sync.OnceValue(func() map[string]map[string]bool {
	return map[string]map[string]bool{
		"npm":    setOf(`publish unpublish deprecate dist-tag owner`),
		"pnpm":   setOf(`publish`),
		"yarn":   setOf(`publish npm`),
		"bun":    setOf(`publish`),
		"twine":  setOf(`upload register`),
		"uv":     setOf(`publish`),
		"poetry": setOf(`publish`),
		"cargo":  setOf(`publish yank owner`),
		"gem":    setOf(`push yank owner`),
		"docker": setOf(`push`),
		"podman": setOf(`push`),
		"helm":   setOf(`push`),
		"flit":   setOf(`publish`),
		"hatch":  setOf(`publish`),
	}
})

// networkActions returns the tags one invocation performs.
func networkActions(inv invocation) []string {
	if p := programs[inv.prog]; p != nil {
		if p.actions == nil {
			return nil
		}
		return p.actions(inv)
	}
	args := inv.args
	sub := ""
	if len(inv.chain) > 0 {
		sub = inv.chain[0]
	}
	switch inv.prog {
	case "git":
		if sub == "" {
			return nil
		}
		second := ""
		if len(inv.chain) > 1 {
			second = inv.chain[1]
		}
		switch {
		case sub == "push" || sub == "send-pack" || sub == "http-push" || sub == "lfs" && second == "push":
			return []string{policy.ActionGitPush}
		case sub == "send-email" || sub == "imap-send" || sub == "request-pull":
			// Mail out (SMTP/IMAP) and request-pull's check of the remote:
			// other protocols than git's, to hosts the line may not name.
			return allLeafActions
		case sub == "fetch" || sub == "pull" || sub == "clone" || sub == "ls-remote" || sub == "fetch-pack",
			sub == "remote" && (second == "update" || second == "show" || second == "prune"),
			sub == "submodule" && (second == "update" || second == "add" || second == "sync"),
			sub == "lfs" && (second == "fetch" || second == "pull" || second == "clone"):
			return []string{policy.ActionGitFetch}
		case !gitSubcommands()[sub]:
			return []string{policy.ActionGitFetch, policy.ActionGitPush}
		}
	case "gh":
		if sub == "" || sub == "help" || sub == "version" || sub == "completion" || sub == "alias" {
			return nil
		}
		if sub == "api" {
			if ghAPIWrite(args) {
				return []string{policy.ActionHTTPWrite}
			}
			return []string{policy.ActionHTTPRead}
		}
		if len(inv.chain) > 1 && ghWriteVerbs()[inv.chain[1]] || !ghTop()[sub] {
			return []string{policy.ActionHTTPRead, policy.ActionHTTPWrite}
		}
		return []string{policy.ActionHTTPRead}
	case "dig", "nslookup", "host", "drill", "delv", "kdig":
		return []string{policy.ActionDNS}
	case "resolvectl":
		if sub == "query" || sub == "resolve" || sub == "" && len(args) > 1 && (args[1].val == "query" || args[1].val == "resolve") {
			return []string{policy.ActionDNS}
		}
	case "getent":
		if len(args) > 1 && strings.Contains(args[1].val, "hosts") {
			return []string{policy.ActionDNS}
		}
	case "ftp", "tftp", "lftp", "ftpget", "ftpput", "ssl_client", "aria2c", "axel", "lynx", "links", "elinks", "w3m", "whois",
		"ping", "ping6", "fping", "arping", "traceroute", "traceroute6", "tracepath", "mtr", "nmap", "hping3",
		"rclone", "s3cmd", "gsutil",
		"aws", "gcloud", "az", "kubectl", "oc", "helm", "doctl", "flyctl", "heroku", "vercel", "netlify", "wrangler":
		// Raw or other-protocol clients (busybox applets among them) and
		// cloud CLIs, which talk to endpoints the line does not name: any
		// leaf, so a domain rule cannot be passed by a tool the
		// classifier does not read.
		return allLeafActions
	case "openssl":
		// openssl s_client -connect HOST:PORT is a raw TLS socket.
		if len(args) > 1 && (args[1].dyn || args[1].val == "s_client" || args[1].val == "s_time") {
			return allLeafActions
		}
	}
	first := sub
	if len(inv.chain) == 0 {
		first = firstOperand(args, globalOpts()[inv.prog])
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

func ghAPIWrite(args []word) bool {
	for i, w := range args {
		v := w.val
		switch {
		case v == "-f" || v == "-F" || v == "--field" || v == "--raw-field" || v == "--input" ||
			strings.HasPrefix(v, "--field=") || strings.HasPrefix(v, "--raw-field=") || strings.HasPrefix(v, "--input="):
			return true
		case v == "-X" || v == "--method":
			if i+1 < len(args) && !readMethod(args[i+1].val) {
				return true
			}
		case strings.HasPrefix(v, "--method="):
			if !readMethod(strings.TrimPrefix(v, "--method=")) {
				return true
			}
		case strings.HasPrefix(v, "-X") && len(v) > 2:
			if !readMethod(v[2:]) {
				return true
			}
		}
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

// Domains is ExtractDomainsFromCommand for a line already classified.
func (c Classification) Domains() []string {
	var out []string
	addHost := func(h string) {
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
	add := func(raw string, scp bool) { addHost(urlHost(raw, scp)) }
	for _, inv := range c.invs {
		if p := programs[inv.prog]; p != nil {
			if p.hosts != nil {
				for _, h := range p.hosts(inv) {
					addHost(h)
				}
			}
			continue
		}
		args := inv.args
		switch inv.prog {
		case "git":
			if len(inv.chain) == 0 {
				continue
			}
			switch inv.chain[0] {
			case "clone", "fetch", "pull", "push", "ls-remote", "fetch-pack", "send-pack", "archive":
				if ops := operandsAfter(args, inv.chain[0]); len(ops) > 0 && !ops[0].dyn {
					add(ops[0].val, true)
				}
			case "remote", "submodule":
				for _, w := range operandsAfter(args, inv.chain[0]) {
					if !w.dyn && (strings.Contains(w.val, "://") || strings.Contains(w.val, "@")) {
						add(w.val, true)
					}
				}
			}
		case "dig", "drill", "delv", "kdig", "nslookup", "host":
			for _, w := range operands(args, optSpec{short: "tcpqbfkxyW"}) {
				v := w.val
				if w.dyn || strings.HasPrefix(v, "@") || strings.HasPrefix(v, "+") || isAlphaNum(v) && v == strings.ToUpper(v) || isRRType(v) {
					continue
				}
				add(v, false)
				break
			}
		case "pip", "pip3", "pipx", "npm", "pnpm", "yarn", "bun", "npx", "bunx", "uv", "poetry", "go", "cargo", "gem", "brew", "helm", "docker", "podman", "composer":
			for _, w := range args[1:] {
				if i := strings.Index(w.val, "://"); !w.dyn && i > 0 && !strings.HasPrefix(w.val, "-") {
					add(w.val[strings.LastIndexAny(w.val[:i], "+=")+1:], false)
				}
			}
		case "openssl":
			for j := 2; j+1 < len(args); j++ {
				if args[j].val == "-connect" && !args[j+1].dyn {
					add(args[j+1].val, false)
				}
			}
		}
	}
	return out
}

var rrTypes = sync.OnceValue(func() map[string]bool {
	return setOf(`a aaaa mx ns txt cname soa ptr srv caa any axfr ixfr ds dnskey https svcb in ch hs`)
})

func isRRType(s string) bool { return rrTypes()[strings.ToLower(s)] && s == strings.ToUpper(s) }

func isAlphaNum(s string) bool {
	for _, c := range s {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// operandsAfter returns the operands after git's subcommand word.
func operandsAfter(args []word, sub string) []word {
	for i := 1; i < len(args); i++ {
		if !args[i].dyn && args[i].val == sub {
			rest := append([]word{staticWord("git")}, args[i+1:]...)
			return operands(rest, optSpec{short: "obujC", long: []string{"origin", "branch", "upload-pack", "receive-pack", "depth", "reference", "separate-git-dir", "jobs", "template", "filter", "push-option", "server-option", "config", "repo"}})
		}
	}
	return nil
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
