package policy

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// excludeUnsafe are the characters a deny pattern must not hold to become
// an exclusion glob: ripgrep reads braces as alternatives, a backslash as
// an escape and "[!x]" as a negated class where path.Match does not, "?"
// as one byte where path.Match reads one character, and Claude Code splits
// its glob argument at white space and commas.
const excludeUnsafe = "{}\\,?[] \t\n\r\v\f"

// ExcludeGlob is the ripgrep exclusion glob ("!**/.env") that keeps a
// search rooted at the canonical directory root from everything deny
// pattern pat matches below it, or "" when this cannot promise one. The
// glob names one segment at any depth, which ripgrep matches against
// every file and directory it meets, whatever directory it runs in (an
// excluded directory is not entered): the segment is the last of the
// pattern's that is not only wildcards and that lies below root in every
// match, so the glob leaves out at least what the pattern matches there,
// and may leave out more (another file of that name). Patterns with
// characters ripgrep reads otherwise (excludeUnsafe), "~", case-folded
// matching and a segment of wildcards alone give "".
func (m FileMatcher) ExcludeGlob(root, pat string) string {
	if m.FoldCase || pat == "" || pat == "~" || strings.ContainsAny(pat, excludeUnsafe) {
		return "" // "~" is the home directory (FileMatcher.match), not a name
	}
	if !strings.Contains(pat, "/") {
		// A name at any depth.
		if onlyWildcards(pat) {
			return ""
		}
		return "!**/" + pat
	}
	var segs []string
	if m.DenyAnywhere && strings.HasPrefix(pat, "**/") {
		segs = splitPath(pat)
	} else {
		segs = m.patternSegments(m.anchor(pat))
	}
	for len(segs) > 0 && segs[len(segs)-1] == "**" {
		segs = segs[:len(segs)-1] // a match covers what is below it anyway
	}
	if len(segs) == 0 {
		return ""
	}
	last := len(segs) - 1
	if slices.Contains(segs, "**") {
		// Any number of segments come before the pattern's tail: only its
		// last segment is sure to be the matched path's own last one, and
		// it lies below root unless the match is root or above it, which
		// Check denies by itself.
		if onlyWildcards(segs[last]) {
			return ""
		}
		return "!**/" + segs[last]
	}
	// A fixed depth: segments past root's depth are below it, provided
	// the pattern's leading segments can be root's.
	rs := splitPath(root)
	if len(segs) <= len(rs) {
		return ""
	}
	for i, r := range rs {
		if ok, _ := path.Match(segs[i], r); !ok {
			return ""
		}
	}
	for i := last; i >= len(rs); i-- {
		if !onlyWildcards(segs[i]) {
			return "!**/" + segs[i]
		}
	}
	return ""
}

// onlyWildcards reports whether a segment matches any name ("*", "?*").
func onlyWildcards(seg string) bool { return strings.Trim(seg, "*?") == "" }

// DecideSearchExcluding is DecideBelow for a search the harness lets a
// hook rewrite with exclusion globs (NativeTool.ExcludeKey): where every
// deny pattern that reaches below root has an ExcludeGlob, the search is
// allowed leaving those out, whatever exists below now or appears later,
// and the decision's Exclude lists the ones the call does not carry yet
// (have). Otherwise it is DecideBelow's.
func (m FileMatcher) DecideSearchExcluding(root string, rules *FileRules, what string, have []string) Decision {
	if rules == nil || m.HeldBelow {
		return m.DecideBelow(root, rules, what)
	}
	var pats, globs []string
	for _, pat := range rules.Deny {
		if !m.ReachesBelow(root, pat) {
			continue
		}
		g := m.ExcludeGlob(root, pat)
		if g == "" {
			return m.DecideBelow(root, rules, what)
		}
		pats = append(pats, pat)
		if !slices.Contains(globs, g) {
			globs = append(globs, g)
		}
	}
	if len(pats) == 0 {
		return m.DecideBelow(root, rules, what)
	}
	d := AllowedBy(Because(ReasonSearchExcludes, "%s below %s leaves out files.deny %s (%s)", what, root, quoteAll(pats), strings.Join(globs, " ")), RuleAt(RuleFilesDeny, pats[0]))
	var missing []string
	for _, g := range globs {
		if !slices.Contains(have, g) {
			missing = append(missing, g)
		}
	}
	d.Exclude = strings.Join(missing, " ")
	return d
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// Excluding are the exclusion globs that end the call's input under
// t.ExcludeKey, split the way the harness splits it (Claude Code's Grep:
// at JavaScript's white space, then, in a part without braces, at
// commas): the "!" globs after its last other one, which no glob of the
// call's overrides (in ripgrep a later glob wins). ok is false when t has
// no ExcludeKey, or the input holds a byte other than printable ASCII and
// the space, where Go's and JavaScript's white space differ (U+0085 is
// Go's, U+FEFF JavaScript's): the call cannot be read as the harness
// reads it.
func (t NativeTool) Excluding(input map[string]any) (globs []string, ok bool) {
	if t.ExcludeKey == "" {
		return nil, false
	}
	s, _ := input[t.ExcludeKey].(string)
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && (s[i] < 0x21 || s[i] > 0x7e) {
			return nil, false
		}
	}
	for _, part := range strings.Fields(s) {
		if strings.Contains(part, "{") && strings.Contains(part, "}") {
			globs = append(globs, part)
			continue
		}
		for _, g := range strings.Split(part, ",") {
			if g != "" {
				globs = append(globs, g)
			}
		}
	}
	i := len(globs)
	for i > 0 && strings.HasPrefix(globs[i-1], "!") {
		i--
	}
	return globs[i:], true
}

// WithExcludes is a copy of input whose t.ExcludeKey also carries the
// exclusion globs (after the call's own, so ripgrep, where a later glob
// wins, leaves their matches out whatever the call's globs include).
func (t NativeTool) WithExcludes(input map[string]any, globs string) map[string]any {
	out := make(map[string]any, len(input)+1)
	for k, v := range input {
		out[k] = v
	}
	s, _ := input[t.ExcludeKey].(string)
	out[t.ExcludeKey] = strings.TrimSpace(s + " " + globs)
	return out
}
