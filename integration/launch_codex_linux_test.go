//go:build linux

package integration

import (
	"cmp"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/fakemodel"
)

// codexLaunchPolicy is the session of the Codex launch runs: git push
// denied to the shell, view_image and apply_patch denied by name; no trait
// grants the network category, so web_search is not granted either (hooks
// mode cannot gate it, but the launch can take it back: its
// LaunchCeiling). The ceiling is those three tools.
const codexLaunchPolicy = "version: 1\nharness: codex\n" +
	"bounds:\n  launch-test:\n" +
	"    bash: {denyPrograms: [\"git:push\"]}\n" +
	"    deniedTools: [view_image, apply_patch]\n" +
	"session: {bounds: [launch-test]}\n"

// codexLaunchCeiling is what the session's native policy denies, sorted.
var codexLaunchCeiling = []string{"apply_patch", "view_image", "web_search"}

// codexLaunchOpenPolicy has no ceiling: the web trait grants web_search,
// the base defaults the shell and the file tools, and the bound denies
// only git push.
const codexLaunchOpenPolicy = "version: 1\nharness: codex\n" +
	"bounds:\n  launch-test: {bash: {denyPrograms: [\"git:push\"]}}\n" +
	"session: {traits: [web], bounds: [launch-test]}\n"

// codexLaunchModel is the model the user's config.toml selects: a slug of
// Codex 0.171's bundled catalog (codex debug models), with which Codex
// offers exec_command and a freeform apply_patch. (With a slug outside
// the catalog, Codex's fallback metadata has no apply_patch at all: the
// ceiling's catalog would prove nothing.)
const codexLaunchModel = "gpt-5.5"

// codexLaunchMCPName is the user's stdio MCP server in
// ~/.codex/config.toml, and codexLaunchMCPTool its one tool. Codex defers
// MCP tools behind tool_search, listing each server's namespace
// (mcp__NAME) in the developer message.
const (
	codexLaunchMCPName = "usermcp"
	codexLaunchMCPTool = "userping"
)

// codexLaunchTimeout bounds one launch: sandboxd's start, Codex's (and
// the launch's codex debug models before it) and its turns, on two shared
// CPUs.
const codexLaunchTimeout = 90 * time.Second

// codexBlocked starts Codex's function_call_output for a call its
// PreToolUse hook blocked; hookgate's reason follows.
const codexBlocked = "Command blocked by PreToolUse hook: "

// codexDefaultTools are Codex 0.171's tools with gpt-5.5 that the launch
// policy keeps: the shell (exec_command, write_stdin) and the goal tools.
var codexDefaultTools = []string{"exec_command", "write_stdin", "get_goal", "create_goal", "update_goal"}

// codexCeilingOffered are the names under which the ceiling's tools are
// offered (fakemodel.OpenAIToolNames lists the hosted web search by type).
var codexCeilingOffered = []string{"apply_patch", "view_image", "type:web_search"}

// TestLaunchCodex drives the real Codex CLI (the pinned 0.171.0, codex
// exec) through `sandboxd launch codex` on the fake internet: the fake
// Responses API is served over TLS as api.model.test in the world
// namespace (a certificate of the world's CA, which Codex trusts through
// SSL_CERT_FILE, or CODEX_CA_CERTIFICATE: the ca case), and Codex reaches
// it only through sandboxd's proxy, which allows it because the launch
// adds --api-host to the allowlist. The user points Codex at it as a user
// would, with a model provider in ~/.codex/config.toml, which the launch
// copies into the session's private CODEX_HOME; the same file configures a
// stdio MCP server of the user's, which leaves a marker when started. The
// session's own configuration (config.toml, hooks.json, the model catalog)
// is read-only inside that CODEX_HOME. Every case is checked on the host
// side: the requests the fake model recorded (the tools Codex offered, the
// function_call_output it sent back), marker files, the world's request
// log, sandboxd's audit, and the session's config.toml and hooks.json as
// the host reads them at every model turn.
func TestLaunchCodex(t *testing.T) {
	codex := codexBinary(t)
	w := newWorld(t)
	front := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, front)

	// From the first run: the session's hooks.state keys, which a user
	// could know and switch off in their own config.toml (empty should
	// that run fail).
	var lastKeys []string

	// Cases 1 to 5 and 8 in one run: the tool list of a strict session,
	// then a denied shell call, an allowed one, a fetch of a denied host, a
	// write outside the write roots, edits of the session's config.toml
	// and hooks.json, removing and renaming them, a call of a tool the
	// ceiling took back, and a denied shell call again.
	t.Run("session", func(t *testing.T) {
		b := newCodexLaunchBox(t, codex)
		outside := "/opt/" + filepath.Base(b.root) + "-outside.txt"
		t.Cleanup(func() { os.Remove(outside) })
		inWS := func(name string) string { return filepath.Join(b.ws, name) }
		r := b.launch(t, w, front, codexLaunchRun{calls: []fakemodel.ToolCall{
			codexExec("touch " + inWS("push-ran") + " && git push origin main"),
			codexExec("echo hi > " + inWS("marker")),
			codexExec(`printf 'import urllib.request\nurllib.request.urlopen("https://denied.test/", timeout=20)\n' > fetch.py && python3 fetch.py`),
			codexExec("echo escaped > " + outside),
			// $CODEX_HOME, read by tee: the shell classifier denies a
			// redirection to a path it cannot resolve, and the kernel's
			// refusal is the point here.
			codexExec(`echo '[features]' | tee -a "$CODEX_HOME/config.toml" >/dev/null; echo '{}' | tee "$CODEX_HOME/hooks.json" >/dev/null`),
			// Not rm -f: Codex itself rejects "rm -f style commands"
			// under approval_policy never, before they run. The rest of
			// CODEX_HOME is Codex's writable state: the touch works.
			codexExec(`rm "$CODEX_HOME/hooks.json"; mv "$CODEX_HOME/config.toml" "$CODEX_HOME/moved.toml"; touch "$CODEX_HOME/agent-state" && ls "$CODEX_HOME"`),
			{Name: "view_image", Input: map[string]any{"path": inWS("marker")}},
			codexExec("touch " + inWS("push-ran-after") + " && git push origin main"),
		}})
		r.requireSucceeded(t)
		lastKeys = r.hookKeys(t)

		// 1 and 8. The tool list: the ceiling's tools are not offered, the
		// rest of the default set is; no MCP server is (the user's never
		// started); view_image, asked for anyway, did not run. The start
		// line names the harness, its mode and the ceiling.
		t.Run("tools", func(t *testing.T) {
			r.requireOffered(t, codexDefaultTools, codexCeilingOffered)
			if ns := r.deferredNamespaces(); slices.Contains(ns, "mcp__"+codexLaunchMCPName) || slices.Contains(r.tools, "list_mcp_resources") {
				t.Errorf("the strict session offered MCP tools: deferred namespaces %v, tools %v", ns, r.tools)
			}
			piRequireAbsentBecause(t, b.mcpStarted, "the strict session started the user's MCP server")
			r.requireOutput(t, 6, "view_image", "unsupported call: view_image")
			r.requireStart(t, codexLaunchCeiling)
		})

		// 2. The gate denied git push (its reason is the call's output,
		// and the command's touch never ran) and allowed the echo, which
		// left its marker. sandboxd's ruling server audited one ruling
		// per shell call, in order (Codex names its shell Bash to hooks);
		// view_image never reached the gate.
		t.Run("shell", func(t *testing.T) {
			r.requireRulings(t, "Bash deny", "Bash allow", "Bash allow", "Bash allow", "Bash allow", "Bash allow", "Bash deny")
			r.requireOutput(t, 0, "exec_command", codexBlocked+piPushReason)
			piRequireAbsent(t, inWS("push-ran"))
			r.requireOutput(t, 1, "exec_command", "Process exited with code 0")
			piRequireContent(t, inWS("marker"), "hi\n")
		})

		// 3. python's fetch passed the gate (a script written
		// to disk is opaque to the classifier, not network) and failed on the proxy's 403; the
		// proxy audited its deny, and the world never saw denied.test,
		// while it did see the model's host.
		t.Run("proxy", func(t *testing.T) {
			r.requireOutput(t, 2, "exec_command", "Process exited with code 1", "OSError: Tunnel connection failed: 403 Forbidden")
			r.requireProxyDenied(t, "denied.test")
			if r.worldSaw(launchModelHost) == 0 {
				t.Errorf("the world saw no request for %s: Codex reached the model some other way", launchModelHost)
			}
		})

		// 4. The write to /opt passed the gate; the kernel refused it (a
		// read-only mount: EROFS), and the host has no such file.
		t.Run("kernel", func(t *testing.T) {
			r.requireOutput(t, 3, "exec_command", "Process exited with code 1", outside+": Read-only file system")
			piRequireAbsent(t, outside)
		})

		// 5. Appending to config.toml and overwriting hooks.json fail
		// (EROFS: each is a read-only bind); removing or renaming them
		// fails too (EBUSY: each is a mount point), while a new file
		// beside them is Codex's state like any other. The host's copies,
		// read at every model turn (each after the previous tool
		// finished), never changed, and the gate still denied git push
		// after it.
		t.Run("config", func(t *testing.T) {
			r.requireOutput(t, 4, "exec_command", "config.toml: Read-only file system", "hooks.json: Read-only file system")
			r.requireOutput(t, 5, "exec_command", "rm: cannot remove", "hooks.json': Device or resource busy",
				"mv: cannot move", "Device or resource busy", "agent-state\n")
			r.requireHomeUnchanged(t, len(r.calls), false)
			r.requireOutput(t, 7, "exec_command", codexBlocked+piPushReason)
			piRequireAbsent(t, inWS("push-ran-after"))
		})
	})

	// 1, the control: without a ceiling the same Codex, model and user
	// config offer the three tools the ceiling took back.
	t.Run("no-ceiling", func(t *testing.T) {
		b := newCodexLaunchBox(t, codex)
		r := b.launch(t, w, front, codexLaunchRun{policy: codexLaunchOpenPolicy, calls: []fakemodel.ToolCall{codexExec("echo ok")}})
		r.requireSucceeded(t)
		r.requireOffered(t, append(slices.Clone(codexDefaultTools), codexCeilingOffered...), nil)
		r.requireStart(t, nil)
	})

	// 1, relaxed, and 6. The user's MCP server is copied into the
	// session: Codex started it (its marker) and offers it (its deferred
	// namespace, and the MCP resource tools). The ceiling holds. The
	// user's config.toml also switches hooks off ([features] hooks =
	// false) and disables, in hooks.state, the previous session's keys
	// and those of the user's own and the session-flags layers; the
	// workspace's .codex/config.toml switches hooks off too. Neither is
	// ever loaded (the session's CODEX_HOME is its own, and the workspace
	// is recorded untrusted): the gate still denies git push.
	t.Run("relax-user-disables-hooks", func(t *testing.T) {
		b := newCodexLaunchBox(t, codex)
		keys := append(slices.Clone(lastKeys), "/<session-flags>/config.toml:pre_tool_use:0:0")
		for _, ev := range []string{"pre_tool_use", "permission_request"} {
			keys = append(keys, filepath.Join(b.home, ".codex", "hooks.json")+":"+ev+":0:0")
		}
		disable := "\n[features]\nhooks = false\n"
		for _, k := range keys {
			disable += "\n[hooks.state." + codexTOMLKey(k) + "]\nenabled = false\n"
		}
		b.writeUserConfig(t, codexUserConfig(b.mcpServer)+disable)
		piWriteFile(t, filepath.Join(b.ws, ".codex", "config.toml"), "[features]\nhooks = false\n")
		r := b.launch(t, w, front, codexLaunchRun{flags: []string{"--relax"}, calls: []fakemodel.ToolCall{
			codexExec("touch " + filepath.Join(b.ws, "push-ran") + " && git push origin main"),
			codexExec("echo ok"),
		}})
		r.requireSucceeded(t)
		t.Run("tools", func(t *testing.T) {
			r.requireOffered(t, append(slices.Clone(codexDefaultTools), "list_mcp_resources"), codexCeilingOffered)
			if ns := r.deferredNamespaces(); !slices.Contains(ns, "mcp__"+codexLaunchMCPName) {
				t.Errorf("the relaxed session's deferred tool namespaces are %v: want the user's mcp__%s", ns, codexLaunchMCPName)
			}
			piRequirePresent(t, b.mcpStarted)
			r.requireStart(t, codexLaunchCeiling)
		})
		t.Run("hooks", func(t *testing.T) {
			if len(lastKeys) == 0 {
				t.Errorf("the session run left no hooks.state keys to disable: this run proves less")
			}
			for _, k := range r.hookKeys(t) {
				if slices.Contains(keys, k) {
					t.Errorf("the session's hook key %q is one the user disabled", k)
				}
			}
			r.requireHomeUnchanged(t, len(r.calls), true)
			if got := tomlAt(codexConfigDoc(t, r.homeReads[0].config), "projects", b.ws, "trust_level"); got != "untrusted" {
				t.Errorf("the session's config.toml records the workspace's trust as %v, want untrusted:\n%s", got, r.homeReads[0].config)
			}
			r.requireRulings(t, "Bash deny", "Bash allow")
			r.requireOutput(t, 0, "exec_command", codexBlocked+piPushReason)
			piRequireAbsent(t, filepath.Join(b.ws, "push-ran"))
			r.requireOutput(t, 1, "exec_command", "Process exited with code 0", "ok")
		})
	})

	// The CA: CODEX_CA_CERTIFICATE alone (SSL_CERT_FILE empty) is enough
	// for Codex to trust the world's CA, as SSL_CERT_FILE alone is in the
	// other runs (the world's environment sets it). (With neither, Codex
	// fails the TLS handshake and retries with a growing backoff past
	// this run's bound: not run here.)
	t.Run("ca", func(t *testing.T) {
		b := newCodexLaunchBox(t, codex)
		r := b.launch(t, w, front, codexLaunchRun{env: []string{"SSL_CERT_FILE=", "CODEX_CA_CERTIFICATE=" + w.caFile},
			calls: []fakemodel.ToolCall{codexExec("echo ok")}})
		r.requireSucceeded(t)
		r.requireOutput(t, 0, "exec_command", "Process exited with code 0")
	})

	// The other way to point Codex at a model: OPENAI_BASE_URL, which
	// Codex itself ignores, with the built-in openai provider (an API key,
	// no provider of the user's). The launch writes it as openai_base_url:
	// Codex reaches the fake model through it (after its Responses
	// WebSocket attempts, which the fake refuses, fall back to HTTPS).
	t.Run("openai-base-url", func(t *testing.T) {
		b := newCodexLaunchBox(t, codex)
		b.writeUserConfig(t, "model = \""+codexLaunchModel+"\"\n")
		base := "https://" + launchModelHost + "/v1"
		r := b.launch(t, w, front, codexLaunchRun{env: []string{"OPENAI_BASE_URL=" + base, "OPENAI_API_KEY=fake-key"},
			calls: []fakemodel.ToolCall{codexExec("echo ok")}})
		r.requireSucceeded(t)
		r.requireOutput(t, 0, "exec_command", "Process exited with code 0", "ok")
		if len(r.homeReads) == 0 || tomlAt(codexConfigDoc(t, r.homeReads[0].config), "openai_base_url") != base {
			t.Errorf("the session's config.toml does not set openai_base_url = %q", base)
		}
	})

	// 7. Each argument that would override the session configuration is
	// refused before anything runs: exit 2, one line naming it, and the
	// program never started (its marker is absent: the launch did not
	// even ask it for its model catalog), the model got nothing. Each
	// comes after the arguments of a working run, so one that got through
	// would show; a subcommand comes first.
	t.Run("refused-args", func(t *testing.T) {
		b := newCodexLaunchBox(t, codex)
		for _, args := range [][]string{
			{"-c", "x=y"}, {"--config=x"}, {"--enable", "hooks"}, {"--disable", "shell_tool"}, {"-p", "prof"},
			{"--ignore-user-config"}, {"--dangerously-bypass-hook-trust"}, {"-s", "read-only"}, {"--search"},
			{"-C", "/"}, {"--add-dir", "/"},
		} {
			t.Run(args[0], func(t *testing.T) {
				r := b.launch(t, w, front, codexLaunchRun{args: append(codexLaunchArgs(), args...)})
				r.requireRefused(t, 2, args[0])
				t.Logf("stderr: %q", r.stderr)
			})
		}
		for _, args := range [][]string{{"mcp", "list"}, {"login"}, {"features", "list"}, {"debug", "models"}} {
			t.Run(args[0], func(t *testing.T) {
				r := b.launch(t, w, front, codexLaunchRun{args: args})
				r.requireRefused(t, 2, args[0]+": a subcommand")
				t.Logf("stderr: %q", r.stderr)
			})
		}
	})
}

// codexExec is a call of Codex's shell tool: exec_command with gpt-5.5.
func codexExec(cmd string) fakemodel.ToolCall {
	return fakemodel.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
}

// codexLaunchBox is one throwaway user for sandboxd launch codex: a home
// whose ~/.codex/config.toml selects the fake model's provider and
// configures the user's stdio MCP server, and a workspace, both under the
// test user's home: the sandbox's /tmp is its own, so a workspace there
// would not be the host's.
type codexLaunchBox struct {
	root, home, ws string
	// program is what --program runs: a script that leaves a marker
	// (ran) in the workspace and runs Codex.
	program, ran string
	// mcpServer is the user's MCP server (a python script), mcpStarted
	// the marker it leaves when started.
	mcpServer, mcpStarted string
}

func newCodexLaunchBox(t *testing.T, codex string) *codexLaunchBox {
	t.Helper()
	// newLaunchBox makes the directories under the test user's home (and
	// refuses a home under a tmp); its Claude Code files are unused.
	lb := newLaunchBox(t, codex)
	b := &codexLaunchBox{root: lb.root, home: lb.home, ws: lb.ws, program: filepath.Join(lb.root, "bin", "codex"), ran: lb.ran,
		mcpServer: filepath.Join(lb.root, "bin", "usermcp.py"), mcpStarted: filepath.Join(lb.ws, "mcp-started")}
	if err := os.WriteFile(b.program, []byte("#!/bin/sh\necho ran >> "+b.ran+"\nexec "+codex+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	piWriteFile(t, b.mcpServer, codexMCPServer(b.mcpStarted))
	b.writeUserConfig(t, codexUserConfig(b.mcpServer))
	return b
}

// writeUserConfig writes the user's ~/.codex/config.toml.
func (b *codexLaunchBox) writeUserConfig(t *testing.T, cfg string) {
	t.Helper()
	path := filepath.Join(b.home, ".codex", "config.toml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	piWriteFile(t, path, cfg)
}

// codexUserConfig is the user's ~/.codex/config.toml: the model and its
// provider (the fake model as api.model.test, its key in
// fakemodel.OpenAIKeyEnv; no retries, so a broken stream fails the run
// at once), and the user's own stdio MCP server.
func codexUserConfig(mcpServer string) string {
	return `model = "` + codexLaunchModel + `"
model_provider = "fake"

[model_providers.fake]
name = "fake"
base_url = "https://` + launchModelHost + `/v1"
wire_api = "responses"
env_key = "` + fakemodel.OpenAIKeyEnv + `"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[mcp_servers.` + codexLaunchMCPName + `]
command = "python3"
args = [` + codexTOMLKey(mcpServer) + `]
startup_timeout_sec = 20
`
}

// codexMCPServer is a minimal stdio MCP server (newline-delimited
// JSON-RPC): it leaves started when it starts, and offers one tool.
func codexMCPServer(started string) string {
	q, _ := json.Marshal(started)
	return `import json, sys
with open(` + string(q) + `, "a") as f:
    f.write("started\n")
for line in sys.stdin:
    try:
        req = json.loads(line)
    except ValueError:
        continue
    if "id" not in req:
        continue
    m, res = req.get("method"), {}
    if m == "initialize":
        res = {"protocolVersion": req.get("params", {}).get("protocolVersion", "2025-06-18"),
               "capabilities": {"tools": {}}, "serverInfo": {"name": "` + codexLaunchMCPName + `", "version": "1"}}
    elif m == "tools/list":
        res = {"tools": [{"name": "` + codexLaunchMCPTool + `", "description": "answers pong",
                          "inputSchema": {"type": "object", "properties": {}}}]}
    elif m == "tools/call":
        res = {"content": [{"type": "text", "text": "pong"}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": req["id"], "result": res}) + "\n")
    sys.stdout.flush()
`
}

// codexLaunchArgs are Codex's arguments for a run against the fake model:
// codex exec in the workspace (sandboxd's working directory: -C is
// refused), no git repository needed, plain output.
func codexLaunchArgs() []string {
	return []string{"exec", "--skip-git-repo-check", "--color", "never", "Run the tool calls you are given."}
}

// codexLaunchRun is one sandboxd launch codex: the fake model's calls,
// the policy (default codexLaunchPolicy), launch's flags after the box's,
// Codex's arguments (default codexLaunchArgs) and environment beyond the
// box's.
type codexLaunchRun struct {
	calls  []fakemodel.ToolCall
	policy string
	flags  []string
	args   []string
	env    []string
	// timeout, when set, bounds the launch instead of codexLaunchTimeout.
	timeout time.Duration
}

// codexLaunched is a Codex launch's outcome as the host saw it.
type codexLaunched struct {
	*launchResult
	// calls are the tool calls of the model's conversation, each with
	// the output Codex sent back; reqs the recorded request bodies.
	calls []fakemodel.OpenAIExchange
	reqs  [][]byte
	// homeReads are the host's reads of the session's config.toml and
	// hooks.json, one pair per model turn.
	homeReads []codexHomeRead
}

// codexHomeRead is one host read of the session's private CODEX_HOME.
type codexHomeRead struct{ config, hooks string }

// codexPrivateHome returns the session's private CODEX_HOME, from the
// audit's session start line: the sandbox's id names its runtime
// directory, /run/ID for root, and the home is beside it ("" before
// there is a start line).
func codexPrivateHome(auditText string) string {
	id := launchStartLine(auditText).Sandbox
	if id == "" {
		return ""
	}
	return filepath.Join("/run", id+".home")
}

// launch runs `sandboxd launch codex` in the world's host namespace from
// the workspace, with the fake model serving run.calls behind
// api.model.test, within codexLaunchTimeout.
func (b *codexLaunchBox) launch(t *testing.T, w *world, front *launchModel, run codexLaunchRun) *codexLaunched {
	t.Helper()
	c, policy := newLaunchCmd(t, b.root, cmp.Or(run.policy, codexLaunchPolicy), func(logf func(string, ...any)) (*fakemodel.Server, error) {
		return fakemodel.OpenAIWith(run.calls, fakemodel.OpenAIOptions{Logf: logf})
	})
	args := run.args
	if args == nil {
		args = codexLaunchArgs()
	}
	auditFile := filepath.Join(sharedDir(t), "audit.jsonl")
	// The front's goroutines note the reads; they are taken once the run
	// is over (a read past the buffer is dropped).
	reads := make(chan codexHomeRead, 256)
	front.set(c.srv, func() {
		data, _ := os.ReadFile(auditFile)
		home := codexPrivateHome(string(data))
		read := func(name string) string {
			if home == "" {
				return "unreadable: no session start line yet"
			}
			data, err := os.ReadFile(filepath.Join(home, name))
			if err != nil {
				return "unreadable: " + err.Error()
			}
			return string(data)
		}
		select {
		case reads <- codexHomeRead{read("config.toml"), read("hooks.json")}:
		default:
		}
	})
	_, before, _, _ := w.seen()
	env := append([]string{"HOME=" + b.home, "USER=" + claudeUser(), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		fakemodel.OpenAIKeyEnv + "=fake-key"}, run.env...)
	flags := append([]string{"--policy", policy, "--api-host", launchModelHost, "--program", b.program}, run.flags...)
	start := time.Now()
	rr := w.sandboxd(t, runOpts{sub: []string{"launch", "codex"}, flags: flags, argv: args, dir: b.ws, audit: auditFile,
		timeout: cmp.Or(run.timeout, codexLaunchTimeout), extraEnv: env})
	elapsed := time.Since(start)
	front.set(nil, nil)
	c.srv.Close()
	r := &codexLaunched{}
	for len(reads) > 0 {
		r.homeReads = append(r.homeReads, <-reads)
	}
	for len(c.notes.logs) > 0 {
		(<-c.notes.logs)()
	}
	killHomeLeftovers(t, b.home, "codex")
	_, after, _, _ := w.seen()

	r.reqs = c.srv.Requests()
	r.calls = fakemodel.OpenAITranscript(r.reqs)
	lr := &launchResult{box: &launchBox{ran: b.ran}, run: rr, requests: len(r.reqs), seen: after[len(before):], command: launchStartCommand(rr.audit)}
	lr.code, lr.stdout, lr.stderr, lr.elapsed = rr.code, rr.stdout, rr.stderr, elapsed
	lr.tools = fakemodel.OpenAIToolNames(r.reqs)
	lr.received = c.srv.Received()
	r.launchResult = lr
	t.Logf("sandboxd launch codex %q -- %q: exit %d in %v, %d model requests, world saw %q\n  codex: %q\n  tools: %s\n  deferred: %s",
		flags, args, lr.code, elapsed.Round(time.Millisecond), lr.requests, lr.seen, lr.command, strings.Join(lr.tools, " "),
		strings.Join(r.deferredNamespaces(), " "))
	for i, e := range r.calls {
		t.Logf("  turn %d: %s %s: answered=%v: %.600q", i, e.Name, e.Arguments, e.Answered, e.Output)
	}
	t.Cleanup(func() {
		if t.Failed() {
			first := ""
			if len(r.homeReads) > 0 {
				first = r.homeReads[0].config
			}
			t.Logf("sandboxd stdout: %q\nstderr: %s\naudit:\n%s\nsession config.toml at the first turn:\n%s", lr.stdout, lr.stderr, rr.audit, first)
		}
	})
	return r
}

// requireSucceeded checks that the launch ran Codex to its last turn
// against the fake model, every call answered.
func (r *codexLaunched) requireSucceeded(t *testing.T) {
	t.Helper()
	if r.code != 0 || r.requests == 0 || !strings.Contains(r.stdout, fakemodel.OpenAIFinalText) {
		t.Fatalf("sandboxd launch codex: exit %d, %d model requests, stdout %q: want Codex's run to its last turn (stderr below)",
			r.code, r.requests, r.stdout)
	}
	for i, c := range r.calls {
		if !c.Answered {
			t.Errorf("Codex sent no output for call %d (%s)", i, c.Name)
		}
	}
}

// requireOffered checks the tools of the model requests: each of want
// offered, none of denied.
func (r *codexLaunched) requireOffered(t *testing.T, want, denied []string) {
	t.Helper()
	for _, name := range denied {
		if slices.Contains(r.tools, name) {
			t.Errorf("Codex offered %s, which the ceiling took back (tools %v)", name, r.tools)
		}
	}
	for _, name := range want {
		if !slices.Contains(r.tools, name) {
			t.Errorf("Codex did not offer %s (tools %v)", name, r.tools)
		}
	}
}

// requireOutput checks the output Codex sent back for call i, a call of
// tool: it holds each of has.
func (r *codexLaunched) requireOutput(t *testing.T, i int, tool string, has ...string) {
	t.Helper()
	if i >= len(r.calls) {
		t.Fatalf("call %d (%s) never reached the model's history: %d calls", i, tool, len(r.calls))
	}
	c := r.calls[i]
	if c.Name != tool || !c.Answered {
		t.Fatalf("call %d: %s answered=%v, want an answered %s", i, c.Name, c.Answered, tool)
	}
	missing := slices.DeleteFunc(slices.Clone(has), func(h string) bool { return strings.Contains(c.Output, h) })
	if len(missing) > 0 {
		t.Errorf("%s call %d: output %q lacks %q", tool, i, c.Output, missing)
	}
}

// requireStart checks the session's start line: harness codex, mode
// hooks, the ceiling, and no MCP server of the session's.
func (r *codexLaunched) requireStart(t *testing.T, ceiling []string) {
	t.Helper()
	var start map[string]any
	r.auditHas(func(l map[string]any) bool {
		if l["msg"] == audit.MsgSessionStart {
			start = l
			return true
		}
		return false
	})
	if start == nil {
		t.Fatalf("the audit has no session start line")
	}
	if start["harness"] != "codex" || start["mode"] != "hooks" {
		t.Errorf("the start line's harness %v, mode %v: want codex, hooks", start["harness"], start["mode"])
	}
	if got := r.startCeiling(t); !slices.Equal(got, ceiling) {
		t.Errorf("the start line's ceiling is %v, want %v", got, ceiling)
	}
	if m, ok := start["mcp_servers"].([]any); !ok || len(m) > 0 {
		t.Errorf("the start line's mcp_servers is %v, want []", start["mcp_servers"])
	}
}

// hookKeys returns the hooks.state keys of the session's config.toml at
// the first model turn, failing unless they are the session's hooks.json's
// PreToolUse and PermissionRequest entries.
func (r *codexLaunched) hookKeys(t *testing.T) []string {
	t.Helper()
	if len(r.homeReads) == 0 {
		t.Fatalf("no host read of the session's CODEX_HOME")
	}
	state, _ := tomlAt(codexConfigDoc(t, r.homeReads[0].config), "hooks", "state").(map[string]any)
	keys := slices.Sorted(maps.Keys(state))
	home := codexPrivateHome(r.run.audit)
	want := []string{filepath.Join(home, "hooks.json") + ":permission_request:0:0", filepath.Join(home, "hooks.json") + ":pre_tool_use:0:0"}
	if !slices.Equal(keys, want) {
		t.Errorf("the session's hooks.state keys are %q, want %q", keys, want)
	}
	return keys
}

// requireHomeUnchanged checks the host's reads of the session's
// config.toml and hooks.json: at least turns+1 of them (the last after
// the last tool call), all the same; config.toml keeps hooks on, trusts
// both hook entries, takes back the ceiling (web_search off, view_image
// off, the catalog without apply_patch), holds the user's provider, never
// a setting that turns hooks off, and the user's MCP server only when
// relaxed; hooks.json holds hookgate's PreToolUse entry.
func (r *codexLaunched) requireHomeUnchanged(t *testing.T, turns int, relaxed bool) {
	t.Helper()
	if len(r.homeReads) < turns+1 {
		t.Fatalf("%d reads of the session's CODEX_HOME for %d tool calls", len(r.homeReads), turns)
	}
	first := r.homeReads[0]
	cfg := first.config
	doc := codexConfigDoc(t, cfg)
	catalog, _ := tomlAt(doc, "model_catalog_json").(string)
	if tomlAt(doc, "features", "hooks") != true || tomlAt(doc, "features", "view_image") != false ||
		tomlAt(doc, "web_search") != "disabled" || !strings.HasSuffix(catalog, "/model-catalog.json") ||
		tomlAt(doc, "model_provider") != "fake" || tomlAt(doc, "model_providers", "fake", "base_url") == nil {
		t.Errorf("the session's config.toml lacks hooks on, the ceiling or the user's provider:\n%s", cfg)
	}
	state, _ := tomlAt(doc, "hooks", "state").(map[string]any)
	if len(state) == 0 {
		t.Errorf("the session's config.toml trusts no hook:\n%s", cfg)
	}
	for k, v := range state {
		entry, _ := v.(map[string]any)
		hash, _ := entry["trusted_hash"].(string)
		if len(entry) != 1 || !strings.HasPrefix(hash, "sha256:") {
			t.Errorf("the session's hooks.state %q holds more or less than its trust: %v", k, entry)
		}
	}
	if has := tomlAt(doc, "mcp_servers", codexLaunchMCPName) != nil; has != relaxed {
		t.Errorf("the session's config.toml (relaxed %v) holds the user's MCP server: %v\n%s", relaxed, has, cfg)
	}
	var hooks struct {
		Hooks struct {
			PreToolUse []struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Command string `json:"command"`
				} `json:"hooks"`
			} `json:"PreToolUse"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(first.hooks), &hooks); err != nil || len(hooks.Hooks.PreToolUse) != 1 ||
		len(hooks.Hooks.PreToolUse[0].Hooks) != 1 || hooks.Hooks.PreToolUse[0].Matcher != ".*" ||
		!strings.Contains(hooks.Hooks.PreToolUse[0].Hooks[0].Command, hookgateBin+" check --harness codex") {
		t.Errorf("the session's hooks.json at the first turn (%v) lacks hookgate's PreToolUse entry: %.300q", err, first.hooks)
	}
	for i, got := range r.homeReads {
		if got != first {
			t.Errorf("the session's CODEX_HOME changed by turn %d: config.toml %.300q, hooks.json %.300q", i, got.config, got.hooks)
		}
	}
}

// codexDeferredHeader starts Codex 0.171's list, in the developer
// message, of the tool namespaces tool_search can load (an MCP server's
// is mcp__NAME).
const codexDeferredHeader = "Deferred tool namespaces:\n"

// deferredNamespaces returns the deferred tool namespaces listed in the
// recorded requests: the "- NAME" (or "- NAME: description") lines after
// the header.
func (r *codexLaunched) deferredNamespaces() []string {
	var out []string
	for _, b := range r.reqs {
		var req struct {
			Input []struct {
				Content json.RawMessage `json:"content"`
			} `json:"input"`
		}
		if json.Unmarshal(b, &req) != nil {
			continue
		}
		for _, it := range req.Input {
			var parts []struct {
				Text string `json:"text"`
			}
			json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				_, rest, ok := strings.Cut(p.Text, codexDeferredHeader)
				if !ok {
					continue
				}
				for _, l := range strings.Split(rest, "\n") {
					name, ok := strings.CutPrefix(l, "- ")
					if !ok {
						break
					}
					name, _, _ = strings.Cut(name, ":")
					if !slices.Contains(out, name) {
						out = append(out, name)
					}
				}
			}
		}
	}
	return out
}
