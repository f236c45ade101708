package policy

import (
	"errors"
	"strings"
	"testing"
)

func testTraits() map[string]*AgentTrait {
	return map[string]*AgentTrait{
		"a":      {Name: "a", Access: AccessRead, Namespaces: []string{"github"}, Includes: []string{"b"}},
		"b":      {Name: "b", Access: AccessReadWrite, Namespaces: []string{"slack"}},
		"rw":     {Name: "rw", Access: AccessReadWrite, Namespaces: []string{"github"}},
		"cyc1":   {Name: "cyc1", Includes: []string{"cyc2"}},
		"cyc2":   {Name: "cyc2", Includes: []string{"cyc3"}},
		"cyc3":   {Name: "cyc3", Includes: []string{"cyc1"}},
		"self":   {Name: "self", Includes: []string{"self"}},
		"coding": {Name: "coding", HarnessTraits: map[string]string{"claude-code": "coding-cc", "codex": "coding-codex"}},
		"coding-cc": {Name: "coding-cc", Access: AccessReadWrite, Namespaces: []string{"git"},
			NativeTools: map[string][]string{"claude-code": {"shell"}}},
		"coding-codex":  {Name: "coding-codex", Access: AccessRead, Namespaces: []string{"git"}},
		"git-status":    {Name: "git-status", Access: AccessRead, Tools: []string{"git:status"}},
		"bare-status":   {Name: "bare-status", Access: AccessRead, Tools: []string{"status", "status"}},
		"bare-again":    {Name: "bare-again", Access: AccessReadWrite, Tools: []string{"status"}},
		"missing-inc":   {Name: "missing-inc", Includes: []string{"nope"}},
		"explicit-read": {Name: "explicit-read", Access: AccessRead, Tools: []string{"github:create_issue"}},
	}
}

func TestExpandTraitNames(t *testing.T) {
	cases := []struct {
		names   []string
		harness string
		want    string
		err     error
		errText string
	}{
		{[]string{"a"}, "", "a,b", nil, ""},
		{[]string{"b", "a"}, "", "b,a", nil, ""},
		{[]string{"a", "a"}, "", "a,b", nil, ""},
		{[]string{"cyc1"}, "", "", ErrTraitCycle, "trait include cycle: cyc1 -> cyc2 -> cyc3 -> cyc1"},
		{[]string{"self"}, "", "", ErrTraitCycle, "trait include cycle: self -> self"},
		{[]string{"coding"}, "claude-code", "coding,coding-cc", nil, ""},
		{[]string{"coding"}, "codex", "coding,coding-codex", nil, ""},
		{[]string{"coding"}, "gemini", "", ErrNoHarnessBranch, "trait has no branch for harness: trait \"coding\" has branches for claude-code, codex, not for harness gemini"},
		{[]string{"coding"}, "", "", ErrNoHarnessBranch, "trait has no branch for harness: trait \"coding\" has branches for claude-code, codex, not for harness (none)"},
		{[]string{"nope"}, "", "", ErrUnknownTrait, `unknown trait: "nope"`},
		{[]string{"missing-inc"}, "", "", ErrUnknownTrait, `unknown trait: "nope" (included by "missing-inc")`},
	}
	for _, c := range cases {
		got, err := ExpandTraitNames(c.names, testTraits(), c.harness)
		if c.err != nil {
			if !errors.Is(err, c.err) || err.Error() != c.errText {
				t.Errorf("ExpandTraitNames(%v, %q) error = %v, want %q", c.names, c.harness, err, c.errText)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("ExpandTraitNames(%v, %q) = %v, %v; want %s", c.names, c.harness, got, err, c.want)
		}
	}
}

func TestResolveTraits(t *testing.T) {
	tr := testTraits()
	g, err := ResolveTraits([]string{"a", "rw"}, tr, "")
	if err != nil {
		t.Fatal(err)
	}
	if g.ByNamespace["github"] != AccessReadWrite {
		t.Errorf("readwrite must beat read, got %q", g.ByNamespace["github"])
	}
	if g.ByNamespace["slack"] != AccessReadWrite {
		t.Errorf("included trait's grant missing: %v", g.ByNamespace)
	}
	if got := strings.Join(g.Via["github"], ","); got != "a,rw" {
		t.Errorf("Via[github] = %q", got)
	}

	// Qualified grants key ByTool; a bare status in git does not admit system's.
	g, _ = ResolveTraits([]string{"git-status"}, tr, "")
	if _, ok := ToolGrant(g, "git", "status"); !ok {
		t.Error("git:status grant missing")
	}
	if _, ok := ToolGrant(g, "system", "status"); ok {
		t.Error("a grant for git:status admitted system:status")
	}
	if len(g.Warnings) != 0 {
		t.Errorf("qualified grant warned: %v", g.Warnings)
	}

	// Bare legacy names match every namespace and warn once per name.
	g, _ = ResolveTraits([]string{"bare-status", "bare-again"}, tr, "")
	if a, ok := ToolGrant(g, "anything", "status"); !ok || a != AccessReadWrite {
		t.Errorf("legacy grant = %q, %v", a, ok)
	}
	if len(g.Warnings) != 1 || !strings.Contains(g.Warnings[0], `bare tool name "status"`) {
		t.Errorf("warnings = %q, want one deprecation warning", g.Warnings)
	}

	// An explicit tool grant takes precedence over its namespace grant.
	g, _ = ResolveTraits([]string{"rw", "explicit-read"}, tr, "")
	if a, _ := ToolGrant(g, "github", "create_issue"); a != AccessRead {
		t.Errorf("explicit grant = %q, want read over the namespace's readwrite", a)
	}
	if a, _ := ToolGrant(g, "github", "list_issues"); a != AccessReadWrite {
		t.Errorf("namespace grant = %q", a)
	}

	// Harness branches contribute their native tools.
	g, _ = ResolveTraits([]string{"coding"}, tr, "claude-code")
	if len(g.Native["shell"]) != 1 {
		t.Errorf("native grants = %v", g.Native)
	}
	if _, err := ResolveTraits([]string{"coding"}, tr, "pi"); !errors.Is(err, ErrNoHarnessBranch) {
		t.Errorf("ResolveTraits without a branch: %v", err)
	}
	if _, ok := ToolGrant(nil, "a", "b"); ok {
		t.Error("nil grants granted")
	}
}

func TestQualifyToolId(t *testing.T) {
	if got := QualifyToolId("git", "status"); got != "git:status" {
		t.Errorf("QualifyToolId = %q", got)
	}
}
