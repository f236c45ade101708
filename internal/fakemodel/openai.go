package fakemodel

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// OpenAIFinalText is the text of the fake model's last turn, once its tool
// calls have run out.
const OpenAIFinalText = "fakemodel: done"

// OpenAIKeyEnv is the environment variable CodexConfig names as the model
// provider's env_key: Codex refuses to start a turn when it is unset, and
// sends its value as the bearer token (the fake accepts any).
const OpenAIKeyEnv = "FAKEMODEL_OPENAI_KEY"

// OpenAILastSessionID, as a string value anywhere in a ToolCall's Input,
// is replaced by the number of the last "session ID N" in the tool
// outputs of the request (0 when there is none): Codex's exec_command
// answers a command that keeps running with "Process running with session
// ID N", and write_stdin takes that N as its session_id.
const OpenAILastSessionID = "{{last_session_id}}"

// OpenAIOptions tune OpenAI's fake server.
type OpenAIOptions struct {
	// Logf, when set, is told about every request that is not a model turn
	// (unknown paths, websocket upgrades) and about side requests (a
	// request without tools). It may be called from the server's
	// goroutines.
	Logf func(format string, args ...any)
}

// OpenAI serves the OpenAI Responses API (POST /v1/responses, streaming
// as Server-Sent Events) on loopback, as Codex consumes it. A request that
// offers tools gets the next tool call of calls, one per turn, then a text
// turn (OpenAIFinalText) once calls run out. The turn is the number of tool
// calls already in the request's input (Codex sends the whole conversation
// every turn), so a retry or a side request does not skip a call. A request
// without tools gets a short text answer.
//
// A call whose tool the request declares as a freeform tool
// ({"type":"custom"}, Codex's apply_patch in some versions) is streamed as
// a custom_tool_call whose input is Input["input"] (a string); any other
// call is a function_call whose arguments are Input as JSON. Every
// /v1/responses body is recorded (Requests); OpenAITranscript reads the
// tool results back out of them.
func OpenAI(calls []ToolCall) (*Server, error) {
	return OpenAIWith(calls, OpenAIOptions{})
}

// OpenAIWith is OpenAI with options.
func OpenAIWith(calls []ToolCall, opt OpenAIOptions) (*Server, error) {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var s *Server
	responses := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
				logf("fakemodel: websocket upgrade on %s refused (HTTP streaming only)", r.URL.Path)
			}
			openaiError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" not allowed")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			openaiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		s.record(body)
		var req openaiRequest
		if err := json.Unmarshal(body, &req); err != nil {
			openaiError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
			return
		}
		if len(req.Tools) == 0 {
			logf("fakemodel: side request (model %s, stream %v, no tools): answered with text", req.Model, req.Stream)
		}
		items := openaiReply(calls, &req)
		if !req.Stream {
			openaiJSON(w, req.Model, items)
			return
		}
		openaiStream(w, req.Model, items)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/responses", responses)
	mux.HandleFunc("/responses", responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		logf("fakemodel: unknown request %s %s (%d bytes): 404", r.Method, r.URL.RequestURI(), len(body))
		openaiError(w, http.StatusNotFound, "not_found", "fakemodel: no such endpoint "+r.URL.Path)
	})
	s, err := start(mux)
	return s, err
}

// CodexConfig returns the config.toml lines that point Codex at s: a model
// provider "fakemodel" with base_url URL/v1, wire_api "responses" and
// env_key OpenAIKeyEnv (no login needed), selected as model_provider with
// the given model, no retries (a broken stream fails the run at once
// instead of after minutes) and a short stream idle timeout. They are
// top-level keys followed by a table, so put them first in the file.
func (s *Server) CodexConfig(model string) string {
	if model == "" {
		model = "gpt-fake"
	}
	return fmt.Sprintf(`model = %q
model_provider = "fakemodel"

[model_providers.fakemodel]
name = "fakemodel"
base_url = %q
wire_api = "responses"
env_key = %q
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000
`, model, s.URL+"/v1", OpenAIKeyEnv)
}

// openaiRequest is the part of a Responses request the fake reads.
type openaiRequest struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []json.RawMessage `json:"input"`
	Tools  []openaiTool      `json:"tools"`
}

// openaiTool is one entry of a request's tools: a function
// ({"type":"function","name":...}), a freeform tool ({"type":"custom"}),
// or a hosted or built-in one (web_search, local_shell) with no name.
type openaiTool struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// openaiItem is an input or output item of the Responses API (the fields
// of the kinds the fake reads or writes).
type openaiItem struct {
	Type string `json:"type"`
	ID   string `json:"id,omitempty"`
	// message
	Role    string          `json:"role,omitempty"`
	Content json.RawMessage `json:"content,omitempty"`
	// function_call, custom_tool_call, and their outputs
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments string          `json:"arguments,omitempty"`
	Input     string          `json:"input,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Status    string          `json:"status,omitempty"`
}

func openaiID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// openaiIsCall reports whether an item type is a tool call the model made.
func openaiIsCall(t string) bool {
	return t == "function_call" || t == "custom_tool_call" || t == "local_shell_call"
}

// openaiReply picks the output items of one turn: the next tool call, or
// the final message.
func openaiReply(calls []ToolCall, req *openaiRequest) []openaiItem {
	turn := 0
	for _, raw := range req.Input {
		var it openaiItem
		if json.Unmarshal(raw, &it) == nil && openaiIsCall(it.Type) {
			turn++
		}
	}
	if len(req.Tools) > 0 && turn < len(calls) {
		c := calls[turn]
		callID := fmt.Sprintf("call_fake%d_%s", turn, openaiID("")[:8])
		custom := false
		for _, t := range req.Tools {
			if t.Name == c.Name && t.Type == "custom" {
				custom = true
			}
		}
		if custom {
			in, ok := c.Input["input"].(string)
			if !ok {
				in = string(openaiMarshal(c.Input))
			}
			return []openaiItem{{Type: "custom_tool_call", ID: openaiID("ctc_"), CallID: callID, Name: c.Name, Input: in, Status: "completed"}}
		}
		args := openaiMarshal(c.Input)
		if c.Input == nil {
			args = []byte("{}")
		}
		if placeholder := openaiMarshal(OpenAILastSessionID); bytes.Contains(args, placeholder) {
			args = bytes.ReplaceAll(args, placeholder, []byte(openaiLastSessionID(req)))
		}
		return []openaiItem{{Type: "function_call", ID: openaiID("fc_"), CallID: callID, Name: c.Name, Arguments: string(args), Status: "completed"}}
	}
	text := OpenAIFinalText
	if len(req.Tools) == 0 {
		text = "fakemodel"
	}
	content, _ := json.Marshal([]map[string]any{{"type": "output_text", "text": text, "annotations": []any{}}})
	return []openaiItem{{Type: "message", ID: openaiID("msg_"), Role: "assistant", Content: content, Status: "completed"}}
}

var openaiSessionRE = regexp.MustCompile(`session ID (\d+)`)

// openaiLastSessionID returns the last session ID the request's tool
// outputs mention, or "0".
func openaiLastSessionID(req *openaiRequest) string {
	id := "0"
	for _, raw := range req.Input {
		var it openaiItem
		if json.Unmarshal(raw, &it) != nil || !strings.HasSuffix(it.Type, "_call_output") {
			continue
		}
		if m := openaiSessionRE.FindAllStringSubmatch(openaiOutputText(it.Output), -1); len(m) > 0 {
			id = m[len(m)-1][1]
		}
	}
	return id
}

// openaiMarshal is JSON without HTML escaping (<, >, & as they are), the
// way the API writes arguments.
func openaiMarshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func openaiUsage() map[string]any {
	return map[string]any{
		"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": 15,
	}
}

func openaiResponse(id, model, status string, output []openaiItem) map[string]any {
	if model == "" {
		model = "gpt-fake"
	}
	if output == nil {
		output = []openaiItem{}
	}
	r := map[string]any{"id": id, "object": "response", "created_at": 0, "status": status, "model": model, "output": output}
	if status == "completed" {
		r["usage"] = openaiUsage()
	}
	return r
}

// openaiStream writes items as the Responses API's event stream:
// response.created and response.in_progress; per item
// response.output_item.added (the item in progress, empty), its deltas
// (response.function_call_arguments.delta/done, response.custom_tool_call_input.delta/done,
// or response.content_part.added, response.output_text.delta/done,
// response.content_part.done), response.output_item.done (the whole item);
// then response.completed with usage. Each event is "event: TYPE" and
// "data: JSON" with a sequence_number.
func openaiStream(w http.ResponseWriter, model string, items []openaiItem) {
	id := openaiID("resp_")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("x-request-id", id)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	seq := 0
	event := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, openaiMarshal(fields))
		if fl != nil {
			fl.Flush()
		}
	}
	event("response.created", map[string]any{"response": openaiResponse(id, model, "in_progress", nil)})
	event("response.in_progress", map[string]any{"response": openaiResponse(id, model, "in_progress", nil)})
	for i, it := range items {
		added := it
		added.Status = "in_progress"
		switch it.Type {
		case "function_call":
			added.Arguments = ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, part := range openaiHalves(it.Arguments) {
				event("response.function_call_arguments.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": part})
			}
			event("response.function_call_arguments.done", map[string]any{"item_id": it.ID, "output_index": i, "arguments": it.Arguments})
		case "custom_tool_call":
			added.Input = ""
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			for _, part := range openaiHalves(it.Input) {
				event("response.custom_tool_call_input.delta", map[string]any{"item_id": it.ID, "output_index": i, "delta": part})
			}
			event("response.custom_tool_call_input.done", map[string]any{"item_id": it.ID, "output_index": i, "input": it.Input})
		case "message":
			added.Content = json.RawMessage("[]")
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
			text := openaiMessageText(it.Content)
			event("response.content_part.added", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			event("response.output_text.delta", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "delta": text})
			event("response.output_text.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0, "text": text})
			event("response.content_part.done", map[string]any{"item_id": it.ID, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		default:
			event("response.output_item.added", map[string]any{"output_index": i, "item": added})
		}
		event("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	event("response.completed", map[string]any{"response": openaiResponse(id, model, "completed", items)})
}

// openaiJSON answers a non-streaming request with the whole response.
func openaiJSON(w http.ResponseWriter, model string, items []openaiItem) {
	id := openaiID("resp_")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", id)
	json.NewEncoder(w).Encode(openaiResponse(id, model, "completed", items))
}

// openaiHalves splits s in two (the API streams arguments in pieces).
func openaiHalves(s string) []string {
	cut := len(s) / 2
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return []string{s[:cut], s[cut:]}
}

func openaiError(w http.ResponseWriter, code int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "code": typ, "message": message, "param": nil}})
}

// openaiMessageText joins a message's text parts (output_text,
// input_text, text).
func openaiMessageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// OpenAIExchange is one tool call the fake model asked for, as the harness
// echoed it back, and the output the harness sent for it.
type OpenAIExchange struct {
	CallID string
	// Type is function_call, custom_tool_call or local_shell_call.
	Type string
	Name string
	// Arguments is a function call's arguments (JSON) or a custom tool
	// call's input.
	Arguments string
	// Answered is true when an output item for CallID was sent.
	Answered bool
	// Output is the output as text: a string output as is, a list of
	// content items as their texts joined by newlines, anything else as
	// its JSON.
	Output string
}

// OpenAITranscript reads recorded Responses request bodies (Requests) and
// returns the tool calls of the longest conversation among the requests
// that offered tools (the main agent loop), in order, each with the output
// the harness sent back for it.
func OpenAITranscript(bodies [][]byte) []OpenAIExchange {
	var best *openaiRequest
	for _, b := range bodies {
		var req openaiRequest
		if json.Unmarshal(b, &req) != nil || len(req.Tools) == 0 {
			continue
		}
		if best == nil || len(req.Input) >= len(best.Input) {
			r := req
			best = &r
		}
	}
	if best == nil {
		return nil
	}
	var out []OpenAIExchange
	idx := map[string]int{}
	for _, raw := range best.Input {
		var it openaiItem
		if json.Unmarshal(raw, &it) != nil {
			continue
		}
		switch {
		case openaiIsCall(it.Type):
			args := it.Arguments
			if it.Type == "custom_tool_call" {
				args = it.Input
			}
			idx[it.CallID] = len(out)
			out = append(out, OpenAIExchange{CallID: it.CallID, Type: it.Type, Name: it.Name, Arguments: args})
		case strings.HasSuffix(it.Type, "_call_output"):
			i, ok := idx[it.CallID]
			if !ok {
				continue
			}
			out[i].Answered = true
			out[i].Output = openaiOutputText(it.Output)
		}
	}
	return out
}

// openaiOutputText flattens a tool output: a string, a list of content
// items ({"type":"input_text","text":...}), or an object with a string
// "content" or "output".
func openaiOutputText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []map[string]any
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			if t, ok := p["text"].(string); ok {
				out = append(out, t)
			} else {
				j, _ := json.Marshal(p)
				out = append(out, string(j))
			}
		}
		return strings.Join(out, "\n")
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) == nil {
		for _, k := range []string{"content", "output"} {
			if t, ok := obj[k].(string); ok {
				return t
			}
		}
	}
	return string(raw)
}

// OpenAIToolNames returns the names of the tools offered in the recorded
// requests, in the order first seen; a tool without a name (a hosted tool
// such as web_search) is listed as "type:TYPE".
func OpenAIToolNames(bodies [][]byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range bodies {
		var req openaiRequest
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, t := range req.Tools {
			n := t.Name
			if n == "" {
				n = "type:" + t.Type
			}
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// OpenAITools returns, for each tool name offered in the recorded
// requests, its type (function, custom, ...).
func OpenAITools(bodies [][]byte) map[string]string {
	out := map[string]string{}
	for _, b := range bodies {
		var req openaiRequest
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, t := range req.Tools {
			if t.Name != "" {
				out[t.Name] = t.Type
			}
		}
	}
	return out
}
