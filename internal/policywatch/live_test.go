package policywatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

type testPolicy struct{ domain, fp string }

func (p *testPolicy) Fingerprint() string { return p.fp }

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// TestLive: applied changes reach every enforcer in order and are audited
// with both fingerprints; a broken edit, a compile error and an enforcer's
// error keep the last good policy and are audited as denied; Reload reports
// an unchanged policy.
func TestLive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "policy.yaml")
	write := func(domain string) {
		t.Helper()
		body := watchBase + "session: {bound: {network: {enforce: sandbox, allowDomains: [" + domain + "]}}}\n"
		if domain == "" {
			body = watchBase + "session: {bound: {network: {actoins: [write]}}}\n"
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.example")
	var logs syncBuffer
	var mu sync.Mutex
	var got []string
	refused, applied := make(chan error, 8), make(chan *testPolicy, 8)
	live := &Live[*testPolicy]{
		Log: slog.New(slog.NewJSONHandler(&logs, nil)),
		Compile: func(r *policy.Resolved) (*testPolicy, error) {
			d := r.Bound.Network.AllowDomains[0]
			if d == "bad-compile.example" {
				return nil, errors.New("does not compile")
			}
			return &testPolicy{domain: d, fp: r.Fingerprint}, nil
		},
		Enforcers: []func(*testPolicy) error{
			func(p *testPolicy) error {
				if p.domain == "bad-enforcer.example" {
					return errors.New("enforcer refuses")
				}
				mu.Lock()
				got = append(got, "first:"+p.domain)
				mu.Unlock()
				return nil
			},
			func(p *testPolicy) error {
				mu.Lock()
				got = append(got, "second:"+p.domain)
				mu.Unlock()
				return nil
			},
		},
		Refused: func(err error) { refused <- err },
		Applied: func(_, cur *testPolicy) { applied <- cur },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := live.Watch(ctx, p, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	first := &testPolicy{domain: "a.example", fp: r.Fingerprint}
	live.Set(first)
	go live.Serve(ctx)
	wait := func(what string) {
		t.Helper()
		select {
		case cur := <-applied:
			if what != "applied:"+cur.domain {
				t.Fatalf("want %s, got applied %s", what, cur.domain)
			}
		case err := <-refused:
			if !strings.Contains(err.Error(), what) {
				t.Fatalf("want %s, got refused %v", what, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no outcome for %s", what)
		}
	}
	write("b.example")
	wait("applied:b.example")
	second := live.Current()
	write("")
	wait("actoins: unknown field")
	write("bad-compile.example")
	wait("does not compile")
	write("bad-enforcer.example")
	wait("enforcer refuses")
	if live.Current() != second {
		t.Fatalf("a refused change replaced the policy: %+v", live.Current())
	}
	live.Reload()
	wait("enforcer refuses") // the file still holds the refused version
	write("c.example")
	wait("applied:c.example")
	live.Reload()
	wait("applied:c.example")

	mu.Lock()
	if want := "first:b.example second:b.example first:c.example second:c.example first:c.example second:c.example"; strings.Join(got, " ") != want {
		t.Errorf("enforcers saw %q, want %q", strings.Join(got, " "), want)
	}
	mu.Unlock()
	lines := logs.lines(t)
	var decisions []string
	for _, m := range lines {
		if m["msg"] != "policy reload" || m["kind"] != "reload" || m["policy_file"] != p || m["old_policy"] == nil {
			t.Errorf("not a reload line of the schema: %v", m)
		}
		d := m["decision"].(string)
		switch {
		case d == "deny" && m["level"] != "WARN", d == "allow" && m["new_policy"] == nil:
			t.Errorf("reload line: %v", m)
		}
		decisions = append(decisions, d+":"+m["reason"].(string))
	}
	if len(decisions) != 7 || decisions[0] != "allow:policy file changed" || decisions[6] != "allow:policy reloaded, unchanged" ||
		lines[1]["old_policy"] != second.fp || !strings.HasPrefix(decisions[3], "deny:enforcer refuses") {
		t.Errorf("reload lines: %q", decisions)
	}
}
