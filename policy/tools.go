package policy

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// McpAnnotations mirrors MCP tool annotations: advisory hints only.
type McpAnnotations struct {
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	Title           string `json:"title,omitempty"`
}

// ToolMeta describes a tool: its namespace, name and whether it reads or
// writes. It is metadata, not the tool.
type ToolMeta struct {
	Access       string          `json:"access"` // "read" or "write"
	Annotations  *McpAnnotations `json:"annotations,omitempty"`
	ContractHash string          `json:"contractHash,omitempty"`
	Namespace    string          `json:"namespace"`
	ToolName     string          `json:"toolName"`
}

// ID returns the tool's qualified id.
func (t ToolMeta) ID() string { return QualifyToolId(t.Namespace, t.ToolName) }

// IsWrite reports whether the tool modifies anything.
func (t ToolMeta) IsWrite() bool { return t.Access != "read" }

// BashNamespace is the namespace of Barry's own bash tool, which a bound
// with file rules withholds (a shell can reach any file).
const BashNamespace = "bash"

// BoundSource is one bound in play with where it came from, so a withheld
// tool's reason can name the bound that withheld it.
type BoundSource struct {
	// Name is the bound's name ("readonly"), or "" for an inline bound.
	Name string
	// Origin says where it came from: "trait github:read", "identity",
	// "session", "identity inline bound", ...
	Origin string
	// Trait is the trait that carries it, when it came from one.
	Trait string
	// Bound is the restriction.
	Bound *Bound
}

func (s BoundSource) label() string {
	if s.Name != "" {
		return s.Name
	}
	return "the " + s.Origin + " bound"
}

// ToolDecision is the verdict for one catalog tool.
type ToolDecision struct {
	ID      string
	Tool    ToolMeta
	Allowed bool
	// Access is the session's access to an allowed tool: "read" for a read
	// tool, "readwrite" for a write tool.
	Access Access
	// Reason says why a tool is withheld, or through which traits it is
	// granted.
	Reason string
}

// toolFilter holds what deciding tools needs.
type toolFilter struct {
	grants  *ResolvedTraitGrants
	bound   *Bound
	sources []BoundSource
	traits  map[string]*AgentTrait
	harness string
}

// DecideTools decides every catalog tool in the bounds SDK's order:
//  1. a trait grants its namespace or qualified id;
//  2. the bound does not deny its namespace, name or id in deniedTools (and a
//     bound with file rules withholds the bash tool);
//  3. a write tool needs a readwrite grant, and the bound must not deny write
//     access to it;
//  4. the bound's network actions do not imply denying it.
//
// sources, when given, are the bounds that were merged into bound; the
// reason for a withheld tool names the first source that withholds it.
// traits and harness let a reason tell a bound carried by the granting trait
// from one that applies to the whole session.
func DecideTools(tools []ToolMeta, grants *ResolvedTraitGrants, bound *Bound, sources []BoundSource, traits map[string]*AgentTrait, harness string) []ToolDecision {
	f := toolFilter{grants: grants, bound: bound, sources: sources, traits: traits, harness: harness}
	out := make([]ToolDecision, 0, len(tools))
	for _, t := range tools {
		out = append(out, f.decide(t))
	}
	return out
}

func (f toolFilter) decide(t ToolMeta) ToolDecision {
	d := ToolDecision{ID: t.ID(), Tool: t}
	acc, ok := ToolGrant(f.grants, t.Namespace, t.ToolName)
	if !ok {
		d.Reason = fmt.Sprintf("no selected trait grants namespace %s or tool %s", t.Namespace, t.ID())
		return d
	}
	via := grantedVia(f.grants, t.Namespace, t.ToolName)
	// 2. deniedTools, and file rules withholding bash.
	if e := deniedToolEntry(f.bound, t); e != "" {
		src := f.firstSource(func(b *Bound) bool { return deniedToolEntry(b, t) != "" })
		d.Reason = fmt.Sprintf("%s denies tool %s", src, e)
		return d
	}
	if t.Namespace == BashNamespace && hasFileRules(f.bound) {
		src := f.firstSource(hasFileRules)
		d.Reason = fmt.Sprintf("%s has file rules, which withhold the bash tool", src)
		return d
	}
	// 3. write access.
	if t.IsWrite() {
		if acc != AccessReadWrite {
			d.Reason = fmt.Sprintf("write tool needs a readwrite grant; %s grant%s read", quoteList(via), plural(len(via)))
			return d
		}
		if e := deniedAccessEntry(f.bound, t); e != "" {
			i := f.firstSourceIndex(func(b *Bound) bool { return deniedAccessEntry(b, t) != "" })
			d.Reason = f.writeDeniedReason(i, t, via, e)
			return d
		}
	}
	// 4. network actions.
	if f.bound != nil && f.bound.Network != nil && len(f.bound.Network.Actions) > 0 {
		if slices.Contains(GetImpliedDeniedTools(f.bound.Network.Actions), t.ToolName) {
			src := f.firstSource(func(b *Bound) bool {
				return b.Network != nil && slices.Contains(GetImpliedDeniedTools(b.Network.Actions), t.ToolName)
			})
			d.Reason = fmt.Sprintf("%s denies network action %s, which %s performs", src, strings.Join(NetworkToolActions[t.ToolName], ", "), t.ToolName)
			return d
		}
	}
	d.Allowed = true
	d.Access = AccessRead
	if t.IsWrite() {
		d.Access = AccessReadWrite
	}
	d.Reason = "granted through " + quoteList(via)
	return d
}

// writeDeniedReason names the bound that denies write access. A bound
// carried by the trait that grants the tool "denies write access"; one that
// reached the tool from elsewhere "applies to the whole session".
func (f toolFilter) writeDeniedReason(i int, t ToolMeta, via []string, entry string) string {
	what := "write access"
	if entry != "write" && entry != "*" && entry != string(AccessReadWrite) {
		what = "write access to " + entry
	}
	if i < 0 {
		return "the bound denies " + what
	}
	src := f.sources[i]
	if src.Trait != "" && f.traits != nil {
		exp, err := ExpandTraitNames([]string{src.Trait}, f.traits, f.harness)
		if err == nil {
			for _, v := range via {
				if slices.Contains(exp, v) {
					return fmt.Sprintf("%s denies %s", src.label(), what)
				}
			}
			return fmt.Sprintf("%s applies to the whole session: it denies %s", src.label(), what)
		}
	}
	return fmt.Sprintf("%s denies %s", src.label(), what)
}

func (f toolFilter) firstSourceIndex(pred func(*Bound) bool) int {
	for i, s := range f.sources {
		if s.Bound != nil && pred(s.Bound) {
			return i
		}
	}
	return -1
}

func (f toolFilter) firstSource(pred func(*Bound) bool) string {
	if i := f.firstSourceIndex(pred); i >= 0 {
		return f.sources[i].label()
	}
	return "the bound"
}

// deniedToolEntry returns the deniedTools entry that names t by namespace,
// bare name or qualified id.
func deniedToolEntry(b *Bound, t ToolMeta) string {
	if b == nil {
		return ""
	}
	id := t.ID()
	for _, e := range b.DeniedTools {
		if e == t.Namespace || e == t.ToolName || e == id {
			return e
		}
	}
	return ""
}

// deniedAccessEntry returns the deniedAccess entry that denies write access
// to t: "write", "readwrite" or "*" (everywhere), its namespace, or its id.
func deniedAccessEntry(b *Bound, t ToolMeta) string {
	if b == nil {
		return ""
	}
	id := t.ID()
	for _, e := range b.DeniedAccess {
		switch e {
		case "write", "*", string(AccessReadWrite), t.Namespace, id:
			return e
		}
	}
	return ""
}

func hasFileRules(b *Bound) bool {
	return b != nil && b.Files != nil && (b.Files.AllowOnly != nil || len(b.Files.Deny) > 0)
}

// FilterToolsQualified returns the qualified ids of the tools the traits
// grant and the bound leaves, in catalog order:
//  1. resolve traits into namespace and explicit tool grants;
//  2. include a tool if its namespace or id is granted and the access permits;
//  3. exclude tools the bound denies by namespace or name;
//  4. exclude write tools under deniedAccess;
//  5. exclude tools implied by network action restrictions;
//  6. return namespace:toolName for each survivor.
//
// Use it wherever the result gates invocation.
func FilterToolsQualified(tools []ToolMeta, traitNames []string, allTraits map[string]*AgentTrait, bound *Bound, harness string) ([]string, error) {
	g, err := ResolveTraits(traitNames, allTraits, harness)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range DecideTools(tools, g, bound, nil, allTraits, harness) {
		if d.Allowed {
			out = append(out, d.ID)
		}
	}
	return out, nil
}

// FilterTools is FilterToolsQualified returning bare names (deduplicated,
// sorted). Two namespaces exporting the same name collapse, so it is for
// display only, never for authorization.
func FilterTools(tools []ToolMeta, traitNames []string, allTraits map[string]*AgentTrait, bound *Bound, harness string) ([]string, error) {
	ids, err := FilterToolsQualified(tools, traitNames, allTraits, bound, harness)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		out = append(out, id[strings.IndexByte(id, ':')+1:])
	}
	sort.Strings(out)
	return slices.Compact(out), nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = n
	}
	if len(q) == 0 {
		return "no trait"
	}
	return strings.Join(q, ", ")
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}
