package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"

	"github.com/barry-rocks/sandbox/internal/jcs"
	"go.yaml.in/yaml/v3"
)

// ExecutionScope is an approved grant: the traits, tools and bound a run was
// approved with, and the fingerprint of all of it. It never holds
// credentials or transport tokens.
type ExecutionScope struct {
	Bound       *Bound            `json:"bound"`
	Contracts   map[string]string `json:"contracts,omitempty"`
	Fingerprint string            `json:"fingerprint"`
	Harness     string            `json:"harness,omitempty"`
	Identity    string            `json:"identity,omitempty"`
	// Tools maps a qualified tool id to "read" or "write".
	Tools  map[string]string `json:"tools"`
	Traits []string          `json:"traits"`
}

// ExecutionContext is what a running session may do.
type ExecutionContext struct {
	AllowedToolIds []string `json:"allowedToolIds"`
	Bound          *Bound   `json:"bound"`
	Harness        string   `json:"harness,omitempty"`
	Identity       string   `json:"identity,omitempty"`
	Traits         []string `json:"traits"`
}

// DecodeExecutionScope decodes a scope strictly (unknown fields, wrong
// types, tool access other than read/write and a fingerprint that does not
// match the content are errors).
//
// It is the Go form of the bounds SDK's executionScopeSchema
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func DecodeExecutionScope(data []byte, format Format) (*ExecutionScope, error) {
	root, err := parseDocument(data, format)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	s := &ExecutionScope{}
	seen := map[string]bool{}
	d.fields(root, "", map[string]func(*yaml.Node, string){
		"bound": func(v *yaml.Node, p string) {
			seen["bound"] = true
			if !isNull(v) {
				s.Bound = d.bound(v, p)
			}
		},
		"contracts":   func(v *yaml.Node, p string) { s.Contracts = d.strMap(v, p) },
		"fingerprint": func(v *yaml.Node, p string) { seen["fingerprint"] = true; s.Fingerprint = d.str(v, p) },
		"harness":     func(v *yaml.Node, p string) { s.Harness = d.str(v, p) },
		"identity":    func(v *yaml.Node, p string) { s.Identity = d.str(v, p) },
		"tools": func(v *yaml.Node, p string) {
			seen["tools"] = true
			s.Tools = d.strMap(v, p)
			for id, a := range s.Tools {
				if a != "read" && a != "write" {
					d.errf(v, join(p, id), "%q is not a tool access (read or write)", a)
				}
			}
		},
		"traits": func(v *yaml.Node, p string) { seen["traits"] = true; s.Traits = d.strList(v, p) },
	})
	for _, f := range []string{"bound", "fingerprint", "tools", "traits"} {
		if !seen[f] && resolveAlias(root).Kind == yaml.MappingNode {
			d.errf(root, f, "missing required field")
		}
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	if want := s.computeFingerprint(); s.Fingerprint != want {
		return nil, FieldErrors{{Path: "fingerprint", Msg: "does not match the scope's content"}}
	}
	return s, nil
}

// computeFingerprint is the fingerprint of everything in the scope but the
// fingerprint itself.
func (s *ExecutionScope) computeFingerprint() string {
	c := *s
	c.Fingerprint = ""
	m := map[string]any{
		"bound":  c.Bound,
		"tools":  c.Tools,
		"traits": c.Traits,
	}
	if c.Tools == nil {
		m["tools"] = map[string]string{}
	}
	if c.Traits == nil {
		m["traits"] = []string{}
	}
	if len(c.Contracts) > 0 {
		m["contracts"] = c.Contracts
	}
	if c.Harness != "" {
		m["harness"] = c.Harness
	}
	if c.Identity != "" {
		m["identity"] = c.Identity
	}
	return ScopeFingerprint(m)
}

// ScopeFingerprint is the canonical evidence of a policy value: the
// lower-case hex SHA-256 of its RFC 8785 (JCS) canonical JSON. To reproduce
// it elsewhere: encode the value as JSON with the SDK's field names (empty
// fields omitted as EncodeBound does), canonicalize it with any RFC 8785
// implementation (object members sorted by UTF-16 code units, no
// whitespace, ECMAScript number and string forms), and hash the UTF-8 bytes.
// For an ExecutionScope the value is the scope without its fingerprint field.
// Values given to it must never contain credentials.
func ScopeFingerprint(value any) string {
	b, err := jcs.Marshal(value)
	if err != nil {
		// An unencodable value has no evidence; hash the error so the
		// fingerprint can never equal a real policy's.
		b = []byte("unencodable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// BoundLookup returns a named bound; ok is false when no bound has the name.
type BoundLookup func(name string) (b *Bound, ok bool)

// EffectiveBoundOptions are the inputs of ResolveEffectiveBound.
type EffectiveBoundOptions struct {
	BoundByName BoundLookup
	// Bounds are further bounds, merged after the traits' (nil entries are
	// skipped).
	Bounds     []*Bound
	Harness    string
	TraitNames []string
	Traits     map[string]*AgentTrait
}

// ResolveEffectiveBound builds the one restriction chain that native
// enforcement and tool guards read: every bound the expanded traits carry
// (inline, then named), then opts.Bounds, merged. A named bound that does
// not exist is an error; so is an allowlist without the sandbox. The result
// is nil when nothing restricts.
//
// It is the Go form of the bounds SDK's resolveEffectiveBound
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func ResolveEffectiveBound(opts EffectiveBoundOptions) (*Bound, error) {
	srcs, err := traitBoundSources(opts.TraitNames, opts.Traits, opts.Harness, opts.BoundByName)
	if err != nil {
		return nil, err
	}
	var out *Bound
	for _, s := range srcs {
		out = MergeBounds(out, s.Bound)
	}
	for _, b := range opts.Bounds {
		if b != nil {
			out = MergeBounds(out, b)
		}
	}
	if err := validateBoundSemantics(out); err != nil {
		return nil, err
	}
	return out, nil
}

// traitBoundSources lists the bounds the expanded traits carry, in
// expansion order: each trait's inline bound, then its named bounds.
func traitBoundSources(names []string, traits map[string]*AgentTrait, harness string, lookup BoundLookup) ([]BoundSource, error) {
	expanded, err := ExpandTraitNames(names, traits, harness)
	if err != nil {
		return nil, err
	}
	var out []BoundSource
	for _, tn := range expanded {
		t := traits[tn]
		if t.Bound != nil {
			out = append(out, BoundSource{Name: t.Bound.Name, Origin: "trait " + tn, Trait: tn, Bound: t.Bound})
		}
		for _, bn := range t.BoundNames {
			var b *Bound
			ok := false
			if lookup != nil {
				b, ok = lookup(bn)
			}
			if !ok {
				return nil, fmt.Errorf("%w: %q (carried by trait %q)", ErrUnknownBound, bn, tn)
			}
			out = append(out, BoundSource{Name: bn, Origin: "trait " + tn, Trait: tn, Bound: b})
		}
	}
	return out, nil
}

// ExecutionOptions are the inputs of ResolveExecutionContext and
// ApproveExecutionScope: explicit selections only, no default grants.
type ExecutionOptions struct {
	BoundByName BoundLookup
	Bounds      []*Bound
	Harness     string
	Identity    string
	Tools       []ToolMeta
	TraitNames  []string
	Traits      map[string]*AgentTrait
}

// ResolveExecutionContext resolves explicit selections into a context. No
// default grants are added: the caller supplies every selected trait.
//
// It is the Go form of the bounds SDK's resolveExecutionContext
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func ResolveExecutionContext(opts ExecutionOptions) (*ExecutionContext, error) {
	bound, err := ResolveEffectiveBound(EffectiveBoundOptions{BoundByName: opts.BoundByName, Bounds: opts.Bounds, Harness: opts.Harness, TraitNames: opts.TraitNames, Traits: opts.Traits})
	if err != nil {
		return nil, err
	}
	expanded, err := ExpandTraitNames(opts.TraitNames, opts.Traits, opts.Harness)
	if err != nil {
		return nil, err
	}
	ids, err := FilterToolsQualified(opts.Tools, opts.TraitNames, opts.Traits, bound, opts.Harness)
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []string{}
	}
	return &ExecutionContext{AllowedToolIds: ids, Bound: bound, Harness: opts.Harness, Identity: opts.Identity, Traits: expanded}, nil
}

// ApproveExecutionScope resolves explicit selections into an approved scope
// with its fingerprint. No identity or default trait union happens here.
//
// It is the Go form of the bounds SDK's approveExecutionScope
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func ApproveExecutionScope(opts ExecutionOptions) (*ExecutionScope, error) {
	ctx, err := ResolveExecutionContext(opts)
	if err != nil {
		return nil, err
	}
	s := &ExecutionScope{Bound: ctx.Bound, Harness: opts.Harness, Identity: opts.Identity, Tools: map[string]string{}, Traits: ctx.Traits}
	for _, t := range opts.Tools {
		if !slices.Contains(ctx.AllowedToolIds, t.ID()) {
			continue
		}
		acc := "read"
		if t.IsWrite() {
			acc = "write"
		}
		s.Tools[t.ID()] = acc
		if t.ContractHash != "" {
			if s.Contracts == nil {
				s.Contracts = map[string]string{}
			}
			s.Contracts[t.ID()] = t.ContractHash
		}
	}
	s.Fingerprint = s.computeFingerprint()
	return s, nil
}

// IntersectExecutionScope narrows a current context to what was approved:
// each bound must allow the operation, so grants only shrink after
// approval. A tool survives only when the approval lists it, the current
// context allows it, its catalog entry still has the approved access and
// contract, and no restriction withholds it. Traits intersect; bounds merge.
//
// It is the Go form of the bounds SDK's intersectExecutionScope
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func IntersectExecutionScope(approved *ExecutionScope, current *ExecutionContext, catalog []ToolMeta, restrictions []*Bound) *ExecutionContext {
	out := &ExecutionContext{AllowedToolIds: []string{}, Traits: []string{}}
	if approved == nil || current == nil {
		return out
	}
	out.Harness, out.Identity = current.Harness, current.Identity
	out.Bound = MergeBounds(approved.Bound, current.Bound)
	for _, r := range restrictions {
		if r != nil {
			out.Bound = MergeBounds(out.Bound, r)
		}
	}
	for _, t := range approved.Traits {
		if slices.Contains(current.Traits, t) {
			out.Traits = append(out.Traits, t)
		}
	}
	all := &ResolvedTraitGrants{ByTool: map[string]Access{}, ByNamespace: map[string]Access{}, ByToolLegacy: map[string]Access{}, Via: map[string][]string{}}
	for _, t := range catalog {
		all.ByTool[t.ID()] = AccessReadWrite
	}
	for _, t := range catalog {
		id := t.ID()
		acc, ok := approved.Tools[id]
		if !ok || !slices.Contains(current.AllowedToolIds, id) {
			continue
		}
		if (acc == "read") != !t.IsWrite() {
			continue // the tool's access changed since approval
		}
		if want, ok := approved.Contracts[id]; ok && want != t.ContractHash {
			continue // the tool's contract changed since approval
		}
		d := DecideTools([]ToolMeta{t}, all, out.Bound, nil, nil, "")[0]
		if d.Allowed {
			out.AllowedToolIds = append(out.AllowedToolIds, id)
		}
	}
	sort.Strings(out.AllowedToolIds)
	return out
}

// AssertNodeAllowed refuses a node the bound's node rules deny: one in
// nodes.deny, or one outside a present nodes.allow. Entries may be globs.
//
// It is the Go form of the bounds SDK's assertNodeAllowed
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func AssertNodeAllowed(nodeID string, bound *Bound) error {
	if bound == nil || bound.Nodes == nil {
		return nil
	}
	for _, p := range bound.Nodes.Deny {
		if ok, _ := path.Match(p, nodeID); ok || p == nodeID {
			return fmt.Errorf("%w: node %q is denied by nodes.deny %q", ErrNotAllowed, nodeID, p)
		}
	}
	if bound.Nodes.Allow != nil {
		for _, p := range bound.Nodes.Allow {
			if ok, _ := path.Match(p, nodeID); ok || p == nodeID {
				return nil
			}
		}
		return fmt.Errorf("%w: node %q is not in nodes.allow", ErrNotAllowed, nodeID)
	}
	return nil
}

// AssertToolAllowed refuses a call unless the node passes the bound's node
// rules and the tool's qualified id is in the session's allowed set.
//
// It is the Go form of the bounds SDK's assertToolAllowed
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func AssertToolAllowed(ctx *ExecutionContext, namespace, toolName, nodeID string) error {
	if ctx == nil {
		return fmt.Errorf("%w: no execution context", ErrNotAllowed)
	}
	if err := AssertNodeAllowed(nodeID, ctx.Bound); err != nil {
		return err
	}
	id := QualifyToolId(namespace, toolName)
	if !slices.Contains(ctx.AllowedToolIds, id) {
		return fmt.Errorf("%w: tool %s is not in this session's allowed tools", ErrNotAllowed, id)
	}
	return nil
}

// AssertScopeDelegation refuses a scope that would give more than its
// delegator has: a tool the delegator is not allowed, a tool missing from
// the catalog or with another access, a trait the delegator lacks, another
// harness, or a bound that leaves out any of the delegator's restrictions.
//
// It is the Go form of the bounds SDK's assertScopeDelegation
// (@barry-rocks/sdk/bounds), exported for callers that hold execution
// scopes; sandboxd and hookgate do not call it.
func AssertScopeDelegation(scope *ExecutionScope, delegator *ExecutionContext, catalog []ToolMeta) error {
	if scope == nil || delegator == nil {
		return fmt.Errorf("%w: delegation without a scope or delegator", ErrNotAllowed)
	}
	if scope.Harness != "" && delegator.Harness != "" && scope.Harness != delegator.Harness {
		return fmt.Errorf("%w: scope harness %s differs from the delegator's %s", ErrNotAllowed, scope.Harness, delegator.Harness)
	}
	for _, id := range sortedKeys(scope.Tools) {
		if !slices.Contains(delegator.AllowedToolIds, id) {
			return fmt.Errorf("%w: scope grants tool %s, which the delegator is not allowed", ErrNotAllowed, id)
		}
		i := slices.IndexFunc(catalog, func(t ToolMeta) bool { return t.ID() == id })
		if i < 0 {
			return fmt.Errorf("%w: scope grants tool %s, which is not in the catalog", ErrNotAllowed, id)
		}
		if want := map[bool]string{true: "write", false: "read"}[catalog[i].IsWrite()]; scope.Tools[id] != want {
			return fmt.Errorf("%w: scope grants tool %s as %s, the catalog says %s", ErrNotAllowed, id, scope.Tools[id], want)
		}
	}
	for _, t := range scope.Traits {
		if !slices.Contains(delegator.Traits, t) {
			return fmt.Errorf("%w: scope selects trait %s, which the delegator does not have", ErrNotAllowed, t)
		}
	}
	merged := restrictionJSON(MergeBounds(scope.Bound, delegator.Bound))
	if own := restrictionJSON(MergeBounds(scope.Bound, nil)); merged != own {
		return fmt.Errorf("%w: scope bound drops restrictions of the delegator's bound (delegator needs %s)", ErrNotAllowed, restrictionJSON(delegator.Bound))
	}
	return nil
}

// restrictionJSON is a bound's canonical JSON without name and description.
func restrictionJSON(b *Bound) string {
	if b == nil {
		return "null"
	}
	c := b.Clone()
	c.Name, c.Description = "", ""
	out, _ := jcs.Marshal(c)
	return string(out)
}
