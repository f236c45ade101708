package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// payloadFixtures lists every payload fixture as harness/name.
func payloadFixtures(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, h := range []string{"claude-code", "codex", "copilot", "cursor", "gemini"} {
		files, err := filepath.Glob(filepath.Join("testdata/fixtures", h, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b := strings.TrimSuffix(filepath.Base(f), ".json")
			if strings.HasPrefix(b, "output-") || strings.HasSuffix(b, "-example") {
				continue
			}
			out = append(out, h+"/"+b)
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d payload fixtures found", len(out))
	}
	return out
}

// policyPath returns testdata/policies/NAME-HARNESS.yaml when it exists, and
// otherwise a copy of NAME.yaml for the harness.
func policyPath(t testing.TB, name, harness string) string {
	t.Helper()
	p := filepath.Join("testdata/policies", name+"-"+harness+".yaml")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	data, err := os.ReadFile(filepath.Join("testdata/policies", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("\nharness: claude-code\n"), []byte("\nharness: "+harness+"\n"), 1)
	p = filepath.Join(t.TempDir(), name+"-"+harness+".yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFixtures(t *testing.T) {
	t.Setenv("HOME", "/home/dev")
	seen := map[string]bool{}
	for _, tc := range fixtureCases {
		key := tc.policy + " " + tc.harness + "/" + tc.fixture
		if seen[key] {
			t.Fatalf("duplicate case %s", key)
		}
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata/fixtures", tc.harness, tc.fixture+".json"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			out := Check(context.Background(), CheckArgs{Harness: tc.harness, Payload: f,
				Source: LocalSource{Path: policyPath(t, tc.policy, tc.harness)}})
			want := ""
			if tc.want != "" {
				want = tc.want + "\n"
			}
			if string(out.Stdout) != want || out.Code != 0 || len(out.Stderr) != 0 {
				t.Errorf("got stdout %q stderr %q exit %d\nwant stdout %q exit 0", out.Stdout, out.Stderr, out.Code, want)
			}
		})
	}
	for _, p := range payloadFixtures(t) {
		for _, pol := range []string{"guarded", "open"} {
			h, name, _ := strings.Cut(p, "/")
			if !seen[pol+" "+h+"/"+name] {
				t.Errorf("fixture %s has no case under policy %s", p, pol)
			}
		}
	}
}

// TestEncodeMatchesFixtures proves the byte-exact shape of each answer
// hookgate gives against the fixture a harness documents for it (compacted:
// hookgate prints one line).
func TestEncodeMatchesFixtures(t *testing.T) {
	cc := func(h Harness, event string, k Kind) Call {
		return Call{Harness: h, Event: event, Kind: k, Tool: "Bash"}
	}
	reasonOf := func(t *testing.T, file, key string) string {
		var m map[string]any
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range strings.Split(key, ".") {
			switch v := m[k].(type) {
			case map[string]any:
				m = v
			case string:
				return v
			}
		}
		return ""
	}
	cases := []struct {
		file   string
		call   Call
		reply  Reply
		reason string // dotted key of the reason in the fixture
		agent  string
	}{
		{"claude-code/output-deny", cc(ClaudeCode, "PreToolUse", KindTool), ReplyDeny, "hookSpecificOutput.permissionDecisionReason", ""},
		{"claude-code/output-ask", cc(ClaudeCode, "PreToolUse", KindTool), ReplyAsk, "hookSpecificOutput.permissionDecisionReason", ""},
		{"claude-code/output-allow", cc(ClaudeCode, "PreToolUse", KindTool), ReplyAllow, "hookSpecificOutput.permissionDecisionReason", ""},
		{"claude-code/output-permissionrequest-allow", cc(ClaudeCode, "PermissionRequest", KindPermission), ReplyAllow, "", ""},
		{"claude-code/output-permissionrequest-deny", cc(ClaudeCode, "PermissionRequest", KindPermission), ReplyDeny, "hookSpecificOutput.decision.message", ""},
		{"codex/output-deny", cc(Codex, "PreToolUse", KindTool), ReplyDeny, "hookSpecificOutput.permissionDecisionReason", ""},
		{"codex/output-permissionrequest-allow", cc(Codex, "PermissionRequest", KindPermission), ReplyAllow, "", ""},
		{"codex/output-permissionrequest-deny", cc(Codex, "PermissionRequest", KindPermission), ReplyDeny, "hookSpecificOutput.decision.message", ""},
		{"cursor/output-allow", cc(Cursor, "beforeShellExecution", KindTool), ReplyAllow, "", ""},
		{"cursor/output-deny", cc(Cursor, "beforeShellExecution", KindTool), ReplyDeny, "user_message", "agent_message"},
		{"cursor/output-ask", cc(Cursor, "beforeShellExecution", KindTool), ReplyAsk, "user_message", "agent_message"},
		{"cursor/output-beforeReadFile-deny", cc(Cursor, "beforeReadFile", KindTool), ReplyDeny, "user_message", ""},
		{"cursor/output-preToolUse-deny", cc(Cursor, "preToolUse", KindTool), ReplyDeny, "user_message", "agent_message"},
		{"gemini/output-allow", cc(Gemini, "BeforeTool", KindTool), ReplyAllow, "", ""},
		{"gemini/output-deny", cc(Gemini, "BeforeTool", KindTool), ReplyDeny, "reason", ""},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			file := filepath.Join("testdata/fixtures", tc.file+".json")
			a := Answer{Reply: tc.reply}
			if tc.reason != "" {
				a.Reason = reasonOf(t, file, tc.reason)
			}
			if tc.agent != "" {
				a.AgentMessage = reasonOf(t, file, tc.agent)
			}
			data, _ := os.ReadFile(file)
			var want bytes.Buffer
			if err := json.Compact(&want, data); err != nil {
				t.Fatal(err)
			}
			want.WriteByte('\n')
			out := Encode(tc.call, a)
			if !bytes.Equal(out.Stdout, want.Bytes()) || out.Code != 0 || len(out.Stderr) != 0 {
				t.Errorf("got %q exit %d stderr %q\nwant %q", out.Stdout, out.Code, out.Stderr, want.Bytes())
			}
		})
	}
}

// TestEncodeExitCodeAnswers covers the answers that are not JSON: Codex's
// allow and ask, Claude Code's pass, and Fail's exit 2 per harness.
func TestEncodeExitCodeAnswers(t *testing.T) {
	codexTool := Call{Harness: Codex, Event: "PreToolUse", Kind: KindTool}
	if out := Encode(codexTool, Answer{Reply: ReplyAllow, Reason: "x"}); len(out.Stdout) != 0 || out.Code != 0 {
		t.Errorf("codex allow: got %+v, want empty stdout exit 0", out)
	}
	out := Encode(codexTool, Answer{Reply: ReplyAsk, Reason: "hookgate: needs approval"})
	if want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"hookgate: needs approval; needs a person's approval, which codex cannot ask for in PreToolUse: denied (grant it in the session policy to allow it)"}}` + "\n"; string(out.Stdout) != want {
		t.Errorf("codex ask: got %q, want deny %q", out.Stdout, want)
	}
	if out := Encode(Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool}, Answer{Reply: ReplyPass}); len(out.Stdout) != 0 || out.Code != 0 {
		t.Errorf("claude pass: got %+v", out)
	}
	if out := Encode(Call{Harness: Cursor, Event: "preToolUse", Kind: KindTool}, Answer{Reply: ReplyAsk, Reason: "r"}); !strings.HasPrefix(string(out.Stdout), `{"permission":"deny"`) {
		t.Errorf("cursor preToolUse ask must be a deny (ask is not enforced there): %q", out.Stdout)
	}
	if out := Encode(Call{Harness: Pi, Event: "tool_call", Kind: KindTool}, Answer{}); !strings.HasPrefix(string(out.Stdout), `{"block":true`) {
		t.Errorf("pi zero answer must block: %q", out.Stdout)
	}
	for _, h := range append(Harnesses, "nonsense") {
		out := Fail(h, "hookgate: broken")
		if out.Code != 2 || string(out.Stderr) != "hookgate: broken\n" {
			t.Errorf("Fail(%s) = exit %d stderr %q, want exit 2 with the reason on stderr", h, out.Code, out.Stderr)
		}
		if h == Codex && len(out.Stdout) != 0 {
			t.Errorf("Fail(codex) printed %q; Codex takes exit 2 + stderr", out.Stdout)
		}
	}
	if got := string(Fail(ClaudeCode, "hookgate: broken").Stdout); got != `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"hookgate: broken"}}`+"\n" {
		t.Errorf("Fail(claude-code) stdout %q", got)
	}
}

// decodeRefusals: payloads Decode must refuse, with the class of error.
var decodeRefusals = []struct {
	name    string
	harness Harness
	payload string
	want    error
}{
	{"empty", ClaudeCode, ``, ErrMalformed},
	{"not json", ClaudeCode, `hello`, ErrMalformed},
	{"array", ClaudeCode, `[{"hook_event_name":"PreToolUse"}]`, ErrMalformed},
	{"two objects", ClaudeCode, `{"hook_event_name":"Stop"}{"hook_event_name":"Stop"}`, ErrMalformed},
	{"trailing garbage", ClaudeCode, `{"hook_event_name":"Stop"} x`, ErrMalformed},
	{"no event", ClaudeCode, `{"tool_name":"Bash","tool_input":{"command":"ls"}}`, ErrMalformed},
	{"event not a string", ClaudeCode, `{"hook_event_name":7}`, ErrMalformed},
	{"copilot Claude-compatible form", Copilot, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`, ErrMalformed},
	{"copilot no tool", Copilot, `{"cwd":"/w","toolArgs":{}}`, ErrMalformed},
	{"copilot args not an object", Copilot, `{"cwd":"/w","toolName":"bash","toolArgs":[1]}`, ErrMalformed},
	{"unknown event", ClaudeCode, `{"hook_event_name":"PreToolUseX","tool_name":"Bash","tool_input":{}}`, ErrUnknownEvent},
	{"cursor event for claude", ClaudeCode, `{"hook_event_name":"beforeShellExecution","command":"ls"}`, ErrUnknownEvent},
	{"claude event for cursor", Cursor, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}`, ErrUnknownEvent},
	{"no tool_name", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_input":{"command":"ls"}}`, ErrMalformed},
	{"tool_name not a string", Codex, `{"hook_event_name":"PreToolUse","tool_name":["Bash"],"tool_input":{}}`, ErrMalformed},
	{"tool_input a string", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":"ls"}`, ErrMalformed},
	{"tool_input missing", Gemini, `{"hook_event_name":"BeforeTool","tool_name":"run_shell_command"}`, ErrMalformed},
	{"duplicate tool_name", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Read","tool_name":"Bash","tool_input":{}}`, ErrMalformed},
	{"duplicate key in input", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`, ErrMalformed},
	{"invalid utf8", ClaudeCode, "{\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{\"command\":\"\xff\"}}", ErrMalformed},
	{"cwd not a string", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{},"cwd":1}`, ErrMalformed},
	{"too deep", ClaudeCode, `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"a":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}}`, ErrMalformed},
	{"cursor shell without command", Cursor, `{"hook_event_name":"beforeShellExecution","cwd":"/w"}`, ErrMalformed},
	{"cursor read without path", Cursor, `{"hook_event_name":"beforeReadFile","content":"x"}`, ErrMalformed},
	{"cursor mcp input not json", Cursor, `{"hook_event_name":"beforeMCPExecution","tool_name":"q","tool_input":"{not json"}`, ErrMalformed},
	{"cursor mcp input duplicate key", Cursor, `{"hook_event_name":"beforeMCPExecution","tool_name":"q","tool_input":"{\"a\":1,\"a\":2}"}`, ErrMalformed},
	{"pi unknown event", Pi, `{"hook_event_name":"tool_result","tool_name":"bash","tool_input":{}}`, ErrUnknownEvent},
	{"unknown harness", "vim", `{"hook_event_name":"PreToolUse"}`, ErrUnknownHarness},
}

func TestDecodeRefusals(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range decodeRefusals {
		if seen[string(tc.harness)+tc.payload] {
			t.Fatalf("duplicate refusal input %q", tc.name)
		}
		seen[string(tc.harness)+tc.payload] = true
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode(tc.harness, []byte(tc.payload))
			if !errors.Is(err, tc.want) {
				t.Errorf("Decode = %+v, %v; want error %v", c, err, tc.want)
			}
		})
	}
	big := `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"` + strings.Repeat("a", MaxPayloadBytes) + `"}}`
	if _, err := Decode(ClaudeCode, []byte(big)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized payload: %v, want ErrTooLarge", err)
	}
	if _, err := ReadPayload(strings.NewReader(big)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadPayload of oversized payload: %v, want ErrTooLarge", err)
	}
}

func TestDecodeNormalizesCursor(t *testing.T) {
	data, err := os.ReadFile("testdata/fixtures/cursor/beforeMCPExecution-url.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(Cursor, data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tool != "MCP:query" || c.MCPServerURL != "http://localhost:8931/mcp" || c.Input["sql"] != "DROP TABLE sessions;" || c.Cwd != "/Users/dana/src/acme-web" || c.Kind != KindTool {
		t.Errorf("got %+v", c)
	}
	data, _ = os.ReadFile("testdata/fixtures/cursor/beforeShellExecution-v1.7-minimal.json")
	c, err = Decode(Cursor, data)
	if err != nil || c.Tool != "Shell" || c.Input["command"] != "npm install left-pad" {
		t.Errorf("got %+v, %v", c, err)
	}
}

// FuzzDecode: any input either is refused, or decodes to a call whose
// answer is well-formed in every harness's protocol (JSON or empty stdout,
// exit 0 or 2) and a deny of it is never a pass.
func FuzzDecode(f *testing.F) {
	for _, p := range payloadFixtures(f) {
		data, err := os.ReadFile(filepath.Join("testdata/fixtures", p+".json"))
		if err != nil {
			f.Fatal(err)
		}
		h, _, _ := strings.Cut(p, "/")
		f.Add(h, data)
	}
	for _, tc := range decodeRefusals {
		f.Add(string(tc.harness), []byte(tc.payload))
	}
	f.Fuzz(func(t *testing.T, h string, data []byte) {
		c, err := Decode(Harness(h), data)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrUnknownEvent) && !errors.Is(err, ErrUnknownHarness) {
				t.Fatalf("error outside the sentinels: %v", err)
			}
			return
		}
		if c.Harness != Harness(h) || c.Event == "" {
			t.Fatalf("decoded call without harness or event: %+v", c)
		}
		if c.Kind != KindOther && c.Tool == "" {
			t.Fatalf("gated call without tool: %+v", c)
		}
		for _, r := range []Reply{ReplyDeny, ReplyAllow, ReplyAsk, ReplyPass} {
			out := Encode(c, Answer{Reply: r, Reason: "hookgate: fuzz"})
			if len(out.Stdout) > 0 && !json.Valid(out.Stdout) {
				t.Fatalf("invalid JSON answer %q", out.Stdout)
			}
		}
		if c.Kind == KindTool {
			out := Encode(c, Answer{Reply: ReplyDeny, Reason: "hookgate: fuzz"})
			if len(out.Stdout) == 0 && out.Code != 2 {
				t.Fatalf("deny of a tool call encoded as a pass: %+v", out)
			}
		}
	})
}
