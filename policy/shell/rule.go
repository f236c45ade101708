package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/barry-rocks/sandbox/policy"
)

// RuleUnparseable is the rule code of Decide's denial of a line the
// classifier cannot resolve exactly.
const RuleUnparseable = "shell:unparseable"

// RuleIn names the first kind of rule in b that a shell command could
// break ("bash", "files", "network"), or "" when there is none. It is safe
// for concurrent use.
func RuleIn(b *policy.Bound) string {
	switch {
	case b == nil:
		return ""
	case b.Bash != nil && (len(b.Bash.Deny) > 0 || len(b.Bash.DenyPrograms) > 0):
		return "bash"
	case b.Files != nil && (b.Files.AllowOnly != nil || len(b.Files.Deny) > 0):
		return "files"
	case b.Network != nil && (len(b.Network.Actions) > 0 || len(b.Network.Domains) > 0 || b.Network.AllowDomains != nil):
		return "network"
	}
	return ""
}

// Decide rules on a shell command line run in the directory cwd under the
// bound b, with m matching its file rules (a cwd that is not empty replaces
// m.Cwd, anchoring relative paths and patterns). It is the
// one shell-line decision: hookgate's shell guard and "sandboxd policy
// classify" both call it. Checks, in order, each an early return:
//
//  1. a bound with no bash, files or network rule (and no deniedAccess
//     write) allows the line;
//  2. bash.deny: a pattern that is a substring of the raw line denies;
//  3. a line the classifier cannot resolve exactly (Unparseable) denies;
//  4. bash.denyPrograms: a program or subcommand chain run anywhere in the
//     line (through wrappers, nested shells, substitutions) denies;
//  5. network.actions: an action the line performs that the bound denies;
//  6. network.domains and network.allowDomains: every host the line
//     contacts must pass policy's network decider (policy.CompileNetwork,
//     the proxy's and the engine's own); outside the sandbox, when any
//     domain rule exists, a line denies that runs a program whose
//     destination the line cannot say (a registry in a variable), or
//     whose configuration file may send it elsewhere (a project's .npmrc
//     that sets registry: configRedirect), or that performs network
//     actions without a host the classifier can read;
//  7. apply_patch run through the shell: the patch must be readable, and
//     every file it names is a write (deniedAccess, then the files rules);
//  8. files rules and deniedAccess: the file the line writes must be known
//     and allowed (and writes are denied under deniedAccess write); every
//     argument that names a path must pass files.deny and files.allowOnly;
//     a directory argument is a search root that no files.deny pattern may
//     reach below; an argument that is dynamic ($X) or a glob denies,
//     since what it names cannot be known before the shell expands it.
//
// It reads the filesystem through m (symlinks, and whether an argument is
// a directory). It is safe for concurrent use when m is not a Memo copy
// shared with another goroutine.
//
// net is b's network rules compiled (policy.CompileNetwork(b.Network,
// false)), so a caller ruling on many lines compiles them once; nil
// compiles them for this line.
func Decide(line, cwd string, b *policy.Bound, net *policy.NetworkDecider, m policy.FileMatcher) policy.Decision {
	if cwd != "" {
		m.Cwd = cwd
	}
	kind := RuleIn(b)
	if kind == "" && !deniesWrites(b) {
		return policy.AllowedBy(policy.Because(policy.ReasonShellAllowed, "the bound has no shell, file or network rule"), "")
	}
	if b.Bash != nil {
		if p, denied := IsBashDenied(line, b.Bash.Deny); denied {
			return policy.Denied(fmt.Sprintf("shell command contains %q, denied by bash.deny", p), policy.RuleBashDeny+":"+p)
		}
	}
	c := Classify(line)
	if c.Unparseable {
		return policy.Denied("shell command cannot be classified exactly ("+c.Reason+") and the bound has "+orWrites(kind)+" rules", RuleUnparseable)
	}
	if b.Bash != nil && len(b.Bash.DenyPrograms) > 0 {
		if rule, denied := c.ProgramDenied(b.Bash.DenyPrograms); denied {
			return policy.Denied(fmt.Sprintf("shell command runs %s, denied by bash.denyPrograms %q", programOf(rule), rule), policy.RuleBashDenyPrograms+":"+rule)
		}
	}
	if n := b.Network; n != nil {
		if len(n.Actions) > 0 {
			if tag, denied := c.NetworkActionDenied(n.Actions); denied {
				return policy.Denied(fmt.Sprintf("%s: the shell command performs %s, denied by network.actions", policy.ReasonDeniedAction, tag), policy.RuleAt(policy.RuleNetworkActions, tag))
			}
		}
		if net == nil {
			var err error
			if net, err = policy.CompileNetwork(n, false); err != nil {
				return policy.Denied(err.Error(), policy.RuleNetworkHost)
			}
		}
		if net.HasDomainRules() {
			hosts := c.Domains()
			if n.Enforce == policy.EnforceSandbox {
				// A package manager's default registry is the environment's
				// inside the sandbox (its GOPROXY), the proxy's to decide.
				hosts = c.namedDomains()
			}
			for _, h := range hosts {
				if d := net.DecideHostName(h); !d.Allowed() {
					return d
				}
			}
			// A destination the line does not name (a URL in a variable, a
			// registry a tool's configuration file sets) is the egress
			// proxy's to decide by name, inside the sandbox (enforce:
			// sandbox: a session without one never gets here,
			// policy.DecideSandboxed); hooks only, nothing else would.
			if n.Enforce != policy.EnforceSandbox {
				if prog, why := c.unreadDestination(); why != "" {
					return policy.Denied(fmt.Sprintf("shell command uses the network but the destination of %s cannot be read (%s), and the bound has domain rules", prog, why), policy.RuleNetworkDomains)
				}
				if why := configRedirect(c, m.Cwd, m.Home); why != "" {
					return policy.Denied("shell command "+why+", and the bound has domain rules", policy.RuleNetworkDomains)
				}
				if len(hosts) == 0 && len(ClassifyNetworkActions(c, "")) > 0 {
					return policy.Denied("shell command uses the network but its destination cannot be read, and the bound has domain rules", policy.RuleNetworkDomains)
				}
			}
		}
	}
	if slices.Contains(c.Programs, policy.RuleApplyPatch) && (b.Files != nil || deniesWrites(b)) {
		// Codex runs apply_patch through its shell too, the patch in a
		// heredoc the classifier does not read as arguments.
		paths, err := PatchPaths(line)
		if err != nil {
			return policy.Denied("shell command runs apply_patch and its patch cannot be read: "+err.Error(), policy.RuleApplyPatch)
		}
		if deniesWrites(b) {
			return policy.DecideWrite(b, "the shell command (apply_patch)", "", false)
		}
		for _, p := range paths {
			if d := m.Check(p, b.Files); !d.Allowed() {
				return d
			}
		}
	}
	if w := c.FileWrite(); w != nil {
		if deniesWrites(b) {
			return policy.DecideWrite(b, "the shell command ("+w.Reason+")", "", false)
		}
		if b.Files != nil {
			if w.Path == "" {
				return policy.Denied(fmt.Sprintf("shell command writes a file it does not name (%s) and the bound has files rules", w.Reason), policy.RuleFiles)
			}
			if d := m.Check(w.Path, b.Files); !d.Allowed() {
				return d
			}
		}
	}
	if b.Files != nil {
		if d := checkArgs(c.invs, b.Files, m); !d.Allowed() {
			return d
		}
	}
	// The sandbox's protected paths: a plant there runs outside the
	// session (after the bound's own file rules, which name it better).
	for _, w := range c.writes {
		if w.Path == "" {
			continue
		}
		if d := m.DecideProtectedWrite(w.Path); !d.Allowed() {
			return d
		}
	}
	return policy.AllowedBy("shell command passes the bound's shell, network and file rules", "")
}

func orWrites(kind string) string {
	if kind == "" {
		return "deniedAccess"
	}
	return kind
}

// programOf renders a program rule as the command it denies: "git:push" → "git push".
func programOf(rule string) string { return strings.ReplaceAll(rule, ":", " ") }

// deniesWrites reports whether the bound denies write access session-wide
// (policy.DeniedWriteEntry: "*", "write" or "readwrite").
func deniesWrites(b *policy.Bound) bool { return policy.DeniedWriteEntry(b, "", false) != "" }

// checkArgs applies the files rules to every argument that names a path:
// a literal one (quoted glob characters are literal: "find -name '*.go'")
// is checked as the path it names and, when it is a directory, as a
// search rooted there (policy.FileMatcher.DecideBelow); a glob the shell
// expands is a search rooted at its literal directory (policy.GlobRoot);
// any other expansion is refused, since what it names is not known.
func checkArgs(invs []invocation, rules *policy.FileRules, m policy.FileMatcher) policy.Decision {
	for _, inv := range invs {
		argv := make([]string, len(inv.args))
		for i, w := range inv.args {
			argv[i] = w.val
		}
		if d := checkLinkTargets(argv, rules, m); !d.Allowed() {
			return d
		}
		for _, wd := range inv.args[min(1, len(inv.args)):] {
			w := wd.val
			if strings.HasPrefix(w, "-") {
				_, v, ok := strings.Cut(w, "=")
				if !ok {
					continue
				}
				w = v
			}
			if w == "" || strings.Contains(w, "://") {
				continue
			}
			if wd.dyn && wd.why == "glob" {
				if d := checkGlob(w, rules, m); !d.Allowed() {
					return d
				}
				continue
			}
			if wd.dyn || strings.ContainsAny(w, "$`") {
				return policy.Denied(fmt.Sprintf("shell argument %q is expanded at run time and the bound has files rules", clip(w)), policy.RuleFiles)
			}
			if !pathLike(w, rules, m) {
				continue
			}
			d := m.Check(w, rules)
			if !d.Allowed() {
				return d
			}
			canon := m.Canonicalize(w)
			if fi, err := os.Stat(canon); err == nil && fi.IsDir() {
				if d := m.DecideBelow(canon, rules, "shell argument"); !d.Allowed() {
					return d
				}
			}
		}
	}
	return policy.AllowedBy("shell arguments pass the files rules", "")
}

// checkGlob rules on a glob the shell expands: what it can match lies
// below its literal directory, which is checked as a search root.
func checkGlob(w string, rules *policy.FileRules, m policy.FileMatcher) policy.Decision {
	root := policy.GlobRoot(w)
	if d := m.Check(root, rules); !d.Allowed() {
		return d
	}
	canon := m.Canonicalize(root)
	if fi, err := os.Stat(canon); err == nil && !fi.IsDir() {
		return m.Check(w, rules) // a glob of one file's name
	}
	return m.DecideBelow(canon, rules, fmt.Sprintf("shell glob %q", clip(w)))
}

// checkLinkTargets checks the targets of "ln -s TARGET... LINK" the way
// the link will resolve them: a relative target from the link's directory
// (or from LINK itself when it is a directory), not from the cwd, which
// checkArgs checks as well.
func checkLinkTargets(argv []string, rules *policy.FileRules, m policy.FileMatcher) policy.Decision {
	if len(argv) < 3 || filepath.Base(argv[0]) != "ln" {
		return policy.AllowedBy("", "")
	}
	symbolic, targetDir := false, ""
	var ops []string
	args := argv[1:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--":
			ops = append(ops, args[i+1:]...)
			i = len(args)
		case w == "-t" || w == "--target-directory":
			if i+1 < len(args) {
				targetDir = args[i+1]
				i++
			}
		case strings.HasPrefix(w, "--target-directory="):
			targetDir = strings.TrimPrefix(w, "--target-directory=")
		case w == "--symbolic" || strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "s"):
			symbolic = true
			// "-st DIR": t's value follows.
			if strings.HasSuffix(w, "t") && i+1 < len(args) {
				targetDir = args[i+1]
				i++
			}
		case strings.HasPrefix(w, "-"):
		default:
			ops = append(ops, w)
		}
	}
	targets := ops
	var base string
	switch {
	case !symbolic:
		return policy.AllowedBy("", "")
	case targetDir != "":
		// "ln -s -t DIR TARGET...": every operand is a target, linked in DIR.
		base = m.Canonicalize(targetDir)
	case len(ops) < 2:
		// "ln -s TARGET": the link is made in the cwd, as checkArgs reads it.
		return policy.AllowedBy("", "")
	default:
		link := m.Canonicalize(ops[len(ops)-1])
		targets = ops[:len(ops)-1]
		base = filepath.Dir(link)
		if fi, err := os.Stat(link); err == nil && fi.IsDir() {
			base = link
		}
	}
	for _, t := range targets {
		if filepath.IsAbs(t) || strings.HasPrefix(t, "~") {
			continue
		}
		p := filepath.Join(base, t)
		if d := m.Check(p, rules); !d.Allowed() {
			return d
		}
		canon := m.Canonicalize(p)
		if fi, err := os.Stat(canon); err == nil && fi.IsDir() {
			if d := m.DecideBelow(canon, rules, "link target"); !d.Allowed() {
				return d
			}
		}
	}
	return policy.AllowedBy("", "")
}

// pathLike reports whether a word may name a file: it has a slash, starts
// with "." or "~", or a segment-only deny pattern matches it.
func pathLike(w string, rules *policy.FileRules, m policy.FileMatcher) bool {
	if strings.Contains(w, "/") || strings.HasPrefix(w, ".") || strings.HasPrefix(w, "~") {
		return true
	}
	m.Home, m.Cwd = "", "/"
	return m.Denied("/"+w, rules.Deny) != ""
}
