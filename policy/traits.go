package policy

import (
	"fmt"
	"sort"
	"strings"
)

// Access is a granted access level: "read" observes without side effects,
// "readwrite" observes and modifies.
type Access string

const (
	// AccessRead grants read tools only.
	AccessRead Access = "read"
	// AccessReadWrite grants read and write tools.
	AccessReadWrite Access = "readwrite"
)

func (a Access) rank() int {
	switch a {
	case AccessRead:
		return 1
	case AccessReadWrite:
		return 2
	default:
		return 0
	}
}

// maxAccess returns the more permissive of two levels: readwrite beats read.
func maxAccess(a, b Access) Access {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// AgentTrait is a named capability: it grants namespaces and individual
// tools at an access level, and may carry restrictions (Bound, BoundNames)
// that are merged into the session's bound.
type AgentTrait struct {
	// Access is the level granted to every namespace and tool of the trait.
	Access Access `json:"access"`
	// Bound is an inline restriction the trait carries.
	Bound *Bound `json:"bound,omitempty"`
	// BoundNames are named bounds the trait carries.
	BoundNames []string `json:"boundNames,omitempty"`
	// HarnessTraits maps a harness id to the trait this one expands to under
	// that harness. A trait with branches fails under a harness it has none for.
	HarnessTraits map[string]string `json:"harnessTraits,omitempty"`
	// Includes are other traits this composite trait pulls in.
	Includes []string `json:"includes,omitempty"`
	// Name is the trait's name.
	Name string `json:"name"`
	// Namespaces are tool namespaces granted whole.
	Namespaces []string `json:"namespaces"`
	// NativeTools maps a harness id to the native tools (or native
	// categories) the trait grants under that harness.
	NativeTools map[string][]string `json:"nativeTools,omitempty"`
	// Tools are individual grants: qualified "ns:tool" ids, or legacy bare
	// names that match the name in every namespace (deprecated).
	Tools []string `json:"tools,omitempty"`
}

// ResolvedTraitGrants are the grants of a set of traits.
type ResolvedTraitGrants struct {
	// ByNamespace maps a namespace to its access.
	ByNamespace map[string]Access
	// ByTool maps a qualified "ns:tool" id to its explicit access.
	ByTool map[string]Access
	// ByToolLegacy maps a bare tool name (any namespace) to its access.
	ByToolLegacy map[string]Access
	// Via records, for each namespace, qualified id and bare name granted,
	// the traits that granted it (sorted).
	Via map[string][]string
	// Native maps a native tool name or category to the traits granting it,
	// for the harness the traits were resolved for.
	Native map[string][]string
	// Warnings are deprecation warnings, one per bare tool name.
	Warnings []string
}

// QualifyToolId returns the identity a tool is authorized under:
// "namespace:toolName", never one part alone.
func QualifyToolId(namespace, toolName string) string { return namespace + ":" + toolName }

// ExpandTraitNames expands the selected traits: includes are pulled in
// (a cycle is an error naming it), and a trait with harness branches expands
// to the branch for harness (an error when it has none). Every name must
// exist. The result keeps first-visit order, each name once.
func ExpandTraitNames(names []string, traits map[string]*AgentTrait, harness string) ([]string, error) {
	var out []string
	done := map[string]bool{}
	var visit func(name string, stack []string) error
	visit = func(name string, stack []string) error {
		for i, s := range stack {
			if s == name {
				return fmt.Errorf("%w: %s", ErrTraitCycle, strings.Join(append(stack[i:], name), " -> "))
			}
		}
		if done[name] {
			return nil
		}
		t, ok := traits[name]
		if !ok || t == nil {
			if len(stack) > 0 {
				return fmt.Errorf("%w: %q (included by %q)", ErrUnknownTrait, name, stack[len(stack)-1])
			}
			return fmt.Errorf("%w: %q", ErrUnknownTrait, name)
		}
		stack = append(stack, name)
		done[name] = true
		out = append(out, name)
		for _, inc := range t.Includes {
			if err := visit(inc, stack); err != nil {
				return err
			}
		}
		if len(t.HarnessTraits) > 0 {
			branch, ok := t.HarnessTraits[harness]
			if !ok || harness == "" {
				h := harness
				if h == "" {
					h = "(none)"
				}
				return fmt.Errorf("%w: trait %q has branches for %s, not for harness %s", ErrNoHarnessBranch, name, strings.Join(sortedKeys(t.HarnessTraits), ", "), h)
			}
			if err := visit(branch, stack); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ResolveTraits expands traitNames and unions their grants. When traits grant
// the same namespace or tool at different levels, readwrite beats read.
// Qualified tool entries key ByTool; a bare name keys ByToolLegacy and emits
// one deprecation warning per name.
func ResolveTraits(traitNames []string, allTraits map[string]*AgentTrait, harness string) (*ResolvedTraitGrants, error) {
	expanded, err := ExpandTraitNames(traitNames, allTraits, harness)
	if err != nil {
		return nil, err
	}
	g := &ResolvedTraitGrants{
		ByNamespace:  map[string]Access{},
		ByTool:       map[string]Access{},
		ByToolLegacy: map[string]Access{},
		Via:          map[string][]string{},
		Native:       map[string][]string{},
	}
	warned := map[string]bool{}
	via := func(key, trait string) {
		for _, t := range g.Via[key] {
			if t == trait {
				return
			}
		}
		g.Via[key] = append(g.Via[key], trait)
		sort.Strings(g.Via[key])
	}
	for _, name := range expanded {
		t := allTraits[name]
		acc := t.Access
		if acc == "" {
			acc = AccessRead
		}
		for _, ns := range t.Namespaces {
			g.ByNamespace[ns] = maxAccess(g.ByNamespace[ns], acc)
			via(ns, name)
		}
		for _, tool := range t.Tools {
			if strings.Contains(tool, ":") {
				g.ByTool[tool] = maxAccess(g.ByTool[tool], acc)
				via(tool, name)
				continue
			}
			g.ByToolLegacy[tool] = maxAccess(g.ByToolLegacy[tool], acc)
			via("*:"+tool, name)
			if !warned[tool] {
				warned[tool] = true
				g.Warnings = append(g.Warnings, fmt.Sprintf("trait %q grants bare tool name %q, which matches that name in every namespace; qualify it as namespace:%s (deprecated)", name, tool, tool))
			}
		}
		for _, n := range t.NativeTools[harness] {
			g.Native[n] = append(g.Native[n], name)
		}
	}
	sort.Strings(g.Warnings)
	return g, nil
}

// ToolGrant returns the access the grants give one tool, and whether any
// grant covers it: an explicit qualified grant first (it takes precedence
// over its namespace's grant), then the namespace, then a legacy bare name.
func ToolGrant(g *ResolvedTraitGrants, namespace, toolName string) (Access, bool) {
	if g == nil {
		return "", false
	}
	if a, ok := g.ByTool[QualifyToolId(namespace, toolName)]; ok {
		return a, true
	}
	if a, ok := g.ByNamespace[namespace]; ok {
		return a, true
	}
	if a, ok := g.ByToolLegacy[toolName]; ok {
		return a, true
	}
	return "", false
}

// grantedVia names the traits behind a tool's grant, in ToolGrant's order.
func grantedVia(g *ResolvedTraitGrants, namespace, toolName string) []string {
	if _, ok := g.ByTool[QualifyToolId(namespace, toolName)]; ok {
		return g.Via[QualifyToolId(namespace, toolName)]
	}
	if _, ok := g.ByNamespace[namespace]; ok {
		return g.Via[namespace]
	}
	return g.Via["*:"+toolName]
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
