package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/supervisor"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

func runApp(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{explainCommand(), statusCommand()}}
	code := app.Main(context.Background(), cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb}, args)
	return code, out.String(), errb.String()
}

func TestExplainHost(t *testing.T) {
	dns := proxytest.NewDNS(t)
	dns.Add(t, "api.example.test. 60 IN A 127.0.0.1", "meta.example.test. 60 IN A 169.254.169.254")
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.yaml")
	os.WriteFile(pol, []byte("version: 1\nharness: claude-code\nsession: {bound: {network: {enforce: sandbox, allowDomains: ['*.example.test'], domains: [bad.example.test]}}}\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--policy", pol, "--allow-private", "127.0.0.0/8", "--dns-upstream", dns.Addr, "api.example.test"}, 0,
			"api.example.test: allow: allowed by entry \"*.example.test\" (would dial 127.0.0.1:443)\n"},
		{[]string{"--policy", pol, "--dns-upstream", dns.Addr, "api.example.test:8080"}, 1, "api.example.test:8080: deny: private address"},
		{[]string{"--policy", pol, "--dns-upstream", dns.Addr, "meta.example.test"}, 1, "169.254.169.254"},
		{[]string{"--policy", pol, "bad.example.test"}, 1, "bad.example.test: deny: denied domain"},
		{[]string{"--policy", pol, "example.test"}, 1, "example.test: deny: not in allowlist"},
		{[]string{"--policy", pol, "--deny-domain", "api.example.test", "api.example.test"}, 1, "denied domain"},
		{[]string{"unlisted.example"}, 1, "the allowlist is empty (no egress)"},
	}
	for _, c := range cases {
		code, out, stderr := runApp(t, "", append([]string{"explain"}, c.args...)...)
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("explain %v: exit %d, out %q (stderr %q); want %d and %q", c.args, code, out, stderr, c.code, c.want)
		}
	}
	if code, _, _ := runApp(t, "", "explain"); code != 2 {
		t.Errorf("no host: exit %d, want 2", code)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nharness: claude-code\nsesion: {}\n"), 0o644)
	if code, _, stderr := runApp(t, "", "explain", "--policy", bad, "a.test"); code != 1 || !strings.Contains(stderr, "sesion: unknown field") {
		t.Errorf("broken policy: exit %d stderr %q", code, stderr)
	}
}

func TestExplainCall(t *testing.T) {
	payload, err := os.ReadFile("../../hooks/testdata/fixtures/claude-code/pretooluse-bash-git-C-push.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pol := filepath.Join(dir, "p.yaml")
	os.WriteFile(pol, []byte("version: 1\nharness: claude-code\nsession: {bound: {bash: {denyPrograms: ['git:push']}}}\n"), 0o644)
	code, out, _ := runApp(t, string(payload), "explain", "--policy", pol, "--harness", "claude-code", "--json")
	var e struct{ Verdict, Reason, Rule, Stdout string }
	if err := json.Unmarshal([]byte(out), &e); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if code != 1 || e.Verdict != "deny" || !strings.Contains(e.Reason, "git:push") || !strings.Contains(e.Stdout, `"permissionDecision":"deny"`) {
		t.Errorf("exit %d, %+v", code, e)
	}
	allow := []byte(strings.Replace(string(payload), "push", "status", -1))
	if code, out, _ := runApp(t, string(allow), "explain", "--policy", pol, "--harness", "claude-code"); code != 0 || !strings.Contains(out, ": allow") {
		t.Errorf("allowed call: exit %d %s", code, out)
	}
	if code, out, _ := runApp(t, "{not json", "explain", "--policy", pol, "--harness", "claude-code"); code != 1 || !strings.Contains(out, "deny") {
		t.Errorf("malformed payload: exit %d %s", code, out)
	}
}

func TestStatusEmpty(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	if code, out, _ := runApp(t, "", "status"); code != 0 || out != "no running sandboxes\n" {
		t.Errorf("status: %d %q", code, out)
	}
	if code, out, _ := runApp(t, "", "status", "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("status --json: %d %q", code, out)
	}
}

// explain --harness rules with the policy file alone, while "sandboxd run"
// merges the network flags into its ruling server's bound: a flag given with
// --harness is refused rather than ignored, so explain cannot answer "allow"
// for a WebFetch that run with --deny-domain would deny.
func TestExplainCallRefusesNetworkFlags(t *testing.T) {
	pol := filepath.Join(t.TempDir(), "p.yaml")
	os.WriteFile(pol, []byte("version: 1\nharness: claude-code\nsession: {traits: [web], bound: {network: {enforce: sandbox, allowDomains: ['*.example.test']}}}\n"), 0o644)
	payload := `{"session_id":"s","hook_event_name":"PreToolUse","tool_name":"WebFetch","tool_input":{"url":"https://x.example.test/","prompt":"p"},"cwd":"/tmp"}`
	if code, out, _ := runApp(t, payload, "explain", "--policy", pol, "--harness", "claude-code", "--in-sandbox"); code != 0 || !strings.Contains(out, ": allow") {
		t.Fatalf("without flags, in the sandbox: exit %d %s", code, out)
	}
	// As hookgate check --policy rules, outside the sandbox the policy asks
	// for: refused.
	if code, out, _ := runApp(t, payload, "explain", "--policy", pol, "--harness", "claude-code"); code != 1 || !strings.Contains(out, "this session runs without sandboxd's sandbox") {
		t.Fatalf("without flags, hooks only: exit %d %s", code, out)
	}
	const want = "sandboxd explain: --harness rules with the policy file alone; --allow-domain, --deny-domain, --allow-private and --dns-upstream do not apply to it\n"
	for _, flags := range [][]string{
		{"--deny-domain", "x.example.test"},
		{"--allow-domain", "y.example.test"},
		{"--allow-private", "10.0.0.0/8"},
		{"--dns-upstream", "127.0.0.1:53"},
	} {
		args := append([]string{"explain", "--policy", pol, "--harness", "claude-code"}, flags...)
		if code, out, stderr := runApp(t, payload, args...); code != 2 || out != "" || stderr != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", flags, code, out, stderr, want)
		}
	}
}

// TestStatusLaunched: a launched session's harness and mode show in
// sandboxd status and its JSON.
func TestStatusLaunched(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", base)
	dir := filepath.Join(base, "sandboxd-1")
	os.Mkdir(dir, 0o700)
	st := supervisor.Status{ID: "sandboxd-1", PID: os.Getpid(), Command: []string{"claude"}, Started: time.Now(), Harness: "claude-code", Mode: "hosted"}
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, supervisor.StatusFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runApp(t, "", "status"); code != 0 || !strings.Contains(out, "launched claude-code (hosted)") {
		t.Errorf("status: %d %q", code, out)
	}
	if code, out, _ := runApp(t, "", "status", "--json"); code != 0 || !strings.Contains(out, `"harness":"claude-code"`) && !strings.Contains(out, `"harness": "claude-code"`) {
		t.Errorf("status --json: %d %q", code, out)
	}
}
