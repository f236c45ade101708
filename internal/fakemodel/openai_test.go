package fakemodel

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// sseEvent is one parsed Server-Sent Event.
type sseEvent struct {
	name string
	data map[string]any
}

func postResponses(t *testing.T, s *Server, body any) []sseEvent {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(s.URL+"/v1/responses", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, content type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
	}
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.data); err != nil {
				t.Fatalf("data of %s: %v", cur.name, err)
			}
		case line == "":
			if cur.name != "" {
				if cur.data["type"] != cur.name {
					t.Errorf("event %s carries type %v", cur.name, cur.data["type"])
				}
				out = append(out, cur)
			}
			cur = sseEvent{}
		}
	}
	return out
}

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.name)
	}
	return out
}

// doneItem returns the item of the stream's response.output_item.done.
func doneItem(t *testing.T, evs []sseEvent) map[string]any {
	t.Helper()
	for _, e := range evs {
		if e.name == "response.output_item.done" {
			it, _ := e.data["item"].(map[string]any)
			return it
		}
	}
	t.Fatalf("no response.output_item.done in %v", names(evs))
	return nil
}

var codexTools = []map[string]any{
	{"type": "function", "name": "exec_command", "parameters": map[string]any{}},
	{"type": "custom", "name": "apply_patch", "format": map[string]any{}},
	{"type": "web_search"},
}

func TestOpenAITurns(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\n"
	s, err := OpenAI([]ToolCall{
		{Name: "exec_command", Input: map[string]any{"cmd": "echo <hi> & bye"}},
		{Name: "apply_patch", Input: map[string]any{"input": patch}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	user := map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "go"}}}
	input := []any{user}

	// Turn 1: the function call, streamed in pieces.
	evs := postResponses(t, s, map[string]any{"model": "gpt-x", "stream": true, "input": input, "tools": codexTools})
	want := []string{"response.created", "response.in_progress", "response.output_item.added",
		"response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done", "response.completed"}
	if got := names(evs); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	it := doneItem(t, evs)
	if it["type"] != "function_call" || it["name"] != "exec_command" || it["arguments"] != `{"cmd":"echo <hi> & bye"}` {
		t.Fatalf("item %v", it)
	}
	var deltas string
	for _, e := range evs {
		if e.name == "response.function_call_arguments.delta" {
			deltas += e.data["delta"].(string)
		}
	}
	if deltas != it["arguments"] {
		t.Errorf("deltas %q, want %q", deltas, it["arguments"])
	}
	if r := evs[len(evs)-1].data["response"].(map[string]any); r["id"] == "" || r["usage"] == nil {
		t.Errorf("completed response %v", r)
	}
	call1 := it["call_id"].(string)
	input = append(input,
		map[string]any{"type": "function_call", "call_id": call1, "name": "exec_command", "arguments": it["arguments"]},
		map[string]any{"type": "function_call_output", "call_id": call1, "output": "blocked by hook"})

	// A side request without tools does not take the next call.
	side := postResponses(t, s, map[string]any{"model": "gpt-x", "stream": true, "input": input})
	if it := doneItem(t, side); it["type"] != "message" {
		t.Fatalf("side request got %v", it)
	}

	// Turn 2: apply_patch is a custom tool: a custom_tool_call with the
	// patch as its input.
	evs = postResponses(t, s, map[string]any{"model": "gpt-x", "stream": true, "input": input, "tools": codexTools})
	it = doneItem(t, evs)
	if it["type"] != "custom_tool_call" || it["name"] != "apply_patch" || it["input"] != patch {
		t.Fatalf("item %v", it)
	}
	call2 := it["call_id"].(string)
	input = append(input,
		map[string]any{"type": "custom_tool_call", "call_id": call2, "name": "apply_patch", "input": patch},
		map[string]any{"type": "custom_tool_call_output", "call_id": call2,
			"output": []any{map[string]any{"type": "input_text", "text": "Success."}}})

	// Turn 3: calls ran out: the final message.
	evs = postResponses(t, s, map[string]any{"model": "gpt-x", "stream": true, "input": input, "tools": codexTools})
	it = doneItem(t, evs)
	if it["type"] != "message" || openaiMessageText(mustJSON(it["content"])) != OpenAIFinalText {
		t.Fatalf("final item %v", it)
	}

	tr := OpenAITranscript(s.Requests())
	if len(tr) != 2 {
		t.Fatalf("transcript %+v", tr)
	}
	if tr[0].CallID != call1 || tr[0].Name != "exec_command" || !tr[0].Answered || tr[0].Output != "blocked by hook" {
		t.Errorf("exchange 0: %+v", tr[0])
	}
	if tr[1].Type != "custom_tool_call" || tr[1].Arguments != patch || tr[1].Output != "Success." {
		t.Errorf("exchange 1: %+v", tr[1])
	}
	if got := strings.Join(OpenAIToolNames(s.Requests()), ","); got != "exec_command,apply_patch,type:web_search" {
		t.Errorf("tool names %s", got)
	}
	if got := OpenAITools(s.Requests())["apply_patch"]; got != "custom" {
		t.Errorf("apply_patch type %q", got)
	}
}

func TestOpenAILastSessionID(t *testing.T) {
	s, err := OpenAI([]ToolCall{
		{Name: "exec_command", Input: map[string]any{"cmd": "bash", "tty": true}},
		{Name: "write_stdin", Input: map[string]any{"session_id": OpenAILastSessionID, "chars": "ls\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	input := []any{
		map[string]any{"type": "message", "role": "user", "content": "go"},
		map[string]any{"type": "function_call", "call_id": "c0", "name": "exec_command", "arguments": "{}"},
		map[string]any{"type": "function_call_output", "call_id": "c0", "output": "Process running with session ID 4242\nOutput:\n$ "},
	}
	it := doneItem(t, postResponses(t, s, map[string]any{"stream": true, "input": input, "tools": codexTools}))
	if it["name"] != "write_stdin" || it["arguments"] != `{"chars":"ls\n","session_id":4242}` {
		t.Fatalf("item %v", it)
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func TestOpenAIUnknownAndConfig(t *testing.T) {
	var logged []string
	s, err := OpenAIWith(nil, OpenAIOptions{Logf: func(f string, a ...any) { logged = append(logged, f) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get(s.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || len(logged) != 1 {
		t.Errorf("unknown path: status %d, logged %v", resp.StatusCode, logged)
	}
	cfg := s.CodexConfig("")
	for _, want := range []string{`base_url = "` + s.URL + `/v1"`, `wire_api = "responses"`, `env_key = "` + OpenAIKeyEnv + `"`, `model_provider = "fakemodel"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %s:\n%s", want, cfg)
		}
	}
}
