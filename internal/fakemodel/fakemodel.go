// Package fakemodel serves fake model APIs on loopback, so that tests can
// drive the real harness CLIs (Claude Code, Codex, Gemini CLI) without a
// network: each server speaks one vendor's streaming API, asks for the tool
// calls it was given, one per turn, then answers with plain text, and
// records every request the harness sent (so a test can read the tool
// results the harness sent back to the model).
package fakemodel

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
)

// ToolCall is one tool call the fake model asks for.
type ToolCall struct {
	Name  string
	Input map[string]any
}

// Server is a fake model API on 127.0.0.1. Its vendor file (anthropic.go,
// openai.go, gemini.go) sets the handler.
type Server struct {
	// URL is the base URL (http://127.0.0.1:PORT).
	URL string

	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	requests [][]byte
	received []string
}

// start serves h on a new loopback listener, noting every request
// (Received) before h reads it.
func start(h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), ln: ln}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.received = append(s.received, r.Method+" "+r.URL.RequestURI()+"\n"+string(body))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})}
	go s.srv.Serve(ln)
	return s, nil
}

// record keeps one request body.
func (s *Server) record(body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, append([]byte(nil), body...))
}

// Requests returns the bodies of the model requests received so far.
func (s *Server) Requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.requests...)
}

// Received returns every request the server got so far, on any path
// (model turns, side requests, token counts, probes), each as its method,
// URI and body: what a test searches for text that must never reach the
// model's vendor. Safe for concurrent use.
func (s *Server) Received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.received...)
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }
