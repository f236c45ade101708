package proxy_test

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/proxy"
)

// heldWriter holds the first audit line that contains hold until release
// is closed, and says on held when it starts holding it.
type heldWriter struct {
	hold    string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	b       bytes.Buffer
}

func (w *heldWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(w.hold)) {
		w.once.Do(func() { close(w.held); <-w.release })
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *heldWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestCloseWritesInflightLines: a plain-HTTP request the client has read
// whole has its line on the audit before Close returns, even when the line
// is still being written as Close begins. sandboxd closes its audit stream
// right after Close; before, such a line came after it and was lost ("file
// already closed" in a CI run, the request missing from the audit).
func TestCloseWritesInflightLines(t *testing.T) {
	w := &heldWriter{hold: `"kind":"http"`, held: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, defaultPolicy(), func(c *proxy.Config) { c.Audit = slog.New(slog.NewJSONHandler(w, nil)) })
	resp, err := e.client().Get("http://allowed.test:" + e.hport + "/a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-w.held // the request's line is being written
	closed := make(chan struct{})
	go func() { e.srv.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while the request's line was still being written")
	case <-time.After(200 * time.Millisecond):
	}
	close(w.release)
	<-closed
	if !strings.Contains(w.String(), `"kind":"http"`) || !strings.Contains(w.String(), "allowed.test") {
		t.Fatalf("the request's line is not on the audit:\n%s", w.String())
	}
}
