package fakemodel

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// AnthropicFinalText is the text of the fake model's last turn, once its
// tool calls have run out.
const AnthropicFinalText = "fakemodel: done"

// AnthropicOptions tune Anthropic's fake server.
type AnthropicOptions struct {
	// Logf, when set, is told about every request that is not a model turn
	// (count_tokens, unknown paths) and about side requests (a request
	// without tools, such as a title or summary). It may be called from
	// the server's goroutines.
	Logf func(format string, args ...any)
}

// Anthropic serves the Anthropic Messages API (POST /v1/messages,
// streaming as Server-Sent Events, or a plain JSON message) on loopback.
// A request that offers tools gets the next tool call of calls, one per
// turn (the turn is the number of tool_use blocks already in the request's
// messages, so retries and side requests do not skip a call), then a text
// turn with stop_reason end_turn once calls run out. A request without
// tools (a title, a summary, a quota probe) gets a short text answer.
// POST /v1/messages/count_tokens gets a token estimate and /api/hello (a
// connectivity check) a 200; anything else a 404 in the API's error shape.
// Every /v1/messages body is recorded (Requests).
func Anthropic(calls []ToolCall) (*Server, error) {
	return AnthropicWith(calls, AnthropicOptions{})
}

// AnthropicWith is Anthropic with options.
func AnthropicWith(calls []ToolCall, opt AnthropicOptions) (*Server, error) {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	// s is set once start returns; ready orders that before any handler
	// reads it.
	var s *Server
	ready := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			anthropicError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method "+r.Method+" not allowed")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
			return
		}
		<-ready
		s.record(body)
		var req anthropicRequest
		if err := json.Unmarshal(body, &req); err != nil {
			anthropicError(w, http.StatusBadRequest, "invalid_request_error", "body: "+err.Error())
			return
		}
		msg := anthropicReply(calls, &req)
		if len(req.Tools) == 0 {
			logf("fakemodel: side request (model %s, stream %v, no tools): answered with text", req.Model, req.Stream)
		}
		if req.Stream {
			anthropicStream(w, msg)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("request-id", msg.ID)
		json.NewEncoder(w).Encode(msg)
	})
	mux.HandleFunc("/v1/messages/count_tokens", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		logf("fakemodel: %s %s (%d bytes)", r.Method, r.URL.Path, len(body))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, 1+len(body)/4)
	})
	// Claude Code's connectivity check (HEAD /api/hello), sent when
	// nonessential traffic is not disabled.
	mux.HandleFunc("/api/hello", func(w http.ResponseWriter, r *http.Request) {
		logf("fakemodel: %s %s: 200", r.Method, r.URL.RequestURI())
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		logf("fakemodel: unknown request %s %s (%d bytes): 404", r.Method, r.URL.RequestURI(), len(body))
		anthropicError(w, http.StatusNotFound, "not_found_error", "fakemodel: no such endpoint "+r.URL.Path)
	})
	s, err := start(mux)
	close(ready)
	return s, err
}

// anthropicRequest is the part of a Messages request the fake reads.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// anthropicBlock is a content block, in a request or a response.
type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// anthropicMessage is a response message (the non-streaming body, and the
// model of the stream's events).
type anthropicMessage struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

// blocks decodes a message's content: a string or a list of blocks.
func anthropicBlocks(raw json.RawMessage) []anthropicBlock {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}
	}
	var bs []anthropicBlock
	json.Unmarshal(raw, &bs)
	return bs
}

func anthropicID(prefix string) string {
	b := make([]byte, 12)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// anthropicReply picks the answer to one request.
func anthropicReply(calls []ToolCall, req *anthropicRequest) anthropicMessage {
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	msg := anthropicMessage{
		ID: anthropicID("msg_01"), Type: "message", Role: "assistant", Model: model,
		Usage: anthropicUsage{InputTokens: 10, OutputTokens: 5},
	}
	turn := 0
	for _, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range anthropicBlocks(m.Content) {
			if b.Type == "tool_use" {
				turn++
			}
		}
	}
	if len(req.Tools) > 0 && turn < len(calls) {
		input, _ := json.Marshal(calls[turn].Input)
		if calls[turn].Input == nil {
			input = []byte("{}")
		}
		msg.Content = []anthropicBlock{{Type: "tool_use", ID: anthropicID("toolu_01"), Name: calls[turn].Name, Input: input}}
		msg.StopReason = "tool_use"
		return msg
	}
	text := AnthropicFinalText
	if len(req.Tools) == 0 {
		text = "fakemodel"
	}
	msg.Content = []anthropicBlock{{Type: "text", Text: text}}
	msg.StopReason = "end_turn"
	return msg
}

// anthropicStream writes msg as the Messages API's event stream:
// message_start (the message with empty content), per block
// content_block_start, content_block_delta (text_delta or
// input_json_delta) and content_block_stop, then message_delta (stop
// reason and output usage) and message_stop, with a ping after the start.
func anthropicStream(w http.ResponseWriter, msg anthropicMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("request-id", msg.ID)
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	event := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	start := msg
	start.Content = []anthropicBlock{}
	start.StopReason = ""
	start.Usage.OutputTokens = 1
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": start.ID, "type": "message", "role": "assistant", "model": start.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": start.Usage.InputTokens, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}})
	event("ping", map[string]any{"type": "ping"})
	for i, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			// The input in two pieces, as the API sends partial JSON.
			js := string(b.Input)
			cut := len(js) / 2
			for _, part := range []string{js[:cut], js[cut:]} {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": msg.Usage.OutputTokens}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func anthropicError(w http.ResponseWriter, code int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}

// AnthropicExchange is one tool call the fake model asked for, as the
// harness echoed it back, and the result the harness sent for it.
type AnthropicExchange struct {
	ID    string
	Name  string
	Input json.RawMessage
	// Answered is true when a tool_result for ID was sent.
	Answered bool
	// Result is the tool_result's content as text (text blocks joined by
	// newlines; a non-text block as its JSON).
	Result  string
	IsError bool
}

// AnthropicTranscript reads recorded Messages request bodies (Requests)
// and returns the tool calls of the longest conversation among the
// requests that offered tools (the main agent loop), in order, each with
// the tool_result the harness sent back for it.
func AnthropicTranscript(bodies [][]byte) []AnthropicExchange {
	var best *anthropicRequest
	for _, b := range bodies {
		var req anthropicRequest
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
	var out []AnthropicExchange
	idx := map[string]int{}
	for _, m := range best.Messages {
		for _, b := range anthropicBlocks(m.Content) {
			switch {
			case m.Role == "assistant" && b.Type == "tool_use":
				idx[b.ID] = len(out)
				out = append(out, AnthropicExchange{ID: b.ID, Name: b.Name, Input: b.Input})
			case m.Role == "user" && b.Type == "tool_result":
				i, ok := idx[b.ToolUseID]
				if !ok {
					continue
				}
				out[i].Answered = true
				out[i].IsError = b.IsError
				out[i].Result = anthropicResultText(b.Content)
			}
		}
	}
	return out
}

// anthropicResultText flattens a tool_result's content.
func anthropicResultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []string
	for _, b := range anthropicBlocks(raw) {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			j, _ := json.Marshal(b)
			parts = append(parts, string(j))
		}
	}
	return strings.Join(parts, "\n")
}

// AnthropicToolNames returns the names of the tools offered in the
// recorded requests, in the order first seen.
func AnthropicToolNames(bodies [][]byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range bodies {
		var req anthropicRequest
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, t := range req.Tools {
			if !seen[t.Name] {
				seen[t.Name] = true
				out = append(out, t.Name)
			}
		}
	}
	return out
}
