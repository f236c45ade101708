package hooks

import (
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// wantAskDenied is the reason of an ask that the event cannot ask for.
func wantAskDenied(h Harness, ev string) string {
	return "hookgate: r; needs a person's approval, which " + string(h) + " cannot ask for in " + ev +
		": denied (grant it in the session policy to allow it)"
}

// askAnswers is the specification of a policy Ask per harness and event,
// from the hook-protocol notes (PROTOCOLS.md): ask where the event supports
// it and enforces it (Claude Code PreToolUse, Cursor beforeShellExecution
// and beforeMCPExecution); no opinion on a permission request, which the
// harness answers by asking; a deny that says approval was needed
// everywhere else (Codex treats ask as a failed hook and runs the tool,
// Cursor does not enforce ask in preToolUse and has none in beforeReadFile
// and subagentStart, Gemini's BeforeTool and Pi have none).
var askAnswers = []struct {
	h      Harness
	event  string
	kind   Kind
	stdout string
	code   int
}{
	{ClaudeCode, "PreToolUse", KindTool,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"hookgate: r"}}` + "\n", 0},
	{ClaudeCode, "PermissionRequest", KindPermission, "", 0},
	{Cursor, "beforeShellExecution", KindTool, `{"permission":"ask","user_message":"hookgate: r","agent_message":"hookgate: r"}` + "\n", 0},
	{Cursor, "beforeMCPExecution", KindTool, `{"permission":"ask","user_message":"hookgate: r","agent_message":"hookgate: r"}` + "\n", 0},
	{Cursor, "preToolUse", KindTool, `{"permission":"deny","user_message":"` + wantAskDenied(Cursor, "preToolUse") +
		`","agent_message":"` + wantAskDenied(Cursor, "preToolUse") + `"}` + "\n", 0},
	{Cursor, "beforeReadFile", KindTool, `{"permission":"deny","user_message":"` + wantAskDenied(Cursor, "beforeReadFile") + `"}` + "\n", 0},
	{Cursor, "subagentStart", KindTool, `{"permission":"deny","user_message":"` + wantAskDenied(Cursor, "subagentStart") + `"}` + "\n", 0},
	{Codex, "PreToolUse", KindTool,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"` + wantAskDenied(Codex, "PreToolUse") + `"}}` + "\n", 0},
	{Codex, "PermissionRequest", KindPermission, "", 0},
	{Gemini, "BeforeTool", KindTool, `{"decision":"deny","reason":"` + wantAskDenied(Gemini, "BeforeTool") + `"}` + "\n", 0},
	{Pi, "tool_call", KindTool, `{"block":true,"reason":"` + wantAskDenied(Pi, "tool_call") + `"}` + "\n", 0},
	// Events hookgate does not gate keep their "no opinion".
	{ClaudeCode, "SessionStart", KindOther, "", 0},
	{Cursor, "stop", KindOther, "{}\n", 0},
	{Gemini, "AfterTool", KindOther, "{}\n", 0},
}

func TestEncodeAsk(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range askAnswers {
		name := string(tc.h) + "/" + tc.event
		if seen[name] {
			t.Fatalf("duplicate case %s", name)
		}
		seen[name] = true
		if k, ok := mustProtocol(tc.h).events[tc.event]; !ok || k != tc.kind {
			t.Fatalf("%s: the decoder knows this event as %v (known %v), the table says %v", name, k, ok, tc.kind)
		}
		t.Run(name, func(t *testing.T) {
			c := Call{Harness: tc.h, Event: tc.event, Kind: tc.kind}
			out := Encode(c, AnswerFor(policy.Decision{Verdict: policy.Ask, Reason: "r"}))
			if string(out.Stdout) != tc.stdout || out.Code != tc.code || len(out.Stderr) != 0 {
				t.Errorf("got stdout %q stderr %q exit %d\nwant stdout %q exit %d", out.Stdout, out.Stderr, out.Code, tc.stdout, tc.code)
			}
		})
	}
}

// TestEncodeExclude: an allow that holds only with exclusion globs is the
// call rewritten where the harness and tool can carry them (Claude Code's
// Grep: updatedInput, the whole input with the globs last, no permission
// decision), and a deny everywhere else.
func TestEncodeExclude(t *testing.T) {
	a := AnswerFor(policy.Decision{Verdict: policy.Allow, Reason: "r", Exclude: "!**/.env"})
	grep := Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Grep", Input: map[string]any{"pattern": "p", "path": "/w", "glob": "*.go"}}
	out := Encode(grep, a)
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecisionReason":"hookgate: r","updatedInput":{"glob":"*.go !**/.env","path":"/w","pattern":"p"}}}` + "\n"
	if string(out.Stdout) != want || out.Code != 0 {
		t.Errorf("Claude Code's Grep:\n got %q (exit %d)\nwant %q", out.Stdout, out.Code, want)
	}
	if grep.Input["glob"] != "*.go" {
		t.Errorf("the call's own input changed: %v", grep.Input)
	}
	for _, c := range []Call{
		{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Glob", Input: map[string]any{"pattern": "*"}},
		{Harness: Copilot, Event: "preToolUse", Kind: KindTool, Tool: "grep", Input: map[string]any{"pattern": "p"}},
		{Harness: Gemini, Event: "BeforeTool", Kind: KindTool, Tool: "grep_search", Input: map[string]any{"pattern": "p"}},
	} {
		out := Encode(c, a)
		if !strings.Contains(string(out.Stdout)+string(out.Stderr), "must leave out !**/.env") || !strings.Contains(string(out.Stdout)+string(out.Stderr), "deny") {
			t.Errorf("%s %s: not a deny naming the globs: %q %q", c.Harness, c.Tool, out.Stdout, out.Stderr)
		}
	}
}
