package hooks

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Benchmarks of the in-process work of one hookgate check (the process
// start is measured by cmd/hookgate's BenchmarkLatency).

func BenchmarkLoadPolicy(b *testing.B) {
	for b.Loop() {
		if _, err := LoadPolicy("testdata/policies/guarded.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile("testdata/fixtures/claude-code/pretooluse-bash-compound-pipe-to-sh.json")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Decode(ClaudeCode, data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRuleBash(b *testing.B) {
	s, err := LoadPolicy("testdata/policies/guarded.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s.Home = "/home/dev"
	e, err := NewEngine(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	c := call(ClaudeCode, "Bash", map[string]any{"command": "go test ./... && git status"})
	for b.Loop() {
		if d := e.Rule(context.Background(), c); d.Verdict != 1 {
			b.Fatal(d)
		}
	}
}

// BenchmarkServerRoundTrip is one hookgate socket ruling as the server sees
// it: dial, send a Bash call, read the ruling, close.
func BenchmarkServerRoundTrip(b *testing.B) {
	s, err := LoadPolicy("testdata/policies/guarded.yaml")
	if err != nil {
		b.Fatal(err)
	}
	e, err := NewEngine(s, nil)
	if err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := ListenUnix(filepath.Join(dir, "s"))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(e, nil).Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	src := ClientSource{Addr: filepath.Join(dir, "s")}
	c := call(ClaudeCode, "Bash", map[string]any{"command": "go test ./... && git status"})
	for b.Loop() {
		r, err := src.Open(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if d, err := r.Rule(ctx, c); err != nil || d.Verdict != 1 {
			b.Fatal(d, err)
		}
		r.(*Client).Close()
	}
}
