package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// postChat posts body to s's chat/completions and returns the parsed
// chunks of the stream (the data of each event, without [DONE]) and
// whether the stream ended with data: [DONE].
func postChat(t *testing.T, s *Server, body any) ([]map[string]any, bool) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var out []map[string]any
	done := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		if done {
			t.Fatalf("data after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c["object"] != "chat.completion.chunk" {
			t.Errorf("chunk object %v", c["object"])
		}
		out = append(out, c)
	}
	return out, done
}

// chatAssembled is a streamed answer put back together the way a client
// does: text, one tool call, the finish_reason and the usage.
type chatAssembled struct {
	text, callID, name, args, finish string
	usage                            bool
}

func assemble(t *testing.T, chunks []map[string]any) chatAssembled {
	t.Helper()
	var a chatAssembled
	for _, c := range chunks {
		if c["usage"] != nil {
			a.usage = true
		}
		choices, _ := c["choices"].([]any)
		for _, ch := range choices {
			ch := ch.(map[string]any)
			if f, ok := ch["finish_reason"].(string); ok {
				if a.finish != "" {
					t.Errorf("second finish_reason %q", f)
				}
				a.finish = f
			}
			d, _ := ch["delta"].(map[string]any)
			if s, ok := d["content"].(string); ok {
				a.text += s
			}
			tcs, _ := d["tool_calls"].([]any)
			for _, tc := range tcs {
				tc := tc.(map[string]any)
				if tc["index"] != float64(0) {
					t.Errorf("tool call index %v", tc["index"])
				}
				if id, ok := tc["id"].(string); ok {
					a.callID = id
				}
				f, _ := tc["function"].(map[string]any)
				if n, ok := f["name"].(string); ok {
					a.name += n
				}
				if s, ok := f["arguments"].(string); ok {
					a.args += s
				}
			}
		}
	}
	return a
}

// copilotTools is a slice of what Copilot CLI offers (docs/design.md, "GitHub Copilot CLI").
var copilotTools = []map[string]any{
	{"type": "function", "function": map[string]any{"name": "bash", "parameters": map[string]any{
		"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}}},
	{"type": "function", "function": map[string]any{"name": "create", "parameters": map[string]any{
		"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}, "file_text": map[string]any{"type": "string"}}}}},
	{"type": "function", "function": map[string]any{"name": "list_bash", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
}

func TestOpenAIChatTurns(t *testing.T) {
	s, err := OpenAIChat([]ToolCall{
		{Name: "bash", Input: map[string]any{"command": "echo <hi> & bye > /tmp/x", "description": "say hi"}},
		{Name: "create", Input: map[string]any{"path": "/tmp/y", "file_text": "é\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs := []any{
		map[string]any{"role": "system", "content": "you are copilot"},
		map[string]any{"role": "user", "content": "go"},
	}
	req := func() map[string]any {
		return map[string]any{"model": "gpt-4.1", "stream": true, "stream_options": map[string]any{"include_usage": true},
			"messages": msgs, "tools": copilotTools}
	}

	// Turn 1: the bash call, its arguments in two deltas.
	chunks, done := postChat(t, s, req())
	if !done {
		t.Fatal("stream did not end with [DONE]")
	}
	a := assemble(t, chunks)
	if a.finish != "tool_calls" || a.name != "bash" || a.args != `{"command":"echo <hi> & bye > /tmp/x","description":"say hi"}` || a.callID == "" || !a.usage {
		t.Fatalf("turn 1: %+v", a)
	}
	if n := len(chunks); n < 4 {
		t.Errorf("turn 1 in %d chunks, want the arguments split", n)
	}
	call1 := a.callID
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": call1, "type": "function", "function": map[string]any{"name": "bash", "arguments": a.args}}}},
		map[string]any{"role": "tool", "tool_call_id": call1, "content": "Denied by preToolUse hook: blocked"})

	// A side request without tools does not take the next call.
	side, _ := postChat(t, s, map[string]any{"model": "gpt-4.1", "stream": true, "messages": msgs})
	if a := assemble(t, side); a.finish != "stop" || a.name != "" || a.text == "" || a.usage {
		t.Fatalf("side request: %+v", a)
	}

	// Turn 2: the create call.
	chunks, _ = postChat(t, s, req())
	a = assemble(t, chunks)
	if a.finish != "tool_calls" || a.name != "create" || a.args != `{"file_text":"é\n","path":"/tmp/y"}` {
		t.Fatalf("turn 2: %+v", a)
	}
	call2 := a.callID
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"id": call2, "type": "function", "function": map[string]any{"name": "create", "arguments": a.args}}}},
		map[string]any{"role": "tool", "tool_call_id": call2, "content": []any{map[string]any{"type": "text", "text": "Created file /tmp/y"}}})

	// Turn 3: calls ran out: the final text.
	chunks, _ = postChat(t, s, req())
	if a := assemble(t, chunks); a.finish != "stop" || a.text != OpenAIChatFinalText || a.name != "" {
		t.Fatalf("final turn: %+v", a)
	}

	tr := OpenAIChatTranscript(s.Requests())
	if len(tr) != 2 {
		t.Fatalf("transcript %+v", tr)
	}
	if tr[0].CallID != call1 || tr[0].Name != "bash" || !tr[0].Answered || tr[0].Output != "Denied by preToolUse hook: blocked" {
		t.Errorf("exchange 0: %+v", tr[0])
	}
	if tr[1].Name != "create" || !tr[1].Answered || tr[1].Output != "Created file /tmp/y" {
		t.Errorf("exchange 1: %+v", tr[1])
	}
	if got := strings.Join(OpenAIChatToolNames(s.Requests()), ","); got != "bash,create,list_bash" {
		t.Errorf("tool names %s", got)
	}
	params := OpenAIChatToolParams(s.Requests())
	if len(params["bash"]) != 2 || len(params["list_bash"]) != 0 {
		t.Errorf("tool params %v", params)
	}
}

func TestOpenAIChatNotStreamed(t *testing.T) {
	s, err := OpenAIChat([]ToolCall{{Name: "list_bash"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	post := func(msgs []any) map[string]any {
		b, _ := json.Marshal(map[string]any{"model": "gpt-4.1", "messages": msgs, "tools": copilotTools})
		resp, err := http.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		return out
	}
	msgs := []any{map[string]any{"role": "user", "content": "go"}}
	out := post(msgs)
	ch := out["choices"].([]any)[0].(map[string]any)
	m := ch["message"].(map[string]any)
	tcs, _ := m["tool_calls"].([]any)
	if out["object"] != "chat.completion" || ch["finish_reason"] != "tool_calls" || len(tcs) != 1 {
		t.Fatalf("answer %v", out)
	}
	tc := tcs[0].(map[string]any)
	f := tc["function"].(map[string]any)
	if f["name"] != "list_bash" || f["arguments"] != "{}" {
		t.Fatalf("tool call %v", tc)
	}
	msgs = append(msgs,
		map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs},
		map[string]any{"role": "tool", "tool_call_id": tc["id"], "content": "<no active shell sessions>"})
	out = post(msgs)
	ch = out["choices"].([]any)[0].(map[string]any)
	if ch["finish_reason"] != "stop" || ch["message"].(map[string]any)["content"] != OpenAIChatFinalText {
		t.Fatalf("final answer %v", out)
	}
	if tr := OpenAIChatTranscript(s.Requests()); len(tr) != 1 || tr[0].Output != "<no active shell sessions>" {
		t.Errorf("transcript %+v", tr)
	}
}

func TestOpenAIChatModelsUnknownAndEnv(t *testing.T) {
	var logged []string
	s, err := OpenAIChatWith(nil, OpenAIChatOptions{Logf: func(f string, a ...any) { logged = append(logged, f) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(list.Data) == 0 {
		t.Errorf("models: status %d, %+v", resp.StatusCode, list)
	}
	resp, err = http.Get(s.URL + "/v1/responses")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || len(logged) != 1 {
		t.Errorf("unknown path: status %d, logged %v", resp.StatusCode, logged)
	}
	resp, err = http.Get(s.URL + "/v1/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 {
		t.Errorf("GET chat/completions: status %d", resp.StatusCode)
	}
	env := strings.Join(s.CopilotEnv(""), "\n")
	for _, want := range []string{"COPILOT_PROVIDER_BASE_URL=" + s.URL + "/v1", "COPILOT_PROVIDER_TYPE=openai", "COPILOT_MODEL=gpt-4.1", "COPILOT_OFFLINE=true"} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
}
