package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/jcs"
)

func scopeFixture() ExecutionOptions {
	bounds := BuiltinBounds()
	return ExecutionOptions{
		BoundByName: func(n string) (*Bound, bool) { b, ok := bounds[n]; return b, ok },
		Harness:     "claude-code",
		Identity:    "ops",
		Tools: []ToolMeta{
			{Namespace: "github", ToolName: "list_issues", Access: "read", ContractHash: "h1"},
			{Namespace: "github", ToolName: "create_issue", Access: "write"},
			{Namespace: "git", ToolName: "push", Access: "write"},
		},
		TraitNames: []string{"gh"},
		Traits: map[string]*AgentTrait{
			"gh":      {Name: "gh", Access: AccessReadWrite, Namespaces: []string{"github", "git"}},
			"gh:read": {Name: "gh:read", Access: AccessRead, Includes: []string{"gh"}, BoundNames: []string{"readonly"}},
			"ghost":   {Name: "ghost", Access: AccessRead, BoundNames: []string{"nope"}},
		},
	}
}

func TestResolveEffectiveBound(t *testing.T) {
	o := scopeFixture()
	b, err := ResolveEffectiveBound(EffectiveBoundOptions{BoundByName: o.BoundByName, TraitNames: []string{"gh:read"}, Traits: o.Traits,
		Bounds: []*Bound{{DeniedTools: []string{"x"}}, nil}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := EncodeBound(b); string(got) != `{"deniedAccess":["write"],"deniedTools":["Bash","Edit","Write","x"],"description":"denies the Bash, Write and Edit tools, write access, and network writes","name":"readonly","network":{"actions":["write"]}}` {
		t.Errorf("effective bound = %s", got)
	}
	if _, err := ResolveEffectiveBound(EffectiveBoundOptions{BoundByName: o.BoundByName, TraitNames: []string{"ghost"}, Traits: o.Traits}); !errors.Is(err, ErrUnknownBound) {
		t.Errorf("missing named bound: %v", err)
	}
	b, err = ResolveEffectiveBound(EffectiveBoundOptions{TraitNames: []string{"gh"}, Traits: o.Traits})
	if err != nil || b != nil {
		t.Errorf("no bounds: %v, %v", b, err)
	}
	if _, err := ResolveEffectiveBound(EffectiveBoundOptions{Traits: o.Traits, Bounds: []*Bound{{Network: &NetworkRules{AllowDomains: []string{"a.com"}}}}}); err == nil || !strings.Contains(err.Error(), AllowDomainsNeedsSandbox) {
		t.Errorf("allowDomains without sandbox: %v", err)
	}
}

func TestApproveAndIntersectExecutionScope(t *testing.T) {
	o := scopeFixture()
	s, err := ApproveExecutionScope(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tools) != 3 || s.Tools["github:create_issue"] != "write" || s.Contracts["github:list_issues"] != "h1" {
		t.Fatalf("scope = %+v", s)
	}
	if s.Fingerprint != s.computeFingerprint() || len(s.Fingerprint) != 64 {
		t.Fatal("fingerprint mismatch")
	}
	// Same content, same fingerprint; any change changes it.
	s2, _ := ApproveExecutionScope(o)
	if s2.Fingerprint != s.Fingerprint {
		t.Error("fingerprint not deterministic")
	}
	o2 := scopeFixture()
	o2.TraitNames = []string{"gh:read"}
	s3, _ := ApproveExecutionScope(o2)
	if s3.Fingerprint == s.Fingerprint || len(s3.Tools) != 1 {
		t.Errorf("readonly scope: %+v", s3)
	}

	ctx, err := ResolveExecutionContext(o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ctx.AllowedToolIds, ",") != "github:list_issues,github:create_issue,git:push" {
		t.Errorf("context tools = %v", ctx.AllowedToolIds)
	}
	// Grants only shrink: a restriction and a changed contract narrow it.
	cat := []ToolMeta{
		{Namespace: "github", ToolName: "list_issues", Access: "read", ContractHash: "changed"},
		{Namespace: "github", ToolName: "create_issue", Access: "write"},
		{Namespace: "git", ToolName: "push", Access: "write"},
		{Namespace: "git", ToolName: "new", Access: "read"},
	}
	ctx.AllowedToolIds = append(ctx.AllowedToolIds, "git:new")
	got := IntersectExecutionScope(s, ctx, cat, []*Bound{{Network: &NetworkRules{Actions: []string{"write"}}}})
	if strings.Join(got.AllowedToolIds, ",") != "github:create_issue" {
		t.Errorf("intersection = %v", got.AllowedToolIds)
	}
	if got.Bound == nil || got.Bound.Network == nil {
		t.Error("restriction not merged into the bound")
	}
	if IntersectExecutionScope(nil, ctx, cat, nil).AllowedToolIds == nil {
		t.Error("nil approval must give an empty, non-nil set")
	}
}

func TestAssertions(t *testing.T) {
	ctx := &ExecutionContext{AllowedToolIds: []string{"git:status"}, Bound: &Bound{Nodes: &NodeRules{Allow: []string{"build-*"}, Deny: []string{"build-prod"}}}}
	cases := []struct {
		ns, tool, node string
		want           string
	}{
		{"git", "status", "build-1", ""},
		{"system", "status", "build-1", "not allowed: tool system:status is not in this session's allowed tools"},
		{"git", "status", "deploy", `not allowed: node "deploy" is not in nodes.allow`},
		{"git", "status", "build-prod", `not allowed: node "build-prod" is denied by nodes.deny "build-prod"`},
	}
	for _, c := range cases {
		err := AssertToolAllowed(ctx, c.ns, c.tool, c.node)
		if (err == nil) != (c.want == "") || (err != nil && err.Error() != c.want) {
			t.Errorf("AssertToolAllowed(%s:%s, %s) = %v, want %q", c.ns, c.tool, c.node, err, c.want)
		}
		if err != nil && !errors.Is(err, ErrNotAllowed) {
			t.Error("error does not wrap ErrNotAllowed")
		}
	}
	if AssertToolAllowed(nil, "a", "b", "") == nil {
		t.Error("nil context allowed a tool")
	}
	if AssertNodeAllowed("x", nil) != nil {
		t.Error("nil bound denied a node")
	}
}

func TestAssertScopeDelegation(t *testing.T) {
	cat := []ToolMeta{{Namespace: "git", ToolName: "status", Access: "read"}, {Namespace: "git", ToolName: "push", Access: "write"}}
	del := &ExecutionContext{AllowedToolIds: []string{"git:status", "git:push"}, Traits: []string{"git"}, Harness: "codex",
		Bound: &Bound{Network: &NetworkRules{Actions: []string{"dns"}}}}
	ok := &ExecutionScope{Tools: map[string]string{"git:status": "read"}, Traits: []string{"git"}, Bound: &Bound{Network: &NetworkRules{Actions: []string{"dns", "write"}}}}
	if err := AssertScopeDelegation(ok, del, cat); err != nil {
		t.Errorf("narrower scope refused: %v", err)
	}
	cases := []struct {
		name string
		mod  func(s *ExecutionScope)
		want string
	}{
		{"tool the delegator lacks", func(s *ExecutionScope) { s.Tools["git:rebase"] = "write" }, "which the delegator is not allowed"},
		{"wrong access", func(s *ExecutionScope) { s.Tools["git:status"] = "write" }, "the catalog says read"},
		{"extra trait", func(s *ExecutionScope) { s.Traits = append(s.Traits, "admin") }, "trait admin"},
		{"looser bound", func(s *ExecutionScope) { s.Bound = nil }, "drops restrictions"},
		{"other harness", func(s *ExecutionScope) { s.Harness = "cursor" }, "harness cursor"},
	}
	for _, c := range cases {
		s := &ExecutionScope{Tools: map[string]string{"git:status": "read"}, Traits: []string{"git"}, Bound: ok.Bound.Clone()}
		c.mod(s)
		err := AssertScopeDelegation(s, del, cat)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestDecodeExecutionScope(t *testing.T) {
	o := scopeFixture()
	s, _ := ApproveExecutionScope(o)
	data, _ := jcs.Marshal(s)
	got, err := DecodeExecutionScope(data, FormatJSON)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, data)
	}
	if got.Fingerprint != s.Fingerprint {
		t.Error("fingerprint changed")
	}
	bad := []struct{ doc, want string }{
		{strings.Replace(string(data), `"write"`, `"admin"`, 1), `is not a tool access`},
		{strings.Replace(string(data), `"traits"`, `"trait"`, 1), "trait: unknown field"},
		{strings.Replace(string(data), `"identity":"ops"`, `"identity":"root"`, 1), "fingerprint: does not match the scope's content"},
		{`{"fingerprint":"x"}`, "bound: missing required field"},
	}
	for _, b := range bad {
		if _, err := DecodeExecutionScope([]byte(b.doc), FormatJSON); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("DecodeExecutionScope: %v, want %q", err, b.want)
		}
	}
}

func TestScopeFingerprintVector(t *testing.T) {
	// A known vector: sha256 of {"a":1}.
	if got := ScopeFingerprint(map[string]int{"a": 1}); got != "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862" {
		t.Errorf("ScopeFingerprint = %s", got)
	}

}
