package policy

import "testing"

// TestDeniedWriteEntry: "*", "write" and "readwrite" deny every write
// (readwrite used to deny only MCP write tools, not a native tool's or a
// shell command's writes: settled to deny them all); "native" and the
// harness's id deny only native file tools' writes.
func TestDeniedWriteEntry(t *testing.T) {
	cases := []struct {
		access  []string
		harness string
		native  bool
		want    string
	}{
		{nil, "codex", true, ""},
		{[]string{"*"}, "", false, "*"},
		{[]string{"write"}, "", false, "write"},
		{[]string{"readwrite"}, "", false, "readwrite"},
		{[]string{"readwrite"}, "codex", true, "readwrite"},
		{[]string{"native"}, "codex", true, "native"},
		{[]string{"native"}, "", false, ""},
		{[]string{"codex"}, "codex", true, "codex"},
		{[]string{"codex"}, "gemini", true, ""},
		{[]string{"github"}, "codex", true, ""},
	}
	for _, c := range cases {
		b := &Bound{DeniedAccess: c.access}
		if got := DeniedWriteEntry(b, c.harness, c.native); got != c.want {
			t.Errorf("%v harness %q native %v: %q, want %q", c.access, c.harness, c.native, got, c.want)
		}
		d := DecideWrite(b, "Write", c.harness, c.native)
		if d.Allowed() != (c.want == "") || (c.want != "" && d.Rule != "deniedAccess:"+c.want) {
			t.Errorf("DecideWrite %v: %+v", c.access, d)
		}
	}
	if d := DecideToolDenied(&Bound{DeniedTools: []string{"jira"}}, "jira", "create_issue"); d.Allowed() || d.Rule != "deniedTools:jira" {
		t.Errorf("deniedTools namespace: %+v", d)
	}
	if d := DecideToolDenied(&Bound{DeniedTools: []string{"github:create_issue"}}, "github", "list_issues"); !d.Allowed() {
		t.Errorf("another tool of the namespace: %+v", d)
	}
}
