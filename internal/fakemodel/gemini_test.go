package fakemodel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

func geminiPost(t *testing.T, url string, body any) (*http.Response, []byte) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, out
}

// geminiEvents parses an SSE body the way @google/genai does: "data: X"
// lines ended by a blank line.
func geminiEvents(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

func firstPart(t *testing.T, ev map[string]any) (map[string]any, string) {
	t.Helper()
	c := ev["candidates"].([]any)[0].(map[string]any)
	parts := c["content"].(map[string]any)["parts"].([]any)
	return parts[0].(map[string]any), c["finishReason"].(string)
}

func TestGeminiTurns(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	s, err := GeminiWith([]ToolCall{
		{Name: "run_shell_command", Input: map[string]any{"command": "echo hi"}},
		{Name: "read_file", Input: map[string]any{"file_path": "/w/a.txt"}},
	}, GeminiOptions{Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(f, a...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stream := s.URL + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
	tools := []any{map[string]any{"functionDeclarations": []any{
		map[string]any{"name": "run_shell_command"}, map[string]any{"name": "read_file"}}}}
	user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": "go"}}}

	// Turn 1: no function responses yet, so the first call.
	resp, body := geminiPost(t, stream, map[string]any{"contents": []any{user}, "tools": tools})
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	evs := geminiEvents(t, body)
	if len(evs) != 1 {
		t.Fatalf("%d events: %s", len(evs), body)
	}
	p, fin := firstPart(t, evs[0])
	fc, _ := p["functionCall"].(map[string]any)
	if fc["name"] != "run_shell_command" || fc["args"].(map[string]any)["command"] != "echo hi" || fin != "STOP" {
		t.Fatalf("turn 1: %s", body)
	}

	// Turn 2: one function response in the history (sent twice, as a retry
	// would): the second call both times.
	call1 := map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{
		"id": "c1", "name": "run_shell_command", "args": map[string]any{"command": "echo hi"}}}}}
	resp1 := map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
		"id": "c1", "name": "run_shell_command", "response": map[string]any{"output": "hi"}}}}}
	for range 2 {
		_, body = geminiPost(t, stream, map[string]any{"contents": []any{user, call1, resp1}, "tools": tools})
		p, _ = firstPart(t, geminiEvents(t, body)[0])
		if fc, _ := p["functionCall"].(map[string]any); fc["name"] != "read_file" {
			t.Fatalf("turn 2: %s", body)
		}
	}

	// Turn 3: every call answered: the final text.
	call2 := map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{
		"id": "c2", "name": "read_file", "args": map[string]any{"file_path": "/w/a.txt"}}}}}
	resp2 := map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
		"id": "c2", "name": "read_file", "response": map[string]any{"error": "Tool execution blocked: no"}}}}}
	_, body = geminiPost(t, stream, map[string]any{"contents": []any{user, call1, resp1, call2, resp2}, "tools": tools})
	p, fin = firstPart(t, geminiEvents(t, body)[0])
	if p["text"] != GeminiFinalText || fin != "STOP" {
		t.Fatalf("turn 3: %s", body)
	}

	// A JSON-mode side request (next-speaker check) gets a JSON object.
	_, body = geminiPost(t, s.URL+"/v1beta/models/gemini-2.5-flash-lite:generateContent", map[string]any{
		"contents": []any{user}, "generationConfig": map[string]any{"responseMimeType": "application/json"}})
	var gc map[string]any
	if err := json.Unmarshal(body, &gc); err != nil {
		t.Fatal(err)
	}
	p, _ = firstPart(t, gc)
	var side map[string]any
	if err := json.Unmarshal([]byte(p["text"].(string)), &side); err != nil || side["next_speaker"] != "user" {
		t.Fatalf("side answer %s: %v", body, err)
	}

	// countTokens, the model listing, an unknown path.
	_, body = geminiPost(t, s.URL+"/v1beta/models/gemini-2.5-flash:countTokens", map[string]any{"contents": []any{user}})
	if !strings.Contains(string(body), `"totalTokens"`) {
		t.Errorf("countTokens: %s", body)
	}
	lr, err := http.Get(s.URL + "/v1beta/models")
	if err != nil {
		t.Fatal(err)
	}
	lb, _ := io.ReadAll(lr.Body)
	lr.Body.Close()
	if !strings.Contains(string(lb), `"models/gemini-2.5-flash"`) {
		t.Errorf("models: %s", lb)
	}
	resp, body = geminiPost(t, s.URL+"/v1beta/cachedContents", map[string]any{})
	if resp.StatusCode != 404 || !strings.Contains(string(body), `"NOT_FOUND"`) {
		t.Errorf("unknown path: %d %s", resp.StatusCode, body)
	}
	mu.Lock()
	if len(logged) != 1 || !strings.Contains(logged[0], "/v1beta/cachedContents") {
		t.Errorf("logged %q", logged)
	}
	mu.Unlock()

	// Recorded: 4 streamed + 1 generateContent bodies.
	reqs := s.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	if got := GeminiToolNames(reqs); !slices.Equal(got, []string{"run_shell_command", "read_file"}) {
		t.Errorf("tool names %q", got)
	}
	tr := GeminiTranscript(reqs)
	if len(tr) != 2 || tr[0].Name != "run_shell_command" || !tr[0].Answered || tr[0].Text() != "hi" ||
		tr[1].Name != "read_file" || tr[1].Text() != "Tool execution blocked: no" {
		t.Fatalf("transcript %+v", tr)
	}
}

func TestGeminiNoCalls(t *testing.T) {
	s, err := Gemini(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, body := geminiPost(t, s.URL+"/v1beta/models/m:streamGenerateContent?alt=sse", map[string]any{
		"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "hi"}}}}})
	p, _ := firstPart(t, geminiEvents(t, body)[0])
	if p["text"] != GeminiFinalText {
		t.Fatalf("%s", body)
	}
	if tr := GeminiTranscript(s.Requests()); tr != nil {
		t.Errorf("transcript without tools: %+v", tr)
	}
}
