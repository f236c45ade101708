package policy

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// The sandbox refuses, at the time, creating a file that would run or load
// outside the session later (a plant), and creating a file that files.deny
// would hide (a .env the command creates and the host fills later): the
// init decides each creation in the write roots with CreateGuard (see
// procjail's create gate). A file that exists at start is held by the mount
// layer instead (protected: read-only; denied: masked).

// RuleFilesystemAllowEdit is the policy field that lets the command edit
// and create listed protected names.
const RuleFilesystemAllowEdit = "filesystem.allowEdit"

// ReasonPlant is why the sandbox refuses creating a protected name.
const ReasonPlant = "creating a protected name (it runs or loads outside the session)"

// gitCreated are ProtectedInRoot entries that git itself creates (git init,
// git clone, git submodule add): refusing them would make git fail inside.
// What runs from them is their content (core.fsmonitor, a submodule's
// URL), which a name rule cannot judge: they stay reported at exit
// (FSPlan.Protected entries that did not exist at start). .git/hooks is
// decided entry by entry (gitHookName), and .git/commondir is refused
// outside a linked worktree's directory, where git writes it
// (gitCommondir).
var gitCreated = map[string]bool{
	".git/config": true, ".git/config.worktree": true, ".git/commondir": true, ".git/modules": true, ".gitmodules": true,
}

// PlantNames are the names whose creation the sandbox refuses in the write
// roots, at any depth: ProtectedInRoot less what git creates (gitCreated).
// A directory entry (.claude/commands) covers what is below it. Below
// .git/hooks, only the names git runs are refused (gitHookName).
func PlantNames() []string {
	var out []string
	for _, e := range ProtectedInRoot {
		if !gitCreated[e] {
			out = append(out, e)
		}
	}
	return out
}

// ValidateAllowEdit checks one filesystem.allowEdit entry: one of
// PlantNames.
func ValidateAllowEdit(name string) error {
	if !slices.Contains(PlantNames(), name) {
		return fmt.Errorf("%q is not a protected name the sandbox refuses creating (one of %s)", name, strings.Join(PlantNames(), ", "))
	}
	return nil
}

// CreateGuard is what the sandbox's init needs to decide a creation; the
// supervisor builds it from the plan (FSPlan.CreateGuard) and the init
// decodes it from its spec. It is plain data so that the decision stays
// here.
type CreateGuard struct {
	// Roots are the write roots: a creation elsewhere lands in a
	// discarded place (the home overlay, a private tmp) or is refused by
	// the kernel, and is not decided here.
	Roots []string `json:"roots"`
	// Deny are files.deny's patterns, Home and Cwd what they are
	// anchored to.
	Deny []string `json:"deny,omitempty"`
	Home string   `json:"home,omitempty"`
	Cwd  string   `json:"cwd"`
	// AllowEdit are the PlantNames the policy lets the command edit and
	// create.
	AllowEdit []string `json:"allowEdit,omitempty"`
	// Existing are the paths, sorted, that were a protected name (or below
	// one) below a write root's top at start (FSPlan's walk,
	// existingPlants): writable in place, so creating one of them again
	// (git checkout, tar x and editors remove a file and create it anew)
	// adds no power and is allowed, by open, mkdir, mknod or bind; a
	// symlink, rename or hard link there stays refused.
	Existing []string `json:"existing,omitempty"`
}

// CreateGuard returns what the sandbox's init needs to decide creations
// under this plan.
func (p *FSPlan) CreateGuard() CreateGuard {
	g := CreateGuard{Roots: p.WriteRoots, Home: p.Home, Cwd: p.Workspace, AllowEdit: p.allowEdit, Existing: p.existingPlants}
	if p.files != nil {
		g.Deny = p.files.Deny
	}
	return g
}

// ReasonRecreate is why the sandbox allows creating a protected name that
// existed at start below a write root's top.
const ReasonRecreate = "the protected name existed at start and is writable in place: creating it again is editing it"

// DecideCreate decides creating path, whose parent directory is canonical
// (the init resolved it), by open, mkdir, mknod or bind. In order, inside
// a write root:
//
//  1. a name files.deny matches is refused;
//  2. a protected name (PlantNames, without regard to ASCII case) at any
//     depth is refused unless AllowEdit lists it or the exact path is
//     one of Existing (it existed at start: re-created). Below
//     .git/hooks, git's sample hooks (*.sample, never run) and the
//     directory itself are allowed: git init makes them;
//  3. a home's protected name (ProtectedInHome, measured from Home,
//     without regard to ASCII case) is refused unless a write root at
//     or below it names it (the operator chose it); AllowEdit does not
//     free these, as the mount layer keeps the existing ones read-only
//     whatever it lists;
//  4. anything else is allowed.
func (g CreateGuard) DecideCreate(path string) Decision {
	return g.decideCreate(filepath.Clean(path), true)
}

// decideCreate is DecideCreate on a clean path; recreate says whether
// Existing allows the path (not for a symlink, a rename or a hard link,
// which bring content or a directory's entries that were not there).
func (g CreateGuard) decideCreate(c string, recreate bool) Decision {
	if !g.inRoots(c) {
		return AllowedBy(Because(ReasonWritable, "%s is not in a write root", c), "")
	}
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}
	if pat := m.Denied(c, g.Deny); pat != "" {
		return Denied(Because(ReasonFileDenied, "creating %s, which files.deny %q would hide", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	if e := plantName(c); e != "" && !slices.Contains(g.AllowEdit, e) {
		if _, found := slices.BinarySearch(g.Existing, c); recreate && found {
			return AllowedBy(Because(ReasonRecreate, "%s, a %s, existed at start", c, e), "")
		}
		return Denied(Because(ReasonPlant, "%s is a %s", c, e), RuleAt(RuleFilesystemProtected, e))
	}
	if e := g.homeName(c); e != "" {
		return Denied(Because(ReasonPlant, "%s is the home's %s", c, e), RuleAt(RuleFilesystemProtected, "~/"+e))
	}
	return AllowedBy(Because(ReasonWritable, "%s is not a protected name", c), "")
}

// homeName returns the entry of ProtectedInHome that c (in a write root)
// is, or is below, measured from Home, without regard to ASCII case; ""
// when none is, or when the write root c is in lies at or below the
// entry (a write root that names ~/.ssh makes it the operator's).
func (g CreateGuard) homeName(c string) string {
	rel, ok := g.homeRel(c)
	if !ok {
		return ""
	}
	for _, e := range ProtectedInHome {
		le := asciiLower(e)
		if (rel == le || strings.HasPrefix(rel, le+"/")) && !g.rootNames(g.Home+"/"+e, c) {
			return e
		}
	}
	return ""
}

// homeRel is c relative to Home, lowered (ASCII), when c is below Home.
func (g CreateGuard) homeRel(c string) (string, bool) {
	if g.Home == "" || g.Home == "/" || !strings.HasPrefix(c, g.Home+"/") {
		return "", false
	}
	return asciiLower(c[len(g.Home)+1:]), true
}

// rootNames says whether a write root that holds c lies at or below
// the protected path e.
func (g CreateGuard) rootNames(e, c string) bool {
	for _, r := range g.Roots {
		if under(c, r) && under(asciiLower(r), asciiLower(e)) {
			return true
		}
	}
	return false
}

// homeAncestor returns the ProtectedInHome entry of which c is a
// directory (a proper prefix: ~/.config of ~/.config/systemd, ~/.local
// of ~/.local/bin), measured from Home without regard to ASCII case, or
// "".
func (g CreateGuard) homeAncestor(c string) string {
	rel, ok := g.homeRel(c)
	if !ok {
		return ""
	}
	for _, e := range ProtectedInHome {
		le := asciiLower(e)
		if strings.HasPrefix(le, rel+"/") && !g.rootNames(g.Home+"/"+e, c) {
			return e
		}
	}
	return ""
}

// Ops a creation is made by, as DecidePlace takes them.
const (
	OpOpen    = "open"
	OpMkdir   = "mkdir"
	OpMknod   = "mknod"
	OpSymlink = "symlink"
	OpLink    = "link"
	OpRename  = "rename"
	// OpReplace is a rename over an existing regular file that the
	// command can write in place (an atomic save): the gate checked both.
	OpReplace = "replace"
	// OpBind is a Unix socket bound at a path (decided as a creation).
	OpBind = "bind"
	// OpLinkSource is the existing file a hard link would give another
	// name (the new name is decided as OpLink).
	OpLinkSource = "link-source"
	// OpMoveSource is an existing entry a rename would take away from
	// its name, or one below a directory it would move (the new names
	// are decided as OpRename).
	OpMoveSource = "move-source"
)

// ReasonMoveSource is why the sandbox refuses renaming a denied file, or a
// directory a files.deny pattern needs, to another name.
const ReasonMoveSource = "moving a denied file, or a directory files.deny needs, to another name (the other name would not be decided by its rules)"

// ReasonLinkSource is why the sandbox refuses a hard link to a denied
// file or a protected name.
const ReasonLinkSource = "linking a denied or protected file under another name (the other name would not be decided by its rules)"

// ReasonPlantAncestor is why the sandbox refuses a symlink, a rename or a
// hard link named as a protected name's directory.
const ReasonPlantAncestor = "placing a symlink, a renamed entry or a link at a protected name's directory (what it holds would not be decided by name)"

// DecidePlace decides placing an entry at path by op (OpOpen ... OpRename;
// path's parent directory is canonical): DecideCreate, and for a symlink,
// a rename or a hard link, also the name of a directory that holds
// protected names (PlantAncestors: .vscode, .claude, .git, .git/hooks,
// ..., without regard to ASCII case, as protected names themselves) at
// any depth in a write root, then the name of a directory that a
// files.deny pattern needs (secrets of secrets/*.key; denyAncestor). mkdir of such a name is allowed: what
// is then created inside is decided by its name. A symlink or a directory
// renamed into place would bring what it holds (or leads to) under the
// protected names without any of it being created there.
//
// For a home's protected name (ProtectedInHome, in a write root), the
// same: its directories (~/.ssh's ~/.ssh itself is refused as a name;
// ~/.config of ~/.config/systemd, ~/.local of ~/.local/bin) are refused
// as a symlink, a rename or a hard link (homeAncestor).
//
// Existing (a protected name that existed at start) allows creating the
// exact path again by open, mkdir, mknod or bind, never by a symlink, a rename
// or a hard link: a directory renamed back to an existing nested .vscode
// is refused as before (it could hold names that were not there).
//
// OpReplace (an atomic save over an existing regular file the command can
// write in place) is allowed over a protected name, as writing it in place
// is (only creation is decided); a files.deny match stays refused.
// OpLinkSource decides a hard link's existing file (decideLinkSource),
// OpMoveSource a rename's (decideMoveSource).
func (g CreateGuard) DecidePlace(op, path string) Decision {
	switch op {
	case OpLinkSource:
		return g.decideLinkSource(path)
	case OpMoveSource:
		return g.decideMoveSource(path)
	}
	d := g.decideCreate(filepath.Clean(path), op != OpSymlink && op != OpLink && op != OpRename)
	if op == OpReplace && !d.Allowed() && strings.HasPrefix(d.Rule, RuleFilesystemProtected+":") {
		return AllowedBy(Because(ReasonWritable, "%s exists and is writable: replacing it is editing it", filepath.Clean(path)), "")
	}
	if !d.Allowed() || (op != OpSymlink && op != OpLink && op != OpRename) {
		return d
	}
	c := filepath.Clean(path)
	if !g.inRoots(c) {
		return d
	}
	lc := asciiLower(c)
	for _, a := range PlantAncestors(g.AllowEdit) {
		if strings.HasSuffix(lc, "/"+a.Name) {
			return Denied(Because(ReasonPlantAncestor, "%s (%s) is the directory of %s", c, op, a.Entry), RuleAt(RuleFilesystemProtected, a.Entry))
		}
	}
	if e := g.homeAncestor(c); e != "" {
		return Denied(Because(ReasonPlantAncestor, "%s (%s) is the directory of the home's %s", c, op, e), RuleAt(RuleFilesystemProtected, "~/"+e))
	}
	if pat := g.denyAncestor(c); pat != "" {
		return Denied(Because(ReasonDenyAncestor, "%s (%s) is a directory files.deny %q needs", c, op, pat), RuleAt(RuleFilesDeny, pat))
	}
	return d
}

// decideLinkSource decides giving the existing file path (canonical)
// another name by a hard link: refused when files.deny matches it
// (anywhere: a denied file that appeared after the start is not masked)
// or when it is a protected name in a write root that AllowEdit does not
// list.
func (g CreateGuard) decideLinkSource(path string) Decision {
	c := filepath.Clean(path)
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}
	if pat := m.Denied(c, g.Deny); pat != "" {
		return Denied(Because(ReasonLinkSource, "linking %s, which files.deny %q hides, under another name", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	if g.inRoots(c) {
		if e := plantName(c); e != "" && !slices.Contains(g.AllowEdit, e) {
			return Denied(Because(ReasonLinkSource, "linking %s, a %s, under another name", c, e), RuleAt(RuleFilesystemProtected, e))
		}
	}
	return AllowedBy(Because(ReasonWritable, "%s is neither denied nor a protected name", c), "")
}

// decideMoveSource decides taking the existing entry path (canonical)
// away from its name by a rename: refused, anywhere (a denied file the
// host made after the start is not masked, in a write root or in the
// home overlay), when files.deny matches it or when it is a directory a
// pattern needs (secrets of secrets/*.key): under its new name what it is
// or holds would no longer match. A protected name may be moved away.
func (g CreateGuard) decideMoveSource(path string) Decision {
	c := filepath.Clean(path)
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}
	if pat := m.Denied(c, g.Deny); pat != "" {
		return Denied(Because(ReasonMoveSource, "moving %s, which files.deny %q hides, to another name", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	if pat := g.denyAncestor(c); pat != "" {
		return Denied(Because(ReasonMoveSource, "moving %s, a directory files.deny %q needs, to another name", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	return AllowedBy(Because(ReasonWritable, "%s is neither denied nor a directory files.deny needs", c), "")
}

// ReasonDenyAncestor is why the sandbox refuses a symlink, a rename or a
// hard link named as a directory that a files.deny pattern needs.
const ReasonDenyAncestor = "placing a symlink, a renamed entry or a link at a files.deny pattern's directory (what it holds would not be decided by name)"

// denyAncestor returns the files.deny pattern for which c is a directory
// it needs: c matches the pattern's leading segments, short of the last,
// the last of them not "**" ("secrets" of secrets/*.key, "a/*" of
// a/*/id.key; "**/.env" needs none). Both the pattern as written
// (anchored) and with its directories resolved are tried.
func (g CreateGuard) denyAncestor(c string) string {
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}
	segs := splitPath(c)
	for _, pat := range g.Deny {
		p := pat
		if strings.HasPrefix(p, "**/") {
			p = "/" + p
		}
		if !strings.Contains(p, "/") || ValidateFileGlob(pat) != nil {
			continue // a name pattern: c itself is decided by DecideCreate
		}
		a := m.anchor(p)
		for _, ps := range [][]string{splitPath(a), m.patternSegments(a)} {
			for k := len(ps) - 1; k >= 1; k-- {
				if ps[k-1] != "**" && matchWhole(ps[:k], segs) {
					return pat
				}
			}
		}
	}
	return ""
}

// matchWhole reports whether the pattern segments match segs exactly (no
// trailing segments left over).
func matchWhole(pat, segs []string) bool {
	return matchSegments(pat, segs, false)
}

// PlantAncestor is a directory name that holds a protected name: Entry
// (the first PlantNames entry below it) is Name/...
type PlantAncestor struct {
	Name, Entry string
}

// PlantAncestors are, derived from PlantNames less allowEdit, the
// directories that hold a protected name: every proper prefix of an
// entry (.vscode of .vscode/tasks.json, .git of .git/hooks), and
// .git/hooks itself (decided entry by entry, so a directory of its own
// must not be brought there whole). An entry that is itself a directory
// (.claude/commands) is refused as a name already.
func PlantAncestors(allowEdit []string) []PlantAncestor {
	var out []PlantAncestor
	seen := map[string]bool{}
	add := func(name, entry string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, PlantAncestor{Name: name, Entry: entry})
		}
	}
	for _, e := range PlantNames() {
		if slices.Contains(allowEdit, e) {
			continue
		}
		parts := strings.Split(e, "/")
		for i := 1; i < len(parts); i++ {
			add(strings.Join(parts[:i], "/"), e)
		}
		if e == ".git/hooks" {
			add(e, e)
		}
	}
	return out
}

func (g CreateGuard) inRoots(c string) bool {
	for _, r := range g.Roots {
		if under(c, r) {
			return true
		}
	}
	return false
}

// plantName returns the entry of PlantNames that path is, or is below, or
// "", without regard to ASCII case (.VSCODE/tasks.json is .vscode's on a
// host that reads the workspace case-insensitively; the entries are
// lower case).
func plantName(c string) string {
	c = asciiLower(c)
	if gitCommondir(c) {
		return ".git/commondir"
	}
	for _, e := range PlantNames() {
		if e == ".git/hooks" {
			if gitHookName(c) {
				return e
			}
			continue
		}
		if strings.HasSuffix(c, "/"+e) || strings.Contains(c, "/"+e+"/") {
			return e
		}
	}
	return ""
}

// asciiLower lowers ASCII letters only (a byte-for-byte fold: no
// Unicode case mapping changes a name's length or meaning).
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// gitHookName says whether c is an entry below a .git/hooks directory that
// git could run: not the directory itself, not a sample (git init copies
// *.sample from its templates; git runs hooks by their exact names).
func gitHookName(c string) bool {
	rest, ok := "", false
	if i := strings.LastIndex(c, "/.git/hooks/"); i >= 0 {
		rest, ok = c[i+len("/.git/hooks/"):], true
	} else if i := strings.LastIndex(c, "/.git/modules/"); i >= 0 {
		// A submodule's git directory (.git/modules/NAME, NAME may hold
		// slashes, nested modules too): git runs its hooks/ as the
		// top-level one's.
		if j := strings.LastIndex(c[i:], "/hooks/"); j >= 0 {
			rest, ok = c[i+j+len("/hooks/"):], true
		}
	}
	return ok && !(strings.HasSuffix(rest, ".sample") && !strings.Contains(rest, "/"))
}

// gitCommondir says whether c is a commondir file that git would follow
// from a repository's own git directory: .git/commondir (top level or a
// nested repository's) or a submodule's .git/modules/NAME/commondir.
// With it, git takes its config and hooks from the directory it names,
// which may be any directory the command wrote. git itself writes a
// commondir only in a linked worktree's .git/worktrees/ID, which stays
// allowed.
func gitCommondir(c string) bool {
	if path.Base(c) != "commondir" {
		return false
	}
	dir := path.Dir(c)
	if path.Base(path.Dir(dir)) == "worktrees" {
		return false
	}
	return path.Base(dir) == ".git" || strings.Contains(dir, "/.git/modules/")
}

// CreateDeciderFor decodes a CreateGuard (JSON, as FSPlan.CreateGuard
// gives it to the sandbox's init) and returns its decision in the form
// procjail.CreateDecider takes.
func CreateDeciderFor(guard []byte) (func(op, path string) (refused bool, rule, reason string), error) {
	var g CreateGuard
	if err := json.Unmarshal(guard, &g); err != nil {
		return nil, fmt.Errorf("create guard: %w", err)
	}
	return func(op, path string) (bool, string, string) {
		d := g.DecidePlace(op, path)
		return !d.Allowed(), d.Rule, d.Reason
	}, nil
}
