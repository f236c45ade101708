package fakemodel

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
)

// GeminiFinalText is the text the fake Gemini model answers with once
// every tool call has been asked for.
const GeminiFinalText = "fakemodel: done"

// GeminiOptions adjust the fake Gemini API.
type GeminiOptions struct {
	// Logf reports requests the server does not know (log.Printf when nil).
	Logf func(format string, args ...any)
}

// Gemini serves the Gemini API (generativelanguage v1beta, the way
// @google/genai calls it) as Gemini CLI uses it with an API key and
// GOOGLE_GEMINI_BASE_URL pointing here:
//
//   - POST /v1beta/models/{model}:streamGenerateContent?alt=sse, the agent
//     loop: Server-Sent Events, one "data: {GenerateContentResponse}" event.
//     A request whose contents hold n functionResponse parts is answered
//     with calls[n] as candidates[0].content.parts[{functionCall:{name,
//     args}}] and finishReason STOP, or, once every call has been asked
//     for, with GeminiFinalText. The turn is read from the request, not
//     counted on the server, so Gemini CLI's retries and side requests do
//     not shift it.
//   - POST /v1beta/models/{model}:generateContent (not streamed): the same
//     turn logic, except that a JSON-mode request (the CLI's side requests:
//     next-speaker check, loop detection, model routing) gets an object
//     saying "no loop, the user speaks next, use flash".
//   - POST /v1beta/models/{model}:countTokens: a rough count.
//   - POST :embedContent / :batchEmbedContents: zero vectors.
//   - GET /v1beta/models and /v1beta/models/{model}: a small listing.
//
// Every generateContent and streamGenerateContent body is recorded (see
// Requests, GeminiTranscript and GeminiToolNames). Anything else is logged
// and answered 404 in the API's error shape.
func Gemini(calls []ToolCall) (*Server, error) { return GeminiWith(calls, GeminiOptions{}) }

// GeminiWith is Gemini with options.
func GeminiWith(calls []ToolCall, opt GeminiOptions) (*Server, error) {
	logf := opt.Logf
	if logf == nil {
		logf = log.Printf
	}
	var s *Server
	ready := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-ready // s is set
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		path := r.URL.Path
		for _, v := range []string{"/v1beta", "/v1alpha", "/v1"} {
			if strings.HasPrefix(path, v+"/") {
				path = strings.TrimPrefix(path, v)
				break
			}
		}
		rest, isModels := strings.CutPrefix(path, "/models/")
		model, method, hasMethod := strings.Cut(rest, ":")
		switch {
		case r.Method == http.MethodGet && (path == "/models" || path == "/models/"):
			var ms []any
			for _, m := range []string{"gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite", "gemini-3-pro-preview", "gemini-3-flash-preview"} {
				ms = append(ms, geminiModel(m))
			}
			geminiJSON(w, map[string]any{"models": ms})
		case r.Method == http.MethodGet && isModels && !hasMethod:
			geminiJSON(w, geminiModel(model))
		case r.Method == http.MethodPost && isModels && method == "streamGenerateContent":
			s.record(body)
			b, _ := json.Marshal(geminiTurn(calls, body))
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		case r.Method == http.MethodPost && isModels && method == "generateContent":
			s.record(body)
			var req geminiRequest
			json.Unmarshal(body, &req)
			g := req.GenerationConfig
			if strings.Contains(g.ResponseMimeType, "json") || len(g.ResponseJSONSchema) > 0 || len(g.ResponseSchema) > 0 {
				geminiJSON(w, geminiText(geminiSideAnswer))
				return
			}
			geminiJSON(w, geminiTurn(calls, body))
		case r.Method == http.MethodPost && isModels && method == "countTokens":
			geminiJSON(w, map[string]any{"totalTokens": len(body)/4 + 1})
		case r.Method == http.MethodPost && isModels && method == "embedContent":
			geminiJSON(w, map[string]any{"embedding": map[string]any{"values": make([]float64, 8)}})
		case r.Method == http.MethodPost && isModels && method == "batchEmbedContents":
			var req struct {
				Requests []json.RawMessage `json:"requests"`
			}
			json.Unmarshal(body, &req)
			embs := make([]any, len(req.Requests))
			for i := range embs {
				embs[i] = map[string]any{"values": make([]float64, 8)}
			}
			geminiJSON(w, map[string]any{"embeddings": embs})
		default:
			logf("fakemodel gemini: unhandled %s %s (%d bytes)", r.Method, r.URL.String(), len(body))
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
				"code": 404, "status": "NOT_FOUND", "message": "fakemodel: no such method " + r.URL.Path}})
		}
	})
	var err error
	s, err = start(h)
	close(ready)
	return s, err
}

// geminiSideAnswer answers the CLI's JSON-mode side requests: the
// next-speaker check ("user": stop), loop detection (no loop), the model
// router (the flash model).
const geminiSideAnswer = `{"reasoning":"fakemodel","next_speaker":"user","model_choice":"flash",` +
	`"unproductive_state_confidence":0,"unproductive_state_analysis":"none","complexity_score":1}`

type geminiPart struct {
	Text             string          `json:"text,omitempty"`
	FunctionCall     json.RawMessage `json:"functionCall,omitempty"`
	FunctionResponse json.RawMessage `json:"functionResponse,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents []geminiContent `json:"contents"`
	Tools    []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// geminiTurn answers one agent-loop request: the next tool call, or the
// final text.
func geminiTurn(calls []ToolCall, body []byte) map[string]any {
	var req geminiRequest
	json.Unmarshal(body, &req)
	n := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 && string(p.FunctionResponse) != "null" {
				n++
			}
		}
	}
	if n >= len(calls) {
		return geminiText(GeminiFinalText)
	}
	args := calls[n].Input
	if args == nil {
		args = map[string]any{}
	}
	return geminiResponse([]any{map[string]any{"functionCall": map[string]any{"name": calls[n].Name, "args": args}}})
}

func geminiText(text string) map[string]any {
	return geminiResponse([]any{map[string]any{"text": text}})
}

func geminiResponse(parts []any) map[string]any {
	return map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
		"modelVersion":  "fakemodel",
		"responseId":    "fakemodel",
	}
}

func geminiModel(name string) map[string]any {
	name = strings.TrimPrefix(name, "models/")
	return map[string]any{
		"name": "models/" + name, "version": "001", "displayName": name,
		"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
		"supportedGenerationMethods": []string{"generateContent", "streamGenerateContent", "countTokens"},
	}
}

func geminiJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// GeminiExchange is one function call the fake model asked for, as the
// harness echoed it back in its history, and the function response the
// harness sent for it.
type GeminiExchange struct {
	ID   string
	Name string
	Args json.RawMessage
	// Answered is true when a functionResponse followed the call.
	Answered bool
	// Response is the functionResponse's response object (Gemini CLI
	// sends {"output": TEXT} or {"error": TEXT}).
	Response json.RawMessage
}

// Text returns the response's "output" and "error" strings (or the raw
// object when it has neither), joined by newlines.
func (e GeminiExchange) Text() string {
	var m map[string]any
	if json.Unmarshal(e.Response, &m) != nil {
		return string(e.Response)
	}
	var parts []string
	for _, k := range []string{"output", "error"} {
		if s, ok := m[k].(string); ok {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return string(e.Response)
	}
	return strings.Join(parts, "\n")
}

// GeminiTranscript reads recorded request bodies (Requests) and returns
// the function calls of the longest conversation among the requests that
// offered tools (the main agent loop), in order, each with the function
// response the harness sent back for it (matched by id, else by order).
func GeminiTranscript(bodies [][]byte) []GeminiExchange {
	var best *geminiRequest
	for _, b := range bodies {
		var req geminiRequest
		if json.Unmarshal(b, &req) != nil || len(req.Tools) == 0 {
			continue
		}
		if best == nil || len(req.Contents) >= len(best.Contents) {
			r := req
			best = &r
		}
	}
	if best == nil {
		return nil
	}
	var out []GeminiExchange
	for _, c := range best.Contents {
		for _, p := range c.Parts {
			switch {
			case len(p.FunctionCall) > 0:
				var fc struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				}
				json.Unmarshal(p.FunctionCall, &fc)
				out = append(out, GeminiExchange{ID: fc.ID, Name: fc.Name, Args: fc.Args})
			case len(p.FunctionResponse) > 0:
				var fr struct {
					ID       string          `json:"id"`
					Name     string          `json:"name"`
					Response json.RawMessage `json:"response"`
				}
				json.Unmarshal(p.FunctionResponse, &fr)
				i := -1
				for j := range out {
					if !out[j].Answered && (fr.ID != "" && out[j].ID == fr.ID || fr.ID == "" && out[j].Name == fr.Name) {
						i = j
						break
					}
				}
				if i < 0 {
					continue
				}
				out[i].Answered = true
				out[i].Response = fr.Response
			}
		}
	}
	return out
}

// GeminiToolNames returns the names of the function declarations offered
// in the recorded requests, in the order first seen.
func GeminiToolNames(bodies [][]byte) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range bodies {
		var req geminiRequest
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, t := range req.Tools {
			for _, f := range t.FunctionDeclarations {
				if !seen[f.Name] {
					seen[f.Name] = true
					out = append(out, f.Name)
				}
			}
		}
	}
	return out
}
