package policy

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// PolicyFileVersion is the only policy file version this build reads.
const PolicyFileVersion = 1

// PolicyFile is a session policy document: the harness, the packed bags, the
// tool catalog, extra traits and named bounds, the identity, and the
// session's own selections. It is decoded strictly by LoadFile/DecodePolicyFile.
type PolicyFile struct {
	Version  int
	Harness  string
	Mode     string
	Bags     map[string]*Bag
	Tools    []ToolMeta
	Traits   map[string]*AgentTrait
	Bounds   map[string]*Bound
	Identity *Identity
	Session  *SessionSelection
	// Filesystem is the sandbox's filesystem section (outside the SDK's
	// Bound, which keeps its wire format): nil when absent.
	Filesystem *FilesystemSection
}

// Bag is a packed bag: what it provides, and the traits it defines.
type Bag struct {
	Namespaces []string
	Skills     []string
	Services   []string
	Actions    []string
	// Bags are the bags this one lists; its automatic trait grants their
	// namespaces too.
	Bags []string
	// Extends names a bag this one extends; such a bag gets no automatic
	// trait.
	Extends string
	// Traits are defined by the bag. One named like the bag replaces the
	// automatic <bag> trait, one named "read" replaces <bag>:read; others
	// are known as <bag>:<name>.
	Traits map[string]*AgentTrait
}

// Identity is who the session runs as.
type Identity struct {
	Name   string
	Bags   []string
	Traits []string
	Bounds []string
	// Optional are base default traits this identity turns off.
	Optional []string
	// Bound is the identity's inline bound.
	Bound *Bound
	// BagGrant is "session" (default: packed bags reach a session only when
	// a trait selects them) or "identity" (every packed root bag's automatic
	// trait joins every session).
	BagGrant string
}

// SessionSelection is what the session selects at start.
type SessionSelection struct {
	Traits []string
	Bounds []string
	Bound  *Bound
}

// BaseDefaultTraits are the base identity's traits, in the seed's order.
var BaseDefaultTraits = []string{"artifacts", "bash", "filesystem", "instructions", "sessions"}

// BuiltinTraits returns the traits every installation has: the base
// defaults, and "web", which grants the harnesses' native network tools.
// Each call returns fresh values.
func BuiltinTraits() map[string]*AgentTrait {
	all := func(c ...string) map[string][]string {
		m := map[string][]string{}
		for _, id := range harnessIDs() {
			m[id] = slices.Clone(c)
		}
		return m
	}
	return map[string]*AgentTrait{
		"artifacts":    {Name: "artifacts", Access: AccessReadWrite, Namespaces: []string{"artifacts"}},
		"bash":         {Name: "bash", Access: AccessReadWrite, Namespaces: []string{BashNamespace}, NativeTools: all(CategoryShell)},
		"filesystem":   {Name: "filesystem", Access: AccessReadWrite, Namespaces: []string{"filesystem"}, NativeTools: all(CategoryFileReads, CategoryFileWrites)},
		"instructions": {Name: "instructions", Access: AccessRead, Namespaces: []string{"instructions"}},
		"sessions":     {Name: "sessions", Access: AccessReadWrite, Namespaces: []string{"sessions"}},
		"web":          {Name: "web", Access: AccessRead, Namespaces: []string{}, NativeTools: all(CategoryNetwork)},
	}
}

// BuiltinBounds returns the named bounds base ships. They are optional:
// they apply only when something selects them.
func BuiltinBounds() map[string]*Bound {
	return map[string]*Bound{
		"readonly": {
			Name:         "readonly",
			Description:  "denies the Bash, Write and Edit tools, write access, and network writes",
			DeniedTools:  []string{"Bash", "Edit", "Write"},
			DeniedAccess: []string{"write"},
			Network:      &NetworkRules{Actions: []string{ActionWrite}},
		},
		"no-network": {
			Name:        "no-network",
			Description: "denies all network actions",
			Network:     &NetworkRules{Actions: []string{ActionAll}},
		},
		"no-network-write": {
			Name:        "no-network-write",
			Description: "denies network writes",
			Network:     &NetworkRules{Actions: []string{ActionWrite}},
		},
	}
}

// LoadFile reads and strictly decodes a policy file (YAML, or JSON for a
// .json name). Errors are FieldErrors naming each problem's path and line.
func LoadFile(path string) (*PolicyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	return DecodePolicyFile(data, FormatForPath(path))
}

// DecodePolicyFile decodes and validates a policy document.
func DecodePolicyFile(data []byte, format Format) (*PolicyFile, error) {
	root, err := parseDocument(data, format)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	pf := &PolicyFile{}
	var versionSeen bool
	nodes := map[string]*yaml.Node{}
	d.fields(root, "", map[string]func(*yaml.Node, string){
		"version": func(v *yaml.Node, p string) {
			versionSeen = true
			pf.Version = d.integer(v, p)
			if pf.Version != PolicyFileVersion && len(d.errs) == 0 {
				d.errf(v, p, "unsupported version %d (this build reads version %d)", pf.Version, PolicyFileVersion)
			}
		},
		"harness": func(v *yaml.Node, p string) { nodes[p] = v; pf.Harness = d.str(v, p) },
		"mode":    func(v *yaml.Node, p string) { nodes[p] = v; pf.Mode = d.str(v, p) },
		"bags": func(v *yaml.Node, p string) {
			pf.Bags = map[string]*Bag{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { pf.Bags[k] = d.bag(v, p) })
		},
		"tools": func(v *yaml.Node, p string) { pf.Tools = d.tools(v, p) },
		"traits": func(v *yaml.Node, p string) {
			pf.Traits = map[string]*AgentTrait{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { pf.Traits[k] = d.trait(k, v, p) })
		},
		"bounds": func(v *yaml.Node, p string) {
			pf.Bounds = map[string]*Bound{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { pf.Bounds[k] = d.bound(v, p) })
		},
		"identity": func(v *yaml.Node, p string) { nodes[p] = v; pf.Identity = d.identity(v, p) },
		"session":  func(v *yaml.Node, p string) { pf.Session = d.session(v, p) },
		"filesystem": func(v *yaml.Node, p string) {
			pf.Filesystem = &FilesystemSection{}
			d.fields(v, p, map[string]func(*yaml.Node, string){
				"write": func(v *yaml.Node, p string) { pf.Filesystem.Write = d.writeRoots(v, p) },
			})
		},
	})
	if !versionSeen && resolveAlias(root).Kind == yaml.MappingNode {
		d.errf(root, "version", "missing required field (version: %d)", PolicyFileVersion)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	d.validate(pf, nodes)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return pf, nil
}

func (d *decoder) bag(n *yaml.Node, path string) *Bag {
	b := &Bag{}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"namespaces": func(v *yaml.Node, p string) { b.Namespaces = d.strList(v, p) },
		"skills":     func(v *yaml.Node, p string) { b.Skills = d.strList(v, p) },
		"services":   func(v *yaml.Node, p string) { b.Services = d.strList(v, p) },
		"actions":    func(v *yaml.Node, p string) { b.Actions = d.strList(v, p) },
		"bags":       func(v *yaml.Node, p string) { b.Bags = d.strList(v, p) },
		"extends":    func(v *yaml.Node, p string) { b.Extends = d.str(v, p) },
		"traits": func(v *yaml.Node, p string) {
			b.Traits = map[string]*AgentTrait{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { b.Traits[k] = d.trait(k, v, p) })
		},
	})
	return b
}

func (d *decoder) tools(n *yaml.Node, path string) []ToolMeta {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "must be a list of tools, got %s", kindName(n))
		return nil
	}
	var out []ToolMeta
	seen := map[string]bool{}
	for i, e := range n.Content {
		p := index(path, i)
		t := ToolMeta{}
		var got = map[string]bool{}
		d.fields(e, p, map[string]func(*yaml.Node, string){
			"access": func(v *yaml.Node, p string) {
				got["access"] = true
				t.Access = d.str(v, p)
				if t.Access != "read" && t.Access != "write" && resolveAlias(v).Tag == "!!str" {
					d.errf(v, p, "%q is not a tool access (read or write)", t.Access)
				}
			},
			"annotations": func(v *yaml.Node, p string) {
				t.Annotations = &McpAnnotations{}
				b := func(dst **bool) func(*yaml.Node, string) {
					return func(v *yaml.Node, p string) { x := d.boolean(v, p); *dst = &x }
				}
				d.fields(v, p, map[string]func(*yaml.Node, string){
					"destructiveHint": b(&t.Annotations.DestructiveHint),
					"idempotentHint":  b(&t.Annotations.IdempotentHint),
					"openWorldHint":   b(&t.Annotations.OpenWorldHint),
					"readOnlyHint":    b(&t.Annotations.ReadOnlyHint),
					"title":           func(v *yaml.Node, p string) { t.Annotations.Title = d.str(v, p) },
				})
			},
			"contractHash": func(v *yaml.Node, p string) { t.ContractHash = d.str(v, p) },
			"namespace":    func(v *yaml.Node, p string) { got["namespace"] = true; t.Namespace = d.str(v, p) },
			"toolName":     func(v *yaml.Node, p string) { got["toolName"] = true; t.ToolName = d.str(v, p) },
		})
		if resolveAlias(e).Kind != yaml.MappingNode {
			continue
		}
		for _, f := range []string{"access", "namespace", "toolName"} {
			if !got[f] {
				d.errf(e, join(p, f), "missing required field")
			}
		}
		for _, part := range []struct{ name, v string }{{"namespace", t.Namespace}, {"toolName", t.ToolName}} {
			if got[part.name] && (part.v == "" || strings.ContainsAny(part.v, ": \t")) {
				d.errf(e, join(p, part.name), "must be a non-empty name without ':' or spaces")
			}
		}
		if seen[t.ID()] {
			d.errf(e, p, "duplicate tool %s", t.ID())
		}
		seen[t.ID()] = true
		out = append(out, t)
	}
	return out
}

func (d *decoder) trait(key string, n *yaml.Node, path string) *AgentTrait {
	t := &AgentTrait{Name: key}
	accessSeen := false
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"access": func(v *yaml.Node, p string) {
			accessSeen = true
			s := d.str(v, p)
			switch Access(s) {
			case AccessRead, AccessReadWrite:
				t.Access = Access(s)
			default:
				if resolveAlias(v).Tag == "!!str" {
					d.errf(v, p, "%q is not an access level (read or readwrite)", s)
				}
			}
		},
		"bound":         func(v *yaml.Node, p string) { t.Bound = d.bound(v, p) },
		"boundNames":    func(v *yaml.Node, p string) { t.BoundNames = d.strList(v, p) },
		"harnessTraits": func(v *yaml.Node, p string) { t.HarnessTraits = d.strMap(v, p) },
		"includes":      func(v *yaml.Node, p string) { t.Includes = d.strList(v, p) },
		"name": func(v *yaml.Node, p string) {
			if s := d.str(v, p); s != key && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "name %q differs from the trait's key %q", s, key)
			}
		},
		"namespaces":  func(v *yaml.Node, p string) { t.Namespaces = d.strList(v, p) },
		"nativeTools": func(v *yaml.Node, p string) { t.NativeTools = d.strListMap(v, p) },
		"tools":       func(v *yaml.Node, p string) { t.Tools = d.strList(v, p) },
	})
	if !accessSeen && (len(t.Namespaces) > 0 || len(t.Tools) > 0) {
		d.errf(n, join(path, "access"), "missing required field (read or readwrite) for a trait that grants namespaces or tools")
	}
	if t.Access == "" {
		t.Access = AccessRead
	}
	if t.Namespaces == nil {
		t.Namespaces = []string{}
	}
	return t
}

func (d *decoder) identity(n *yaml.Node, path string) *Identity {
	id := &Identity{BagGrant: "session"}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"name":     func(v *yaml.Node, p string) { id.Name = d.str(v, p) },
		"bags":     func(v *yaml.Node, p string) { id.Bags = d.strList(v, p) },
		"traits":   func(v *yaml.Node, p string) { id.Traits = d.strList(v, p) },
		"bounds":   func(v *yaml.Node, p string) { id.Bounds = d.strList(v, p) },
		"optional": func(v *yaml.Node, p string) { id.Optional = d.strList(v, p) },
		"bound":    func(v *yaml.Node, p string) { id.Bound = d.bound(v, p) },
		"bagGrant": func(v *yaml.Node, p string) {
			id.BagGrant = d.str(v, p)
			if id.BagGrant != "session" && id.BagGrant != "identity" && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "%q is not a bag grant (session or identity)", id.BagGrant)
			}
		},
	})
	return id
}

func (d *decoder) session(n *yaml.Node, path string) *SessionSelection {
	s := &SessionSelection{}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"traits": func(v *yaml.Node, p string) { s.Traits = d.strList(v, p) },
		"bounds": func(v *yaml.Node, p string) { s.Bounds = d.strList(v, p) },
		"bound":  func(v *yaml.Node, p string) { s.Bound = d.bound(v, p) },
	})
	return s
}

// validate checks references across the document.
func (d *decoder) validate(pf *PolicyFile, nodes map[string]*yaml.Node) {
	harnesses := harnessCatalog()
	h, ok := harnesses[pf.Harness]
	switch {
	case pf.Harness == "":
		d.errf(nil, "harness", "missing required field (one of %s)", strings.Join(sortedKeys(harnesses), ", "))
	case !ok:
		d.errf(nodes["harness"], "harness", "unknown harness %q (one of %s)", pf.Harness, strings.Join(sortedKeys(harnesses), ", "))
	default:
		if _, _, err := h.Mode(pf.Mode); err != nil {
			d.errf(nodes["mode"], "mode", "%v", err)
		}
	}
	checkNative := func(path string, m map[string][]string) {
		for _, hid := range sortedKeys(m) {
			hh, ok := harnesses[hid]
			if !ok {
				d.errf(nil, join(path, hid), "unknown harness %q", hid)
				continue
			}
			for i, n := range m[hid] {
				if !slices.Contains(hh.NativeTools, n) && !slices.Contains(NativeCategories, n) {
					d.errf(nil, index(join(path, hid), i), "%q is not a native tool or category of harness %s", n, hid)
				}
			}
		}
	}
	for _, name := range sortedKeys(pf.Traits) {
		t := pf.Traits[name]
		checkNative("traits."+name+".nativeTools", t.NativeTools)
		if t.Bound != nil {
			checkNative("traits."+name+".bound.nativeTools", t.Bound.NativeTools)
		}
	}
	for _, name := range sortedKeys(pf.Bounds) {
		checkNative("bounds."+name+".nativeTools", pf.Bounds[name].NativeTools)
	}
	for _, name := range sortedKeys(pf.Bags) {
		b := pf.Bags[name]
		if strings.Contains(name, ":") {
			d.errf(nil, "bags."+name, "a bag name cannot contain ':'")
		}
		for i, sub := range b.Bags {
			if _, ok := pf.Bags[sub]; !ok {
				d.errf(nil, index("bags."+name+".bags", i), "unknown bag %q", sub)
			}
		}
		if b.Extends != "" {
			if _, ok := pf.Bags[b.Extends]; !ok {
				d.errf(nil, "bags."+name+".extends", "unknown bag %q", b.Extends)
			}
		}
		for _, tn := range sortedKeys(b.Traits) {
			checkNative("bags."+name+".traits."+tn+".nativeTools", b.Traits[tn].NativeTools)
		}
	}
	if id := pf.Identity; id != nil {
		for i, bn := range id.Bags {
			if _, ok := pf.Bags[bn]; !ok {
				d.errf(nodes["identity"], index("identity.bags", i), "unknown bag %q (declare it under bags)", bn)
			}
		}
		for i, o := range id.Optional {
			if !slices.Contains(BaseDefaultTraits, o) {
				d.errf(nodes["identity"], index("identity.optional", i), "%q is not a base default trait (one of %s)", o, strings.Join(BaseDefaultTraits, ", "))
			}
		}
	}
}

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

	// Scope is the approved execution scope this resolution amounts to.
	Scope *ExecutionScope `json:"-"`
	// Sources are the bounds merged into Bound, in merge order.
	Sources []BoundSource `json:"-"`
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

// ResolveSession resolves a policy file in the seed's order: collect the
// traits (base defaults, identity, session, and packed bags' automatic
// traits under bagGrant: identity), expand them, resolve grants, merge the
// six bound sources, and filter the catalog. A selected trait or named bound
// that does not exist refuses; a base default that does not resolve is
// dropped with a warning.
func ResolveSession(pf *PolicyFile) (*Resolved, error) {
	if pf == nil {
		return nil, fmt.Errorf("%w: no policy", ErrInvalidPolicy)
	}
	h, ok := harnessCatalog()[pf.Harness]
	if !ok {
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
		// seed says selecting it makes the whole session read-only.
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

	// 3. Merge the bounds, in the seed's six sources.
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
		Bound: bound, Sources: sources, Filesystem: pf.Filesystem,
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
	scope.Fingerprint = scope.computeFingerprint()
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
	pf, err := LoadFile(path)
	if err != nil {
		return nil, err
	}
	return ResolveSession(pf)
}

// DeniesAllActions reports whether the denied network actions cover every
// leaf action ("all", or e.g. "read" and "write" together), which is no
// network at all.
func DeniesAllActions(actions []string) bool {
	if len(actions) == 0 {
		return false
	}
	denied := ExpandActions(actions)
	for _, leaf := range ExpandActions([]string{ActionAll}) {
		if _, parent := actionChildren[leaf]; !parent && !slices.Contains(denied, leaf) {
			return false
		}
	}
	return true
}

// CheckSandboxEnforceable refuses a bound that asks the egress sandbox to
// enforce a split it cannot see: with network.enforce: sandbox, denying only
// some network actions (say write, not read) depends on telling a read from
// a write to the same host, which a hostname filter cannot.
func CheckSandboxEnforceable(b *Bound) error {
	if b == nil || b.Network == nil || b.Network.Enforce != EnforceSandbox || len(b.Network.Actions) == 0 {
		return nil
	}
	if DeniesAllActions(b.Network.Actions) {
		return nil
	}
	return fmt.Errorf("%w: network.actions denies only some actions (%s) under enforce: sandbox; the egress sandbox filters by host and cannot tell a read from a write, so deny all actions or enforce this with the guards",
		ErrNotAllowed, strings.Join(b.Network.Actions, ", "))
}
