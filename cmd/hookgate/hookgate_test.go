package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// The tests here run the built binary, as a harness would.
var (
	bin       string // production build
	faultsBin string // built with -tags hookgate_faults (panic/hang injection)
	sandboxd  string // for serve-hooks
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hookgate-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "hookgate")
	faultsBin = filepath.Join(dir, "hookgate-faults")
	sandboxd = filepath.Join(dir, "sandboxd")
	for _, b := range [][]string{{"build", "-o", bin, "."}, {"build", "-tags", "hookgate_faults", "-o", faultsBin, "."},
		{"build", "-o", sandboxd, "../sandboxd"}} {
		// Built as released: static, no cgo (a dynamically linked binary
		// spends about a millisecond in the loader on every call).
		cmd := exec.Command("go", b...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "building hookgate:", err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// runGate runs a hookgate binary with a clean environment plus env, stdin
// from in (nil: a pipe that stays open, like a harness that never closes
// stdin), and a hard kill after 20 s so a broken build cannot hang the test.
func runGate(t *testing.T, binary string, env []string, in []byte, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if in != nil {
		cmd.Stdin = bytes.NewReader(in)
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		defer r.Close()
		cmd.Stdin = r
	}
	return runCmd(t, cmd, &stdout, &stderr)
}

// runCmd runs cmd, whose output goes to stdout and stderr, and returns the
// result with its exit code and how long it took; a failure to run at all
// fails the test.
func runCmd(t *testing.T, cmd *exec.Cmd, stdout, stderr *bytes.Buffer) result {
	t.Helper()
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running hookgate: %v", err)
		}
		code = ee.ExitCode()
	}
	return result{stdout.String(), stderr.String(), code, took}
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../../hooks/testdata/fixtures", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// policyFile returns the test policy NAME for harness h: NAME-h.yaml when
// it exists, else a copy of NAME.yaml with its harness replaced.
func policyFile(t testing.TB, name, h string) string {
	t.Helper()
	dir, _ := filepath.Abs("../../hooks/testdata/policies")
	p := filepath.Join(dir, name+"-"+h+".yaml")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	data, err := os.ReadFile(filepath.Join(dir, name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte("\nharness: claude-code\n"), []byte("\nharness: "+h+"\n"), 1)
	p = filepath.Join(t.TempDir(), name+"-"+h+".yaml")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// isDeny checks that r is a deny in the harness's protocol: a JSON deny on
// stdout with exit 0, or exit 2 with a reason on stderr (and, where the
// harness reads it with exit 2, a JSON deny). reason, or one of its
// "|"-separated alternatives, must occur in it.
func isDeny(t *testing.T, h string, r result, reason string) {
	t.Helper()
	all := r.stdout + r.stderr
	found := false
	for _, alt := range strings.Split(reason, "|") {
		found = found || strings.Contains(all, alt)
	}
	if !found {
		t.Errorf("%s: answer does not say %q: stdout %q stderr %q", h, reason, r.stdout, r.stderr)
	}
	if r.code != 0 && r.code != 2 {
		t.Errorf("%s: exit %d; only 0 and 2 are answers (others fail open)", h, r.code)
	}
	if r.code == 2 && strings.TrimSpace(r.stderr) == "" {
		t.Errorf("%s: exit 2 with empty stderr (Codex treats that as a failed hook: fail-open)", h)
	}
	var m map[string]any
	if r.stdout != "" {
		if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
			t.Errorf("%s: stdout is not JSON: %q", h, r.stdout)
			return
		}
	}
	switch h {
	case "claude-code", "codex":
		if r.code == 2 {
			return
		}
		hs, _ := m["hookSpecificOutput"].(map[string]any)
		if hs["permissionDecision"] != "deny" {
			if dec, _ := hs["decision"].(map[string]any); dec["behavior"] != "deny" {
				t.Errorf("%s: not a deny: %q exit %d", h, r.stdout, r.code)
			}
		}
	case "cursor":
		if m["permission"] != "deny" && r.code != 2 {
			t.Errorf("cursor: not a deny: %q exit %d", r.stdout, r.code)
		}
	case "gemini":
		if m["decision"] != "deny" && r.code != 2 {
			t.Errorf("gemini: not a deny: %q exit %d", r.stdout, r.code)
		}
	case "pi":
		if m["block"] != true {
			t.Errorf("pi: not a block: %q exit %d", r.stdout, r.code)
		}
	default:
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2", h, r.code)
		}
	}
}

// margin is what the time to answer may exceed the deadline by: process
// start, and a loaded CI machine.
const margin = 1500 * time.Millisecond

// TestFailClosedMatrix: each failure is a deny in the harness's protocol,
// answered by the deadline plus a margin.
func TestFailClosedMatrix(t *testing.T) {
	claudeBash := fixture(t, "claude-code/pretooluse-bash-simple-allow")
	codexBash := fixture(t, "codex/pretooluse-bash")
	cursorShell := fixture(t, "cursor/beforeShellExecution")
	geminiShell := fixture(t, "gemini/beforetool-run-shell-command")
	// open is the claude-code policy; a call from another harness is
	// denied by it, so each case below that gets past decoding uses its
	// harness's own copy.
	open := policyFile(t, "open", "claude-code")
	openCodex := policyFile(t, "open", "codex")
	openGemini := policyFile(t, "open", "gemini")

	tmp := t.TempDir()
	badPolicy := filepath.Join(tmp, "bad.yaml")
	os.WriteFile(badPolicy, []byte("version: 1\nharness: claude-code\nsession: {bound: {files: {deny: 7}}}\n"), 0o600)
	unknownField := filepath.Join(tmp, "unknown.yaml")
	os.WriteFile(unknownField, []byte("version: 1\nharness: cursor\nallowEverything: true\n"), 0o600)
	fifo := filepath.Join(tmp, "policy.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	// A server that accepts and never answers, one that answers garbage,
	// and a TCP port with nothing behind it.
	silent := listenUnix(t, func(c net.Conn) { bufio.NewReader(c).ReadString('\n'); time.Sleep(10 * time.Second) })
	garbage := listenUnix(t, func(c net.Conn) {
		bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("{\"v\":1,\"verdict\":\"allow\"}\n"))
	})
	tcpLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadPort := tcpLn.Addr().String()
	tcpLn.Close()

	big := append([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"content":"`), bytes.Repeat([]byte("a"), hooks.MaxPayloadBytes)...)
	big = append(big, []byte(`"}}`)...)

	const dl = "700ms"
	cases := []struct {
		name    string
		harness string
		binary  string
		env     []string
		stdin   []byte // nil: stdin never closes
		args    []string
		reason  string
	}{
		{"malformed input claude", "claude-code", bin, nil, []byte("not json"), []string{"--policy", open}, "malformed hook payload"},
		{"malformed input codex", "codex", bin, nil, []byte(`{"hook_event_name":`), []string{"--policy", open}, "malformed hook payload"},
		{"duplicate key cursor", "cursor", bin, nil, []byte(`{"hook_event_name":"beforeShellExecution","command":"ls","command":"rm -rf /"}`), []string{"--policy", open}, "duplicate key"},
		{"oversized input codex", "codex", bin, nil, big, []string{"--policy", open}, "too large"},
		{"oversized input gemini", "gemini", bin, nil, big, []string{"--policy", open}, "too large"},
		{"unknown harness", "vim", bin, nil, claudeBash, []string{"--policy", open}, "unknown harness"},
		{"no harness", "", bin, nil, claudeBash, []string{"--policy", open}, "unknown harness"},
		{"unknown event", "cursor", bin, nil, []byte(`{"hook_event_name":"beforeEverything"}`), []string{"--policy", open}, "unknown hook event"},
		{"no policy", "claude-code", bin, nil, claudeBash, nil, "no policy"},
		{"missing policy file", "codex", bin, nil, codexBash, []string{"--policy", filepath.Join(tmp, "nope.yaml")}, "no such file"},
		{"policy from env missing", "gemini", bin, []string{"BARRY_POLICY=" + filepath.Join(tmp, "nope.yaml")}, geminiShell, nil, "no such file"},
		{"invalid policy", "claude-code", bin, nil, claudeBash, []string{"--policy", badPolicy}, "session.bound.files.deny"},
		{"policy with unknown field", "cursor", bin, nil, cursorShell, []string{"--policy", unknownField}, "allowEverything"},
		{"policy is a directory", "claude-code", bin, nil, claudeBash, []string{"--policy", tmp}, "no policy"},
		{"policy read hangs (fifo)", "claude-code", bin, nil, claudeBash, []string{"--policy", fifo, "--deadline", dl}, "no ruling within 700ms"},
		{"stdin never closes", "codex", bin, nil, nil, []string{"--policy", openCodex, "--deadline", dl}, "no ruling within 700ms"},
		{"panic at start", "claude-code", faultsBin, []string{"HOOKGATE_FAULT=panic@start"}, claudeBash, []string{"--policy", open}, "internal error (panic"},
		{"panic after decode", "cursor", faultsBin, []string{"HOOKGATE_FAULT=panic@decoded"}, cursorShell, []string{"--policy", open}, "internal error (panic"},
		{"hang after decode", "gemini", faultsBin, []string{"HOOKGATE_FAULT=hang@decoded"}, geminiShell, []string{"--policy", openGemini, "--deadline", dl}, "no ruling within 700ms"},
		{"socket missing", "claude-code", bin, nil, claudeBash, []string{"--socket", filepath.Join(tmp, "nope.sock")}, "ruling server failed"},
		{"socket from env missing", "codex", bin, []string{"BARRY_HOOK_SOCKET=unix:" + filepath.Join(tmp, "nope.sock")}, codexBash, nil, "ruling server failed"},
		{"socket never answers", "claude-code", bin, nil, claudeBash, []string{"--socket", silent, "--deadline", dl}, "ruling server failed|no ruling within 700ms"},
		{"socket answers garbage", "codex", bin, nil, codexBash, []string{"--socket", "unix:" + garbage}, "without a reason"},
		{"tcp port closed", "gemini", bin, nil, geminiShell, []string{"--socket", "tcp:" + deadPort}, "ruling server failed"},
		{"tcp not loopback", "gemini", bin, nil, geminiShell, []string{"--socket", "tcp:192.0.2.1:9"}, "not a loopback"},
		{"bad address", "claude-code", bin, nil, claudeBash, []string{"--socket", "http://x"}, "want PATH"},
		{"policy and socket", "claude-code", bin, nil, claudeBash, []string{"--policy", open, "--socket", silent}, "both --policy and --socket"},
		{"socket env beats policy env", "claude-code", bin, []string{"BARRY_POLICY=" + open, "BARRY_HOOK_SOCKET=" + filepath.Join(tmp, "nope.sock")}, claudeBash, nil, "ruling server failed"},
		{"bad flag", "codex", bin, nil, codexBash, []string{"--polcy", open}, "bad command line"},
		{"harness and protocol disagree", "codex", bin, nil, codexBash, []string{"--protocol", "cursor", "--policy", openCodex}, "disagree"},
		{"bad deadline", "codex", bin, nil, codexBash, []string{"--policy", open, "--deadline", "-1s"}, "--deadline"},
		{"pi malformed", "pi", bin, nil, []byte(`{"hook_event_name":"tool_call"}`), []string{"--policy", open}, "tool_name"},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		if seen[tc.name] {
			t.Fatalf("duplicate case %q", tc.name)
		}
		seen[tc.name] = true
		// Sequential: thirty hookgates at once on two CPUs would measure
		// the test's own load, not the time to answer.
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--harness", tc.harness}, tc.args...)
			r := runGate(t, tc.binary, tc.env, tc.stdin, args...)
			isDeny(t, tc.harness, r, tc.reason)
			deadline := hooks.DefaultDeadline
			for i, a := range tc.args {
				if a == "--deadline" {
					deadline, _ = time.ParseDuration(tc.args[i+1])
				}
			}
			if deadline <= 0 {
				deadline = hooks.DefaultDeadline
			}
			if r.took > deadline+margin {
				t.Errorf("answered after %v; deadline %v + margin %v", r.took, deadline, margin)
			}
		})
	}
}

// listenUnix serves each connection with handle on a socket in a private
// directory; it returns the socket path.
func listenUnix(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Serve(t, ln, handle)
	return p
}

// TestProtocolExitCodes proves the answers harnesses read from exit codes,
// on the built binary: Codex allow is exit 0 with empty stdout, Claude Code
// no-opinion likewise, Codex/Claude deny is JSON with exit 0, and events
// that are not gated get no opinion even without a policy.
func TestProtocolExitCodes(t *testing.T) {
	open := func(h string) string { return policyFile(t, "open", h) }
	guarded := func(h string) string { return policyFile(t, "guarded", h) }
	cases := []struct {
		name, harness, fixture string
		policy                 func(string) string
		stdout                 string
		code                   int
	}{
		{"codex allow is empty stdout", "codex", "codex/pretooluse-bash", open, "", 0},
		{"claude pass is empty stdout", "claude-code", "claude-code/pretooluse-bash-simple-allow", open, "", 0},
		{"codex deny is JSON exit 0", "codex", "codex/pretooluse-mcp", guarded,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"hookgate: MCP tool not in the session's tools: postgres:query"}}` + "\n", 0},
		{"claude deny is JSON exit 0", "claude-code", "claude-code/pretooluse-read-dotenv", guarded,
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"hookgate: file denied: /home/dev/acme-api/.env matches files.deny \"**/.env*\""}}` + "\n", 0},
		{"cursor allow", "cursor", "cursor/beforeShellExecution", open, `{"permission":"allow"}` + "\n", 0},
		{"gemini pass", "gemini", "gemini/beforetool-run-shell-command", open, "{}\n", 0},
		{"claude event not gated, no policy", "claude-code", "claude-code/sessionstart", nil, "", 0},
		{"cursor event not gated, no policy", "cursor", "cursor/stop", nil, "{}\n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := []string{"check", "--harness", tc.harness}
			if tc.policy != nil {
				args = append(args, "--policy", tc.policy(tc.harness))
			}
			r := runGate(t, bin, []string{"HOME=/home/dev"}, fixture(t, tc.fixture), args...)
			if r.stdout != tc.stdout || r.code != tc.code || r.stderr != "" {
				t.Errorf("got stdout %q stderr %q exit %d; want stdout %q exit %d", r.stdout, r.stderr, r.code, tc.stdout, tc.code)
			}
		})
	}
}

// TestSocketServeHooks runs the built sandboxd serve-hooks and asks it for
// rulings through the built hookgate: a ruling, an edit of the policy file
// that applies to the next call, a broken edit that keeps the last good policy, and
// a reload on SIGHUP.
func TestSocketServeHooks(t *testing.T) {
	dir, err := os.MkdirTemp("", "hgs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	pol := filepath.Join(dir, "policy.yaml")
	copyFile := func(src string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pol, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(policyFile(t, "guarded", "claude-code"))
	sock := filepath.Join(dir, "run", "hooks.sock")
	srv := exec.Command(sandboxd, "serve-hooks", "--policy", pol, "--socket", sock)
	srv.Env = append(os.Environ(), "HOME=/home/dev")
	var logs lockedBuffer
	srv.Stderr = &logs
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
		if t.Failed() {
			t.Logf("serve-hooks log:\n%s", logs.String())
		}
	}()
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i > 200 {
			t.Fatalf("socket never appeared; log: %s", logs.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	dotenv := fixture(t, "claude-code/pretooluse-read-dotenv")
	r := runGate(t, bin, nil, dotenv, "check", "--harness", "claude-code", "--socket", sock)
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"hookgate: file denied: /home/dev/acme-api/.env matches files.deny \"**/.env*\""}}` + "\n"
	if r.stdout != want || r.code != 0 {
		t.Fatalf("guarded: got %q exit %d stderr %q; want %q", r.stdout, r.code, r.stderr, want)
	}
	// Through the environment, as sandboxd run sets it.
	r = runGate(t, bin, []string{"BARRY_HOOK_SOCKET=unix:" + sock}, dotenv, "check", "--harness", "claude-code")
	if r.stdout != want {
		t.Fatalf("via BARRY_HOOK_SOCKET: got %q", r.stdout)
	}
	waitFor := func(what string, ok func(result) bool) {
		t.Helper()
		for i := 0; i < 100; i++ {
			r := runGate(t, bin, nil, dotenv, "check", "--harness", "claude-code", "--socket", sock)
			if ok(r) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s never took effect", what)
	}
	// An edit applies to the next call without a signal (the file is watched).
	copyFile(policyFile(t, "open", "claude-code"))
	waitFor("reload to the open policy", func(r result) bool { return r.stdout == "" && r.code == 0 })
	// A broken edit keeps the last good (open) policy, once the server has
	// seen and refused it.
	os.WriteFile(pol, []byte("version: 2\n"), 0o600)
	for i := 0; !strings.Contains(logs.String(), `"msg":"policy reload","kind":"reload","decision":"deny"`); i++ {
		if i > 200 {
			t.Fatalf("the broken edit was never refused; log: %s", logs.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	if r := runGate(t, bin, nil, dotenv, "check", "--harness", "claude-code", "--socket", sock); r.stdout != "" || r.code != 0 {
		t.Fatalf("after a broken edit the last good policy must stay: %+v", r)
	}
	// SIGHUP reloads at once, whatever the watcher saw.
	copyFile(policyFile(t, "guarded", "claude-code"))
	srv.Process.Signal(syscall.SIGHUP)
	waitFor("SIGHUP reload", func(r result) bool { return r.stdout == want })
}

// TestPiExtension runs the Pi extension (hooks/pi/hookgate.ts, as
// installed) under node against the built hookgate, with a stand-in for
// Pi's ExtensionAPI: allowed calls pass, denied ones block with hookgate's
// reason, and a missing binary blocks.
func TestPiExtension(t *testing.T) {
	node := testenv.NeedCommand(t, "node")
	home := t.TempDir()
	policy := policyFile(t, "guarded", "pi")
	for _, tc := range []struct{ name, binary, want string }{
		{"built hookgate", bin, `[{"block":true,"reason":"hookgate: shell command runs git push, denied by bash.denyPrograms \"git:push\""},null,{"block":true,"reason":"hookgate: file denied: /home/dev/.ssh/config matches files.deny \"~/.ssh\""},{"block":true,"reason":"hookgate: native tool not granted: web_fetch for pi"}]`},
		{"missing binary", filepath.Join(home, "nope", "hookgate"), `"hookgate: no ruling (spawnSync`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _, err := hooks.Install(hooks.InstallArgs{Harness: hooks.Pi, Home: t.TempDir(), Binary: tc.binary, Policy: policy})
			if err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// node 18/20 cannot strip TypeScript: drop the type-only import
			// and the few annotations the file uses.
			js := regexp.MustCompile(`(?m)^import type .*\n`).ReplaceAllString(string(src), "")
			js = regexp.MustCompile(`: (string|unknown|ExtensionAPI)\b`).ReplaceAllString(js, "")
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "hookgate.mjs"), []byte(js), 0o644)
			os.WriteFile(filepath.Join(dir, "run.mjs"), []byte(`import ext from "./hookgate.mjs";
const handlers = {};
ext({ on: (ev, fn) => { handlers[ev] = fn; } });
const calls = [
  ["bash", { command: "git -C /w push origin main" }],
  ["read", { path: "/w/proj/main.go" }],
  ["write", { path: "/home/dev/.ssh/config", content: "x" }],
  ["web_fetch", { url: "https://example.com" }],
];
const out = [];
for (const [toolName, input] of calls) {
  out.push((await handlers.tool_call({ toolName, toolCallId: "c1", input }, { cwd: "/w/proj" })) ?? null);
}
console.log(JSON.stringify(out));
`), 0o644)
			cmd := exec.Command(node, filepath.Join(dir, "run.mjs"))
			cmd.Env = append(os.Environ(), "HOME=/home/dev")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("got  %s\nwant %s", out, tc.want)
			}
		})
	}
}

// TestSandboxdRunServesHooks: under sandboxd run --policy, hookgate inside
// the sandbox (its host Unix sockets out of reach) gets its rulings from
// sandboxd through the forwarded BARRY_HOOK_SOCKET=tcp:127.0.0.1:3129.
func TestSandboxdRunServesHooks(t *testing.T) {
	dir := t.TempDir()
	dotenv := filepath.Join(dir, "dotenv.json")
	write := filepath.Join(dir, "write.json")
	os.WriteFile(dotenv, fixture(t, "claude-code/pretooluse-read-dotenv"), 0o644)
	os.WriteFile(write, fixture(t, "claude-code/pretooluse-write"), 0o644)
	script := `echo "socket=$BARRY_HOOK_SOCKET"; "$0" check --harness claude-code < "$1"; echo "rc=$?"; "$0" check --harness claude-code < "$2"; echo "rc=$?"`
	// The payloads and hookgate are under the host's /tmp, which the
	// sandbox's own /tmp covers: --read keeps them visible.
	cmd := exec.Command(sandboxd, "run", "--policy", policyFile(t, "guarded", "claude-code"), "--read", dir, "--read", filepath.Dir(bin),
		"--", "/bin/sh", "-c", script, bin, dotenv, write)
	cmd.Env = append(os.Environ(), "HOME=/home/dev", "BARRY_HOOK_SOCKET=unix:/nonexistent/outer.sock")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 125 {
		testenv.SkipOrFail(t, "sandbox could not start: "+strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		t.Fatalf("sandboxd run: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	want := "socket=tcp:127.0.0.1:3129\n" +
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"hookgate: file denied: /home/dev/acme-api/.env matches files.deny \"**/.env*\""}}` + "\nrc=0\nrc=0\n"
	if stdout.String() != want {
		t.Errorf("got\n%s\nwant\n%s\nstderr: %s", stdout.String(), want, stderr.String())
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
