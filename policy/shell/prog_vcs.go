package shell

import (
	"fmt"
	"strings"
	"sync"

	"github.com/barry-rocks/sandbox/policy"
	"mvdan.cc/sh/v3/syntax"
)

// The version-control family: git (also run as hub and yadm, and in its
// dashed forms such as git-push) and GitHub's gh.
func vcsPrograms() map[string]*program {
	return map[string]*program{
		"git": {run: gitRun, nonExec: true, actions: gitActions, hosts: gitHosts, writes: gitWrites,
			subcommands: gitSubcommands, aliases: []string{"hub", "yadm"}, dashed: gitDashed, twin: gitTwin},
		// gh talks to GitHub's API, a host no word of the line names as a
		// URL: gh api's is read (ghAPIHosts); the other commands' depends
		// on the repository's remote and gh's configuration, so they
		// report none and a domain rule fails closed on them.
		"gh": {run: ghRun, nonExec: true, actions: ghActions, hosts: ghHosts, subcommands: ghTop},
	}
}

// --- git ---

// gitSubcommands are git's own subcommands: any other first word is an
// alias or a git-NAME program on PATH.
var gitSubcommands = sync.OnceValue(func() map[string]bool {
	return setOf(`add am annotate apply archive bisect blame branch bugreport bundle cat-file check-attr
check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool
clean clone column commit commit-graph commit-tree config count-objects credential describe
diagnose diff diff-files diff-index diff-tree difftool fast-export fast-import fetch fetch-pack
filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck gc grep gui hash-object
help hook http-push index-pack init instaweb interpret-trailers log ls-files ls-remote ls-tree
maintenance merge merge-base merge-file merge-tree mergetool mktag mktree multi-pack-index mv
name-rev notes pack-objects pack-refs patch-id prune pull push range-diff read-tree rebase reflog
refs remote repack replace replay request-pull rerere reset restore rev-list rev-parse revert rm
send-email send-pack shortlog show show-branch show-ref sparse-checkout stage stash status
stripspace submodule switch symbolic-ref tag update-index update-ref update-server-info var
verify-commit verify-pack verify-tag version whatchanged worktree write-tree lfs flow upload-pack receive-pack`)
})

// git subcommands whose next operand is a sub-subcommand.
var gitGroups = sync.OnceValue(func() map[string]bool {
	return setOf(`remote stash submodule lfs worktree notes bisect sparse-checkout maintenance hook reflog bundle commit-graph multi-pack-index flow`)
})

// git subcommands that run hooks or editors the line does not show.
var gitOpaque = sync.OnceValue(func() map[string]bool {
	return setOf(`commit merge am rebase push pull checkout switch cherry-pick revert`)
})

// gitDashed reports the dashed forms git runs: "git-push" is "git push",
// and git-credential-NAME a credential helper.
func gitDashed(sub string) bool {
	return gitSubcommands()[sub] || strings.HasPrefix(sub, "credential-")
}

// git configuration keys whose value is a command git runs.
var reGitCmdKey = &lazyRegexp{pattern: `^(core\.(sshcommand|pager|fsmonitor|editor|askpass|gitproxy)|diff\.external|credential\.(.*\.)?helper|sequence\.editor|gpg\.(.*\.)?program|pager\..*|interactive\.difffilter|man\.viewer|man\..*\.cmd|web\.browser|browser\..*\.cmd|difftool\..*\.cmd|mergetool\..*\.cmd|filter\..*\.(clean|smudge|process)|diff\..*\.(textconv|command)|merge\..*\.driver|uploadpack\.packobjectshook|remote\..*\.(uploadpack|receivepack|proxy))$`}

// git configuration keys that change what git loads or contacts.
var reGitLoadKey = &lazyRegexp{pattern: `^(core\.hookspath|include\.path|includeif\..*|protocol\..*allow|url\..*\.(insteadof|pushinsteadof)|core\.worktree|alias\..*)$`}

// gitRun reads git's global options (-c, -C, aliases defined with -c), its
// subcommand chain and the commands its subcommands run (config keys that
// name a command, submodule foreach, rebase --exec, filter-branch, the
// transports' --upload-pack/--receive-pack...).
func gitRun(a *analyzer, inv invocation, in stdin, depth int) {
	args := inv.args
	aliases := map[string]string{}
	i := 1
	for i < len(args) {
		w := args[i]
		if w.dyn {
			if w.mayBeOption() {
				a.fail("subcommand or option of git is not static: " + w.val)
				return
			}
			break
		}
		v := w.val
		switch {
		case v == "-C" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" || v == "--super-prefix" || v == "--attr-source" || v == "--list-cmds":
			if i+1 < len(args) && args[i+1].dyn && !args[i+1].quoted {
				a.fail(fmt.Sprintf("unquoted value of git %s is not static: %s", v, args[i+1].val))
				return
			}
			i += 2
		case v == "-c":
			if i+1 >= len(args) {
				i++
				continue
			}
			kv := args[i+1]
			if kv.dyn {
				a.fail("git -c with a value that is not static: " + kv.val)
				return
			}
			key, val, _ := strings.Cut(kv.val, "=")
			key = strings.ToLower(key)
			if name, ok := strings.CutPrefix(key, "alias."); ok {
				aliases[name] = val
			} else if !a.gitConfig(key, val, depth) {
				return
			}
			i += 2
		case v == "--config-env" || strings.HasPrefix(v, "--config-env="):
			a.fail("git --config-env reads configuration from the environment")
			return
		case strings.HasPrefix(v, "--exec-path="):
			a.fail("git --exec-path= changes which programs git runs")
			return
		case strings.HasPrefix(v, "-"):
			i++
		default:
			goto sub
		}
	}
sub:
	if i >= len(args) {
		a.record(inv)
		return
	}
	if args[i].dyn {
		a.fail("subcommand of git is not static: " + args[i].val)
		return
	}
	name := args[i].val
	if al, ok := aliases[name]; ok {
		inv.chain = []string{name}
		a.record(inv)
		if cmd, ok := strings.CutPrefix(al, "!"); ok {
			a.source(cmd, syntax.LangBash, depth+1)
			return
		}
		nargs := []word{staticWord("git")}
		for _, f := range strings.Fields(al) {
			nargs = append(nargs, staticWord(f))
		}
		a.command(append(nargs, args[i+1:]...), in, depth+1)
		return
	}
	inv.chain = []string{name}
	rest := args[i+1:]
	if gitGroups()[name] {
		o := scanOpts(args, i+1, optSpec{})
		if o.bad == "" && o.next < len(args) {
			if args[o.next].dyn {
				a.fail(fmt.Sprintf("subcommand of git %s is not static: %s", name, args[o.next].val))
				return
			}
			inv.chain = append(inv.chain, args[o.next].val)
		}
	}
	if gitOpaque()[name] {
		a.opaque("git")
	}
	a.record(inv)
	a.commandWrites(inv)
	switch name {
	case "config":
		read := false
		for _, w := range rest {
			switch w.val {
			case "--get", "--get-all", "--get-regexp", "-l", "--list", "--get-urlmatch", "get", "list", "--unset", "--unset-all", "unset":
				read = true
			}
		}
		if read {
			return
		}
		for _, w := range rest {
			k := strings.ToLower(w.val)
			if !w.dyn && (reGitCmdKey.MatchString(k) || reGitLoadKey.MatchString(k)) {
				a.fail("git config sets " + w.val + ", which changes what git runs later")
				return
			}
		}
	case "submodule":
		if len(inv.chain) > 1 && inv.chain[1] == "foreach" {
			o := scanOpts(args, i+2, optSpec{})
			a.joinedString("git submodule foreach", args[o.next:], depth)
		}
	case "rebase":
		o := scanOpts(args, i+1, optSpec{short: "sSX", long: []string{"onto", "strategy", "strategy-option", "gpg-sign"}, str: "x", strLong: []string{"exec"}})
		for _, s := range o.strs {
			a.codeString("git rebase --exec", s, syntax.LangBash, depth)
		}
	case "bisect":
		if len(inv.chain) > 1 && inv.chain[1] == "run" {
			for j := i + 1; j < len(args); j++ {
				if args[j].val == "run" {
					if j+1 < len(args) {
						a.command(args[j+1:], stdin{}, depth+1)
					}
					break
				}
			}
		}
	case "filter-branch":
		o := scanOpts(args, i+1, optSpec{short: "d", long: []string{"original", "state-branch", "subdirectory-filter"}, strLong: []string{"env-filter", "tree-filter", "index-filter", "parent-filter", "msg-filter", "commit-filter", "tag-name-filter"}})
		for _, s := range o.strs {
			a.codeString("git filter-branch", s, syntax.LangBash, depth)
		}
	case "difftool", "mergetool", "grep", "clone", "fetch", "pull", "push", "ls-remote", "archive", "send-pack", "fetch-pack":
		o := scanAll(args, i+1, gitSubOpts()[name])
		for _, s := range o.strs {
			a.codeString("git "+name, s, syntax.LangBash, depth)
		}
		for _, w := range append(o.seen["-c"], o.seen["--config"]...) {
			if w.dyn {
				a.fail("git " + name + " -c with a value that is not static: " + w.val)
				return
			}
			key, val, _ := strings.Cut(w.val, "=")
			if !a.gitConfig(strings.ToLower(key), val, depth) {
				return
			}
		}
		if name == "grep" {
			// -O takes its pager only glued (-Ocmd); a separate word is the pattern.
			for _, w := range rest {
				if p, ok := strings.CutPrefix(w.val, "-O"); ok && p != "" && !w.dyn {
					a.codeString("git grep -O", staticWord(p), syntax.LangBash, depth)
				}
			}
		}
		for _, w := range rest {
			if strings.HasPrefix(w.val, "ext::") {
				a.fail("git ext:: URL runs a command")
				return
			}
		}
	}
}

// Option grammars of git subcommands that take command strings: str/strLong
// are the options whose value git runs. gitHosts reads the transports'
// repository operand with them too.
var gitSubOpts = sync.OnceValue(func() map[string]optSpec {
	return map[string]optSpec{
		"difftool":   {short: "t", long: []string{"tool"}, str: "x", strLong: []string{"extcmd"}},
		"mergetool":  {short: "t", long: []string{"tool"}},
		"grep":       {short: "efABC", long: []string{"max-depth", "threads", "context", "after-context", "before-context"}, strLong: []string{"open-files-in-pager"}},
		"clone":      {short: "objc", long: []string{"origin", "branch", "depth", "reference", "reference-if-able", "separate-git-dir", "jobs", "template", "filter", "config", "shallow-since", "shallow-exclude", "server-option", "bundle-uri", "ref-format"}, str: "u", strLong: []string{"upload-pack"}},
		"fetch":      {short: "jo", long: []string{"depth", "deepen", "shallow-since", "shallow-exclude", "jobs", "refmap", "server-option", "negotiation-tip", "filter", "recurse-submodules-default", "submodule-prefix"}, strLong: []string{"upload-pack"}},
		"pull":       {short: "sXjo", long: []string{"depth", "deepen", "shallow-since", "shallow-exclude", "jobs", "strategy", "strategy-option", "server-option", "negotiation-tip", "refmap"}, strLong: []string{"upload-pack"}},
		"push":       {short: "o", long: []string{"push-option", "repo", "signed"}, strLong: []string{"receive-pack", "exec"}},
		"ls-remote":  {long: []string{"sort", "server-option"}, str: "u", strLong: []string{"upload-pack"}},
		"archive":    {short: "o", long: []string{"format", "prefix", "output", "remote", "add-file", "add-virtual-file"}, strLong: []string{"exec"}},
		"send-pack":  {strLong: []string{"receive-pack", "exec"}},
		"fetch-pack": {strLong: []string{"upload-pack", "exec"}},
	}
})

// gitConfig checks one "git -c key=value"; it returns false after failing.
func (a *analyzer) gitConfig(key, val string, depth int) bool {
	if reGitLoadKey.MatchString(key) {
		a.fail("git -c " + key + " changes what git loads or contacts")
		return false
	}
	if reGitCmdKey.MatchString(key) {
		switch strings.ToLower(val) {
		case "", "true", "false", "0", "1", "cat", "less":
			return true
		}
		a.source(strings.TrimPrefix(val, "!"), syntax.LangBash, depth+1)
	}
	return true
}

// gitTwin names the porcelain a plumbing or extension chain is: send-pack
// and http-push push, fetch-pack fetches, git lfs push/fetch/pull/clone
// push, fetch, pull and clone (so "git:push" denies them all).
func gitTwin(chain []string) []string {
	if len(chain) == 0 {
		return nil
	}
	switch chain[0] {
	case "send-pack", "http-push":
		return []string{"push"}
	case "fetch-pack":
		return []string{"fetch"}
	case "lfs":
		if len(chain) > 1 && (chain[1] == "push" || chain[1] == "fetch" || chain[1] == "pull" || chain[1] == "clone") {
			return chain[1:2]
		}
	}
	return nil
}

// gitActions: push and its kin push; mail and request-pull speak other
// protocols; fetch, clone and the subcommands that fetch read; a
// subcommand git does not know (an alias) may do either.
func gitActions(inv invocation) []string {
	if len(inv.chain) == 0 {
		return nil
	}
	sub, second := inv.chain[0], ""
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
		sub == "lfs" && (second == "fetch" || second == "pull" || second == "clone"),
		sub == "archive" && gitArchiveRemote(inv.args),
		sub == "remote" && second == "add" && gitRemoteAddFetches(inv.args):
		return []string{policy.ActionGitFetch}
	case !gitSubcommands()[sub]:
		return []string{policy.ActionGitFetch, policy.ActionGitPush}
	}
	return nil
}

// gitRepoOpts is the grammar git's hosts have always been read with, for
// every subcommand; gitHosts also reads each subcommand with its own
// (gitSubOpts), since where the two disagree a value taken for the
// repository ("git clone -c allowed.example:x https://evil.example/r")
// must not hide the real one.
var gitRepoOpts = optSpec{short: "obujC", long: []string{"origin", "branch", "upload-pack", "receive-pack", "depth", "reference", "separate-git-dir", "jobs", "template", "filter", "push-option", "server-option", "config", "repo"}}

// gitHosts: the repository (first operand) of the transports, under
// either grammar; git archive's --remote (and its first operand, as read
// before); the URLs among the operands of git remote and git submodule.
func gitHosts(inv invocation) []string {
	if len(inv.chain) == 0 {
		return nil
	}
	var h hostList
	sub := inv.chain[0]
	rest := gitAfter(inv.args, sub)
	first := func(sp optSpec) {
		if ops := operands(rest, sp); len(ops) > 0 && !ops[0].dyn {
			h.scp(ops[0].val)
		}
	}
	switch sub {
	case "clone", "fetch", "pull", "push", "ls-remote", "fetch-pack", "send-pack":
		first(gitRepoOpts)
		first(gitSubOpts()[sub])
	case "archive":
		// Its operands are tree-ishes; the repository is --remote's.
		first(gitRepoOpts)
		for _, w := range scanAll(rest, 1, gitSubOpts()[sub]).seen["--remote"] {
			if !w.dyn {
				h.scp(w.val)
			}
		}
	case "remote", "submodule":
		for _, w := range operands(rest, gitRepoOpts) {
			if !w.dyn && (strings.Contains(w.val, "://") || strings.Contains(w.val, "@")) {
				h.scp(w.val)
			}
		}
	}
	return h
}

// gitAfter returns the words after git's subcommand word, behind a
// program word (so operands and scanOpts read them from index 1); nil when
// the subcommand is not in args.
func gitAfter(args []word, sub string) []word {
	for i := 1; i < len(args); i++ {
		if !args[i].dyn && args[i].val == sub {
			return append([]word{staticWord("git")}, args[i+1:]...)
		}
	}
	return nil
}

// gitArchiveRemote reports git archive --remote (any abbreviation git
// accepts), which fetches the archive from a repository; an option word
// that is not static may be one.
func gitArchiveRemote(args []word) bool {
	o := scanAll(gitAfter(args, "archive"), 1, gitSubOpts()["archive"])
	return o.has("--remote") || o.bad != ""
}

// gitRemoteAddFetches reports git remote add -f (--fetch, or a prefix of
// it), which fetches from the new remote at once; an option word that is
// not static may be one.
func gitRemoteAddFetches(args []word) bool {
	rest := gitAfter(args, "remote")
	o := scanOpts(rest, 1, optSpec{})
	if o.next >= len(rest) {
		return false
	}
	for _, w := range rest[o.next+1:] {
		v := w.val
		switch {
		case w.dyn:
			if w.mayBeOption() {
				return true
			}
		case v == "--":
			return false
		case strings.HasPrefix(v, "--"):
			if name, _, _ := strings.Cut(v[2:], "="); name != "" && strings.HasPrefix("fetch", name) {
				return true
			}
		case strings.HasPrefix(v, "-"):
			// A cluster: f is a flag; t and m take the rest as their value.
			if i := strings.IndexAny(v[1:], "ftm"); i >= 0 && v[1+i] == 'f' {
				return true
			}
		}
	}
	return false
}

// gitWrites: git apply writes the files its patch names (unless it only
// checks or reports), git archive -o its archive.
func gitWrites(a *analyzer, inv invocation) {
	if len(inv.chain) == 0 {
		return
	}
	args := inv.args
	switch inv.chain[0] {
	case "apply":
		for _, w := range args[1:] {
			if w.val == "--check" || w.val == "--stat" || w.val == "--numstat" || w.val == "--summary" {
				return
			}
		}
		a.write("", "git apply")
	case "archive":
		for j, w := range args {
			if w.val == "-o" && j+1 < len(args) {
				a.write(args[j+1].val, "git archive -o")
			} else if v, ok := strings.CutPrefix(w.val, "--output="); ok {
				a.write(v, "git archive -o")
			} else if w.val == "--output" && j+1 < len(args) {
				a.write(args[j+1].val, "git archive -o")
			}
		}
	}
}

// --- gh ---

// ghGroups are gh's command groups, whose next operand is a subcommand.
var ghGroups = sync.OnceValue(func() map[string]bool {
	return setOf(`pr issue repo release gist run workflow auth secret variable label codespace cs org project ssh-key gpg-key cache ruleset attestation extension ext config alias search`)
})

// ghTop are gh's own top-level commands: any other first word is an alias
// or an extension.
var ghTop = sync.OnceValue(func() map[string]bool {
	return setOf(`pr issue repo release gist run workflow auth secret variable label codespace cs org project ssh-key gpg-key cache ruleset attestation extension ext config alias search api browse status completion help copilot version agent-task preview`)
})

// ghValueFlags are gh's options that take a value, skipped when reading
// its chain.
var ghValueFlags = sync.OnceValue(func() map[string]bool {
	return setOf(`-R --repo --hostname -t --title -b --body -F --body-file --field -B --base -H --head --header -a --assignee -l --label -m --milestone -p --project -r --reviewer -T --template -q --jq -L --limit -S --search -s --state -A --author -X --method -f --raw-field --input --json -e --branch -c --comment -o --output -w --workflow -D --dir -n --name`)
})

// ghRun reads gh's subcommand chain (with gh's built-in aliases resolved)
// and fails gh alias set/import, which define new gh commands.
func ghRun(a *analyzer, inv invocation, _ stdin, _ int) {
	args := inv.args
	var chain []string
	for i := 1; i < len(args) && len(chain) < 2; i++ {
		w := args[i]
		if w.dyn {
			if len(chain) == 0 || ghGroups()[chain[0]] {
				a.fail("subcommand of gh is not static: " + w.val)
				return
			}
			break
		}
		v := w.val
		if v == "--" {
			break
		}
		if strings.HasPrefix(v, "-") {
			if ghValueFlags()[v] {
				i++
			}
			continue
		}
		chain = append(chain, v)
		if !ghGroups()[v] {
			break
		}
	}
	if len(chain) == 2 {
		// gh's built-in command aliases: "gh pr new" is "gh pr create"
		// (cobra Aliases), so a rule on the real name must match them.
		switch {
		case chain[1] == "new":
			chain[1] = "create"
		case chain[1] == "ls":
			chain[1] = "list"
		case chain[1] == "remove" && (chain[0] == "secret" || chain[0] == "variable"):
			chain[1] = "delete"
		case chain[1] == "rm" && chain[0] == "extension":
			chain[1] = "remove"
		}
	}
	inv.chain = chain
	why := ""
	if len(chain) > 0 && chain[0] == "api" {
		inv.also, why = ghAPIChains(args)
		inv.hosts = ghAPIHosts(args, a.prefixEnv, a.ghHostVals)
	}
	a.record(inv)
	if why != "" {
		a.fail(why)
		return
	}
	if len(chain) == 2 && (chain[0] == "alias" && (chain[1] == "set" || chain[1] == "import")) {
		a.fail("gh alias " + chain[1] + " defines a new gh command")
	}
}

// ghHosts answers the registry's hosts question for gh: gh api's hosts,
// worked out by ghRun; none for the other commands.
func ghHosts(inv invocation) []string { return inv.hosts }

// ghAPIHosts returns the hosts gh api contacts, as gh works them out
// (go-gh's restPrefix): an endpoint that is a full URL is fetched as it
// is; otherwise the API host of --hostname, else of GH_HOST when this
// command's environment sets it, else of github.com and of every GH_HOST
// the line assigns elsewhere (an export reaches later commands). None when
// the endpoint or the --hostname value is not static and may be a URL or
// any host: a domain rule then fails closed. gh's own configuration (a
// hosts.yml with one enterprise host, GH_HOST in the agent's environment)
// is not on the line and is not read.
func ghAPIHosts(args []word, prefix map[string]string, lineHosts []string) []string {
	var hostname *word
	var endpoint *word
	api := ghAPIIndex(args)
	for i := 1; i < len(args); i++ {
		w := args[i]
		v := w.val
		switch {
		case v == "--hostname":
			if i+1 < len(args) {
				i++
				hostname = &args[i]
			}
		case strings.HasPrefix(v, "--hostname="):
			h := w
			h.val = strings.TrimPrefix(v, "--hostname=")
			hostname = &h
		case v == "--":
		case strings.HasPrefix(v, "-") && !w.dyn:
			if ghValueFlags()[v] || v == "--cache" || v == "-p" || v == "--preview" {
				i++
			}
		default:
			if endpoint == nil && i > api {
				endpoint = &args[i]
			}
		}
	}
	if endpoint != nil {
		if endpoint.dyn && !ghPathLead(endpoint.lead) {
			return nil
		}
		if !endpoint.dyn && (strings.HasPrefix(endpoint.val, "https://") || strings.HasPrefix(endpoint.val, "http://")) {
			return []string{urlHost(endpoint.val, false)}
		}
	}
	if hostname != nil {
		if hostname.dyn {
			return nil
		}
		return []string{ghAPIHost(hostname.val)}
	}
	if h, ok := prefix["GH_HOST"]; ok {
		return []string{ghAPIHost(h)}
	}
	hosts := []string{"api.github.com"}
	for _, h := range lineHosts {
		hosts = append(hosts, ghAPIHost(h))
	}
	return hosts
}

// ghPathLead reports whether the static start of a dynamic gh api endpoint
// makes it a path, never a URL ("repos/$R/pulls", "/user/$X").
func ghPathLead(lead string) bool {
	return lead != "" && !strings.HasPrefix("https://", lead) && !strings.HasPrefix("http://", lead) &&
		!strings.HasPrefix(lead, "http")
}

// ghAPIHost is the API host of a GitHub instance as gh names it
// (go-gh's restPrefix and NormalizeHostname): github.com and its
// subdomains are api.github.com, github.localhost is api.github.localhost,
// a tenancy host (NAME.ghe.com) is api.NAME.ghe.com, and any other host, an
// Enterprise Server, serves its API itself (/api/v3, /api/graphql).
func ghAPIHost(h string) string {
	h = strings.ToLower(h)
	switch {
	case h == "garage.github.com":
		return h
	case h == "github.com" || strings.HasSuffix(h, ".github.com"):
		return "api.github.com"
	case h == "github.localhost" || strings.HasSuffix(h, ".github.localhost"):
		return "api.github.localhost"
	case strings.HasSuffix(h, ".ghe.com"):
		before := strings.TrimSuffix(h, ".ghe.com")
		return "api." + before[strings.LastIndexByte(before, '.')+1:] + ".ghe.com"
	}
	return h
}

// ghActions: gh api reads or writes by its method and fields; a
// subcommand with a write verb, or one gh does not know (an extension),
// may write; the rest read. help, version, completion and alias contact
// nothing.
func ghActions(inv invocation) []string {
	sub := ""
	if len(inv.chain) > 0 {
		sub = inv.chain[0]
	}
	if sub == "" || sub == "help" || sub == "version" || sub == "completion" || sub == "alias" {
		return nil
	}
	if sub == "api" {
		if ghAPIWrite(inv.args) {
			return []string{policy.ActionHTTPWrite}
		}
		return []string{policy.ActionHTTPRead}
	}
	if len(inv.chain) > 1 && ghWriteVerbs()[inv.chain[1]] || !ghTop()[sub] {
		return []string{policy.ActionHTTPRead, policy.ActionHTTPWrite}
	}
	return []string{policy.ActionHTTPRead}
}

// ghWriteVerbs are the second words of gh's chains that change something
// on GitHub.
var ghWriteVerbs = sync.OnceValue(func() map[string]bool {
	return setOf(`create edit merge close reopen delete comment review ready lock unlock transfer archive unarchive rename upload set remove add fork sync cancel rerun enable disable run develop pin unpin login logout refresh setup-git`)
})

// ghAPIChains returns the gh chains a write through gh api does (gh
// creates, merges, comments... by REST endpoint and method, or by GraphQL
// mutation), so that a rule on "gh:pr:create" denies "gh api
// repos/o/r/pulls -f title=…"; why is set when the write's target cannot
// be read (an endpoint or a GraphQL query that is not static, a mutation
// the table does not name). A read has none.
func ghAPIChains(args []word) (chains [][]string, why string) {
	if !ghAPIWrite(args) {
		return nil, ""
	}
	method, endpoint, query, queryKnown := "POST", "", "", true
	var endpointWord *word
	for i := ghAPIIndex(args) + 1; i < len(args); i++ {
		w := args[i]
		v := w.val
		next := func() (word, bool) {
			if i+1 < len(args) {
				i++
				return args[i], true
			}
			return word{}, false
		}
		switch {
		case v == "-X" || v == "--method":
			if m, ok := next(); ok {
				method = strings.ToUpper(m.val)
			}
		case strings.HasPrefix(v, "--method="):
			method = strings.ToUpper(strings.TrimPrefix(v, "--method="))
		case strings.HasPrefix(v, "-X") && len(v) > 2:
			method = strings.ToUpper(v[2:])
		case v == "-f" || v == "-F" || v == "--field" || v == "--raw-field":
			if f, ok := next(); ok {
				if k, val, _ := strings.Cut(f.val, "="); strings.EqualFold(k, "query") {
					// -F reads a value of "@FILE" from the file.
					query, queryKnown = val, !f.dyn && !((v == "-F" || v == "--field") && strings.HasPrefix(val, "@"))
				}
			}
		case strings.HasPrefix(v, "--field=") || strings.HasPrefix(v, "--raw-field="):
			_, f, _ := strings.Cut(v, "=")
			if k, val, _ := strings.Cut(f, "="); strings.EqualFold(k, "query") {
				query, queryKnown = val, !w.dyn && !(strings.HasPrefix(v, "--field=") && strings.HasPrefix(val, "@"))
			}
		case v == "--input" || strings.HasPrefix(v, "--input="):
			queryKnown = false
			if v == "--input" {
				next()
			}
		case strings.HasPrefix(v, "-") && ghValueFlags()[v]:
			next()
		case strings.HasPrefix(v, "-"):
		default:
			if endpointWord == nil {
				endpointWord = &args[i]
				endpoint = w.val
			}
		}
	}
	if endpointWord == nil || endpointWord.dyn {
		return nil, "gh api writes to an endpoint that is not static"
	}
	ep := strings.ToLower(strings.Trim(strings.SplitN(endpoint, "?", 2)[0], "/"))
	if ep == "graphql" {
		if !queryKnown {
			return nil, "gh api graphql with a query the classifier cannot read"
		}
		if !strings.Contains(query, "mutation") {
			return nil, ""
		}
		for _, m := range reGraphQLField.FindAllString(query, -1) {
			if c, ok := ghMutations()[m]; ok {
				chains = append(chains, c...)
			}
		}
		if len(chains) == 0 {
			return nil, "gh api graphql mutation the classifier does not know"
		}
		return chains, ""
	}
	parts := strings.Split(ep, "/")
	key := method
	switch {
	case len(parts) >= 1 && parts[0] == "repos" && len(parts) >= 3:
		for _, p := range parts[3:] {
			if p != "" && strings.Trim(p, "0123456789") == "" {
				p = "N"
			}
			key += " " + p
		}
		if len(parts) == 3 {
			key += " REPO"
		}
	case len(parts) >= 1:
		key += " " + parts[0]
	}
	return ghRESTWrites()[key], ""
}

// ghAPIIndex is the index of "api" in gh's arguments.
func ghAPIIndex(args []word) int {
	for i := 1; i < len(args); i++ {
		if args[i].val == "api" {
			return i
		}
	}
	return -1
}

var reGraphQLField = &lazyRegexp{pattern: `[A-Za-z_][A-Za-z0-9_]*`}

// ghRESTWrites maps a REST write (method, then the path after
// repos/OWNER/REPO, numbers as N) to the gh chains that do it.
var ghRESTWrites = sync.OnceValue(func() map[string][][]string {
	return map[string][][]string{
		"POST pulls":              {{"pr", "create"}},
		"PUT pulls N merge":       {{"pr", "merge"}},
		"POST merges":             {{"pr", "merge"}},
		"POST pulls N reviews":    {{"pr", "review"}},
		"POST pulls N comments":   {{"pr", "comment"}},
		"PATCH pulls N":           {{"pr", "edit"}, {"pr", "close"}},
		"POST issues":             {{"issue", "create"}},
		"PATCH issues N":          {{"issue", "edit"}, {"issue", "close"}},
		"POST issues N comments":  {{"issue", "comment"}, {"pr", "comment"}},
		"PATCH issues comments N": {{"issue", "comment"}, {"pr", "comment"}},
		"POST releases":           {{"release", "create"}},
		"PATCH releases N":        {{"release", "edit"}},
		"DELETE releases N":       {{"release", "delete"}},
		"DELETE REPO":             {{"repo", "delete"}},
		"PATCH REPO":              {{"repo", "edit"}},
		"POST forks":              {{"repo", "fork"}},
		"POST gists":              {{"gist", "create"}},
	}
})

// ghMutations maps GraphQL mutations to the gh chains that do them.
var ghMutations = sync.OnceValue(func() map[string][][]string {
	return map[string][][]string{
		"createPullRequest":          {{"pr", "create"}},
		"mergePullRequest":           {{"pr", "merge"}},
		"enablePullRequestAutoMerge": {{"pr", "merge"}},
		"closePullRequest":           {{"pr", "close"}},
		"reopenPullRequest":          {{"pr", "reopen"}},
		"updatePullRequest":          {{"pr", "edit"}},
		"addPullRequestReview":       {{"pr", "review"}},
		"submitPullRequestReview":    {{"pr", "review"}},
		"createIssue":                {{"issue", "create"}},
		"closeIssue":                 {{"issue", "close"}},
		"reopenIssue":                {{"issue", "reopen"}},
		"updateIssue":                {{"issue", "edit"}},
		"deleteIssue":                {{"issue", "delete"}},
		"addComment":                 {{"issue", "comment"}, {"pr", "comment"}},
		"createRef":                  {{"repo", "edit"}},
	}
})

// ghAPIWrite reports gh api with fields, an input body or a method that
// is not a read.
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
