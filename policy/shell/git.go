package shell

import (
	"fmt"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

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

var ghGroups = sync.OnceValue(func() map[string]bool {
	return setOf(`pr issue repo release gist run workflow auth secret variable label codespace cs org project ssh-key gpg-key cache ruleset attestation extension ext config alias search`)
})
var ghTop = sync.OnceValue(func() map[string]bool {
	return setOf(`pr issue repo release gist run workflow auth secret variable label codespace cs org project ssh-key gpg-key cache ruleset attestation extension ext config alias search api browse status completion help copilot version agent-task preview`)
})

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(s) {
		m[f] = true
	}
	return m
}

// git configuration keys whose value is a command git runs.
var reGitCmdKey = newLazyRegexp(`^(core\.(sshcommand|pager|fsmonitor|editor|askpass|gitproxy)|diff\.external|credential\.(.*\.)?helper|sequence\.editor|gpg\.(.*\.)?program|pager\..*|interactive\.difffilter|man\.viewer|man\..*\.cmd|web\.browser|browser\..*\.cmd|difftool\..*\.cmd|mergetool\..*\.cmd|filter\..*\.(clean|smudge|process)|diff\..*\.(textconv|command)|merge\..*\.driver|uploadpack\.packobjectshook|remote\..*\.(uploadpack|receivepack|proxy))$`)

// git configuration keys that change what git loads or contacts.
var reGitLoadKey = newLazyRegexp(`^(core\.hookspath|include\.path|includeif\..*|protocol\..*allow|url\..*\.(insteadof|pushinsteadof)|core\.worktree|alias\..*)$`)

func (a *analyzer) git(inv invocation, in stdin, depth int) {
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
// are the options whose value git runs.
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

var ghValueFlags = sync.OnceValue(func() map[string]bool {
	return setOf(`-R --repo --hostname -t --title -b --body -F --body-file --field -B --base -H --head --header -a --assignee -l --label -m --milestone -p --project -r --reviewer -T --template -q --jq -L --limit -S --search -s --state -A --author -X --method -f --raw-field --input --json -e --branch -c --comment -o --output -w --workflow -D --dir -n --name`)
})

func (a *analyzer) gh(inv invocation, depth int) {
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
	a.record(inv)
	if len(chain) == 2 && (chain[0] == "alias" && (chain[1] == "set" || chain[1] == "import")) {
		a.fail("gh alias " + chain[1] + " defines a new gh command")
	}
}
