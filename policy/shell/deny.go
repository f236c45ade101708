package shell

import (
	"strings"
)

// IsProgramDenied decides a line against bash.denyPrograms rules: "git"
// denies any invocation of git, "git:push" only git push, "gh:pr:create"
// only gh pr create. Rules match normalized program basenames and
// subcommand chains anywhere in the line (through wrappers, nested shells
// and substitutions), and a git or gh subcommand that is not a known one (an
// alias or extension) matches every rule on that program. It returns the
// matched rule. When the line is Unparseable and any rule exists it denies
// with "unparseable: REASON" in place of a rule. It is safe for concurrent
// use.
//
// The checks, in order: no rules → allowed; Unparseable → denied; the first
// invocation (in line order) matching any rule (in rule order) → denied;
// an argument of an unrecognized program that names a denied program and
// subcommand (a wrapper the classifier does not know) → denied.
func IsProgramDenied(line string, rules []string) (rule string, denied bool) {
	if len(rules) == 0 {
		return "", false
	}
	return Classify(line).ProgramDenied(rules)
}

// ProgramDenied is IsProgramDenied for a line already classified.
func (c Classification) ProgramDenied(rules []string) (rule string, denied bool) {
	if len(rules) == 0 {
		return "", false
	}
	if c.Unparseable {
		return "unparseable: " + c.Reason, true
	}
	for _, list := range [][]invocation{c.invs, c.suspects} {
		for _, inv := range list {
			for _, r := range rules {
				if matchRule(inv, r) {
					return r, true
				}
			}
		}
	}
	return "", false
}

// matchRule reports whether a rule "prog[:sub[:subsub]]" covers inv.
func matchRule(inv invocation, rule string) bool {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(rule)), ":")
	if parts[0] == "" {
		return false
	}
	if prog, _ := normalizeProgram(parts[0]); prog != inv.prog {
		return false
	}
	if len(parts) == 1 {
		return true
	}
	if len(inv.chain) == 0 {
		return false
	}
	if p := programs()[inv.prog]; p != nil && p.subcommands != nil && !p.subcommands()[inv.chain[0]] {
		return true // an alias or extension may be any subcommand
	}
	if chainHas(inv.chain, parts[1:]) {
		return true
	}
	for _, c := range inv.also {
		if chainHas(c, parts[1:]) {
			return true
		}
	}
	if p := programs()[inv.prog]; p != nil && p.twin != nil {
		return chainHas(p.twin(inv.chain), parts[1:])
	}
	return false
}

// chainHas reports whether chain starts with rule's subcommands.
func chainHas(chain, rule []string) bool {
	if len(rule) > len(chain) {
		return false
	}
	for k, r := range rule {
		if chain[k] != r {
			return false
		}
	}
	return true
}

// IsBashDenied reports the first pattern that is a substring of line: the
// bounds SDK's bash.deny semantics, applied to the raw text. It is safe for
// concurrent use.
func IsBashDenied(line string, patterns []string) (string, bool) {
	for _, p := range patterns {
		if strings.Contains(line, p) {
			return p, true
		}
	}
	return "", false
}

var reProgWord = &lazyRegexp{pattern: `^[A-Za-z0-9._/+-]+$`}

// maxSuspects bounds how many arguments of an unrecognized program are
// tried as commands.
const maxSuspects = 8

// suspect records the arguments of an unrecognized program that could be a
// command it runs (an unknown wrapper), for IsProgramDenied only.
func (a *analyzer) suspect(inv invocation, depth int) {
	if a.noSuspects || nonExec()[inv.prog] || opaqueExecutors()[inv.prog] || depth >= MaxDepth {
		return
	}
	if p := programs()[inv.prog]; p != nil && p.nonExec {
		return
	}
	n := 0
	for j := 1; j < len(inv.args) && n < maxSuspects; j++ {
		w := inv.args[j]
		if w.dyn || strings.HasPrefix(w.val, "-") || !reProgWord.MatchString(w.val) {
			continue
		}
		n++
		sub := &analyzer{c: Classification{Subcommands: map[string][]string{}}, parses: maxParses - 4, noSuspects: true}
		sub.command(inv.args[j:], stdin{}, max(depth, MaxDepth-3))
		a.c.suspects = append(a.c.suspects, sub.c.invs...)
	}
}
