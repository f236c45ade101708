//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/fakemodel"
)

// The launch test's servers on the fake internet (fakenet_linux_test.go):
// the fake Anthropic API and an MCP server the test's user configured.
const (
	launchModelHost = "api.model.test"
	launchModelAddr = "192.0.2.30"
	launchMCPHost   = "mcp.user.test"
	launchMCPAddr   = "192.0.2.31"
	// launchMCPName is the user's MCP server in ~/.claude.json; Claude
	// Code names its tools mcp__<server>__<tool>.
	launchMCPName = "usermcp"
	launchMCPTool = "ping"
)

// launchPolicy is the session of the launch runs: git push denied to the
// shell, Task and NotebookEdit denied by name and Agent by nativeTools;
// no trait grants the network category, so WebFetch and WebSearch are
// not granted either. The ceiling is those five tools.
const launchPolicy = "version: 1\nharness: claude-code\n" +
	"bounds:\n  launch-test:\n" +
	"    bash: {denyPrograms: [\"git:push\"]}\n" +
	"    deniedTools: [Task, NotebookEdit]\n" +
	"    nativeTools: {claude-code: [Agent]}\n" +
	"session: {bounds: [launch-test]}\n"

// launchCeiling is what the session's native policy denies, sorted.
var launchCeiling = []string{"Agent", "NotebookEdit", "Task", "WebFetch", "WebSearch"}

// launchWebPolicy has no ceiling: the web trait grants the network tools
// and no bound denies any.
const launchWebPolicy = "version: 1\nharness: claude-code\nsession: {traits: [web]}\n"

// TestLaunchClaude drives the real Claude Code CLI (the pinned release)
// through `sandboxd launch claude-code` on the fake internet: the fake
// Anthropic API is served over TLS as api.model.test in the world
// namespace (a certificate of the world's CA, which Claude Code trusts
// through NODE_EXTRA_CA_CERTS), and Claude Code reaches it only through
// sandboxd's proxy, which allows it because the launch adds --api-host to
// the allowlist. Every case is checked on the host side: the requests the
// fake model recorded (the tools Claude Code offered, the tool_results it
// sent back), marker files, the world's request log, sandboxd's audit and
// the session's configuration file as the host sees it.
func TestLaunchClaude(t *testing.T) {
	claude := claudeCLI(t)
	w := newWorld(t)
	model := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
	mcp := &launchMCP{}
	w.serveHTTPS(t, launchMCPHost, launchMCPAddr, mcp)

	bash := func(cmd string) fakemodel.ToolCall {
		return fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "fakemodel"}}
	}
	const pushReason = `hookgate: shell command runs git push, denied by bash.denyPrograms "git:push"`

	// Cases 1 to 5 in one run: the tool list of a strict session, then a
	// denied shell call, an allowed one, a fetch of a denied host, a write
	// outside the write roots, an edit of the session's hook
	// configuration, and a denied shell call again.
	// The API key is a credential for the model's host by default: the
	// harness's tools see a placeholder (prefix and last 20 characters
	// kept), the model's server gets the real key from the proxy, and
	// Claude Code used the placeholder as its approved key.
	t.Run("api-key", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		out := filepath.Join(b.ws, "env-out")
		r := b.launch(t, w, model, launchRun{calls: []fakemodel.ToolCall{bash("env > " + out)}})
		r.requireSucceeded(t)
		requireKeyPlaceholder(t, out, model)
		if !r.auditHas(func(l map[string]any) bool {
			return l["msg"] == audit.MsgSessionStart && fmt.Sprint(l[audit.AttrCredentials]) == "[ANTHROPIC_API_KEY]"
		}) {
			t.Errorf("the start line does not name ANTHROPIC_API_KEY as a credential")
		}
	})

	// A harness installed where the sandbox would not show it (an npm
	// prefix under /tmp, which the sandbox replaces with its own): the
	// launch makes its install directory readable and it runs; one that
	// files.deny hides refuses the launch in one line, before it starts.
	t.Run("program-in-tmp", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		prefix, err := os.MkdirTemp("/tmp", "barry-npm-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(prefix) })
		os.Chmod(prefix, 0o755)
		prog := filepath.Join(prefix, "bin", "claude")
		if err := os.MkdirAll(filepath.Dir(prog), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(b.program, prog); err != nil {
			t.Fatal(err)
		}
		b.program = prog
		r := b.launch(t, w, model, launchRun{calls: []fakemodel.ToolCall{bash("echo hi")}})
		r.requireSucceeded(t)
		claudeRequirePresent(t, b.ran)
		os.Remove(b.ran)
		hidden := strings.Replace(launchPolicy, "    deniedTools:", "    files: {deny: [\""+prefix+"\"]}\n    deniedTools:", 1)
		r = b.launch(t, w, model, launchRun{policy: hidden, calls: []fakemodel.ToolCall{bash("echo hi")}})
		r.requireRefused(t, 125, prog+" would not be visible inside the sandbox")
	})

	t.Run("session", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		outside := filepath.Join("/opt", filepath.Base(b.root)+"-outside.txt")
		t.Cleanup(func() { os.Remove(outside) })
		pushRan, pushRanAfter, marker := filepath.Join(b.ws, "push-ran"), filepath.Join(b.ws, "push-ran-after"), filepath.Join(b.ws, "marker")
		r := b.launch(t, w, model, launchRun{calls: []fakemodel.ToolCall{
			bash("touch " + pushRan + " && git push origin main"),
			bash("echo hi > " + marker),
			bash(`printf 'import urllib.request\nurllib.request.urlopen("https://denied.test/", timeout=20)\n' > fetch.py && python3 fetch.py`),
			{Name: "Write", Input: map[string]any{"file_path": outside, "content": "escaped\n"}},
			// A glob (the id is not known before the run), read by tee, not
			// a redirection: the shell classifier denies a redirection to a
			// path it cannot read (it could be /dev/tcp), and the kernel's
			// refusal is the point here.
			bash("tee /run/sandboxd-*/launch/settings.json </dev/null"),
			bash("touch " + pushRanAfter + " && git push origin main"),
		}})
		r.requireSucceeded(t)

		// 1. The tool list: the ceiling's tools and the user's MCP
		// server are not offered, the rest of the default set is.
		t.Run("tools", func(t *testing.T) { r.requireStrictTools(t, "Bash", "Read", "Write", "Edit", "ToolSearch") })

		// 2. A denied shell call is denied by the gate, an allowed one
		// ran. sandboxd's ruling server audited one ruling per call, in
		// order: each case below names its call's.
		t.Run("shell", func(t *testing.T) {
			r.requireRulings(t, "Bash deny", "Bash allow", "Bash allow", "Write allow", "Bash allow", "Bash deny")
			r.requireDenied(t, 0, "Bash", pushReason)
			claudeRequireAbsent(t, pushRan)
			r.requireRan(t, 1, "Bash")
			if got, err := os.ReadFile(marker); err != nil || string(got) != "hi\n" {
				t.Errorf("marker %s: %q, %v: want the allowed command's \"hi\"", marker, got, err)
			}
		})

		// 3. The gate lets python through (the classifier does not read
		// its code as network: ruling 2 is an allow); the proxy refuses
		// the host: the world never saw denied.test, the audit has the
		// proxy's deny, and python's error is the proxy's 403.
		t.Run("proxy", func(t *testing.T) { r.requireFetchDenied(t, 2) })

		// 4. A write outside the write roots: the gate allowed it (ruling
		// 3), the kernel refused it (the read-only mount: EROFS), and
		// nothing appeared on the host.
		t.Run("kernel", func(t *testing.T) { r.requireWriteRefused(t, 3, outside, "EROFS") })

		// 5. An edit of the session's settings, which the gate allowed
		// (ruling 4), fails inside; the host's copy, read at every model
		// turn (each after the previous tool finished), never changed;
		// the denial after it still happens.
		t.Run("config", func(t *testing.T) {
			e := r.exchange(t, 4, "Bash")
			if !e.IsError || !strings.Contains(e.Result, "settings.json: Read-only file system") {
				t.Errorf("overwriting the session settings: is_error=%v %q: want tee's EROFS on settings.json", e.IsError, e.Result)
			}
			r.requireSettingsUnchanged(t, len(r.exchanges))
			r.requireDenied(t, 5, "Bash", pushReason)
			claudeRequireAbsent(t, pushRanAfter)
		})
	})

	// 1, the control: without a ceiling the same Claude Code offers the
	// tools the ceiling took back (Agent in the tool list, the others
	// deferred), but Task, which 2.1.332 no longer has (its subagent tool
	// is Agent, which the catalog also knows as Task).
	t.Run("no-ceiling", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		r := b.launch(t, w, model, launchRun{policy: launchWebPolicy})
		r.requireSucceeded(t)
		offered := r.offered(t)
		for _, name := range launchCeiling {
			if name != "Task" && !slices.Contains(offered, name) {
				t.Errorf("Claude Code without a ceiling did not offer %s: the ceiling's check proves nothing for it", name)
			}
		}
		if got := r.startCeiling(t); len(got) > 0 {
			t.Errorf("the start line's ceiling is %v, want none", got)
		}
	})

	// 1, relaxed: the user's MCP server loads (Claude Code connected to
	// it through the proxy, and offers its tool); the ceiling holds, and
	// the gate still rules on the server's tools: loaded by ToolSearch
	// and called, the tool (which no trait grants) is denied, and the
	// server never gets the call.
	t.Run("relax", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		mcpTool := "mcp__" + launchMCPName + "__" + launchMCPTool
		r := b.launch(t, w, model, launchRun{flags: []string{"--relax"}, calls: []fakemodel.ToolCall{
			{Name: "ToolSearch", Input: map[string]any{"query": "select:" + mcpTool, "max_results": 1}},
			{Name: mcpTool, Input: map[string]any{}},
		}})
		r.requireSucceeded(t)
		offered := r.offered(t)
		if m := r.mcpTools(offered); !slices.Contains(m, mcpTool) {
			t.Errorf("the relaxed session offered the MCP tools %v: want the user's %s", m, mcpTool)
		}
		if n := r.worldSaw(launchMCPHost); n == 0 {
			t.Errorf("the user's MCP server got no request in a relaxed session")
		}
		for _, name := range launchCeiling {
			if slices.Contains(offered, name) {
				t.Errorf("Claude Code offered %s, which the ceiling took back", name)
			}
		}
		if slices.Contains(r.command, "--strict-mcp-config") {
			t.Errorf("the relaxed session's command line %q has --strict-mcp-config", r.command)
		}
		r.requireRan(t, 0, "ToolSearch")
		r.requireDenied(t, 1, mcpTool, "hookgate")
		r.requireRulings(t, "ToolSearch allow", mcpTool+" deny")
		if n := mcp.asked("tools/call"); n > 0 {
			t.Errorf("the user's MCP server got %d tools/call requests", n)
		}
	})

	// A prompt as the first harness argument (Claude Code's own usage is
	// `claude [options] [prompt]`) reaches Claude Code as the prompt: with
	// a ceiling (the launch's arguments end in --disallowedTools=LIST) and
	// relaxed without one (they end in --mcp-config=FILE). Both options
	// take several values: given as separate words, a word after them was
	// read as one more.
	t.Run("prompt-first", func(t *testing.T) {
		for _, c := range []struct {
			name, policy string
			flags        []string
		}{
			{"ceiling", "", nil},
			{"relax-no-ceiling", launchWebPolicy, []string{"--relax"}},
		} {
			t.Run(c.name, func(t *testing.T) {
				b := newLaunchBox(t, claude)
				marker := filepath.Join(b.ws, "marker")
				r := b.launch(t, w, model, launchRun{policy: c.policy, flags: c.flags, calls: []fakemodel.ToolCall{bash("echo hi > " + marker)},
					args: []string{"Run the tool calls you are given.", "-p", "--dangerously-skip-permissions", "--no-session-persistence"}})
				r.requireSucceeded(t)
				r.requireRan(t, 0, "Bash")
				claudeRequirePresent(t, marker)
			})
		}
	})

	// 6. Each argument that would override the session configuration is
	// refused before anything runs: exit 2, one line naming it, and the
	// program never started (its marker is absent, the model got nothing).
	t.Run("refused-args", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		for _, args := range [][]string{
			{"--settings", "x"}, {"--setting-sources=user"}, {"--mcp-config", "f"},
			{"--disallowedTools=X"}, {"--bare"}, {"--plugin-dir", "d"},
		} {
			t.Run(args[0], func(t *testing.T) {
				r := b.launch(t, w, model, launchRun{args: args})
				r.requireRefused(t, 2, args[0])
			})
		}
	})

	// 7. A policy file for another harness refuses the launch.
	t.Run("other-harness", func(t *testing.T) {
		b := newLaunchBox(t, claude)
		r := b.launch(t, w, model, launchRun{policy: "version: 1\nharness: codex\nsession: {}\n"})
		r.requireRefused(t, 125, "codex")
	})
}

// launchModel is the fake model's front on the world: it relays to the
// run's fakemodel server (on the test's loopback) and, before each model
// turn (launchModelTurn), calls the run's onTurn (each turn but the first
// comes after the previous tool call finished).
type launchModel struct {
	mu     sync.Mutex
	proxy  *httputil.ReverseProxy
	onTurn func()
	keys   map[string]bool // the API keys it was sent (x-api-key, x-goog-api-key, Bearer)
}

// sawKey reports whether a request carried key as its API key.
func (m *launchModel) sawKey(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.keys[key]
}

func (m *launchModel) set(srv *fakemodel.Server, onTurn func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.proxy, m.onTurn = nil, onTurn
	if srv != nil {
		u, _ := url.Parse(srv.URL)
		m.proxy = httputil.NewSingleHostReverseProxy(u)
	}
}

func (m *launchModel) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	p, onTurn := m.proxy, m.onTurn
	if m.keys == nil {
		m.keys = map[string]bool{}
	}
	for _, k := range []string{r.Header.Get("x-api-key"), r.Header.Get("x-goog-api-key"), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")} {
		if k != "" {
			m.keys[k] = true
		}
	}
	m.mu.Unlock()
	if p == nil {
		http.Error(rw, "no model", http.StatusServiceUnavailable)
		return
	}
	if onTurn != nil && r.Method == http.MethodPost && launchModelTurn(r.URL.Path) {
		onTurn()
	}
	p.ServeHTTP(rw, r)
}

// launchModelTurn reports whether a request for path is a turn of the
// agent loop: Anthropic's Messages, or Gemini's streamed generateContent
// (Gemini CLI's plain generateContent requests are its side requests: the
// next-speaker check, loop detection, routing).
func launchModelTurn(path string) bool {
	return path == "/v1/messages" || strings.HasSuffix(path, ":streamGenerateContent") || strings.HasSuffix(path, "/responses")
}

// launchMCP is a minimal MCP server (streamable HTTP, JSON answers):
// initialize, and tools/list with one tool; notifications get 202, a GET
// (the server-sent stream) 405. It notes every method it was asked.
type launchMCP struct {
	// tool is the tool it offers (launchMCPTool when ""); token, when
	// set, is the bearer token a request must carry (401 otherwise).
	tool, token string
	mu          sync.Mutex
	methods     []string
}

// asked counts the requests for method.
func (m *launchMCP) asked(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(m.methods), func(s string) bool { return s != method }))
}

func (m *launchMCP) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		rw.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if m.token != "" && r.Header.Get("Authorization") != "Bearer "+m.token {
		http.Error(rw, "no bearer token", http.StatusUnauthorized)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.methods = append(m.methods, req.Method)
	m.mu.Unlock()
	if req.ID == nil {
		rw.WriteHeader(http.StatusAccepted)
		return
	}
	result := map[string]any{}
	switch req.Method {
	case "initialize":
		result = map[string]any{"protocolVersion": req.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": launchMCPName, "version": "1"}}
	case "tools/list":
		tool := m.tool
		if tool == "" {
			tool = launchMCPTool
		}
		result = map[string]any{"tools": []any{map[string]any{"name": tool, "description": "answers pong",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}}}}}
	}
	rw.Header().Set("Content-Type", "application/json")
	json.NewEncoder(rw).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
}

// launchBox is one throwaway user for sandboxd launch: a home whose
// ~/.claude.json configures the user's own MCP server, and a workspace,
// both under the test user's home: the sandbox's /tmp is its own, so a
// workspace there would not be the host's.
type launchBox struct {
	root, home, ws string
	// program is what --program runs: a script that leaves a marker in
	// the workspace and runs Claude Code.
	program, ran string
}

func newLaunchBox(t *testing.T, claude string) *launchBox {
	t.Helper()
	home, _ := os.UserHomeDir()
	if home == "" {
		home = "/root"
	}
	if slices.ContainsFunc([]string{os.TempDir(), "/tmp", "/var/tmp"}, func(tmp string) bool {
		return strings.HasPrefix(home+"/", filepath.Clean(tmp)+"/")
	}) {
		t.Fatalf("the test user's home %s is in a temporary directory, which the sandbox replaces with its own", home)
	}
	root, err := os.MkdirTemp(home, ".barry-launch-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := &launchBox{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	b.program, b.ran = filepath.Join(root, "bin", "claude"), filepath.Join(b.ws, "program-ran")
	for _, d := range []string{b.home, b.ws, filepath.Dir(b.program), filepath.Join(root, "policy"), filepath.Join(root, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	claudeWriteFile(t, filepath.Join(b.home, ".claude.json"),
		`{"mcpServers": {"`+launchMCPName+`": {"type": "http", "url": "https://`+launchMCPHost+`/mcp"}}}`+"\n")
	if err := os.WriteFile(b.program, []byte("#!/bin/sh\necho ran >> "+b.ran+"\nexec "+claude+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// launchRun is one sandboxd launch: the fake model's calls, the policy
// (default launchPolicy), launch's flags and Claude Code's arguments
// (default: print mode with permission prompts bypassed).
type launchRun struct {
	calls  []fakemodel.ToolCall
	policy string
	flags  []string
	args   []string
	// env is added to the launch's environment; timeout, when set, bounds
	// the launch instead of claudeRunTimeout.
	env     []string
	timeout time.Duration
}

// launchResult is a launch's outcome as the host saw it.
type launchResult struct {
	claudeResult
	box      *launchBox
	run      runResult
	requests int
	// command is claude's command line from the session's start line.
	command []string
	// settings are the host's reads of the session's settings.json, one
	// per model turn.
	settings []string
	// seen is what the world's servers saw during the run.
	seen []string
	// deferred are the deferred tools of the requests' system prompts.
	deferred []string
}

// launch runs `sandboxd launch claude-code` in the world's host namespace
// from the workspace, with the fake model serving run.calls behind
// api.model.test, within claudeRunTimeout.
func (b *launchBox) launch(t *testing.T, w *world, m *launchModel, run launchRun) *launchResult {
	t.Helper()
	// While the run lasts, the servers' goroutines log and read the
	// settings through live; after it, they do nothing.
	live := &launchLive{}
	srv, err := fakemodel.AnthropicWith(run.calls, fakemodel.AnthropicOptions{
		Logf: func(f string, a ...any) { live.do(func() { t.Logf(f, a...) }) }})
	if err != nil {
		t.Fatal(err)
	}
	// In a directory of its own: sandboxd run makes it read-only inside.
	policy := filepath.Join(b.root, "policy", "session.yaml")
	if run.policy == "" {
		run.policy = launchPolicy
	}
	claudeWriteFile(t, policy, run.policy)
	auditFile := filepath.Join(sharedDir(t), "audit.jsonl")
	r := &launchResult{box: b}
	// Claude Code's debug log, in a write root of its own.
	r.debugLog = filepath.Join(b.root, "log", "claude-debug.txt")
	settingsPath := ""
	m.set(srv, func() {
		live.do(func() {
			if settingsPath == "" {
				settingsPath = launchSettingsPath(auditFile)
			}
			data, err := os.ReadFile(settingsPath)
			if err != nil {
				data = []byte("unreadable: " + err.Error())
			}
			r.settings = append(r.settings, string(data))
		})
	})
	_, before, _, _ := w.seen()
	args := run.args
	if args == nil {
		args = []string{"-p", "Run the tool calls you are given.", "--dangerously-skip-permissions",
			"--no-session-persistence", "--debug-file", r.debugLog}
	}
	start := time.Now()
	opts := b.runOpts(w, policy, auditFile, filepath.Dir(r.debugLog), run.flags, args)
	opts.extraEnv = append(opts.extraEnv, run.env...)
	opts.timeout = cmp.Or(run.timeout, opts.timeout)
	r.run = w.sandboxd(t, opts)
	r.elapsed = time.Since(start)
	r.finish(t, w, m, srv, live, before, "sandboxd launch", settingsPath, 0)
	return r
}

// finish ends a launch run (the model's server and the live reads) and
// fills r in from what the server and the world saw since before; label
// names the run in the log, whose results are cut to width bytes (0: whole).
func (r *launchResult) finish(t *testing.T, w *world, m *launchModel, srv *fakemodel.Server, live *launchLive, before []string, label, settingsPath string, width int) {
	t.Helper()
	m.set(nil, nil)
	srv.Close()
	live.end()
	_, after, _, _ := w.seen()
	r.seen = after[len(before):]

	reqs := srv.Requests()
	r.requests = len(reqs)
	r.received = srv.Received()
	r.code, r.stdout, r.stderr = r.run.code, r.run.stdout, r.run.stderr
	r.exchanges = fakemodel.AnthropicTranscript(reqs)
	r.tools = fakemodel.AnthropicToolNames(reqs)
	r.deferred = launchDeferredTools(reqs)
	r.command = launchStartCommand(r.run.audit)
	t.Logf("%s: exit %d in %v, %d model requests, world saw %q\n  claude: %q\n  tools: %s\n  deferred: %s\n  %d host reads of %s",
		label, r.code, r.elapsed.Round(time.Millisecond), r.requests, r.seen, r.command, strings.Join(r.tools, " "), strings.Join(r.deferred, " "),
		len(r.settings), settingsPath)
	for i, e := range r.exchanges {
		res := e.Result
		if width > 0 && len(res) > width {
			res = res[:width]
		}
		t.Logf("  turn %d: %s %s: is_error=%v answered=%v: %q", i, e.Name, e.Input, e.IsError, e.Answered, res)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("sandboxd stdout: %q\nstderr: %q\naudit:\n%s\nhook lines of %s:\n%s", r.stdout, r.stderr, r.run.audit, r.debugLog, r.hookLines())
		}
	})
}

// claudeAPIKey is the launches' Anthropic key, of a real key's shape: a
// launch makes it a credential for the model's host (Claude Code holds a
// placeholder that keeps its prefix and last 20 characters).
const claudeAPIKey = "sk-ant-api03-" + "Barry0test0key0not0real0Barry0test0key0not0real0Barry0test0key0" + "-notARealKeyForTests1AA"

// runOpts is the sandboxd launch claude-code of the box from its
// workspace, with policy, auditing to auditFile, logDir writable, with
// launch's flags and Claude Code's args.
func (b *launchBox) runOpts(w *world, policy, auditFile, logDir string, flags, args []string) runOpts {
	return runOpts{
		sub: []string{"launch", "claude-code"},
		flags: append([]string{"--policy", policy, "--api-host", launchModelHost, "--program", b.program,
			"--allow-domain", launchMCPHost, "--write", logDir}, flags...),
		argv:    args,
		dir:     b.ws,
		audit:   auditFile,
		timeout: claudeRunTimeout,
		extraEnv: []string{"HOME=" + b.home, "USER=" + claudeUser(), "LANG=C.UTF-8",
			"ANTHROPIC_BASE_URL=https://" + launchModelHost, "ANTHROPIC_API_KEY=" + claudeAPIKey, "NODE_EXTRA_CA_CERTS=" + w.caFile,
			"IS_SANDBOX=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1"},
	}
}

// launchLive runs the callbacks of a launch's servers until the launch
// ends, one at a time.
type launchLive struct {
	mu   sync.Mutex
	over bool
}

func (l *launchLive) do(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.over {
		f()
	}
}

func (l *launchLive) end() {
	l.mu.Lock()
	l.over = true
	l.mu.Unlock()
}

// requireSucceeded checks that the launch ran the harness to its end
// against the fake model.
func (r *launchResult) requireSucceeded(t *testing.T) {
	t.Helper()
	if r.code != 0 || r.requests == 0 || !strings.Contains(r.stdout, fakemodel.AnthropicFinalText) {
		t.Fatalf("sandboxd launch: exit %d, %d model requests, stdout %q: want the harness's run to its last turn (stderr below)",
			r.code, r.requests, r.stdout)
	}
}

// requireRefused checks a launch refused before anything ran: exit code,
// one line on stderr carrying want, no model request, no program start.
func (r *launchResult) requireRefused(t *testing.T, code int, want string) {
	t.Helper()
	line := strings.TrimSuffix(r.stderr, "\n")
	if r.code != code || strings.Contains(line, "\n") || !strings.Contains(line, want) {
		t.Errorf("sandboxd launch: exit %d, stderr %q: want exit %d and one line naming %q", r.code, r.stderr, code, want)
	}
	if r.requests > 0 {
		t.Errorf("the fake model got %d requests: the harness ran", r.requests)
	}
	claudeRequireAbsent(t, r.box.ran)
}

// offered returns the tools Claude Code offered the model (the request's
// tool list and the deferred tools its system prompt lists for
// ToolSearch), failing when the deferred list is missing: Claude Code
// 2.1.332 keeps WebFetch, WebSearch, NotebookEdit and MCP tools there.
func (r *launchResult) offered(t *testing.T) []string {
	t.Helper()
	if !slices.Contains(r.tools, "ToolSearch") || len(r.deferred) == 0 {
		t.Fatalf("Claude Code offered no ToolSearch or listed no deferred tools (tools %v, deferred %v): the deferred tools cannot be checked", r.tools, r.deferred)
	}
	return append(slices.Clone(r.tools), r.deferred...)
}

// mcpTools returns the MCP tools among offered.
func (r *launchResult) mcpTools(offered []string) []string {
	var out []string
	for _, n := range offered {
		if strings.HasPrefix(n, "mcp__") {
			out = append(out, n)
		}
	}
	return out
}

// worldSaw counts the world's requests for host during the run.
// requireStrictTools: Claude Code offered none of the ceiling's tools and
// each of want; none of the user's MCP tools, whose server got no request;
// the start line names the ceiling.
func (r *launchResult) requireStrictTools(t *testing.T, want ...string) {
	t.Helper()
	offered := r.offered(t)
	for _, name := range launchCeiling {
		if slices.Contains(offered, name) {
			t.Errorf("Claude Code offered %s, which the ceiling took back", name)
		}
	}
	for _, name := range want {
		if !slices.Contains(offered, name) {
			t.Errorf("Claude Code did not offer %s, which the session allows", name)
		}
	}
	if m := r.mcpTools(offered); len(m) > 0 {
		t.Errorf("the strict session offered the user's MCP tools %v", m)
	}
	if n := r.worldSaw(launchMCPHost); n > 0 {
		t.Errorf("the user's MCP server got %d requests in a strict session", n)
	}
	if got := r.startCeiling(t); !slices.Equal(got, launchCeiling) {
		t.Errorf("the start line's ceiling is %v, want %v", got, launchCeiling)
	}
}

// requireFetchDenied: tool call i, python's fetch of denied.test, failed
// on the proxy's 403 (not the gate's), the world never saw the host, and
// the audit has the proxy's deny.
func (r *launchResult) requireFetchDenied(t *testing.T, i int) {
	t.Helper()
	e := r.exchange(t, i, "Bash")
	if !e.IsError || strings.Contains(e.Result, "hookgate") || !strings.Contains(e.Result, "Tunnel connection failed: 403") {
		t.Errorf("python's fetch of denied.test: is_error=%v %q: want its failure on the proxy's 403", e.IsError, e.Result)
	}
	r.requireProxyDenied(t, "denied.test")
}

// requireWriteRefused: tool call i, a Write of outside (beyond the write
// roots), failed with the kernel's EROFS and left nothing on the host.
func (r *launchResult) requireWriteRefused(t *testing.T, i int, outside, refusal string) {
	t.Helper()
	e := r.exchange(t, i, "Write")
	if !e.IsError || !strings.Contains(e.Result, refusal) {
		t.Errorf("Write %s: is_error=%v %q: want the kernel's %s", outside, e.IsError, e.Result, refusal)
	}
	if left, _ := filepath.Glob(outside + "*"); len(left) > 0 {
		t.Errorf("the refused Write left %v on the host", left)
	}
}

func (r *launchResult) worldSaw(host string) int {
	n := 0
	for _, s := range r.seen {
		if strings.HasPrefix(s, host+" ") {
			n++
		}
	}
	return n
}

// auditHas reports whether a line of the run's audit matches.
func (r *launchResult) auditHas(match func(map[string]any) bool) bool {
	sc := bufio.NewScanner(strings.NewReader(r.run.audit))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && match(l) {
			return true
		}
	}
	return false
}

// requireRulings checks the hook rulings of sandboxd's ruling server in
// the audit, in order, each "TOOL DECISION".
func (r *launchResult) requireRulings(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	r.auditHas(func(l map[string]any) bool {
		if l[audit.AttrKind] == string(audit.KindHook) {
			got = append(got, fmt.Sprintf("%v %v", l[audit.AttrTool], l[audit.AttrDecision]))
		}
		return false
	})
	if !slices.Equal(got, want) {
		t.Errorf("the audit's hook rulings are %q, want %q", got, want)
	}
}

// startCeiling returns the ceiling of the session's start line.
func (r *launchResult) startCeiling(t *testing.T) []string {
	t.Helper()
	var ceiling []string
	r.auditHas(func(l map[string]any) bool {
		if l["msg"] != audit.MsgSessionStart {
			return false
		}
		list, _ := l["ceiling"].([]any)
		for _, c := range list {
			s, _ := c.(string)
			ceiling = append(ceiling, s)
		}
		return true
	})
	return ceiling
}

// requireSettingsUnchanged checks the host's reads of the session's
// settings.json: at least turns of them (the last after the last tool
// call), all the same, holding hookgate's PreToolUse entry.
func (r *launchResult) requireSettingsUnchanged(t *testing.T, turns int) {
	t.Helper()
	r.requireSettingsRun(t, turns, hookgateBin)
}

// requireSettingsRun is requireSettingsUnchanged with the hookgate binary
// the entry runs.
func (r *launchResult) requireSettingsRun(t *testing.T, turns int, hookgateBin string) {
	t.Helper()
	if len(r.settings) < turns+1 {
		t.Fatalf("%d reads of the session settings for %d tool calls", len(r.settings), turns)
	}
	first := r.settings[0]
	var s struct {
		Hooks struct {
			PreToolUse []struct {
				Hooks []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"PreToolUse"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(first), &s); err != nil || len(s.Hooks.PreToolUse) != 1 || len(s.Hooks.PreToolUse[0].Hooks) != 1 ||
		!strings.Contains(s.Hooks.PreToolUse[0].Hooks[0].Command, hookgateBin+" check --harness claude-code") {
		t.Fatalf("the session settings at the first turn (%v) lack hookgate's PreToolUse entry: %.300q", err, first)
	}
	for i, got := range r.settings {
		if got != first {
			t.Errorf("the session settings changed by turn %d: %.300q", i, got)
		}
	}
}

// launchSettingsPath returns the --settings file of claude's command line
// in the audit file's session start line ("" before there is one).
func launchSettingsPath(auditFile string) string {
	data, _ := os.ReadFile(auditFile)
	cmd := launchStartCommand(string(data))
	for i, a := range cmd {
		if v, ok := strings.CutPrefix(a, "--settings="); ok {
			return v
		}
		if a == "--settings" && i+1 < len(cmd) {
			return cmd[i+1]
		}
	}
	return ""
}

// launchStartCommand returns the command of an audit's session start line.
func launchStartCommand(auditText string) []string { return launchStartLine(auditText).Command }

// launchStart is an audit's session start line: the command, and the
// sandbox's id, which names its runtime directory.
type launchStart struct {
	Msg     string   `json:"msg"`
	Command []string `json:"command"`
	Sandbox string   `json:"sandbox"`
}

// launchStartLine returns an audit's session start line (zero before there
// is one).
func launchStartLine(auditText string) launchStart {
	for _, l := range strings.Split(auditText, "\n") {
		var line launchStart
		if json.Unmarshal([]byte(l), &line) == nil && line.Msg == audit.MsgSessionStart {
			return line
		}
	}
	return launchStart{}
}

// launchDeferredHeader starts the list of deferred tools in Claude Code
// 2.1.332's system prompt: tools offered by name only, whose schemas
// ToolSearch loads (WebFetch, WebSearch, NotebookEdit, MCP tools).
const launchDeferredHeader = "The following deferred tools are now available via ToolSearch."

// launchDeferredTools returns the deferred tools listed in the recorded
// requests: the lines after the header's ":" line, to the first blank one.
func launchDeferredTools(bodies [][]byte) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			_, rest, ok := strings.Cut(v, launchDeferredHeader)
			if !ok {
				return
			}
			if _, rest, ok = strings.Cut(rest, ":\n"); !ok {
				return
			}
			for _, l := range strings.Split(rest, "\n") {
				if l = strings.TrimSpace(l); l == "" {
					break
				}
				if !slices.Contains(out, l) {
					out = append(out, l)
				}
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, b := range bodies {
		var v any
		if json.Unmarshal(b, &v) == nil {
			walk(v)
		}
	}
	return out
}

// requireKeyPlaceholder checks a launch's API key on the host side: the
// environment a shell call saved in envFile holds a placeholder of the
// key's shape (its prefix and last 20 characters), never the key, and
// the model's server got the real key.
func requireKeyPlaceholder(t *testing.T, envFile string, model *launchModel) {
	t.Helper()
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("the shell call's env: %v", err)
	}
	if bytes.Contains(env, []byte(claudeAPIKey)) {
		t.Errorf("the real API key is in the harness's process tree")
	}
	m := regexp.MustCompile(`(?m)^ANTHROPIC_API_KEY=(.*)$`).FindSubmatch(env)
	if m == nil || len(m[1]) != len(claudeAPIKey) || !bytes.HasPrefix(m[1], []byte("sk-ant-api03-")) || !bytes.HasSuffix(m[1], []byte(claudeAPIKey[len(claudeAPIKey)-20:])) {
		t.Errorf("ANTHROPIC_API_KEY inside is not a placeholder of the key's shape: %q", m)
	}
	if !model.sawKey(claudeAPIKey) {
		t.Errorf("the model's server never got the real API key")
	}
}
