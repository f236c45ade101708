package policy

import (
	"strings"
	"testing"
)

var catalog = []ToolMeta{
	{Namespace: "github", ToolName: "list_issues", Access: "read"},
	{Namespace: "github", ToolName: "create_issue", Access: "write"},
	{Namespace: "git", ToolName: "status", Access: "read"},
	{Namespace: "git", ToolName: "push", Access: "write"},
	{Namespace: "git", ToolName: "fetch", Access: "read"},
	{Namespace: "system", ToolName: "status", Access: "read"},
	{Namespace: "bash", ToolName: "bash", Access: "write"},
}

func TestFilterToolsQualified(t *testing.T) {
	traits := map[string]*AgentTrait{
		"gh-read":    {Name: "gh-read", Access: AccessRead, Namespaces: []string{"github"}},
		"gh":         {Name: "gh", Access: AccessReadWrite, Namespaces: []string{"github"}},
		"git":        {Name: "git", Access: AccessReadWrite, Namespaces: []string{"git"}},
		"git-status": {Name: "git-status", Access: AccessRead, Tools: []string{"git:status"}},
		"bash":       {Name: "bash", Access: AccessReadWrite, Namespaces: []string{"bash"}},
	}
	cases := []struct {
		name   string
		traits []string
		bound  *Bound
		want   string
	}{
		{"namespace read grant keeps read tools", []string{"gh-read"}, nil, "github:list_issues"},
		{"readwrite grant keeps write tools", []string{"gh"}, nil, "github:list_issues,github:create_issue"},
		{"qualified grant admits one namespace only", []string{"git-status"}, nil, "git:status"},
		{"deniedTools by namespace", []string{"gh", "git"}, &Bound{DeniedTools: []string{"github"}}, "git:status,git:push,git:fetch"},
		{"deniedTools by bare name", []string{"git"}, &Bound{DeniedTools: []string{"push"}}, "git:status,git:fetch"},
		{"deniedTools by qualified id", []string{"gh"}, &Bound{DeniedTools: []string{"github:create_issue"}}, "github:list_issues"},
		{"deniedAccess write", []string{"gh", "git"}, &Bound{DeniedAccess: []string{"write"}}, "github:list_issues,git:status,git:fetch"},
		{"deniedAccess one namespace", []string{"gh", "git"}, &Bound{DeniedAccess: []string{"git"}}, "github:list_issues,github:create_issue,git:status,git:fetch"},
		{"network write withholds push", []string{"git"}, &Bound{Network: &NetworkRules{Actions: []string{"write"}}}, "git:status,git:fetch"},
		{"network read withholds fetch", []string{"git"}, &Bound{Network: &NetworkRules{Actions: []string{"read"}}}, "git:status,git:push"},
		{"file rules withhold bash", []string{"bash", "git-status"}, &Bound{Files: &FileRules{Deny: []string{"~/.ssh"}}}, "git:status"},
		{"bash without file rules", []string{"bash"}, nil, "bash:bash"},
	}
	for _, c := range cases {
		got, err := FilterToolsQualified(catalog, c.traits, traits, c.bound, "")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if strings.Join(got, ",") != c.want {
			t.Errorf("%s: FilterToolsQualified = %v, want %s", c.name, got, c.want)
		}
	}
	names, _ := FilterTools(catalog, []string{"git", "gh-read"}, traits, nil, "")
	if strings.Join(names, ",") != "fetch,list_issues,push,status" {
		t.Errorf("FilterTools = %v", names)
	}
	if _, err := FilterToolsQualified(catalog, []string{"nope"}, traits, nil, ""); err == nil {
		t.Error("unknown trait accepted")
	}
}

func TestDecideToolsReasons(t *testing.T) {
	traits := map[string]*AgentTrait{
		"gh-read": {Name: "gh-read", Access: AccessRead, Namespaces: []string{"github"}},
		"git":     {Name: "git", Access: AccessReadWrite, Namespaces: []string{"git"}},
	}
	g, _ := ResolveTraits([]string{"gh-read", "git"}, traits, "")
	deny := &Bound{Name: "no-push", Network: &NetworkRules{Actions: []string{"git:push"}}}
	got := map[string]string{}
	for _, d := range DecideTools(catalog, g, deny, []BoundSource{{Name: "no-push", Origin: "session", Bound: deny}}, traits, "") {
		got[d.ID] = d.Reason
	}
	want := map[string]string{
		"github:create_issue": "write tool needs a readwrite grant; gh-read grants read",
		"git:push":            "no-push denies network action git:push, which push performs",
		"system:status":       "no selected trait grants namespace system or tool system:status",
		"github:list_issues":  "granted through gh-read",
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: reason %q, want %q", id, got[id], w)
		}
	}
}
