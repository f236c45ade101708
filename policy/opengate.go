package policy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The mount layer hides what files.deny matches when the sandbox starts;
// a matching file the HOST makes during the session (a build writing
// config/.env, a copy into late/.env, a host hard link to a hidden file)
// is no mount's. As root, sandboxd decides every open inside the sandbox's
// mounts where such files can appear (fanotify permission events, see
// procjail's open gate) with OpenGuard.DecideOpen; a creation inside is
// the create gate's (CreateGuard).

// ReasonOpenRefused is why the open gate refuses an open.
const ReasonOpenRefused = "opening a file files.deny hides"

// ReasonNoOpenGate is why the open gate is not made for a plan whose
// OpenGateRoots is nil: no open could be refused.
const ReasonNoOpenGate = "no files.deny pattern and nothing hidden at start: no open to decide"

// FileID is a file's identity: its device and inode numbers.
type FileID struct{ Dev, Ino uint64 }

// OpenGuard is what the open gate needs to decide an open: files.deny's
// patterns (Home and Cwd, what they are anchored to) and the identity of
// every regular file hidden at start. The fanotify gate runs in sandboxd
// and uses it as it is; the open route in the sandbox's init gets it as
// OpenGuardSpec (plain data, OpenDeciderFor). DecideOpen is safe for
// concurrent use.
type OpenGuard struct {
	Deny []string
	Home string
	Cwd  string
	// Hidden maps the regular files hidden at start (FileID) to the
	// path the plan hides each by.
	Hidden map[FileID]string
	// hiddenIno maps the inode number of each of Hidden to its path
	// (DecideOpenUnknownDevice).
	hiddenIno map[uint64]string
	// rule names the rule that hides a hidden path (FSPlan.ruleCode).
	rule func(path string) string
	// matcher has the patterns' literal prefixes resolved once, when
	// the guard is made (only read after: safe for concurrent use);
	// literal has them as written, for literalDeny, the patterns whose
	// prefix resolved to another directory (decidePath).
	matcher, literal *FileMatcher
	literalDeny      []string
}

// OpenGuard returns what the open gate needs to decide opens under this
// plan: the same patterns the scan matched with, and the identities of
// the hidden regular files the search for other names walked (at most
// HiddenLinkScanLimit entries; the start line says when it stopped).
func (p *FSPlan) OpenGuard() OpenGuard {
	// Through the spec the open route's init gets: one way to build it.
	return p.OpenGuardSpec().Guard()
}

// OpenGateRoots are the places where a files.deny match can appear and
// the open gate marks every mount at or below: the workspace, the write
// roots, home, and the literal directory of each anchored pattern
// (secrets/*.key: the workspace's secrets; ~/.ssh/**: ~/.ssh). Nil when
// there is nothing to decide (no files.deny and nothing hidden).
func (p *FSPlan) OpenGateRoots() []string {
	if (p.files == nil || len(p.files.Deny) == 0) && len(p.hiddenIDs) == 0 {
		return nil
	}
	roots := append([]string{p.Workspace}, p.WriteRoots...)
	if p.Home != "" {
		roots = append(roots, p.Home)
	}
	if p.files != nil {
		for _, pat := range p.files.Deny {
			if lit := literalDir(pat, p.matcher); lit != "" && lit != "/" {
				roots = append(roots, lit)
			}
		}
	}
	var out []string
	for _, r := range dedupe(roots) {
		inner := false
		for _, o := range out {
			if under(r, o) {
				inner = true
			}
		}
		if !inner {
			out = append(out, r)
		}
	}
	return out
}

// OpenGatePreMark are the directories whose files, as they are at start,
// the open gate decides before the command opens them (procjail's
// pre-mark): the workspace and the write roots, those the start's scan
// walked. Nil when OpenGateRoots is (no gate).
func (p *FSPlan) OpenGatePreMark() []string {
	if p.OpenGateRoots() == nil {
		return nil
	}
	return dedupe(append([]string{p.Workspace}, p.WriteRoots...))
}

// DecideOpen decides an open of the file at path (as the kernel names the
// opened file: canonical, its symlinks resolved) whose identity is id. In
// order:
//
//  1. a file hidden at start (its device and inode), under any name: a
//     hard link the host made to it during the session;
//  2. a path files.deny matches (the matcher the start's scan uses): a
//     match that appeared after the start;
//  3. anything else is allowed.
func (g OpenGuard) DecideOpen(path string, id FileID) Decision {
	c := filepath.Clean(path)
	if of, ok := g.Hidden[id]; ok {
		if of == c {
			return Denied(Because(ReasonOpenRefused, "%s was hidden at start", c), g.ruleOf(of))
		}
		return Denied(Because(ReasonOpenRefused, "%s is another name (hard link) of %s, which was hidden at start", c, of), g.ruleOf(of))
	}
	return g.decidePath(c)
}

// DecideOpenUnknownDevice decides an open of the file at path whose
// device is not the host's (an overlay's own, the sandbox's tmpfs) and
// could not be mapped to it, and whose inode number is ino: the identity
// of a file hidden at start cannot be compared, so, failing closed, the
// inode number alone is. In order:
//
//  1. the inode number of a file hidden at start: perhaps another name of
//     it (a host hard link in home seen through the overlay, its host
//     name gone), refused; a sandbox file that only shares the number is
//     refused too, and the reason says so;
//  2. and 3. as DecideOpen's.
func (g OpenGuard) DecideOpenUnknownDevice(path string, ino uint64) Decision {
	c := filepath.Clean(path)
	if of, ok := g.hiddenIno[ino]; ok {
		return Denied(Because(ReasonOpenRefused, "%s has the inode number of %s, which was hidden at start, on a device that could not be matched with the host's: it may be another name (hard link) of it", c, of), g.ruleOf(of))
	}
	return g.decidePath(c)
}

// ruleOf is the rule that hides the hidden path of.
func (g OpenGuard) ruleOf(of string) string {
	if g.rule != nil {
		return g.rule(of)
	}
	return RuleFilesDeny
}

// decidePath decides the clean path c by files.deny's patterns.
func (g OpenGuard) decidePath(c string) Decision {
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}
	if g.matcher != nil {
		m = *g.matcher
	}
	if pat := m.Denied(c, g.Deny); pat != "" {
		return Denied(Because(ReasonOpenRefused, "%s matches files.deny %q", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	// And as written: a pattern's directory that was a symlink at start
	// and that the command replaced with a directory of its own is
	// matched there too (keys/*.key, keys -> real at start: both
	// real/id.key and keys/id.key).
	if len(g.literalDeny) > 0 {
		if pat := g.literal.Denied(c, g.literalDeny); pat != "" {
			return Denied(Because(ReasonOpenRefused, "%s matches files.deny %q", c, pat), RuleAt(RuleFilesDeny, pat))
		}
	}
	return AllowedBy(Because(ReasonReadable, "%s", c), "")
}

// gatedTails rewrites the ends of scanDenied's NotCovered entries (what
// the mount layer does not hide) when the open gate holds files.deny at
// open time below the workspace, the write roots, home and the patterns'
// literal directories (OpenGateRoots).
var gatedTails = [][2]string{
	{"a file created there later is not hidden by the kernel", "a file the host creates there later is refused at open time (the open gate)"},
	{"elsewhere, and files created later, are not hidden by the kernel", "elsewhere they are not hidden by the kernel; in those places and home, one the host creates later is refused at open time (the open gate)"},
	{"deeper, and files created later, are not hidden by the kernel", "deeper ones, and files the host creates later, are refused at open time (the open gate)"},
	{"files created later are not hidden by the kernel", "files the host creates later are refused at open time (the open gate)"},
}

// GateOpens records that the open gate holds this plan's files.deny at
// open time (sandboxd as root): the NotCovered entries that say files
// created later are not hidden say they are refused at open time, and
// Explain says so of a match that was not hidden at start.
func (p *FSPlan) GateOpens() {
	p.openGated = true
	for i, n := range p.NotCovered {
		for _, t := range gatedTails {
			if strings.HasSuffix(n, t[0]) {
				p.NotCovered[i] = strings.TrimSuffix(n, t[0]) + t[1]
				break
			}
		}
	}
}

// ruleCode is the rule that hides path: a credential's file, or the
// files.deny pattern.
func (p *FSPlan) ruleCode(path string) string {
	pat, cred := p.hiddenBy(path)
	if cred {
		return RuleCredentialFile
	}
	if pat != "" {
		return RuleAt(RuleFilesDeny, pat)
	}
	return RuleFilesDeny
}

// OpenGuardSpec is OpenGuard as plain data, for the sandbox's init: where
// sandboxd cannot have the fanotify gate (rootless, container mode) and
// filesystem.openGate is always, the seccomp filter sends every open to
// the init (procjail's open route), which decides each opened regular
// file with the guard this spec makes (OpenDeciderFor): the decision
// stays here. The supervisor builds it from the plan
// (FSPlan.OpenGuardSpec) and the init decodes it from its spec.
type OpenGuardSpec struct {
	Deny []string `json:"deny,omitempty"`
	Home string   `json:"home,omitempty"`
	Cwd  string   `json:"cwd"`
	// Hidden are the regular files hidden at start (OpenGuard.Hidden),
	// each with the path the plan hides it by and the rule that hides
	// it.
	Hidden []HiddenFile `json:"hidden,omitempty"`
}

// HiddenFile is one regular file hidden at start: its identity, the path
// the plan hides it by and the rule that hides it (FSPlan.ruleCode).
type HiddenFile struct {
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
	Path string `json:"path"`
	Rule string `json:"rule"`
}

// OpenGuardSpec returns what the sandbox's init needs to decide opens
// under this plan as OpenGuard decides them (the same patterns, the same
// hidden identities, sorted by path).
func (p *FSPlan) OpenGuardSpec() OpenGuardSpec {
	s := OpenGuardSpec{Home: p.Home, Cwd: p.Workspace}
	if p.files != nil {
		s.Deny = p.files.Deny
	}
	for k, path := range p.hiddenIDs {
		s.Hidden = append(s.Hidden, HiddenFile{Dev: k.dev, Ino: k.ino, Path: path, Rule: p.ruleCode(path)})
	}
	slices.SortFunc(s.Hidden, func(a, b HiddenFile) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp.Compare(a.Ino, b.Ino)
	})
	return s
}

// Guard is the OpenGuard the spec stands for: its decisions are those of
// the plan's OpenGuard. Its patterns' literal prefixes are resolved now,
// on the filesystem the caller sees (the init: the sandbox's, whose paths
// are the host's).
func (s OpenGuardSpec) Guard() OpenGuard {
	g := OpenGuard{Deny: s.Deny, Home: s.Home, Cwd: s.Cwd, Hidden: map[FileID]string{}, hiddenIno: map[uint64]string{}}
	rules := map[string]string{}
	for _, h := range s.Hidden {
		g.Hidden[FileID{Dev: h.Dev, Ino: h.Ino}] = h.Path
		if h.Ino != 0 {
			// 0 is no file's (a name alone is decided with it).
			g.hiddenIno[h.Ino] = h.Path
		}
		rules[h.Path] = h.Rule
	}
	g.rule = func(path string) string {
		if r := rules[path]; r != "" {
			return r
		}
		return RuleFilesDeny
	}
	// Each anchored pattern's literal prefix (the workspace's secrets,
	// ~/.ssh) resolved now, as the start's scan resolved it: resolving
	// it again at every open was 16 µs of each decision
	// (BenchmarkDecideOpen).
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}.Memo()
	for _, pat := range g.Deny {
		m.Denied("/", []string{pat})
	}
	g.matcher = &m
	// The patterns whose literal prefix resolved to another directory,
	// matched as written too (clean, anchored, never resolved): their
	// memo holds every key matching asks for ("**/" patterns made
	// absolute as Denied makes them; "~" is Home), so deciding never
	// writes it.
	lit := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}.Memo()
	lit.memo.patterns = map[string][]string{}
	for _, pat := range g.Deny {
		key := g.Home
		switch {
		case strings.HasPrefix(pat, "**/"):
			key = "/" + pat
		case strings.Contains(pat, "/"):
			key = lit.anchor(pat)
		case pat != "~":
			continue // matched by name at any depth: nothing resolved
		}
		written := splitPath(path.Clean(key))
		if !slices.Equal(written, m.patternSegments(key)) {
			lit.memo.patterns[key] = written
			g.literalDeny = append(g.literalDeny, pat)
		}
	}
	g.literal = &lit
	return g
}

// OpenDeciderFor builds, from an OpenGuardSpec as JSON, the function the
// sandbox's init decides each opened regular file with: at path (as the
// kernel names the opened file), whose device and inode numbers are dev
// and ino; known says whether dev is the host's (a bind mount's), else
// only the inode number is compared (DecideOpenUnknownDevice, as the
// fanotify gate does with a device it cannot map). It returns refused,
// the rule and the reason. The returned function is safe for concurrent
// use.
func OpenDeciderFor(spec []byte) (func(path string, dev, ino uint64, known bool) (refused bool, rule, reason string), error) {
	var s OpenGuardSpec
	if err := json.Unmarshal(spec, &s); err != nil {
		return nil, fmt.Errorf("open guard: %w", err)
	}
	g := s.Guard()
	return func(path string, dev, ino uint64, known bool) (bool, string, string) {
		var d Decision
		if known {
			d = g.DecideOpen(path, FileID{Dev: dev, Ino: ino})
		} else {
			d = g.DecideOpenUnknownDevice(path, ino)
		}
		return !d.Allowed(), d.Rule, d.Reason
	}, nil
}
