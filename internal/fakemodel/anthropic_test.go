package fakemodel

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// anthropicSSEEvent is one Server-Sent Event.
type anthropicSSEEvent struct {
	Name string
	Data map[string]any
}

// anthropicReadSSE parses an event stream: "event:" and "data:" lines, blank-line
// separated, checking that each data's type names its event.
func anthropicReadSSE(t *testing.T, r io.Reader) []anthropicSSEEvent {
	t.Helper()
	var out []anthropicSSEEvent
	var cur anthropicSSEEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name != "" {
				if cur.Data["type"] != cur.Name {
					t.Fatalf("event %q carries data of type %v", cur.Name, cur.Data["type"])
				}
				out = append(out, cur)
			}
			cur = anthropicSSEEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	if cur.Name != "" {
		t.Fatalf("stream ends inside event %q (no blank line)", cur.Name)
	}
	return out
}

// anthropicAssemble rebuilds the message a client would from the events, the way
// the SDKs do, and checks their order.
func anthropicAssemble(t *testing.T, evs []anthropicSSEEvent) map[string]any {
	t.Helper()
	if len(evs) < 2 || evs[0].Name != "message_start" || evs[len(evs)-1].Name != "message_stop" {
		t.Fatalf("stream must open with message_start and close with message_stop: %v", evs)
	}
	msg := evs[0].Data["message"].(map[string]any)
	if c, _ := msg["content"].([]any); len(c) != 0 {
		t.Fatalf("message_start content %v, want empty", c)
	}
	var blocks []map[string]any
	partial := map[int]string{}
	open := -1
	for _, e := range evs[1 : len(evs)-1] {
		switch e.Name {
		case "ping":
		case "content_block_start":
			i := int(e.Data["index"].(float64))
			if open != -1 || i != len(blocks) {
				t.Fatalf("content_block_start index %d with block %d open and %d done", i, open, len(blocks))
			}
			blocks = append(blocks, e.Data["content_block"].(map[string]any))
			open = i
		case "content_block_delta":
			i := int(e.Data["index"].(float64))
			if i != open {
				t.Fatalf("delta for block %d, open is %d", i, open)
			}
			d := e.Data["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				blocks[i]["text"] = blocks[i]["text"].(string) + d["text"].(string)
			case "input_json_delta":
				partial[i] += d["partial_json"].(string)
			default:
				t.Fatalf("delta type %v", d["type"])
			}
		case "content_block_stop":
			i := int(e.Data["index"].(float64))
			if i != open {
				t.Fatalf("stop for block %d, open is %d", i, open)
			}
			if blocks[i]["type"] == "tool_use" {
				var in any
				if err := json.Unmarshal([]byte(partial[i]), &in); err != nil {
					t.Fatalf("tool input %q: %v", partial[i], err)
				}
				blocks[i]["input"] = in
			}
			open = -1
		case "message_delta":
			if open != -1 {
				t.Fatalf("message_delta with block %d open", open)
			}
			d := e.Data["delta"].(map[string]any)
			msg["stop_reason"] = d["stop_reason"]
			if _, ok := e.Data["usage"].(map[string]any)["output_tokens"]; !ok {
				t.Fatalf("message_delta without usage.output_tokens: %v", e.Data)
			}
		default:
			t.Fatalf("unexpected event %q", e.Name)
		}
	}
	var content []any
	for _, b := range blocks {
		content = append(content, b)
	}
	msg["content"] = content
	return msg
}

func anthropicPost(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", "test")
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

var anthropicTestTools = []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}

func TestAnthropicTurns(t *testing.T) {
	calls := []ToolCall{
		{Name: "Bash", Input: map[string]any{"command": "touch /tmp/x && echo \"quoted\""}},
		{Name: "Read", Input: map[string]any{"file_path": "/etc/hostname"}},
	}
	var mu sync.Mutex
	var logged []string
	s, err := AnthropicWith(calls, AnthropicOptions{Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(f, a...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %q is not loopback", s.URL)
	}

	messages := []any{map[string]any{"role": "user", "content": "go"}}
	var ids []string
	for turn := 0; turn < 3; turn++ {
		resp := anthropicPost(t, s.URL+"/v1/messages?beta=true", map[string]any{
			"model": "claude-test", "max_tokens": 100, "stream": true, "tools": anthropicTestTools, "messages": messages,
		})
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("turn %d: status %d, content type %q", turn, resp.StatusCode, ct)
		}
		msg := anthropicAssemble(t, anthropicReadSSE(t, resp.Body))
		if msg["model"] != "claude-test" || msg["role"] != "assistant" {
			t.Fatalf("turn %d: message %v", turn, msg)
		}
		content := msg["content"].([]any)
		if turn == len(calls) {
			if msg["stop_reason"] != "end_turn" || len(content) != 1 || content[0].(map[string]any)["text"] != AnthropicFinalText {
				t.Fatalf("final turn: %v", msg)
			}
			break
		}
		b := content[0].(map[string]any)
		if msg["stop_reason"] != "tool_use" || len(content) != 1 || b["type"] != "tool_use" || b["name"] != calls[turn].Name {
			t.Fatalf("turn %d: %v", turn, msg)
		}
		if got, _ := json.Marshal(b["input"]); string(got) != anthropicMustJSON(calls[turn].Input) {
			t.Fatalf("turn %d: input %s, want %s", turn, got, anthropicMustJSON(calls[turn].Input))
		}
		id := b["id"].(string)
		if !strings.HasPrefix(id, "toolu_") {
			t.Fatalf("tool_use id %q", id)
		}
		for _, old := range ids {
			if old == id {
				t.Fatalf("tool_use id %q repeated", id)
			}
		}
		ids = append(ids, id)
		messages = append(messages,
			map[string]any{"role": "assistant", "content": []any{b}},
			map[string]any{"role": "user", "content": []any{map[string]any{
				"type": "tool_result", "tool_use_id": id, "is_error": turn == 0,
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("result %d", turn)}},
			}}})
	}

	// A request without tools (a title, a summary) is answered with text and
	// does not use up a call; non-streaming requests get a JSON message.
	resp := anthropicPost(t, s.URL+"/v1/messages", map[string]any{"model": "claude-haiku", "max_tokens": 10, "messages": []any{
		map[string]any{"role": "user", "content": "title?"}}})
	var m anthropicMessage
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.StopReason != "end_turn" || len(m.Content) != 1 || m.Content[0].Type != "text" {
		t.Fatalf("side request: %+v, %v", m, err)
	}
	resp = anthropicPost(t, s.URL+"/v1/messages", map[string]any{"model": "m", "max_tokens": 10, "tools": anthropicTestTools,
		"messages": []any{map[string]any{"role": "user", "content": "go"}}})
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil || m.StopReason != "tool_use" || m.Content[0].Name != "Bash" || !strings.HasPrefix(m.Content[0].ID, "toolu_") {
		t.Fatalf("non-streaming tool turn: %+v, %v", m, err)
	}

	// count_tokens and unknown paths are answered and logged, not recorded.
	resp = anthropicPost(t, s.URL+"/v1/messages/count_tokens", map[string]any{"model": "m", "messages": messages})
	var ct struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil || ct.InputTokens <= 0 {
		t.Fatalf("count_tokens: %+v, %v", ct, err)
	}
	if resp := anthropicPost(t, s.URL+"/v1/files", map[string]any{}); resp.StatusCode != 404 {
		t.Fatalf("unknown path: status %d", resp.StatusCode)
	}
	if resp, err := http.Head(s.URL + "/api/hello"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /api/hello: %v, %v", resp, err)
	} else {
		resp.Body.Close()
	}
	mu.Lock()
	all := strings.Join(logged, "\n")
	mu.Unlock()
	if !strings.Contains(all, "unknown request POST /v1/files") || !strings.Contains(all, "count_tokens") || !strings.Contains(all, "side request") {
		t.Fatalf("log %q", all)
	}

	reqs := s.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests recorded, want 5 (/v1/messages only)", len(reqs))
	}
	tr := AnthropicTranscript(reqs)
	if len(tr) != 2 || tr[0].ID != ids[0] || tr[1].ID != ids[1] || tr[0].Name != "Bash" || tr[1].Name != "Read" ||
		!tr[0].Answered || !tr[0].IsError || tr[0].Result != "result 0" || tr[1].IsError || tr[1].Result != "result 1" {
		t.Fatalf("transcript %+v", tr)
	}
	if got := AnthropicToolNames(reqs); len(got) != 1 || got[0] != "Bash" {
		t.Fatalf("tool names %v", got)
	}
}

func TestAnthropicResultText(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`"plain"`, "plain"},
		{`[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, "a\nb"},
		{``, ""},
	} {
		if got := anthropicResultText(json.RawMessage(c.raw)); got != c.want {
			t.Errorf("%s: %q, want %q", c.raw, got, c.want)
		}
	}
}

func anthropicMustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
