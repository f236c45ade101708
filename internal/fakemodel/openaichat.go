package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// OpenAIChatFinalText is the text of the fake model's last turn, once its
// tool calls have run out.
const OpenAIChatFinalText = "fakemodel: done"

// OpenAIChatKey is the API key CopilotEnv gives Copilot (the fake accepts
// any bearer token).
const OpenAIChatKey = "fakemodel-key"

// OpenAIChatOptions tune the fake Chat Completions server.
type OpenAIChatOptions struct {
	// Logf, when set, is told about every request that is not a model turn
	// (unknown paths) and about side requests (a request without tools). It
	// may be called from the server's goroutines.
	Logf func(format string, args ...any)
}

// OpenAIChat serves the OpenAI Chat Completions API (POST
// /v1/chat/completions, streaming as Server-Sent Events
// "data: {chat.completion.chunk}" ... "data: [DONE]", or one
// chat.completion object when the request does not stream) on loopback,
// as GitHub Copilot CLI consumes it in BYOK mode
// (COPILOT_PROVIDER_TYPE=openai, the default "completions" wire API). A
// request that offers tools gets the next tool call of calls, one per
// turn, as choices[0].delta.tool_calls with finish_reason "tool_calls",
// then a text turn (OpenAIChatFinalText, finish_reason "stop") once calls
// run out. The turn is the number of tool-result messages ({"role":
// "tool"}) already in the request's messages (Copilot sends the whole
// conversation every turn), so a retry or a side request does not skip a
// call. A request without tools gets a short text answer. GET /v1/models
// gets a small listing (Copilot 1.0.102 does not ask for it). Every
// chat/completions body is recorded (Requests); OpenAIChatTranscript reads
// the tool results back out of them.
func OpenAIChat(calls []ToolCall) (*Server, error) {
	return OpenAIChatWith(calls, OpenAIChatOptions{})
}

// OpenAIChatWith is OpenAIChat with options.
func OpenAIChatWith(calls []ToolCall, opt OpenAIChatOptions) (*Server, error) {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	// s is set once start returns; ready orders that before any handler
	// reads it.
	var s *Server
	ready := make(chan struct{})
	completions := func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			openaiError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" not allowed")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			openaiError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		<-ready
		s.record(body)
		var req chatRequest
		if err := json.Unmarshal(body, &req); err != nil {
			openaiError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
			return
		}
		if len(req.Tools) == 0 {
			logf("fakemodel: side request (model %s, stream %v, no tools): answered with text", req.Model, req.Stream)
		}
		msg, finish := chatReply(calls, &req)
		if !req.Stream {
			chatJSON(w, req.Model, msg, finish)
			return
		}
		chatStream(w, req.Model, msg, finish, req.StreamOptions.IncludeUsage)
	}
	models := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "gpt-4.1", "object": "model", "created": 0, "owned_by": "fakemodel"},
			map[string]any{"id": "gpt-fake", "object": "model", "created": 0, "owned_by": "fakemodel"},
		}})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", completions)
	mux.HandleFunc("/chat/completions", completions)
	mux.HandleFunc("GET /v1/models", models)
	mux.HandleFunc("GET /models", models)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		logf("fakemodel: unknown request %s %s (%d bytes): 404", r.Method, r.URL.RequestURI(), len(body))
		openaiError(w, http.StatusNotFound, "not_found", "fakemodel: no such endpoint "+r.URL.Path)
	})
	s, err := start(mux)
	close(ready)
	return s, err
}

// CopilotEnv returns the environment (KEY=VALUE) that points GitHub
// Copilot CLI at s in BYOK mode: provider type openai with base URL
// URL/v1, the given model (gpt-4.1 when empty), an API key, offline mode
// (no GitHub login, telemetry, web tools or update checks) and no auto
// update. Add HOME, COPILOT_HOME and the flags (-p PROMPT --yolo
// --no-auto-update --disable-client-telemetry) yourself.
func (s *Server) CopilotEnv(model string) []string {
	if model == "" {
		model = "gpt-4.1"
	}
	return []string{
		"COPILOT_PROVIDER_BASE_URL=" + s.URL + "/v1",
		"COPILOT_PROVIDER_TYPE=openai",
		"COPILOT_PROVIDER_API_KEY=" + OpenAIChatKey,
		"COPILOT_MODEL=" + model,
		"COPILOT_OFFLINE=true",
		"COPILOT_AUTO_UPDATE=false",
	}
}

// chatRequest is the part of a Chat Completions request the fake reads.
type chatRequest struct {
	Model         string        `json:"model"`
	Stream        bool          `json:"stream"`
	Messages      []chatMessage `json:"messages"`
	Tools         []chatTool    `json:"tools"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// chatTool is one entry of a request's tools
// ({"type":"function","function":{"name":...,"parameters":...}}).
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// chatMessage is one message of a request, or the fake's answer.
type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// chatReply picks one turn's answer: the next tool call, or the final
// text; and its finish_reason.
func chatReply(calls []ToolCall, req *chatRequest) (chatMessage, string) {
	turn := 0
	for _, m := range req.Messages {
		if m.Role == "tool" {
			turn++
		}
	}
	if len(req.Tools) > 0 && turn < len(calls) {
		c := calls[turn]
		args := openaiMarshal(c.Input)
		if c.Input == nil {
			args = []byte("{}")
		}
		var tc chatToolCall
		tc.ID = fmt.Sprintf("call_fake%d_%s", turn, openaiID("")[:8])
		tc.Type = "function"
		tc.Function.Name = c.Name
		tc.Function.Arguments = string(args)
		return chatMessage{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chatToolCall{tc}}, "tool_calls"
	}
	text := OpenAIChatFinalText
	if len(req.Tools) == 0 {
		text = "fakemodel"
	}
	return chatMessage{Role: "assistant", Content: openaiMarshal(text)}, "stop"
}

func chatUsage() map[string]any {
	return map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
}

// chatStream writes msg as Chat Completions chunks: a first chunk with the
// role (and, for a tool call, its id, type and name with empty
// arguments), the arguments or the text in two deltas, a chunk with the
// finish_reason, a usage chunk with no choices when the request asked for
// it (stream_options.include_usage), then "data: [DONE]".
func chatStream(w http.ResponseWriter, model string, msg chatMessage, finish string, usage bool) {
	if model == "" {
		model = "gpt-fake"
	}
	id := openaiID("chatcmpl-")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("x-request-id", id)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(choices []any, extra map[string]any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 0, "model": model, "choices": choices}
		for k, v := range extra {
			c[k] = v
		}
		fmt.Fprintf(w, "data: %s\n\n", openaiMarshal(c))
		if fl != nil {
			fl.Flush()
		}
	}
	delta := func(d map[string]any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": nil}}
	}
	if len(msg.ToolCalls) > 0 {
		tc := msg.ToolCalls[0]
		send(delta(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
			"index": 0, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": ""}}}}), nil)
		for _, part := range openaiHalves(tc.Function.Arguments) {
			send(delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": 0, "function": map[string]any{"arguments": part}}}}), nil)
		}
	} else {
		send(delta(map[string]any{"role": "assistant", "content": ""}), nil)
		var text string
		json.Unmarshal(msg.Content, &text)
		for _, part := range openaiHalves(text) {
			send(delta(map[string]any{"content": part}), nil)
		}
	}
	send([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, nil)
	if usage {
		send([]any{}, map[string]any{"usage": chatUsage()})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// chatJSON answers a non-streaming request with one chat.completion.
func chatJSON(w http.ResponseWriter, model string, msg chatMessage, finish string) {
	if model == "" {
		model = "gpt-fake"
	}
	id := openaiID("chatcmpl-")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", id)
	json.NewEncoder(w).Encode(map[string]any{
		"id": id, "object": "chat.completion", "created": 0, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   chatUsage(),
	})
}

// OpenAIChatExchange is one tool call the fake model asked for, as the
// harness echoed it back in its history, and the tool message the harness
// sent for it.
type OpenAIChatExchange struct {
	CallID string
	Name   string
	// Arguments is the call's arguments (JSON), as echoed back.
	Arguments string
	// Answered is true when a tool message for CallID was sent.
	Answered bool
	// Output is the tool message's content as text: a string as is, a
	// list of content parts as their texts joined by newlines.
	Output string
}

// OpenAIChatTranscript reads recorded Chat Completions request bodies
// (Requests) and returns the tool calls of the longest conversation among
// the requests that offered tools (the main agent loop), in order, each
// with the output the harness sent back for it.
func OpenAIChatTranscript(bodies [][]byte) []OpenAIChatExchange {
	var best *chatRequest
	for _, b := range bodies {
		var req chatRequest
		if json.Unmarshal(b, &req) != nil || len(req.Tools) == 0 {
			continue
		}
		if best == nil || len(req.Messages) >= len(best.Messages) {
			r := req
			best = &r
		}
	}
	if best == nil {
		return nil
	}
	var out []OpenAIChatExchange
	idx := map[string]int{}
	for _, m := range best.Messages {
		switch m.Role {
		case "assistant":
			for _, tc := range m.ToolCalls {
				idx[tc.ID] = len(out)
				out = append(out, OpenAIChatExchange{CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
		case "tool":
			i, ok := idx[m.ToolCallID]
			if !ok {
				continue
			}
			out[i].Answered = true
			out[i].Output = chatContentText(m.Content)
		}
	}
	return out
}

// chatContentText flattens a message's content: a string, or a list of
// parts ({"type":"text","text":...}); anything else as its JSON.
func chatContentText(raw json.RawMessage) string {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
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
				out = append(out, string(openaiMarshal(p)))
			}
		}
		return strings.Join(out, "\n")
	}
	return string(raw)
}

// OpenAIChatToolNames returns the names of the function tools offered in
// the recorded requests, in the order first seen.
func OpenAIChatToolNames(bodies [][]byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range bodies {
		var req chatRequest
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, t := range req.Tools {
			if n := t.Function.Name; n != "" && !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// OpenAIChatToolParams returns, for each function tool offered in the
// recorded requests, the names of its parameters' properties in the order
// the request's JSON schema lists them (empty when it has none).
func OpenAIChatToolParams(bodies [][]byte) map[string][]string {
	out := map[string][]string{}
	for _, b := range bodies {
		var req chatRequest
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, t := range req.Tools {
			n := t.Function.Name
			if n == "" {
				continue
			}
			if _, ok := out[n]; ok {
				continue
			}
			out[n] = schemaPropertyNames(t.Function.Parameters)
		}
	}
	return out
}

// schemaPropertyNames lists the keys of a JSON schema's "properties" in
// the order they appear.
func schemaPropertyNames(schema json.RawMessage) []string {
	var top map[string]json.RawMessage
	if json.Unmarshal(schema, &top) != nil {
		return []string{}
	}
	props, ok := top["properties"]
	if !ok {
		return []string{}
	}
	dec := json.NewDecoder(bytes.NewReader(props))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return []string{}
	}
	out := []string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		k, _ := tok.(string)
		out = append(out, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return out
}
