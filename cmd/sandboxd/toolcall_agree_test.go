package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/hooks"
)

// TestToolCallDecisionsAgree drives every payload fixture of every harness
// (hooks/testdata/fixtures: file tools, searches, fetches, MCP calls,
// shells, events that are not gated) under the fixtures' two policies
// through each place that rules on a tool call: sandboxd explain --harness
// (the explainer), hookgate check with --policy (hooks.Check on a
// LocalSource), and the ruling server sandboxd serve-hooks runs
// (serveHooksPolicy, asked through hookgate's client, ClientSource). Each
// must give the same verdict, rule and reason, and the same answer bytes
// to the harness. hooks.TestFixtures states what those answers are.
func TestToolCallDecisionsAgree(t *testing.T) {
	t.Setenv("HOME", "/home/dev") // the fixtures' home
	root := filepath.Join("..", "..", "hooks", "testdata")
	dir := t.TempDir()
	harnesses := []string{"claude-code", "codex", "copilot", "cursor", "gemini"}
	type server struct{ addr string }
	servers := map[string]server{}
	policyFile := func(name, harness string) string {
		if p := filepath.Join(root, "policies", name+"-"+harness+".yaml"); fileExists(p) {
			return p
		}
		data, err := os.ReadFile(filepath.Join(root, "policies", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.Replace(data, []byte("\nharness: claude-code\n"), []byte("\nharness: "+harness+"\n"), 1)
		p := filepath.Join(dir, name+"-"+harness+".yaml")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sockDir := filepath.Join(dir, "sock")
	if err := os.Mkdir(sockDir, 0o700); err != nil {
		t.Fatal(err)
	}
	serve := func(t *testing.T, path string) string {
		if s, ok := servers[path]; ok {
			return s.addr
		}
		srv := hooks.NewServer(nil, slog.New(slog.DiscardHandler))
		live, err := serveHooksPolicy(ctx, srv, path, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { live.Close() })
		sock := filepath.Join(sockDir, fmt.Sprintf("%d.sock", len(servers)))
		ln, err := hooks.ListenUnix(sock)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ctx, ln)
		servers[path] = server{sock}
		return sock
	}
	type verdict struct{ Verdict, Reason, Rule string }
	n, denied := 0, 0
	for _, h := range harnesses {
		files, err := filepath.Glob(filepath.Join(root, "fixtures", h, "*.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			if strings.HasPrefix(name, "output-") || strings.HasSuffix(name, "-example") {
				continue
			}
			payload, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range []string{"guarded", "open"} {
				path := policyFile(pol, h)
				t.Run(pol+"/"+h+"/"+name, func(t *testing.T) {
					n++
					// The explainer.
					_, out, stderr := runApp(t, string(payload), "explain", "--policy", path, "--harness", h, "--json")
					var e struct {
						verdict
						Stdout string
						Event  string
					}
					if err := json.Unmarshal([]byte(out), &e); err != nil {
						t.Fatalf("explain --harness: %v: %s %s", err, out, stderr)
					}
					// hookgate check --policy.
					local := hooks.Check(ctx, hooks.CheckArgs{Harness: h, Payload: bytes.NewReader(payload), Source: hooks.LocalSource{Path: path}})
					// hookgate check --socket, against serve-hooks' server.
					src := hooks.ClientSource{Addr: serve(t, path)}
					remote := hooks.Check(ctx, hooks.CheckArgs{Harness: h, Payload: bytes.NewReader(payload), Source: src})
					if string(local.Stdout) != e.Stdout || string(remote.Stdout) != e.Stdout || local.Code != remote.Code {
						t.Errorf("answers differ:\nexplain %s\nlocal   %s (exit %d)\nserver  %s (exit %d)", e.Stdout, local.Stdout, local.Code, remote.Stdout, remote.Code)
					}
					if e.Verdict == "pass" {
						return // not gated: no ruling is asked for
					}
					// The server's ruling itself.
					hh, err := hooks.ParseHarness(h)
					if err != nil {
						t.Fatal(err)
					}
					c, err := hooks.Decode(hh, payload)
					if err != nil {
						t.Fatal(err)
					}
					r, err := src.Open(ctx)
					if err != nil {
						t.Fatal(err)
					}
					d, err := r.Rule(ctx, c)
					if err != nil {
						t.Fatal(err)
					}
					got := verdict{d.Verdict.String(), d.Reason, d.Rule}
					if got != e.verdict {
						t.Errorf("ruling server %+v, explain --harness %+v", got, e.verdict)
					}
					if e.Verdict == "deny" {
						denied++
						if !strings.Contains(e.Stdout, jsonText(e.Reason)) {
							t.Errorf("the answer %s does not carry the reason %q", e.Stdout, e.Reason)
						}
					}
				})
			}
		}
	}
	// The table must exercise both outcomes across the harnesses.
	if n < 80 || denied < 20 {
		t.Fatalf("only %d cases, %d denied", n, denied)
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
