package policy

import (
	"encoding/json"
	"fmt"
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
// decided entry by entry (gitHookName).
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
}

// CreateGuard returns what the sandbox's init needs to decide creations
// under this plan.
func (p *FSPlan) CreateGuard() CreateGuard {
	g := CreateGuard{Roots: p.WriteRoots, Home: p.Home, Cwd: p.Workspace, AllowEdit: p.allowEdit}
	if p.files != nil {
		g.Deny = p.files.Deny
	}
	return g
}

// DecideCreate decides creating (or renaming or linking to) path, whose
// parent directory is canonical (the init resolved it): inside a write
// root, a name files.deny matches is refused, and so is a protected name
// (PlantNames) at any depth unless AllowEdit lists it. Below .git/hooks,
// git's sample hooks (*.sample, never run) and the directory itself are
// allowed: git init makes them.
func (g CreateGuard) DecideCreate(path string) Decision {
	c := filepath.Clean(path)
	in := false
	for _, r := range g.Roots {
		if under(c, r) {
			in = true
			break
		}
	}
	if !in {
		return AllowedBy(Because(ReasonWritable, "%s is not in a write root", c), "")
	}
	m := FileMatcher{Home: g.Home, Cwd: g.Cwd, DenyAnywhere: true}
	if pat := m.Denied(c, g.Deny); pat != "" {
		return Denied(Because(ReasonFileDenied, "creating %s, which files.deny %q would hide", c, pat), RuleAt(RuleFilesDeny, pat))
	}
	if e := plantName(c); e != "" && !slices.Contains(g.AllowEdit, e) {
		return Denied(Because(ReasonPlant, "%s is a %s", c, e), RuleAt(RuleFilesystemProtected, e))
	}
	return AllowedBy(Because(ReasonWritable, "%s is not a protected name", c), "")
}

// plantName returns the entry of PlantNames that path is, or is below, or
// "".
func plantName(c string) string {
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

// gitHookName says whether c is an entry below a .git/hooks directory that
// git could run: not the directory itself, not a sample (git init copies
// *.sample from its templates; git runs hooks by their exact names).
func gitHookName(c string) bool {
	i := strings.LastIndex(c, "/.git/hooks/")
	if i < 0 {
		return false
	}
	rest := c[i+len("/.git/hooks/"):]
	return !(strings.HasSuffix(rest, ".sample") && !strings.Contains(rest, "/"))
}

// CreateDeciderFor decodes a CreateGuard (JSON, as FSPlan.CreateGuard
// gives it to the sandbox's init) and returns its decision in the form
// procjail.CreateDecider takes.
func CreateDeciderFor(guard []byte) (func(path string) (refused bool, rule, reason string), error) {
	var g CreateGuard
	if err := json.Unmarshal(guard, &g); err != nil {
		return nil, fmt.Errorf("create guard: %w", err)
	}
	return func(path string) (bool, string, string) {
		d := g.DecideCreate(path)
		return !d.Allowed(), d.Rule, d.Reason
	}, nil
}
