package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/policy"
)

func engineFor(t *testing.T, name string) *Ruler {
	t.Helper()
	s, err := LoadPolicy(filepath.Join("testdata/policies", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEngine(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// privateDir returns a short private directory (socket paths are limited to
// ~104 bytes).
func privateDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func serve(t *testing.T, s *Server, ln net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
}

var readDotenv = Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Read",
	Input: map[string]any{"file_path": "/home/dev/acme-api/.env"}, Cwd: "/home/dev/acme-api"}

func TestServerRulesAndReloads(t *testing.T) {
	dir := privateDir(t)
	sock := filepath.Join(dir, "run", "hooks.sock")
	ln, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	di, _ := os.Stat(filepath.Dir(sock))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v, want 0700", di.Mode().Perm())
	}
	srv := NewServer(engineFor(t, "guarded"), nil)
	serve(t, srv, ln)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ClientSource{Addr: "unix:" + sock}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.(*Client).Close()
	d, err := r.Rule(ctx, readDotenv)
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Denied(`file denied: /home/dev/acme-api/.env matches files.deny "**/.env*"`, "files.deny:**/.env*")
	if d != want {
		t.Errorf("got %+v, want %+v", d, want)
	}
	// A reload applies to the next request, on the same connection.
	srv.SetPolicy(engineFor(t, "open"))
	d, err = r.Rule(ctx, readDotenv)
	if err != nil || d.Verdict != policy.Allow {
		t.Errorf("after SetPolicy(open): %+v, %v; want allow", d, err)
	}
	// A revocation (no engine) denies the next request.
	srv.SetPolicy(nil)
	d, err = r.Rule(ctx, readDotenv)
	if err != nil || d.Verdict != policy.Deny || d.Reason != "ruling server has no policy" {
		t.Errorf("after SetPolicy(nil): %+v, %v; want deny", d, err)
	}
}

func TestServerProtocolErrors(t *testing.T) {
	ln, err := ListenUnix(filepath.Join(privateDir(t), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	serve(t, NewServer(engineFor(t, "open"), nil), ln)
	conn, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(conn)
	cases := []struct{ req, want string }{
		{`{"v":2,"op":"rule","call":{"harness":"pi","event":"tool_call","kind":1,"tool":"bash"}}`, `{"v":1,"error":"unsupported protocol version 2"}`},
		{`{"v":1,"op":"setPolicy","call":{"harness":"pi","event":"tool_call","kind":1,"tool":"bash"}}`, `{"v":1,"error":"unknown op \"setPolicy\""}`},
		{`{"v":1,"op":"rule"}`, `{"v":1,"error":"rule: no call"}`},
		{`{"v":1,"op":"rule","call":{"harness":"vim","kind":1}}`, `{"v":1,"error":"unknown harness \"vim\" (want one of claude-code, codex, copilot, cursor, gemini, pi)"}`},
		{`{"v":1,"op":"rule","policy":{}}`, `{"v":1,"error":"bad request: json: unknown field \"policy\""}`},
		{`{"v":1,"op":"rule","op":"rule"}`, `{"v":1,"error":"bad request: malformed hook payload: duplicate key \"op\""}`},
		{`{"v":1,"op":"rule","call":{"harness":"pi","event":"tool_call","kind":1,"tool":"edit","input":{"path":"/x"}}}`, `{"v":1,"verdict":"deny","reason":"call from another harness: the session is for claude-code, not pi","rule":"session.harness"}`},
		{`{"v":1,"op":"rule","call":{"harness":"claude-code","event":"PreToolUse","kind":1,"tool":"Bash","input":{"command":"ls"}}}`, `{"v":1,"verdict":"allow","reason":"shell command allowed: the bound has no shell, file or network rule"}`},
	}
	for _, tc := range cases {
		if _, err := conn.Write([]byte(tc.req + "\n")); err != nil {
			t.Fatal(err)
		}
		got, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(got) != tc.want {
			t.Errorf("request %s\ngot  %s\nwant %s", tc.req, strings.TrimSpace(got), tc.want)
		}
	}
	// An oversized line gets an error and the connection closes.
	big := make([]byte, MaxRequestBytes+10)
	for i := range big {
		big[i] = 'a'
	}
	go conn.Write(append(big, '\n'))
	got, _ := br.ReadString('\n')
	if !strings.Contains(got, "too large") {
		t.Errorf("oversized request: got %q", got)
	}
}

func TestListenUnixRefusals(t *testing.T) {
	dir := privateDir(t)
	open := filepath.Join(dir, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	if _, err := ListenUnix(filepath.Join(open, "s.sock")); err == nil || !strings.Contains(err.Error(), "not private") {
		t.Errorf("socket in a 0755 directory: %v, want refusal", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o600)
	if _, err := ListenUnix(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("socket path over a regular file: %v, want refusal", err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(open, link)
	if _, err := ListenUnix(filepath.Join(link, "s.sock")); err == nil {
		t.Errorf("socket through a symlinked directory: want refusal")
	}
	// A stale socket is replaced.
	p := filepath.Join(dir, "s.sock")
	ln1, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	ln1.(*net.UnixListener).SetUnlinkOnClose(false)
	ln1.Close()
	ln2, err := ListenUnix(p)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	ln2.Close()
}

// TestServerRefusesOtherUsers: a peer that is neither the server's user nor
// root gets no ruling (SO_PEERCRED). The socket is made reachable on
// purpose; ListenUnix alone would not let uid 65534 reach it at all.
func TestServerRefusesOtherUsers(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NeedCommand(t, "python3")
	// The child runs as uid 65534, which cannot read a python3 shim under
	// /root; take the system interpreter.
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.SkipOrFail(t, "no /usr/bin/python3 for an unprivileged child")
	}
	dir := privateDir(t)
	os.Chmod(dir, 0o755)
	p := filepath.Join(dir, "s.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o666)
	serve(t, NewServer(engineFor(t, "open"), nil), ln)
	script := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
try:
    s.sendall(b'{"v":1,"op":"rule","call":{"harness":"claude-code","event":"PreToolUse","kind":1,"tool":"Bash","input":{"command":"ls"}}}\n')
    print(repr(s.recv(4096)))
except (BrokenPipeError, ConnectionResetError):
    print("b''")`
	run := func(uid uint32) string {
		cmd := exec.Command(py, "-c", script, p)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("uid %d: %v: %s", uid, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run(65534); got != "b''" {
		t.Errorf("uid 65534 got %s; want the connection closed with no ruling", got)
	}
	if got := run(0); !strings.Contains(got, `"verdict":"allow"`) {
		t.Errorf("root got %s; want a ruling", got)
	}
}

func TestServerTCPLoopback(t *testing.T) {
	ln, err := Listen("tcp:127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, NewServer(engineFor(t, "guarded"), nil), ln)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ClientSource{Addr: "tcp:" + ln.Addr().String()}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Rule(ctx, readDotenv)
	if err != nil || d.Verdict != policy.Deny || d.Rule != "files.deny:**/.env*" {
		t.Errorf("got %+v, %v", d, err)
	}
	if _, err := Listen("tcp:0.0.0.0:0"); err == nil {
		t.Errorf("listening on a non-loopback address must be refused")
	}
}

// slowEngine rules only after its delay.
type slowEngine struct{ delay time.Duration }

func (e slowEngine) Rule(ctx context.Context, c Call) policy.Decision {
	time.Sleep(e.delay)
	return policy.AllowedBy("slow allow", "")
}

func TestServerDeadline(t *testing.T) {
	srv := NewServer(slowEngine{time.Second}, nil)
	srv.RequestTimeout = 100 * time.Millisecond
	start := time.Now()
	resp := srv.handle(context.Background(), []byte(`{"v":1,"op":"rule","call":{"harness":"pi","event":"tool_call","kind":1,"tool":"bash","input":{"command":"ls"}}}`))
	if resp.Verdict != "deny" || resp.Rule != "deadline" {
		t.Errorf("got %+v, want a deadline deny", resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	d := srv.rule(ctx, readDotenv)
	if d.Verdict != policy.Deny || time.Since(start) > 2*time.Second {
		t.Errorf("got %+v after %v", d, time.Since(start))
	}
}

// FuzzServerRequest: any request line gets a version-1 response that is an
// error or a ruling with a known verdict and a reason; nothing panics.
func FuzzServerRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"op":"rule","call":{"harness":"claude-code","event":"PreToolUse","kind":1,"tool":"Read","input":{"file_path":"/home/dev/acme-api/.env"}}}`))
	f.Add([]byte(`{"v":1,"op":"rule","call":{"harness":"cursor","event":"beforeMCPExecution","kind":1,"tool":"MCP:q","mcpServerUrl":"http://127.0.0.1:1/mcp/ns/github"}}`))
	f.Add([]byte(`{"v":1,"op":"setPolicy"}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`[]`))
	s, err := LoadPolicy("testdata/policies/guarded.yaml")
	if err != nil {
		f.Fatal(err)
	}
	s.Home = "/home/dev"
	e, err := NewEngine(s, nil)
	if err != nil {
		f.Fatal(err)
	}
	srv := NewServer(e, nil)
	f.Fuzz(func(t *testing.T, line []byte) {
		r := srv.handle(context.Background(), line)
		if r.V != ProtocolVersion {
			t.Fatalf("response version %d", r.V)
		}
		if r.Error != "" {
			return
		}
		if (r.Verdict != "allow" && r.Verdict != "deny" && r.Verdict != "ask") || r.Reason == "" {
			t.Fatalf("bad ruling %+v", r)
		}
	})
}

// FuzzParseResponse: the client accepts only well-formed rulings.
func FuzzParseResponse(f *testing.F) {
	for _, s := range []string{`{"v":1,"verdict":"allow","reason":"r"}`, `{"v":1,"error":"x"}`, `{"v":1,"verdict":"allow"}`, `{"v":1,"verdict":"maybe","reason":"r"}`, `{"v":2,"verdict":"deny","reason":"r"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		d, err := ParseResponse(line)
		if err != nil {
			if d != (policy.Decision{}) {
				t.Fatalf("error with a decision %+v", d)
			}
			return
		}
		if d.Reason == "" || d.Verdict > policy.Ask {
			t.Fatalf("accepted %q as %+v", line, d)
		}
	})
}

// TestServerLargeRequest: a request far larger than the connection's read
// buffer, but under MaxRequestBytes, is read whole and ruled on.
func TestServerLargeRequest(t *testing.T) {
	dir := privateDir(t)
	sock := filepath.Join(dir, "s")
	ln, err := ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, NewServer(engineFor(t, "guarded"), nil), ln)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ClientSource{Addr: sock}.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.(*Client).Close()
	long := "echo " + strings.Repeat("a", 60<<10) + " > /home/dev/acme-api/.env"
	c := Call{Harness: ClaudeCode, Event: "PreToolUse", Kind: KindTool, Tool: "Bash",
		Input: map[string]any{"command": long}, Cwd: "/home/dev/acme-api"}
	d, err := r.Rule(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != policy.Deny || !strings.Contains(d.Reason, ".env") {
		t.Errorf("60 KiB command writing .env: %+v; want a files.deny denial", d)
	}
}

// TestServerAuditLine: a ruling's audit line has the schema's decision keys
// (kind hook, decision, reason, rule) and the call's own.
func TestServerAuditLine(t *testing.T) {
	var buf bytes.Buffer
	srv := NewServer(engineFor(t, "guarded"), slog.New(slog.NewJSONHandler(&buf, nil)))
	req, err := json.Marshal(Request{V: ProtocolVersion, Op: "rule", Call: &readDotenv})
	if err != nil {
		t.Fatal(err)
	}
	if resp := srv.handle(context.Background(), req); resp.Verdict != "deny" {
		t.Fatalf("response %+v, want deny", resp)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("audit line %q: %v", buf.String(), err)
	}
	want := map[string]any{
		"msg": audit.MsgHookRuling, audit.AttrKind: "hook", audit.AttrDecision: "deny",
		audit.AttrReason: `file denied: /home/dev/acme-api/.env matches files.deny "**/.env*"`, audit.AttrRule: "files.deny:**/.env*",
		audit.AttrHarness: "claude-code", audit.AttrEvent: "PreToolUse", audit.AttrTool: "Read",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("audit %s = %v, want %v (line %s)", k, m[k], v, buf.String())
		}
	}
	if _, ok := m["verdict"]; ok {
		t.Errorf("audit line still says verdict: %s", buf.String())
	}
	if _, ok := m[audit.AttrDurationUS]; !ok {
		t.Errorf("audit line has no %s: %s", audit.AttrDurationUS, buf.String())
	}
}
