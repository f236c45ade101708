package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// File patterns (files.deny and files.allowOnly) are globs over canonical
// absolute paths:
//
//   - "*" matches any run of characters within one path segment, "?" one
//     character, "[...]" a class; "**" as a whole segment matches any number of
//     segments, including none.
//   - A leading "~/" (or "~" alone) is the user's home directory.
//   - A pattern with no "/" at all ("*.pem", ".env") matches a path any of
//     whose segments it matches, at any depth.
//   - Any other relative pattern ("src/**") is relative to the session's
//     working directory.
//   - A pattern that matches a directory matches everything below it, so
//     "/etc/secret" denies "/etc/secret/key".
//
// The literal directory prefix of a pattern (before its first glob
// character) has its symlinks resolved, like the paths it is matched with.

// ValidateFileGlob checks a file pattern's syntax.
func ValidateFileGlob(p string) error {
	if p == "" {
		return errors.New("empty pattern")
	}
	if strings.ContainsAny(p, "\x00\r\n") {
		return fmt.Errorf("%q: control character in pattern", p)
	}
	if strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/") {
		return fmt.Errorf("%q: only ~/ (the current user's home) is supported", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "**" {
			continue
		}
		if strings.Contains(seg, "**") {
			return fmt.Errorf("%q: ** must be a whole path segment", p)
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("%q: bad glob segment %q", p, seg)
		}
	}
	return nil
}

// FileMatcher matches canonical paths against file patterns. Home expands
// "~/"; Cwd anchors relative patterns. It is safe for concurrent use unless
// it came from Memo.
type FileMatcher struct {
	Home string
	Cwd  string
	// DenyAnywhere makes a relative deny pattern that starts with "**/"
	// match at any depth of any path, not only below Cwd. A hook's Cwd is
	// the harness's current directory, which follows "cd": anchored there,
	// "**/.env*" would stop covering the project after "cd /tmp".
	DenyAnywhere bool
	// FoldCase matches deny patterns without regard to ASCII or Unicode
	// case, for case-insensitive filesystems (macOS's default APFS), where
	// "~/.SSH/id_rsa" opens "~/.ssh/id_rsa". Allow patterns stay exact, so
	// a path spelled in another case is outside them (fail closed).
	FoldCase bool
	// HeldBelow says the rulings are for a session inside sandboxd's
	// sandbox, whose filesystem layer hides what files.deny matched at
	// its start: reaching below a directory where a denied file could be
	// is allowed (DecideBelow); naming one is still denied.
	HeldBelow bool
	// AllowEdit are ProtectedInRoot entries the policy file's
	// filesystem.allowEdit lets the agent write: DecideProtectedWrite
	// allows them, as the sandbox does.
	AllowEdit []string

	memo *linkMemo
}

// Memo returns a copy of m for one decision: it remembers what it learns of
// the filesystem (which path is a symlink, and to where), so that checking
// many arguments against many patterns looks at each path once. A hook
// ruling on "go test ./... && git status" with five files.deny patterns
// made 60 lstat calls without it. The copy sees the filesystem as it was at
// its first look; it is not safe for concurrent use. Make one per decision.
func (m FileMatcher) Memo() FileMatcher {
	m.memo = &linkMemo{}
	return m
}

// linkMemo caches lstat and readlink results by absolute path, and
// canonical pattern prefixes (split into segments) by pattern.
type linkMemo struct {
	links    map[string]linkInfo
	patterns map[string][]string
}

type linkInfo struct {
	ok     bool   // the path exists, and its link target (if any) was read
	link   bool   // it is a symlink
	target string // the symlink's target
}

// lookup returns what the filesystem says of p, through the memo if any.
func (lm *linkMemo) lookup(p string) linkInfo {
	if lm != nil {
		if li, ok := lm.links[p]; ok {
			return li
		}
	}
	var li linkInfo
	if fi, err := os.Lstat(p); err == nil {
		li.ok = true
		if fi.Mode()&fs.ModeSymlink != 0 {
			li.link = true
			target, err := os.Readlink(p)
			li.ok, li.target = err == nil, target
		}
	}
	if lm != nil {
		if lm.links == nil {
			lm.links = map[string]linkInfo{}
		}
		lm.links[p] = li
	}
	return li
}

// DefaultFileMatcher uses the current user's home directory and the process's
// working directory.
func DefaultFileMatcher() FileMatcher {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	return FileMatcher{Home: home, Cwd: cwd}
}

// IsFileDenied returns the first deny pattern that matches filePath, or ""
// when nothing denies it. filePath is canonicalized with the default matcher.
func IsFileDenied(filePath string, deny []string) string {
	m := DefaultFileMatcher()
	return m.Denied(m.Canonicalize(filePath), deny)
}

// IsFileAllowed returns the first allowOnly pattern that matches filePath,
// or "" when nothing allows it, which under an allowOnly bound is a denial.
func IsFileAllowed(filePath string, allowOnly []string) string {
	m := DefaultFileMatcher()
	return m.Allowed(m.Canonicalize(filePath), allowOnly)
}

// Canonicalize makes p absolute against m.Cwd and resolves it (see the
// package function Canonicalize).
func (m FileMatcher) Canonicalize(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = m.Home + p[1:]
	}
	return canonicalize(p, m.Cwd, m.memo)
}

// Denied returns the first pattern matching the canonical path, or "". A
// pattern that is not a valid glob (decoding refuses those) matches every
// path: a deny list that cannot be read denies.
func (m FileMatcher) Denied(canonical string, deny []string) string {
	for _, pat := range deny {
		p := pat
		if m.DenyAnywhere && strings.HasPrefix(p, "**/") {
			p = "/" + p
		}
		if ValidateFileGlob(pat) != nil || m.matchCase(p, canonical, m.FoldCase) {
			return pat
		}
	}
	return ""
}

// Allowed returns the first pattern matching the canonical path, or "". A
// pattern that is not a valid glob allows nothing.
func (m FileMatcher) Allowed(canonical string, allowOnly []string) string {
	for _, pat := range allowOnly {
		if ValidateFileGlob(pat) == nil && m.match(pat, canonical) {
			return pat
		}
	}
	return ""
}

// Check decides a path against a bound's file rules: denied by a deny
// pattern, denied when an allowlist exists and nothing in it matches,
// allowed otherwise. The path is canonicalized first.
func (m FileMatcher) Check(p string, rules *FileRules) Decision {
	c := m.Canonicalize(p)
	if rules == nil {
		return AllowedBy(ReasonNoFileRules, "")
	}
	if pat := m.Denied(c, rules.Deny); pat != "" {
		return Denied(Because(ReasonFileDenied, "%s matches files.deny %q", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	if rules.AllowOnly != nil {
		pat := m.Allowed(c, rules.AllowOnly)
		if pat == "" {
			return Denied(Because(ReasonFileNotAllowed, "%s is outside files.allowOnly", c), RuleFilesAllowOnly)
		}
		return AllowedBy(Because(ReasonFileAllowed, "%s matches files.allowOnly %q", c, pat), RuleAt(RuleFilesAllowOnly, pat))
	}
	return AllowedBy(Because(ReasonFileNotDenied, "%s", c), "")
}

// Reasons of the file decisions (Check, and FSPlan.Explain for what the
// sandbox shows): the phrase, then ": " and the path with its details.
const (
	ReasonNoFileRules    = "no file rules"
	ReasonFileDenied     = "file denied"
	ReasonFileNotAllowed = "file not in the allowlist"
	ReasonFileAllowed    = "file allowed"
	ReasonFileNotDenied  = "file not denied"
	ReasonHidden         = "hidden in the sandbox"
	ReasonNotVisible     = "not visible in the sandbox"
	ReasonReadable       = "readable in the sandbox"
	ReasonWritable       = "writable in the sandbox"
	ReasonReadOnly       = "read-only in the sandbox"
)

// Rule codes of the sandbox's own filesystem (FSPlan.Explain); RuleAt adds
// the root.
const (
	RuleFilesystemWrite     = "filesystem.write"
	RuleFilesystemHome      = "filesystem.home"
	RuleFilesystemTmp       = "filesystem.tmp"
	RuleFilesystemProtected = "filesystem.protected"
	RuleFilesystemReadonly  = "filesystem.readonly"
)

// ReachesBelow reports whether the deny pattern pat could match a path at
// or below the canonical directory root, which is what a search or a
// directory argument rooted there can reach: a pattern without "/" matches
// at any depth (and so does "**/..." under DenyAnywhere); otherwise the
// pattern, anchored as matching anchors it, has a literal directory prefix
// (canonicalized) that must lie on one line with root, above or below it.
// Canonicalizing reads the filesystem (through the memo, if any).
func (m FileMatcher) ReachesBelow(root, pat string) bool {
	if !strings.Contains(pat, "/") || (m.DenyAnywhere && strings.HasPrefix(pat, "**/")) {
		return true
	}
	prefix := m.Canonicalize(LiteralPrefix(m.anchor(pat)))
	if m.FoldCase {
		prefix, root = strings.ToLower(prefix), strings.ToLower(root)
	}
	return under(prefix, root) || under(root, prefix)
}

// ReachLimit and ReachTime bound DecideBelow's walk: past either, what
// lies below is unknown and the search is denied.
const (
	ReachLimit = 50000
	ReachTime  = time.Second
)

// reachLimit is ReachLimit (tests lower it).
var reachLimit = ReachLimit

// DecideBelow decides what a search or a directory argument rooted at the
// canonical directory root reaches below it under the files.deny
// patterns that could match there (ReachesBelow); naming root itself is
// Check's. In a sandboxd session (HeldBelow) the filesystem layer hides
// their matches: allowed, saying so. Elsewhere a walk of what exists
// (symlinks not followed, their targets checked; at most ReachLimit
// entries and ReachTime) allows it when nothing below is denied and
// denies it naming the directory of the first denied path it finds (not
// its name), or when it cannot
// finish; a root that does not exist is denied (what appears there
// could match). what names the search ("grep", "Grep").
func (m FileMatcher) DecideBelow(root string, rules *FileRules, what string) Decision {
	if rules == nil {
		return AllowedBy("no files rules", "")
	}
	var deny []string
	for _, pat := range rules.Deny {
		if m.ReachesBelow(root, pat) {
			deny = append(deny, pat)
		}
	}
	if len(deny) == 0 {
		return AllowedBy(fmt.Sprintf("%s below %s: no files.deny pattern reaches there", what, root), "")
	}
	if m.HeldBelow {
		return AllowedBy(fmt.Sprintf("%s below %s: files.deny %q is held by the sandbox's filesystem layer", what, root, deny[0]), RuleAt(RuleFilesDeny, deny[0]))
	}
	fi, err := os.Stat(root)
	switch {
	case err != nil:
		// Nothing to look at, yet: whatever appears there could match.
		return Denied(Because(ReasonSearchReachesDeny, "%s below %s could reach files.deny %q", what, root, deny[0]), RuleAt(RuleFilesDeny, deny[0]))
	case !fi.IsDir():
		return AllowedBy(fmt.Sprintf("%s: %s is not a directory", what, root), "")
	}
	m = m.Memo()
	deadline := time.Now().Add(ReachTime)
	n := 0
	var found, pat string
	errLimit := errors.New("limit")
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable here: the search cannot read it either
		}
		if n++; n > reachLimit || n%256 == 0 && time.Now().After(deadline) {
			return errLimit
		}
		if path == root {
			return nil
		}
		p := m.Denied(path, deny)
		if p == "" && d.Type()&fs.ModeSymlink != 0 {
			// Its target, wherever it is.
			p = m.Denied(m.Canonicalize(path), rules.Deny)
		}
		if p != "" {
			found, pat = path, p
			return fs.SkipAll
		}
		return nil
	})
	switch {
	case err == errLimit:
		return Denied(Because(ReasonSearchReachesDeny, "%s below %s: more than %d entries or %v to look through for files.deny %q; search a narrower directory", what, root, reachLimit, ReachTime, deny[0]), RuleAt(RuleFilesDeny, deny[0]))
	case found != "":
		// The directory, not the name: a denied file's name is the
		// policy's to keep (one can hold a secret), and the rule says
		// which files it means.
		return Denied(Because(ReasonSearchReachesDeny, "%s below %s reaches a denied path in %s (files.deny %q)", what, root, filepath.Dir(found), pat), RuleAt(RuleFilesDeny, pat))
	}
	return AllowedBy(fmt.Sprintf("%s below %s: no file there matches files.deny", what, root), "")
}

// globChars start the glob part of a path pattern as GlobRoot and
// LiteralPrefix read it: wildcards, classes, brace alternatives and
// extglobs ("@(a|b)"), which node's glob (Gemini CLI) expands.
const globChars = "*?[{("

// GlobRoot is the directory a glob pattern cannot reach above: its literal
// prefix, or "/" when the glob part may climb ("*/../..", "{..,x}") or hold
// an absolute alternative ("{/etc,x}/passwd"). A pattern without glob
// characters is itself.
func GlobRoot(p string) string {
	i := strings.IndexAny(p, globChars)
	if i < 0 {
		return p
	}
	rest := p[i:]
	if strings.Contains(rest, "..") || strings.ContainsAny(rest, "/~") && absAlternative(rest) {
		return "/"
	}
	return LiteralPrefix(p)
}

// absAlternative reports whether a brace or extglob alternative in glob
// starts with "/" or "~".
func absAlternative(glob string) bool {
	for i := 0; i+1 < len(glob); i++ {
		if strings.ContainsRune("{,|(", rune(glob[i])) && (glob[i+1] == '/' || glob[i+1] == '~') {
			return true
		}
	}
	return false
}

// LiteralPrefix is the part of a glob before its first glob character, cut
// back to a whole path segment: "/" when that is the root, "." when the
// glob starts in its first segment. A pattern without glob characters is
// itself.
func LiteralPrefix(p string) string {
	i := strings.IndexAny(p, globChars)
	if i < 0 {
		return p
	}
	j := strings.LastIndex(p[:i], "/")
	if j < 0 {
		return "."
	}
	if j == 0 {
		return "/"
	}
	return p[:j]
}

func (m FileMatcher) match(pat, canonical string) bool { return m.matchCase(pat, canonical, false) }

// matchCase is match, with case folded when fold is set.
func (m FileMatcher) matchCase(pat, canonical string, fold bool) bool {
	if pat == "" || canonical == "" {
		return false
	}
	segs := splitPath(canonical)
	if fold {
		segs = lowerAll(segs)
	}
	if !strings.Contains(pat, "/") {
		if pat == "~" {
			return matchPrefix(m.foldSegments(m.patternSegments(m.Home), fold), segs)
		}
		if fold {
			pat = strings.ToLower(pat)
		}
		for _, s := range segs {
			if ok, _ := path.Match(pat, s); ok {
				return true
			}
		}
		return false
	}
	return matchPrefix(m.foldSegments(m.patternSegments(m.anchor(pat)), fold), segs)
}

// anchor makes a pattern that holds a "/" absolute the way matching reads
// it: "~/" is m.Home, any other relative pattern is below m.Cwd.
func (m FileMatcher) anchor(pat string) string {
	switch {
	case strings.HasPrefix(pat, "~/"):
		return m.Home + pat[1:]
	case !strings.HasPrefix(pat, "/"):
		return m.Cwd + "/" + pat
	}
	return pat
}

// foldSegments lowers pattern segments when fold is set, leaving the
// memoized slice untouched.
func (m FileMatcher) foldSegments(segs []string, fold bool) []string {
	if !fold {
		return segs
	}
	return lowerAll(segs)
}

func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// matchPrefix reports whether the pattern segments match segs or any of its
// leading prefixes (a match on a directory covers what is below it).
func matchPrefix(pat, segs []string) bool {
	return matchSegments(pat, segs, true)
}

// matchSegments matches pattern segments ("**" any number of segments,
// path.Match for the others) against segs, whole or, with prefix, any
// leading part of segs.
func matchSegments(pat, segs []string, prefix bool) bool {
	if len(pat) == 0 {
		return prefix || len(segs) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(segs); i++ {
			if matchSegments(pat[1:], segs[i:], prefix) {
				return true
			}
		}
		return false
	}
	if len(segs) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], segs[0]); !ok {
		return false
	}
	return matchSegments(pat[1:], segs[1:], prefix)
}

// patternSegments is the canonical pattern, split, through the memo if any.
func (m FileMatcher) patternSegments(pat string) []string {
	if m.memo != nil {
		if segs, ok := m.memo.patterns[pat]; ok {
			return segs
		}
	}
	segs := splitPath(m.canonicalPatternPrefix(pat))
	if m.memo != nil {
		if m.memo.patterns == nil {
			m.memo.patterns = map[string][]string{}
		}
		m.memo.patterns[pat] = segs
	}
	return segs
}

// literalSegments splits pat at "/" and returns the segments with the
// index of the first one holding a wildcard (*, ?, [), or len(segs).
func literalSegments(pat string) (segs []string, i int) {
	segs = strings.Split(pat, "/")
	for i < len(segs) && !strings.ContainsAny(segs[i], "*?[") {
		i++
	}
	return segs, i
}

// canonicalPatternPrefix resolves symlinks in the literal directory prefix
// of an absolute pattern and keeps the glob part as written.
func (m FileMatcher) canonicalPatternPrefix(pat string) string {
	segs, i := literalSegments(pat)
	lit := strings.Join(segs[:i], "/")
	if lit == "" {
		lit = "/"
	}
	res := canonicalize(lit, "/", m.memo)
	if i == len(segs) {
		return res
	}
	return strings.TrimSuffix(res, "/") + "/" + strings.Join(segs[i:], "/")
}

const maxSymlinks = 40

// Canonicalize returns p as an absolute, clean path with every symlink along
// its longest existing prefix resolved, the way the kernel would walk it: a
// ".." after a symlink goes up from the link's target, not lexically, so
// "./a/../secret" and a symlink into a denied directory resolve to where they
// really point. Components past the first that does not exist are joined
// lexically. A relative p is taken against cwd (which should be absolute).
// Symlink loops stop resolution at the loop, leaving the rest lexical.
func Canonicalize(p, cwd string) string { return canonicalize(p, cwd, nil) }

// ThroughProcessView reports whether resolving p (as Canonicalize does)
// goes through a path whose meaning depends on the process that opens it:
// /proc/self, /proc/thread-self, /proc/<pid>, /dev/fd, /dev/stdin,
// /dev/stdout, /dev/stderr. The matcher resolves those as its own process
// (a hook, or a ruling server in another PID namespace), not as the process
// that will open the path.
func (m FileMatcher) ThroughProcessView(p string) bool {
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = m.Home + p[1:]
	}
	found := false
	canonicalizeVisit(p, m.Cwd, m.memo, func(visited string) {
		if !found && processView(visited) {
			found = true
		}
	})
	return found
}

func processView(p string) bool {
	switch p {
	case "/proc/self", "/proc/thread-self", "/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr":
		return true
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return false
	}
	return strings.Trim(rest, "0123456789") == ""
}

func canonicalize(p, cwd string, memo *linkMemo) string { return canonicalizeVisit(p, cwd, memo, nil) }

// canonicalizeVisit is canonicalize, calling visit (when not nil) with each
// absolute path it looks up.
func canonicalizeVisit(p, cwd string, memo *linkMemo, visit func(string)) string {
	if p == "" {
		p = "."
	}
	if !strings.HasPrefix(p, "/") {
		p = cwd + "/" + p
	}
	resolved := "/"
	rest := splitRaw(p)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		if visit != nil {
			visit(next)
		}
		li := memo.lookup(next)
		if !li.ok {
			// Missing, unreadable or not a directory, or a link that
			// cannot be read: the rest is lexical.
			return path.Clean(next + "/" + strings.Join(rest, "/"))
		}
		if !li.link {
			resolved = next
			continue
		}
		links++
		if links > maxSymlinks {
			return path.Clean(next + "/" + strings.Join(rest, "/"))
		}
		target := li.target
		if strings.HasPrefix(target, "/") {
			resolved = "/"
		}
		rest = append(splitRaw(target), rest...)
	}
	return resolved
}

func splitRaw(p string) []string { return strings.Split(p, "/") }
