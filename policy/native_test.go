package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHarnessCatalog(t *testing.T) {
	hs := Harnesses()
	for _, id := range []string{"claude-code", "codex", "cursor", "gemini", "pi"} {
		h, ok := hs[id]
		if !ok {
			t.Fatalf("harness %s missing", id)
		}
		if _, _, err := h.Mode(""); err != nil {
			t.Errorf("%s: default mode: %v", id, err)
		}
		for tool, cs := range h.Categories {
			for _, c := range cs {
				if !strings.Contains(strings.Join(NativeCategories, ","), c) {
					t.Errorf("%s: %s has unknown category %q", id, tool, c)
				}
			}
		}
	}
	cc := hs["claude-code"]
	for _, tool := range []string{"Bash", "Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "Glob", "Grep", "WebFetch", "WebSearch", "Agent", "Task"} {
		if _, ok := cc.Categories[tool]; !ok {
			t.Errorf("claude-code lacks %s", tool)
		}
	}
	if m := cc.Modes["hosted"]; !m.Gate {
		t.Error("claude-code hosted must have a per-call gate")
	}
	for _, mode := range []string{"guest", "instrumented"} {
		if m := cc.Modes[mode]; m.Gate || !m.Ceiling {
			t.Errorf("claude-code %s: only a static ceiling, got %+v", mode, m)
		}
	}
	for _, id := range []string{"codex", "cursor", "gemini", "pi"} {
		_, m, _ := hs[id].Mode("")
		if !m.Gate {
			t.Errorf("%s default mode must gate through hooks", id)
		}
	}
	if _, _, err := cc.Mode("bogus"); err == nil || err.Error() != `harness claude-code has no mode "bogus" (modes: guest, hosted, instrumented)` {
		t.Errorf("unknown mode: %v", err)
	}
	if got := strings.Join(cc.ToolsIn(CategoryFileWrites), ","); got != "Edit,MultiEdit,NotebookEdit,Write" {
		t.Errorf("ToolsIn(file-writes) = %s", got)
	}
}

func TestNativeToolsTakenBack(t *testing.T) {
	h := Harnesses()["claude-code"]
	cases := []struct {
		name  string
		bound *Bound
		want  string
	}{
		{"nil", nil, ""},
		{"shell rule takes back the shell", &Bound{Bash: &BashRules{DenyPrograms: []string{"git:push"}}}, "Bash,BashOutput,KillShell,Monitor,PowerShell,TaskOutput,TaskStop"},
		{"file rule takes back shell and file tools", &Bound{Files: &FileRules{Deny: []string{"~/.ssh"}}},
			"Bash,BashOutput,Edit,Glob,Grep,KillShell,LS,Monitor,MultiEdit,NotebookEdit,NotebookRead,PowerShell,Read,TaskOutput,TaskStop,Write"},
		{"write access takes back shell and writes", &Bound{DeniedAccess: []string{"write"}}, "Bash,BashOutput,Edit,KillShell,Monitor,MultiEdit,NotebookEdit,PowerShell,TaskOutput,TaskStop,Write"},
		{"network rule takes back shell and network", &Bound{Network: &NetworkRules{Domains: []string{"a.com"}}}, "Bash,BashOutput,KillShell,Monitor,PowerShell,TaskOutput,TaskStop,WebFetch,WebSearch"},
		{"enforce alone takes nothing", &Bound{Network: &NetworkRules{Enforce: EnforceSandbox}}, ""},
	}
	for _, c := range cases {
		if got := strings.Join(NativeToolsTakenBack(c.bound, h), ","); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

func TestNativeToolDenials(t *testing.T) {
	b := &Bound{DeniedTools: []string{"Bash"}, NativeTools: map[string][]string{"claude-code": {"network", "Edit"}}}
	got := NativeToolDenials(b, "claude-code", []string{"Bash", "Edit", "Read", "WebFetch", "WebSearch"})
	if strings.Join(got, ",") != "Bash,Edit,WebFetch,WebSearch" {
		t.Errorf("NativeToolDenials = %v", got)
	}
	if NativeToolDenials(nil, "claude-code", []string{"Bash"}) != nil {
		t.Error("nil bound denied")
	}
}

func TestResolveNativePolicy(t *testing.T) {
	hs := Harnesses()
	all := map[string][]string{}
	for _, c := range NativeCategories {
		all[c] = []string{"t"}
	}
	grants := &ResolvedTraitGrants{Native: all}
	shellRule := &Bound{Bash: &BashRules{DenyPrograms: []string{"git:push"}}}

	// Hosted Claude Code: the gate applies the guards, so the shell stays.
	p, err := ResolveNativePolicy(NativeGrants{Grants: grants, Bound: shellRule}, hs["claude-code"], "hosted")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(p.Allowed, ","), "Bash") || len(p.Refused) != 0 {
		t.Errorf("hosted: %+v", p)
	}
	// Guest: no gate, so the ceiling takes the shell back.
	p, _ = ResolveNativePolicy(NativeGrants{Grants: grants, Bound: shellRule}, hs["claude-code"], "guest")
	if got := strings.Join(p.Denied, ","); got != "Bash,BashOutput,KillShell,Monitor,PowerShell,TaskOutput,TaskStop" {
		t.Errorf("guest denied = %s", got)
	}
	if !strings.Contains(p.Reasons["Bash"], "no per-call gate sees it") {
		t.Errorf("guest reason = %q", p.Reasons["Bash"])
	}
	if p.Uncontrolled["Read"] == "" {
		t.Error("guest mode tools must be marked uncontrolled")
	}
	// Codex: web_search is not gated and cannot be taken back; a bound that
	// needs it gone refuses the launch.
	p, _ = ResolveNativePolicy(NativeGrants{Grants: grants, Bound: &Bound{Network: &NetworkRules{Domains: []string{"a.com"}}}}, hs["codex"], "")
	if p.Refused["web_search"] == "" {
		t.Errorf("codex web_search under a network rule must be refused: %+v", p)
	}
	// Under sandboxd launch, Codex's configuration turns web_search off:
	// the same bound takes it back instead of refusing the session.
	p, _ = ResolveNativePolicy(NativeGrants{Grants: grants, Bound: &Bound{Network: &NetworkRules{Domains: []string{"a.com"}}}, Launch: true}, hs["codex"], "")
	if len(p.Refused) != 0 || !contains(p.Denied, "web_search") {
		t.Errorf("launched codex web_search under a network rule must be taken back: %+v", p)
	}
	// Not granted and not removable: uncontrolled, not refused.
	p, _ = ResolveNativePolicy(NativeGrants{Grants: &ResolvedTraitGrants{}}, hs["codex"], "")
	if p.Uncontrolled["web_search"] == "" || len(p.Refused) != 0 {
		t.Errorf("ungranted ungated tool: %+v", p)
	}
	if !contains(p.Denied, "Bash") || !contains(p.Allowed, "update_plan") {
		t.Errorf("codex with no grants: %+v", p)
	}
	// A trait granting a tool by name that the bound denies is a conflict.
	p, _ = ResolveNativePolicy(NativeGrants{Grants: &ResolvedTraitGrants{Native: map[string][]string{"Bash": {"t"}}}, Bound: &Bound{DeniedTools: []string{"Bash"}}}, hs["claude-code"], "")
	if p.Conflicts["Bash"] == "" || !contains(p.Denied, "Bash") {
		t.Errorf("conflict: %+v", p)
	}
	if _, err := ResolveNativePolicy(NativeGrants{}, hs["pi"], "guest"); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestNativeToolStatus(t *testing.T) {
	h := Harnesses()["gemini"]
	traits := []*AgentTrait{{Name: "x", NativeTools: map[string][]string{"gemini": {"shell", "read_file"}}}}
	s, err := NativeToolStatus(traits, &Bound{DeniedTools: []string{"read_file"}}, h, "")
	if err != nil {
		t.Fatal(err)
	}
	want := NativeStatus{
		Allowed: []string{"activate_skill", "enter_plan_mode", "exit_plan_mode", "invoke_agent", "list_background_processes",
			"read_background_output", "run_shell_command", "update_topic", "write_todos"},
		Denied:       []string{"glob", "google_web_search", "grep_search", "list_directory", "read_file", "read_many_files", "replace", "save_memory", "search_file_content", "web_fetch", "write_file"},
		Refused:      map[string]string{},
		Uncontrolled: map[string]string{},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Error(diff)
	}
}

func TestValidateNativeTools(t *testing.T) {
	h := Harnesses()["cursor"]
	err := ValidateNativeTools("acme", map[string]*AgentTrait{"t": {NativeTools: map[string][]string{"cursor": {"Shell", "Bash"}}}},
		map[string]*Bound{"b": {NativeTools: map[string][]string{"cursor": {"network", "apply_patch"}}}}, h)
	if err == nil || err.Error() != "acme.traits.t.nativeTools.cursor[1]: \"Bash\" is not a native tool or category of harness cursor\nacme.bounds.b.nativeTools.cursor[1]: \"apply_patch\" is not a native tool or category of harness cursor" {
		t.Errorf("ValidateNativeTools = %v", err)
	}
	if err := ValidateNativeTools("acme", map[string]*AgentTrait{"t": {NativeTools: map[string][]string{"cursor": {"Shell"}}}}, nil, h); err != nil {
		t.Error(err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// harnessCatalog is the whole shared catalog: each entry catalogHarness's.
func harnessCatalog() map[string]*NativeHarness {
	out := make(map[string]*NativeHarness, len(catalogIDs))
	for _, id := range catalogIDs {
		out[id] = catalogHarness(id)
	}
	return out
}

// TestCatalogIsNotModified resolves sessions for every harness and mode and
// then checks that the shared catalog still equals a fresh build: the
// package reads the cached catalog and must never write to it.
func TestCatalogIsNotModified(t *testing.T) {
	for _, id := range harnessIDs() {
		for mode := range harnessCatalog()[id].Modes {
			pf := &PolicyFile{Version: 1, Harness: id, Mode: mode,
				Session: &SessionSelection{Traits: []string{"web"}, Bound: &Bound{DeniedTools: []string{"Bash"}}}}
			if _, err := ResolveSession(pf); err != nil {
				t.Logf("%s/%s: %v", id, mode, err)
			}
			NativeToolDenials(&Bound{NativeTools: map[string][]string{id: {CategoryShell}}}, id, []string{"Bash", "Read"})
		}
	}
	if _, err := ResolveFile("../examples/ops.yaml"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(harnessCatalog(), buildHarnesses()) {
		t.Fatal("the shared harness catalog was modified")
	}
}

// TestCatalogIDs: catalogIDs are sorted and unique, each builds the entry
// of that id, and an id not among them builds nothing.
func TestCatalogIDs(t *testing.T) {
	if !slices.IsSorted(catalogIDs[:]) || len(slices.Compact(slices.Clone(catalogIDs[:]))) != len(catalogIDs) {
		t.Fatalf("catalogIDs %q are not sorted and unique", catalogIDs)
	}
	for _, id := range catalogIDs {
		if h := buildHarness(id); h == nil || h.ID != id {
			t.Errorf("buildHarness(%q) = %+v", id, h)
		}
		if catalogHarness(id) != catalogHarness(id) {
			t.Errorf("catalogHarness(%q) is not built once", id)
		}
	}
	if buildHarness("vim") != nil || catalogHarness("vim") != nil || catalogHarness("") != nil {
		t.Error("an unknown harness has a catalog entry")
	}
}

// TestToolsCarryTheirReach: every tool that reaches files, programs or
// hosts names the input keys it does that under, so the gate has
// something to check (a tool with none would be denied on every call).
func TestToolsCarryTheirReach(t *testing.T) {
	for id, h := range Harnesses() {
		for name, tool := range h.Tools {
			var ok bool
			switch tool.Reach {
			case ReachShell, ReachShellOpaque, ReachPatch:
				ok = tool.CommandKey != ""
			case ReachFileRead, ReachFileWrite:
				ok = len(tool.PathKeys) > 0 || len(tool.FixedPaths) > 0
			case ReachSearch:
				ok = len(tool.DirKeys) > 0
			case ReachFetch:
				ok = len(tool.URLKeys) > 0 || len(tool.TextURLKeys) > 0
			default:
				ok = len(tool.PathKeys)+len(tool.DirKeys)+len(tool.URLKeys) == 0 && tool.CommandKey == ""
			}
			if !ok {
				t.Errorf("%s %s: reach %d without the input keys it needs (or keys a tool of that reach never reads)", id, name, tool.Reach)
			}
		}
	}
}
