package policy

import "fmt"

// Reason phrases of the access decisions.
const (
	ReasonWriteDenied = "write access denied"
	ReasonToolDenied  = "tool denied"
)

// Rule codes of the access decisions; RuleAt adds the entry.
const (
	RuleDeniedAccess = "deniedAccess"
	RuleDeniedTools  = "deniedTools"
)

// DeniedWriteEntry returns the deniedAccess entry of b that denies a
// write made through an agent's own tools: "*", "write" and "readwrite"
// deny every write (a shell command's too); "native" and the harness's id
// deny the writes of its native file tools (nativeTool true). It is the one
// reading of deniedAccess for writes that are not MCP tool calls (those
// go through the tool filter, FilterToolsQualified).
func DeniedWriteEntry(b *Bound, harness string, nativeTool bool) string {
	if b == nil {
		return ""
	}
	for _, e := range b.DeniedAccess {
		switch {
		case e == "*" || e == "write" || e == string(AccessReadWrite):
			return e
		case nativeTool && (e == "native" || (harness != "" && e == harness)):
			return e
		}
	}
	return ""
}

// DecideWrite decides a write by subject (a tool, "the shell command")
// under deniedAccess (DeniedWriteEntry).
func DecideWrite(b *Bound, subject, harness string, nativeTool bool) Decision {
	if e := DeniedWriteEntry(b, harness, nativeTool); e != "" {
		return Denied(fmt.Sprintf("%s: %s writes files and deniedAccess %q denies write access", ReasonWriteDenied, subject, e), RuleAt(RuleDeniedAccess, e))
	}
	return AllowedBy(subject+" may write: no deniedAccess entry denies it", "")
}

// DecideToolDenied decides an MCP tool (namespace, name) under deniedTools:
// an entry naming its namespace, bare name or qualified id denies it.
func DecideToolDenied(b *Bound, namespace, name string) Decision {
	t := ToolMeta{Namespace: namespace, ToolName: name}
	if e := deniedToolEntry(b, t); e != "" {
		return Denied(fmt.Sprintf("%s: %s is denied by deniedTools %q", ReasonToolDenied, t.ID(), e), RuleAt(RuleDeniedTools, e))
	}
	return AllowedBy(t.ID()+" is not in deniedTools", "")
}
