package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Session resolution: a decoded policy file to one Resolved result that
// every enforcer reads.

// ToolAccess is an allowed tool in a resolved policy.
type ToolAccess struct {
	ID     string `json:"id"`
	Access Access `json:"access"`
}

// WithheldTool is a catalog tool the session does not get, with why.
type WithheldTool struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Resolved is a session's effective policy: one result that the tool filter,
// the hook gate, the native ceiling and the egress sandbox all read.
type Resolved struct {
	Identity string `json:"identity,omitempty"`
	Harness  string `json:"harness"`
	Mode     string `json:"mode"`
	// Traits is the expanded trait set, sorted.
	Traits   []string       `json:"traits"`
	Tools    []ToolAccess   `json:"tools"`
	Withheld []WithheldTool `json:"withheld"`
	// Bound is the effective bound (null when nothing restricts).
	Bound    *Bound        `json:"bound"`
	Native   *NativePolicy `json:"native"`
	Warnings []string      `json:"warnings"`
	// Fingerprint is the ScopeFingerprint of Scope.
	Fingerprint string `json:"fingerprint"`
	// Filesystem is the policy file's filesystem section (the sandbox's
	// extra write roots); absent when the file has none.
	Filesystem *FilesystemSection `json:"filesystem,omitempty"`
	// Environment is the policy file's environment section (the
	// variables the sandbox does not get); absent when the file has none.
	Environment *EnvironmentSection `json:"environment,omitempty"`
	// Credentials are the policy file's credentials section (secrets the
	// sandbox gets only as placeholders; never a value); absent when the
	// file has none.
	Credentials []CredentialSpec `json:"credentials,omitempty"`
	// Sandbox is the policy file's sandbox section (what the sandbox
	// itself must be); absent when the file has none.
	Sandbox *SandboxSection `json:"sandbox,omitempty"`

	// Scope is the approved execution scope this resolution amounts to.
	Scope *ExecutionScope `json:"-"`
	// Sources are the bounds merged into Bound, in merge order.
	Sources []BoundSource `json:"-"`
	// grants are the resolved trait grants Native was derived from
	// (ForLaunch derives it again).
	grants *ResolvedTraitGrants
}

// ForLaunch returns the resolution as "sandboxd launch" enforces it: the
// native policy derived again with the launch's own ceiling (the mode's
// LaunchCeiling tools can be taken back before the harness starts), so a
// tool a bare hook gate could not take back no longer refuses the session.
// r is not changed.
func (r *Resolved) ForLaunch() (*Resolved, error) {
	if r == nil || r.Native == nil {
		return nil, fmt.Errorf("%w: resolution has no native-tool policy", ErrNotAllowed)
	}
	h := catalogHarness(r.Harness)
	if h == nil {
		return nil, fmt.Errorf("%w: unknown harness %q", ErrNotAllowed, r.Harness)
	}
	native, err := ResolveNativePolicy(NativeGrants{Grants: r.grants, Bound: r.Bound, Launch: true}, h, r.Mode)
	if err != nil {
		return nil, err
	}
	l := *r
	l.Native = native
	return &l, nil
}

// CheckLaunchable refuses a resolution whose harness mode cannot take back
// a native tool the bound needs gone (Native.Refused): such a session must
// not launch. The error names every such tool, sorted, with its reason.
func (r *Resolved) CheckLaunchable() error {
	if r == nil || r.Native == nil {
		return fmt.Errorf("%w: resolution has no native-tool policy", ErrNotAllowed)
	}
	if len(r.Native.Refused) == 0 {
		return nil
	}
	var parts []string
	for _, t := range sortedKeys(r.Native.Refused) {
		parts = append(parts, t+" ("+r.Native.Refused[t]+")")
	}
	return fmt.Errorf("%w: session must not launch: %s mode %s cannot take back %s", ErrNotAllowed, r.Harness, r.Mode, strings.Join(parts, "; "))
}

// AllowedToolIDs returns the qualified ids of the allowed tools.
func (r *Resolved) AllowedToolIDs() []string {
	out := make([]string, 0, len(r.Tools))
	for _, t := range r.Tools {
		out = append(out, t.ID)
	}
	return out
}

// ResolveSession resolves a policy file in Barry's order: collect the
// traits (base defaults, identity, session, and packed bags' automatic
// traits under bagGrant: identity), expand them, resolve grants, merge the
// six bound sources, and filter the catalog. A selected trait or named bound
// that does not exist refuses; a base default that does not resolve is
// dropped with a warning.
func ResolveSession(pf *PolicyFile) (*Resolved, error) {
	return ResolveSessionWith(pf, ResolveOptions{})
}

// ResolveOptions change what ResolveSessionWith computes.
type ResolveOptions struct {
	// NoFingerprint leaves Fingerprint and Scope.Fingerprint empty. The
	// fingerprint is the approved scope's evidence (launch, audit, policy
	// check); a ruler that never shows it skips it: encoding the scope for
	// it was a fifth of each hookgate check --policy's policy load.
	// Nothing a ruling decides depends on it.
	NoFingerprint bool
}

// ResolveSessionWith is ResolveSession with options.
func ResolveSessionWith(pf *PolicyFile, o ResolveOptions) (*Resolved, error) {
	if pf == nil {
		return nil, fmt.Errorf("%w: no policy", ErrInvalidPolicy)
	}
	h := catalogHarness(pf.Harness)
	if h == nil {
		return nil, fieldErr("harness", "unknown harness %q", pf.Harness)
	}
	mode, _, err := h.Mode(pf.Mode)
	if err != nil {
		return nil, fieldErr("mode", "%v", err)
	}
	id := pf.Identity
	if id == nil {
		id = &Identity{BagGrant: "session"}
	}
	sess := pf.Session
	if sess == nil {
		sess = &SessionSelection{}
	}
	var warnings []string

	traits, rootAuto, tw := assembleTraits(pf, id)
	warnings = append(warnings, tw...)
	bounds := BuiltinBounds()
	for name, b := range pf.Bounds {
		c := b.Clone()
		if c.Name == "" {
			c.Name = name
		}
		// A bound named like a built-in adds to it and never takes its
		// restrictions away: <bag>:read carries readonly by name, and the
		// policy model says selecting it makes the whole session read-only.
		if old, ok := bounds[name]; ok {
			if merged := MergeBounds(old, c); restrictionJSON(merged) != restrictionJSON(normalizeBound(c.Clone())) {
				warnings = append(warnings, fmt.Sprintf("bound %q in bounds adds to the built-in bound of that name, which keeps its own restrictions", name))
				merged.Name, merged.Description = c.Name, c.Description
				c = merged
			}
		}
		bounds[name] = c
	}
	lookup := func(name string) (*Bound, bool) { b, ok := bounds[name]; return b, ok }

	// 1. Collect the traits.
	var selected []string
	add := func(n string) {
		if !slices.Contains(selected, n) {
			selected = append(selected, n)
		}
	}
	for _, n := range BaseDefaultTraits {
		if slices.Contains(id.Optional, n) {
			continue
		}
		if _, err := ExpandTraitNames([]string{n}, traits, pf.Harness); err != nil {
			warnings = append(warnings, fmt.Sprintf("base default trait %q does not resolve and grants nothing: %v", n, err))
			continue
		}
		add(n)
	}
	for i, n := range id.Traits {
		if _, ok := traits[n]; !ok {
			return nil, fieldErr(index("identity.traits", i), "%v", fmt.Errorf("%w: %q", ErrUnknownTrait, n))
		}
		add(n)
	}
	for i, n := range sess.Traits {
		if _, ok := traits[n]; !ok {
			return nil, fieldErr(index("session.traits", i), "%v", fmt.Errorf("%w: %q", ErrUnknownTrait, n))
		}
		add(n)
	}
	if id.BagGrant == "identity" {
		for _, b := range id.Bags {
			if rootAuto[b] {
				add(b)
			}
		}
	}

	// 2. Expand and resolve grants.
	expanded, err := ExpandTraitNames(selected, traits, pf.Harness)
	if err != nil {
		return nil, fieldErr("traits", "%v", err)
	}
	grants, err := ResolveTraits(selected, traits, pf.Harness)
	if err != nil {
		return nil, fieldErr("traits", "%v", err)
	}
	warnings = append(warnings, grants.Warnings...)

	// 3. Merge the bounds, from Barry's six sources in their order.
	sources, err := traitBoundSources(selected, traits, pf.Harness, lookup)
	if err != nil {
		return nil, fieldErr("traits", "%v", err)
	}
	named := func(path string, names []string, origin string) error {
		for i, n := range names {
			b, ok := bounds[n]
			if !ok {
				return fieldErr(index(path, i), "%v", fmt.Errorf("%w: %q", ErrUnknownBound, n))
			}
			sources = append(sources, BoundSource{Name: n, Origin: origin, Bound: b})
		}
		return nil
	}
	if err := named("identity.bounds", id.Bounds, "identity"); err != nil {
		return nil, err
	}
	if err := named("session.bounds", sess.Bounds, "session"); err != nil {
		return nil, err
	}
	if id.Bound != nil {
		sources = append(sources, BoundSource{Name: id.Bound.Name, Origin: "identity inline", Bound: id.Bound})
	}
	if sess.Bound != nil {
		sources = append(sources, BoundSource{Name: sess.Bound.Name, Origin: "session inline", Bound: sess.Bound})
	}
	var bound *Bound
	for _, s := range sources {
		bound = MergeBounds(bound, s.Bound)
	}
	if !BoundHasContent(bound) {
		bound = nil
	}
	if err := validateBoundSemantics(bound); err != nil {
		return nil, fieldErr("bound", "%s", AllowDomainsNeedsSandbox)
	}

	// 4. Filter the tools.
	r := &Resolved{
		Identity: id.Name, Harness: pf.Harness, Mode: mode,
		Traits: slices.Sorted(slices.Values(expanded)), Tools: []ToolAccess{}, Withheld: []WithheldTool{},
		Bound: bound, Sources: sources, Filesystem: pf.Filesystem, Environment: pf.Environment, Credentials: pf.Credentials, Sandbox: pf.Sandbox, grants: grants,
	}
	for _, d := range DecideTools(pf.Tools, grants, bound, sources, traits, pf.Harness) {
		if d.Allowed {
			r.Tools = append(r.Tools, ToolAccess{ID: d.ID, Access: d.Access})
		} else {
			r.Withheld = append(r.Withheld, WithheldTool{ID: d.ID, Reason: d.Reason})
		}
	}
	sort.Slice(r.Tools, func(i, j int) bool { return r.Tools[i].ID < r.Tools[j].ID })
	sort.Slice(r.Withheld, func(i, j int) bool { return r.Withheld[i].ID < r.Withheld[j].ID })

	// 5. Native policy.
	r.Native, err = ResolveNativePolicy(NativeGrants{Grants: grants, Bound: bound}, h, mode)
	if err != nil {
		return nil, fieldErr("mode", "%v", err)
	}

	// 6. Scope and fingerprint.
	scope := &ExecutionScope{Bound: bound, Harness: pf.Harness, Identity: id.Name, Tools: map[string]string{}, Traits: r.Traits}
	for _, t := range pf.Tools {
		if !slices.ContainsFunc(r.Tools, func(a ToolAccess) bool { return a.ID == t.ID() }) {
			continue
		}
		scope.Tools[t.ID()] = map[bool]string{true: "write", false: "read"}[t.IsWrite()]
		if t.ContractHash != "" {
			if scope.Contracts == nil {
				scope.Contracts = map[string]string{}
			}
			scope.Contracts[t.ID()] = t.ContractHash
		}
	}
	if !o.NoFingerprint {
		scope.Fingerprint = scope.computeFingerprint()
	}
	r.Scope = scope
	r.Fingerprint = scope.Fingerprint
	sort.Strings(warnings)
	r.Warnings = slices.Compact(warnings)
	if r.Warnings == nil {
		r.Warnings = []string{}
	}
	return r, nil
}

// assembleTraits builds every trait the session can name: the built-ins,
// the packed root bags' automatic traits, the bags' own traits, and the
// file's traits. rootAuto marks packed root bags that got a <bag> trait.
func assembleTraits(pf *PolicyFile, id *Identity) (map[string]*AgentTrait, map[string]bool, []string) {
	var warnings []string
	traits := BuiltinTraits()
	rootAuto := map[string]bool{}
	for _, bn := range id.Bags {
		b := pf.Bags[bn]
		if b == nil || b.Extends != "" || (len(b.Namespaces) == 0 && len(b.Skills) == 0) {
			continue
		}
		ns := bagNamespaces(pf, bn, map[string]bool{})
		traits[bn] = &AgentTrait{Name: bn, Access: AccessReadWrite, Namespaces: ns}
		traits[bn+":read"] = &AgentTrait{Name: bn + ":read", Access: AccessRead, Includes: []string{bn}, BoundNames: []string{"readonly"}, Namespaces: []string{}}
		rootAuto[bn] = true
	}
	for _, bn := range sortedKeys(pf.Bags) {
		b := pf.Bags[bn]
		for _, tn := range sortedKeys(b.Traits) {
			t := *b.Traits[tn]
			name := bn + ":" + tn
			switch tn {
			case bn:
				name = bn
			case "read":
				name = bn + ":read"
			}
			t.Name = name
			traits[name] = &t
		}
	}
	for _, tn := range sortedKeys(pf.Traits) {
		if _, ok := traits[tn]; ok {
			warnings = append(warnings, fmt.Sprintf("trait %q in traits replaces the built-in or bag trait of that name", tn))
		}
		traits[tn] = pf.Traits[tn]
	}
	return traits, rootAuto, warnings
}

// bagNamespaces returns a bag's namespaces and those of the bags it lists.
func bagNamespaces(pf *PolicyFile, name string, seen map[string]bool) []string {
	if seen[name] {
		return nil
	}
	seen[name] = true
	b := pf.Bags[name]
	if b == nil {
		return nil
	}
	out := slices.Clone(b.Namespaces)
	for _, sub := range b.Bags {
		out = append(out, bagNamespaces(pf, sub, seen)...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

func fieldErr(path, format string, args ...any) error {
	return FieldErrors{{Path: path, Msg: fmt.Sprintf(format, args...)}}
}

// ResolveFile loads and resolves a policy file in one step.
func ResolveFile(path string) (*Resolved, error) {
	return ResolveFileWith(path, ResolveOptions{})
}

// ResolveFileWith is ResolveFile with options.
func ResolveFileWith(path string, o ResolveOptions) (*Resolved, error) {
	pf, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return ResolveSessionWith(pf, o)
}
