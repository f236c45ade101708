package policy

import (
	"slices"
	"sort"
	"strings"
)

// Bound is a set of restrictions: it takes tools, write access, paths,
// commands and network destinations back from what traits grant. Field names
// on the wire are the TypeScript SDK's camelCase names; empty fields are
// omitted, except the allowlists (files.allowOnly, network.allowDomains,
// nodes.allow), where an empty list present means "nothing is allowed" and so
// is kept.
type Bound struct {
	Bash         *BashRules          `json:"bash,omitempty"`
	DeniedAccess []string            `json:"deniedAccess,omitempty"`
	DeniedTools  []string            `json:"deniedTools,omitempty"`
	Description  string              `json:"description,omitempty"`
	Files        *FileRules          `json:"files,omitempty"`
	Name         string              `json:"name,omitempty"`
	NativeTools  map[string][]string `json:"nativeTools,omitempty"`
	Network      *NetworkRules       `json:"network,omitempty"`
	Nodes        *NodeRules          `json:"nodes,omitempty"`
}

// BashRules restrict shell commands.
type BashRules struct {
	// Deny holds substrings; a command containing one is denied.
	Deny []string `json:"deny,omitempty"`
	// DenyPrograms holds program rules: "git", "git:push", "gh:pr:create".
	DenyPrograms []string `json:"denyPrograms,omitempty"`
}

// FileRules restrict file paths.
type FileRules struct {
	// AllowOnly, when non-nil, is an allowlist of path globs: a path nothing
	// matches is denied. A non-nil empty list allows no path.
	AllowOnly []string `json:"allowOnly,omitzero"`
	// Deny holds path globs that are denied.
	Deny []string `json:"deny,omitempty"`
}

// Enforce is the network enforcement level.
type Enforce string

const (
	// EnforceNone means the bound sets no level (guard applies).
	EnforceNone Enforce = ""
	// EnforceGuard is application-level interception only.
	EnforceGuard Enforce = "guard"
	// EnforceSandbox adds the egress sandbox around the process tree.
	EnforceSandbox Enforce = "sandbox"
)

func (e Enforce) rank() int {
	switch e {
	case EnforceGuard:
		return 1
	case EnforceSandbox:
		return 2
	default:
		return 0
	}
}

// NetworkRules restrict network access.
type NetworkRules struct {
	// Actions are denied network action tags (see NetworkActions).
	Actions []string `json:"actions,omitempty"`
	// AllowDomains is the egress allowlist, enforced only by the sandbox. Under
	// enforce: sandbox, nil means an empty allowlist: no egress.
	AllowDomains []string `json:"allowDomains,omitzero"`
	// Domains are denied destination patterns.
	Domains []string `json:"domains,omitempty"`
	// Enforce is the enforcement level.
	Enforce Enforce `json:"enforce,omitempty"`
}

// NodeRules restrict which workflow nodes may run.
type NodeRules struct {
	Allow []string `json:"allow,omitzero"`
	Deny  []string `json:"deny,omitempty"`
}

// BoundHasContent reports whether a bound carries any restriction (not just
// a name or description). network.enforce counts: an enforce-only bound is an
// instruction to escalate enforcement, and dropping it would lose that.
func BoundHasContent(b *Bound) bool {
	if b == nil {
		return false
	}
	if b.Bash != nil && (len(b.Bash.Deny) > 0 || len(b.Bash.DenyPrograms) > 0) {
		return true
	}
	if len(b.DeniedAccess) > 0 || len(b.DeniedTools) > 0 {
		return true
	}
	if b.Files != nil && (b.Files.AllowOnly != nil || len(b.Files.Deny) > 0) {
		return true
	}
	for _, v := range b.NativeTools {
		if len(v) > 0 {
			return true
		}
	}
	if n := b.Network; n != nil && (len(n.Actions) > 0 || n.AllowDomains != nil || len(n.Domains) > 0 || n.Enforce != EnforceNone) {
		return true
	}
	if b.Nodes != nil && (b.Nodes.Allow != nil || len(b.Nodes.Deny) > 0) {
		return true
	}
	return false
}

// MergeBounds combines two bounds so that the result restricts at least as
// much as each: denials union (deduplicated and sorted), allowlists intersect
// (a side without the list imposes none), the strictest network.enforce wins.
// Names and descriptions are joined with " + ". Either side may be nil; two
// nils give nil. The inputs are not modified.
func MergeBounds(base, override *Bound) *Bound {
	if base == nil && override == nil {
		return nil
	}
	if base == nil {
		return normalizeBound(override.Clone())
	}
	if override == nil {
		return normalizeBound(base.Clone())
	}
	out := &Bound{
		DeniedAccess: union(base.DeniedAccess, override.DeniedAccess),
		DeniedTools:  union(base.DeniedTools, override.DeniedTools),
		Name:         joinText(base.Name, override.Name),
		Description:  joinText(base.Description, override.Description),
		Network:      MergeNetwork(base.Network, override.Network),
	}
	if base.Bash != nil || override.Bash != nil {
		var a, b BashRules
		if base.Bash != nil {
			a = *base.Bash
		}
		if override.Bash != nil {
			b = *override.Bash
		}
		out.Bash = &BashRules{Deny: union(a.Deny, b.Deny), DenyPrograms: union(a.DenyPrograms, b.DenyPrograms)}
	}
	if base.Files != nil || override.Files != nil {
		var a, b FileRules
		if base.Files != nil {
			a = *base.Files
		}
		if override.Files != nil {
			b = *override.Files
		}
		out.Files = &FileRules{AllowOnly: intersectGlobs(a.AllowOnly, b.AllowOnly), Deny: union(a.Deny, b.Deny)}
	}
	if base.Nodes != nil || override.Nodes != nil {
		var a, b NodeRules
		if base.Nodes != nil {
			a = *base.Nodes
		}
		if override.Nodes != nil {
			b = *override.Nodes
		}
		out.Nodes = &NodeRules{Allow: intersectPlain(a.Allow, b.Allow), Deny: union(a.Deny, b.Deny)}
	}
	if len(base.NativeTools) > 0 || len(override.NativeTools) > 0 {
		out.NativeTools = map[string][]string{}
		for h, v := range base.NativeTools {
			out.NativeTools[h] = union(out.NativeTools[h], v)
		}
		for h, v := range override.NativeTools {
			out.NativeTools[h] = union(out.NativeTools[h], v)
		}
	}
	return normalizeBound(out)
}

// MergeNetwork combines two network rule sets by the same rules as
// MergeBounds. Either side may be nil; two nils give nil.
func MergeNetwork(base, override *NetworkRules) *NetworkRules {
	if base == nil && override == nil {
		return nil
	}
	var a, b NetworkRules
	if base != nil {
		a = *base
	}
	if override != nil {
		b = *override
	}
	out := &NetworkRules{
		Actions: union(a.Actions, b.Actions),
		Domains: union(a.Domains, b.Domains),
		Enforce: a.Enforce,
	}
	if b.Enforce.rank() > out.Enforce.rank() {
		out.Enforce = b.Enforce
	}
	// A side without the list imposes none, unless it is under enforce:
	// sandbox, where an absent allowlist is the empty one (no egress): it
	// permits nothing, so the intersection is empty.
	switch {
	case a.AllowDomains == nil && b.AllowDomains == nil:
	case a.AllowDomains == nil && a.Enforce == EnforceSandbox, b.AllowDomains == nil && b.Enforce == EnforceSandbox:
		out.AllowDomains = []string{}
	case a.AllowDomains == nil:
		out.AllowDomains = canonicalPatterns(b.AllowDomains)
	case b.AllowDomains == nil:
		out.AllowDomains = canonicalPatterns(a.AllowDomains)
	default:
		out.AllowDomains = IntersectDomainPatterns(a.AllowDomains, b.AllowDomains)
	}
	return out
}

// Clone returns a deep copy of b (nil for nil).
func (b *Bound) Clone() *Bound {
	if b == nil {
		return nil
	}
	c := *b
	c.DeniedAccess = slices.Clone(b.DeniedAccess)
	c.DeniedTools = slices.Clone(b.DeniedTools)
	if b.Bash != nil {
		c.Bash = &BashRules{Deny: slices.Clone(b.Bash.Deny), DenyPrograms: slices.Clone(b.Bash.DenyPrograms)}
	}
	if b.Files != nil {
		c.Files = &FileRules{AllowOnly: slices.Clone(b.Files.AllowOnly), Deny: slices.Clone(b.Files.Deny)}
	}
	if b.Network != nil {
		n := *b.Network
		n.Actions = slices.Clone(n.Actions)
		n.AllowDomains = slices.Clone(n.AllowDomains)
		n.Domains = slices.Clone(n.Domains)
		c.Network = &n
	}
	if b.Nodes != nil {
		c.Nodes = &NodeRules{Allow: slices.Clone(b.Nodes.Allow), Deny: slices.Clone(b.Nodes.Deny)}
	}
	if b.NativeTools != nil {
		c.NativeTools = make(map[string][]string, len(b.NativeTools))
		for k, v := range b.NativeTools {
			c.NativeTools[k] = slices.Clone(v)
		}
	}
	return &c
}

// normalizeBound sorts and deduplicates denial lists so that merges in any
// order produce equal values. slices.Clone keeps nil vs empty, which the
// allowlists depend on.
func normalizeBound(b *Bound) *Bound {
	b.DeniedAccess = union(b.DeniedAccess, nil)
	b.DeniedTools = union(b.DeniedTools, nil)
	if b.Bash != nil {
		b.Bash.Deny = union(b.Bash.Deny, nil)
		b.Bash.DenyPrograms = union(b.Bash.DenyPrograms, nil)
		if len(b.Bash.Deny) == 0 && len(b.Bash.DenyPrograms) == 0 {
			b.Bash = nil
		}
	}
	if b.Files != nil {
		b.Files.Deny = union(b.Files.Deny, nil)
		if b.Files.AllowOnly != nil {
			b.Files.AllowOnly = sortedUnique(b.Files.AllowOnly)
		}
		if b.Files.AllowOnly == nil && len(b.Files.Deny) == 0 {
			b.Files = nil
		}
	}
	if n := b.Network; n != nil {
		n.Actions = union(n.Actions, nil)
		n.Domains = union(n.Domains, nil)
		if n.AllowDomains != nil {
			n.AllowDomains = canonicalPatterns(n.AllowDomains)
		}
		if len(n.Actions) == 0 && len(n.Domains) == 0 && n.AllowDomains == nil && n.Enforce == EnforceNone {
			b.Network = nil
		}
	}
	if b.Nodes != nil {
		b.Nodes.Deny = union(b.Nodes.Deny, nil)
		if b.Nodes.Allow != nil {
			b.Nodes.Allow = sortedUnique(b.Nodes.Allow)
		}
		if b.Nodes.Allow == nil && len(b.Nodes.Deny) == 0 {
			b.Nodes = nil
		}
	}
	for k, v := range b.NativeTools {
		if len(v) == 0 {
			delete(b.NativeTools, k)
		} else {
			b.NativeTools[k] = union(v, nil)
		}
	}
	if len(b.NativeTools) == 0 {
		b.NativeTools = nil
	}
	return b
}

// union returns the sorted, deduplicated union; nil when empty.
func union(a, b []string) []string {
	if len(a) == 0 && len(b) == 0 {
		return nil
	}
	out := make([]string, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	return sortedUnique(out)
}

// sortedUnique sorts and deduplicates, returning a non-nil slice.
func sortedUnique(in []string) []string {
	out := slices.Clone(in)
	if out == nil {
		out = []string{}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// intersectAllowlists intersects two allowlists; nil means no list (it
// imposes nothing), while a present empty list allows nothing. An entry of
// one list survives when covers says an entry of the other list covers it.
func intersectAllowlists(a, b []string, covers func(outer, inner string) bool) []string {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return sortedUnique(b)
	case b == nil:
		return sortedUnique(a)
	}
	out := []string{}
	for _, x := range a {
		for _, y := range b {
			switch {
			case covers(y, x):
				out = append(out, x)
			case covers(x, y):
				out = append(out, y)
			}
		}
	}
	return sortedUnique(out)
}

// intersectPlain intersects two exact-string allowlists.
func intersectPlain(a, b []string) []string {
	return intersectAllowlists(a, b, func(outer, inner string) bool { return outer == inner })
}

// canonicalPatterns rewrites domain entries in canonical form (sorted,
// deduplicated); entries that do not parse are kept as written so that
// validation still sees and refuses them.
func canonicalPatterns(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if p, err := ParseDomainPattern(s, false); err == nil {
			out = append(out, p.String())
		} else {
			out = append(out, s)
		}
	}
	return sortedUnique(out)
}

func joinText(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || a == b:
		return a
	}
	parts := strings.Split(a, " + ")
	for _, p := range strings.Split(b, " + ") {
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " + ")
}
