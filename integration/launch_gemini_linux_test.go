//go:build linux

package integration

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/fakemodel"
)

// The Gemini launch test's MCP servers, beside the fake model
// (launchModelHost) and the user's server (launchMCPHost, named
// launchMCPName in ~/.gemini/settings.json): the workspace's, named in
// its .gemini/settings.json, on the fake internet, and the session's own
// (sandboxd launch --mcp-url, named "barry"), on the host namespace's
// loopback, which the launch forwards inside.
const (
	launchWSMCPHost = "mcp.ws.test"
	launchWSMCPAddr = "192.0.2.32"
	launchWSMCPName = "wsmcp"
	// Their tools, one each: Gemini CLI names them mcp_SERVER_TOOL.
	geminiUserTool    = "userping"
	geminiWSTool      = "wsping"
	geminiSessionTool = "barryping"
	// geminiTokenEnv holds the session server's bearer token
	// (--mcp-secret-env), which the server requires.
	geminiTokenEnv = "BARRY_MCP_TOKEN"
	geminiToken    = "session-token-7f3a"
)

// geminiLaunchPolicy is the session of the Gemini launch runs: git push
// denied to the shell, write_todos denied by name; no trait grants the
// network category, so web_fetch and google_web_search are not granted
// either. The ceiling is those three tools.
const geminiLaunchPolicy = "version: 1\nharness: gemini\n" +
	"bounds:\n  launch-test:\n" +
	"    bash: {denyPrograms: [\"git:push\"]}\n" +
	"    deniedTools: [write_todos]\n" +
	"session: {bounds: [launch-test]}\n"

// geminiLaunchCeiling is what the session's native policy denies, sorted.
var geminiLaunchCeiling = []string{"google_web_search", "web_fetch", "write_todos"}

// geminiLaunchTimeout bounds one launch: sandboxd's start, Gemini CLI's
// (it relaunches itself) and its turns, on two shared CPUs.
const geminiLaunchTimeout = 3 * time.Minute

// TestLaunchGemini drives the real Gemini CLI (the pinned 0.61.0) through
// `sandboxd launch gemini` on the fake internet: the fake Gemini API is
// served over TLS as api.model.test in the world namespace (a certificate
// of the world's CA, which Gemini CLI trusts through NODE_EXTRA_CA_CERTS;
// GOOGLE_GEMINI_BASE_URL points there), and Gemini CLI reaches it only
// through sandboxd's proxy, which allows it because the launch adds
// --api-host to the allowlist. The user's settings configure an MCP
// server of theirs, the workspace's another; the session has its own
// (--mcp-url). Gemini CLI runs with --approval-mode yolo: the session's
// hook is the only gate. Every case is checked on the host side: the
// requests the fake model recorded (the function declarations Gemini CLI
// offered, the function responses it sent back), the MCP servers' logs,
// marker files, the world's request log, sandboxd's audit and the
// session's system settings as the host sees them.
func TestLaunchGemini(t *testing.T) {
	gemini := geminiBinary(t)
	w := newWorld(t)
	model := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
	user, ws := &launchMCP{tool: geminiUserTool}, &launchMCP{tool: geminiWSTool}
	w.serveHTTPS(t, launchMCPHost, launchMCPAddr, user)
	w.serveHTTPS(t, launchWSMCPHost, launchWSMCPAddr, ws)
	session := &launchMCP{tool: geminiSessionTool, token: geminiToken}
	ln := w.host.Listen(t, "tcp", "127.0.0.1:0")
	sessionSrv := &http.Server{Handler: session, ReadHeaderTimeout: 10 * time.Second}
	go sessionSrv.Serve(ln)
	t.Cleanup(func() { sessionSrv.Close() })
	mcpFlags := []string{"--mcp-url", "http://" + ln.Addr().String() + "/mcp", "--mcp-secret-env", geminiTokenEnv}

	// From the first run: its hook entry's name and command, which a user
	// could know and list in hooksConfig.disabled (empty should that run
	// fail).
	var lastHook geminiHookEntry

	// Cases 1 to 5 in one run: the tool list of a strict session, then a
	// denied shell call, an allowed one, a fetch of a denied host, a write
	// outside the write roots, an edit of the session's system settings,
	// a call of a tool the ceiling took back, and a denied shell call
	// again.
	t.Run("session", func(t *testing.T) {
		b := newGeminiLaunchBox(t, gemini)
		// A directory under /opt of this run's own, in Gemini CLI's
		// workspace (--include-directories), so that Gemini CLI's own
		// path check lets write_file try: the sandbox's mount is what
		// must refuse it.
		outsideDir := "/opt/" + filepath.Base(b.root) + "-outside"
		if err := os.Mkdir(outsideDir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(outsideDir) })
		outside := filepath.Join(outsideDir, "outside.txt")
		inWS := func(name string) string { return filepath.Join(b.ws, name) }
		before := session.asked("tools/list")
		r := b.launch(t, w, model, geminiLaunchRun{flags: mcpFlags, args: append(geminiLaunchArgs(), "--include-directories", outsideDir),
			calls: []fakemodel.ToolCall{
				shellCall("touch " + inWS("push-ran") + " && git push origin main"),
				shellCall("echo hi > " + inWS("marker")),
				shellCall(`printf 'import urllib.request\nurllib.request.urlopen("https://denied.test/", timeout=20)\n' > fetch.py && python3 fetch.py`),
				{Name: "write_file", Input: map[string]any{"file_path": outside, "content": "escaped\n"}},
				// A glob (the id is not known before the run), read by tee:
				// the kernel's refusal is the point.
				shellCall("tee /run/sandboxd-*/launch/system-settings.json </dev/null"),
				{Name: "write_todos", Input: map[string]any{"todos": []any{map[string]any{"description": "todo", "status": "pending"}}}},
				shellCall("touch " + inWS("push-ran-after") + " && git push origin main"),
			}})
		r.requireSucceeded(t)
		lastHook = r.hook(t)

		// 1. The tool list: the ceiling's tools, the user's and the
		// workspace's MCP servers are not offered (and the servers never
		// heard from Gemini CLI), the rest of the default set and the
		// session's server are (it answers only with the bearer token of
		// --mcp-secret-env, which the settings name); write_todos, asked
		// for anyway, did not run.
		t.Run("tools", func(t *testing.T) {
			r.requireOffered(t, geminiDefaultTools(), geminiLaunchCeiling)
			r.requireMCP(t, []string{geminiSessionTool}, []string{geminiUserTool, geminiWSTool})
			if n := session.asked("tools/list") - before; n == 0 {
				t.Errorf("the session's MCP server got no tools/list")
			}
			for _, host := range []string{launchMCPHost, launchWSMCPHost} {
				if n := r.worldSaw(host); n > 0 {
					t.Errorf("%s got %d requests in a strict session", host, n)
				}
			}
			if got := r.startCeiling(t); !slices.Equal(got, geminiLaunchCeiling) {
				t.Errorf("the start line's ceiling is %v, want %v", got, geminiLaunchCeiling)
			}
			r.requireResult(t, 5, "write_todos", true, `Tool "write_todos" not found`)
		})

		// 2. The gate denied git push (its reason is the function
		// response, and the command's touch never ran) and allowed the
		// echo, which left its marker. sandboxd's ruling server audited
		// one ruling per call that reached the gate, in order.
		t.Run("shell", func(t *testing.T) {
			r.requireRulings(t, "run_shell_command deny", "run_shell_command allow", "run_shell_command allow", "write_file allow",
				"run_shell_command allow", "run_shell_command deny")
			r.requireResult(t, 0, "run_shell_command", true, geminiBlocked+piPushReason)
			piRequireAbsent(t, inWS("push-ran"))
			r.requireResult(t, 1, "run_shell_command", false)
			piRequireContent(t, inWS("marker"), "hi\n")
		})

		// 3. python's fetch passed the gate (ruling 2 is an allow: a
		// script written to disk is opaque to the classifier, not network) and failed on
		// the proxy's 403; the proxy audited its deny, and the world never
		// saw denied.test, while it did see the model's host.
		t.Run("proxy", func(t *testing.T) {
			r.requireResult(t, 2, "run_shell_command", false, "OSError: Tunnel connection failed: 403 Forbidden", "Exit Code: 1")
			r.requireProxyDenied(t, "denied.test")
			if r.worldSaw(launchModelHost) == 0 {
				t.Errorf("the world saw no request for %s: Gemini CLI reached the model some other way", launchModelHost)
			}
		})

		// 4. The write under /opt passed Gemini CLI's own path check and
		// the gate (ruling 3); the kernel refused it (a read-only mount:
		// EROFS), and the host has no such file.
		t.Run("kernel", func(t *testing.T) {
			r.requireResult(t, 3, "write_file", true, "EROFS: read-only file system")
			piRequireAbsent(t, outside)
		})

		// 5. tee on the session's system settings passed the gate (ruling
		// 4) and failed inside (EROFS); the host's copy, read at every
		// model turn (each after the previous tool finished), never
		// changed, and the gate still denied git push after it.
		t.Run("config", func(t *testing.T) {
			r.requireResult(t, 4, "run_shell_command", false, "/launch/system-settings.json: Read-only file system", "Exit Code: 1")
			r.requireSettingsUnchanged(t, len(r.exchanges), false)
			r.requireResult(t, 6, "run_shell_command", true, geminiBlocked+piPushReason)
			piRequireAbsent(t, inWS("push-ran-after"))
		})
	})

	// The harness's API key is a credential for the model's host by
	// default: Gemini CLI's whole process tree holds a placeholder (a
	// shell call's env shows it), and the model's server got the real key
	// from the proxy.
	t.Run("api-key", func(t *testing.T) {
		b := newGeminiLaunchBox(t, gemini)
		out := filepath.Join(b.ws, "env-out")
		r := b.launch(t, w, model, geminiLaunchRun{calls: []fakemodel.ToolCall{shellCall("env > " + out)}})
		r.requireSucceeded(t)
		env, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("the shell call's env: %v", err)
		}
		if bytes.Contains(env, []byte(geminiAPIKey)) {
			t.Errorf("the real API key is in the harness's process tree: %s", env)
		}
		if !regexp.MustCompile(`(?m)^GEMINI_API_KEY=[a-z]{4}-[a-z]{3}$`).Match(env) {
			t.Errorf("GEMINI_API_KEY inside is not a placeholder of the key's shape: %s", env)
		}
		if !model.sawKey(geminiAPIKey) {
			t.Errorf("the model's server never got the real API key")
		}
		if !r.auditHas(func(l map[string]any) bool {
			return l["msg"] == audit.MsgSessionStart && fmt.Sprint(l[audit.AttrCredentials]) == "[GEMINI_API_KEY]"
		}) {
			t.Errorf("the start line does not name GEMINI_API_KEY as a credential")
		}
	})

	// 1, the control: without a ceiling (the web trait grants the
	// network tools, no bound denies any) the same Gemini CLI offers the
	// three tools the ceiling took back.
	t.Run("no-ceiling", func(t *testing.T) {
		b := newGeminiLaunchBox(t, gemini)
		r := b.launch(t, w, model, geminiLaunchRun{policy: "version: 1\nharness: gemini\nsession: {traits: [web]}\n"})
		r.requireSucceeded(t)
		r.requireOffered(t, append(geminiDefaultTools(), geminiLaunchCeiling...), nil)
		if got := r.startCeiling(t); len(got) > 0 {
			t.Errorf("the start line's ceiling is %v, want none", got)
		}
	})

	// 1, relaxed, and 6. The user's and the workspace's MCP servers load
	// (Gemini CLI connected to them through the proxy, and offers their
	// tools) beside the session's; the ceiling holds. The user's settings
	// also switch hooks off and disable, by name, "hookgate" and the
	// previous session's hook (its name and its command): the gate still
	// denies git push, and rules on the user's MCP tool (which no trait
	// grants: a deny, and the server never gets the call). The control,
	// in the same run: two AfterTool hooks of the user's (the launch
	// refuses only BeforeTool ones), one named "hookgate", which the list
	// disables, and one it does not name: after the allowed echo, only
	// the second left its marker.
	t.Run("relax-user-disables-hooks", func(t *testing.T) {
		disabled := []string{"hookgate", "hookgate-failclosed", "barry", lastHook.Name, lastHook.Command}
		b := newGeminiLaunchBox(t, gemini)
		afterHook := func(name string) map[string]any {
			return map[string]any{"type": "command", "name": name, "command": "cat >/dev/null; echo ran >> " + filepath.Join(b.ws, name+"-ran")}
		}
		geminiWriteSettings(t, b.userSettings(), b.userBase(), map[string]any{
			"hooksConfig": map[string]any{"enabled": false, "disabled": disabled},
			"hooks": map[string]any{"AfterTool": []any{map[string]any{"matcher": ".*",
				"hooks": []any{afterHook("hookgate"), afterHook("user-after")}}}},
		})
		userCalls := user.asked("tools/call")
		userTool := geminiMCPToolName(launchMCPName, geminiUserTool)
		r := b.launch(t, w, model, geminiLaunchRun{flags: append([]string{"--relax"}, mcpFlags...), calls: []fakemodel.ToolCall{
			shellCall("touch " + filepath.Join(b.ws, "push-ran") + " && git push origin main"),
			shellCall("echo ok"),
			{Name: userTool, Input: map[string]any{}},
		}})
		r.requireSucceeded(t)
		t.Run("tools", func(t *testing.T) {
			r.requireOffered(t, geminiDefaultTools(), geminiLaunchCeiling)
			r.requireMCP(t, []string{geminiSessionTool, geminiUserTool, geminiWSTool}, nil)
			for _, host := range []string{launchMCPHost, launchWSMCPHost} {
				if n := r.worldSaw(host); n == 0 {
					t.Errorf("%s got no request in a relaxed session", host)
				}
			}
		})
		t.Run("hooks", func(t *testing.T) {
			if h := r.hook(t); slices.Contains(disabled, h.Name) {
				t.Errorf("the session's hook name %q is one the user disabled", h.Name)
			}
			r.requireSettingsUnchanged(t, len(r.exchanges), true)
			r.requireRulings(t, "run_shell_command deny", "run_shell_command allow", userTool+" deny")
			r.requireResult(t, 0, "run_shell_command", true, geminiBlocked+piPushReason)
			piRequireAbsent(t, filepath.Join(b.ws, "push-ran"))
			r.requireResult(t, 1, "run_shell_command", false, "Output: ok")
			r.requireResult(t, 2, userTool, true, geminiBlocked+"hookgate: native tool not granted: "+userTool+" for gemini")
			if n := user.asked("tools/call") - userCalls; n > 0 {
				t.Errorf("the user's MCP server got %d tools/call requests", n)
			}
			piRequireAbsentBecause(t, filepath.Join(b.ws, "hookgate-ran"), "the user's hook named hookgate ran: hooksConfig.disabled did not apply, the control proves nothing")
			piRequirePresent(t, filepath.Join(b.ws, "user-after-ran"))
		})
	})

	// 1, strict, against settings that start a server by mcp.serverCommand
	// (Gemini CLI names it "mcp"; it is in no mcpServers): once from the
	// workspace's settings, whose mcp.allowed (["mcp"]) leaves the
	// session's allowlist empty (Gemini CLI intersects the layers' lists,
	// and an empty one allows every server), and once from the user's, in
	// a session without an MCP server of its own (the launch's allowlist
	// is empty to begin with). The server is a shell that leaves a marker
	// when started: a strict session must not start it. The launch refuses
	// such settings (exit 125, naming mcp.serverCommand); its system
	// settings also exclude "mcp". (Launched, both variants started it.)
	t.Run("serverCommand", func(t *testing.T) {
		for _, c := range []struct {
			name      string
			workspace bool
			flags     []string
		}{
			{"workspace-allowed", true, mcpFlags},
			{"user-no-session-server", false, nil},
		} {
			t.Run(c.name, func(t *testing.T) {
				b := newGeminiLaunchBox(t, gemini)
				started := filepath.Join(b.ws, "mcp-started")
				mcp := map[string]any{"serverCommand": "sh -c 'echo started >> " + started + "'"}
				whose := "the user's settings"
				if c.workspace {
					whose = "the workspace's settings"
					mcp["allowed"] = []string{"mcp"}
					geminiWriteSettings(t, b.wsSettings(), geminiWSSettings, map[string]any{"mcp": mcp})
				} else {
					geminiWriteSettings(t, b.userSettings(), b.userBase(), map[string]any{"mcp": mcp})
				}
				r := b.launch(t, w, model, geminiLaunchRun{flags: c.flags})
				r.requireRefused(t, 125, "mcp.serverCommand")
				piRequireAbsentBecause(t, started, "the strict session started the mcp.serverCommand server of "+whose+
					" (Gemini CLI's server \"mcp\", which the launch's mcp.excluded does not list)")
				for _, host := range []string{launchMCPHost, launchWSMCPHost} {
					if n := r.worldSaw(host); n > 0 {
						t.Errorf("%s got %d requests in a strict session", host, n)
					}
				}
			})
		}
	})

	// 7. Each argument that would override the session configuration is
	// refused before anything runs: exit 2, one line naming it, and
	// Gemini CLI never started (the program's marker is absent, the model
	// got nothing). Each comes after the arguments of a working run, so
	// one that got through would show; a subcommand comes first.
	t.Run("refused-args", func(t *testing.T) {
		b := newGeminiLaunchBox(t, gemini)
		for _, args := range [][]string{
			{"--policy", "p"}, {"--allowed-tools", "x"}, {"--allowedMcpServerNames", "a"}, {"-e", "x"}, {"--sandbox"},
		} {
			t.Run(args[0], func(t *testing.T) {
				r := b.launch(t, w, model, geminiLaunchRun{args: append(geminiLaunchArgs(), args...)})
				r.requireRefused(t, 2, args[0])
				t.Logf("stderr: %q", r.stderr)
			})
		}
		t.Run("mcp", func(t *testing.T) {
			r := b.launch(t, w, model, geminiLaunchRun{args: []string{"mcp", "list"}})
			r.requireRefused(t, 2, "mcp")
			t.Logf("stderr: %q", r.stderr)
		})
	})

	// 7. The workspace's settings bring a BeforeTool hook of their own,
	// which would run beside the gate: the launch refuses to start
	// (125), one line naming the file and the hook.
	t.Run("workspace-hook", func(t *testing.T) {
		b := newGeminiLaunchBox(t, gemini)
		hook := filepath.Join(b.ws, "own-hook.sh")
		geminiWriteSettings(t, b.wsSettings(), "{}", map[string]any{"hooks": map[string]any{"BeforeTool": []any{map[string]any{
			"matcher": ".*", "hooks": []any{map[string]any{"type": "command", "command": hook, "name": "own"}}}}}})
		r := b.launch(t, w, model, geminiLaunchRun{calls: []fakemodel.ToolCall{shellCall("echo ok")}})
		r.requireRefused(t, 125, b.wsSettings()+" has its own BeforeTool hook")
		t.Logf("stderr: %q", r.stderr)
		if !strings.Contains(r.stderr, hook) {
			t.Errorf("stderr %q does not name the hook %s", r.stderr, hook)
		}
	})
}

// geminiDefaultTools are Gemini CLI 0.61's default tools the session
// keeps: the shell, the file tools and the search tools.
func geminiDefaultTools() []string {
	return []string{"run_shell_command", "read_file", "write_file", "replace", "glob", "grep_search", "list_directory"}
}

// geminiMCPToolName is Gemini CLI's name for an MCP server's tool.
func geminiMCPToolName(server, tool string) string { return "mcp_" + server + "_" + tool }

// geminiLaunchBox is one throwaway user for sandboxd launch gemini: a
// home whose ~/.gemini/settings.json selects the API key auth and
// configures the user's MCP server, and a workspace whose
// .gemini/settings.json configures another, both under the test user's
// home: the sandbox's /tmp is its own, so a workspace there would not be
// the host's.
type geminiLaunchBox struct {
	root, home, ws string
	// program is what --program runs: a script that leaves a marker
	// (ran) in the workspace and runs Gemini CLI.
	program, ran string
}

func newGeminiLaunchBox(t *testing.T, gemini string) *geminiLaunchBox {
	t.Helper()
	// newLaunchBox makes the directories under the test user's home (and
	// refuses a home under a tmp); its Claude Code files are unused.
	lb := newLaunchBox(t, gemini)
	b := &geminiLaunchBox{root: lb.root, home: lb.home, ws: lb.ws, program: filepath.Join(lb.root, "bin", "gemini"), ran: lb.ran}
	if err := os.WriteFile(b.program, []byte("#!/bin/sh\necho ran >> "+b.ran+"\nexec "+gemini+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	geminiWriteSettings(t, b.userSettings(), b.userBase(), nil)
	geminiWriteSettings(t, b.wsSettings(), geminiWSSettings, nil)
	return b
}

func (b *geminiLaunchBox) userSettings() string {
	return filepath.Join(b.home, ".gemini", "settings.json")
}
func (b *geminiLaunchBox) wsSettings() string { return filepath.Join(b.ws, ".gemini", "settings.json") }

// userBase is the user's settings: geminiUserSettings (API key auth, no
// updates, no statistics) and the user's MCP server.
func (b *geminiLaunchBox) userBase() string {
	var s map[string]any
	json.Unmarshal([]byte(geminiUserSettings), &s)
	s["mcpServers"] = map[string]any{launchMCPName: map[string]any{"httpUrl": "https://" + launchMCPHost + "/mcp"}}
	out, _ := json.Marshal(s)
	return string(out)
}

// geminiWSSettings are the workspace's settings: its MCP server.
const geminiWSSettings = `{"mcpServers": {"` + launchWSMCPName + `": {"httpUrl": "https://` + launchWSMCPHost + `/mcp"}}}`

// geminiWriteSettings writes Gemini CLI settings at path: the JSON object
// base with keys set.
func geminiWriteSettings(t *testing.T, path, base string, keys map[string]any) {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(base), &s); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		s[k] = v
	}
	out, _ := json.MarshalIndent(s, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	piWriteFile(t, path, string(out)+"\n")
}

// geminiLaunchArgs are Gemini CLI's arguments for a run against the fake
// model: the flash model, no approval prompts (the session's hook is the
// only gate), print mode.
func geminiLaunchArgs() []string {
	return []string{"-m", "gemini-2.5-flash", "--approval-mode", "yolo", "-p", "Run the tool calls you are given."}
}

// geminiLaunchRun is one sandboxd launch gemini: the fake model's calls,
// the policy (default geminiLaunchPolicy), launch's flags after the
// box's, and Gemini CLI's arguments (default geminiLaunchArgs).
type geminiLaunchRun struct {
	calls  []fakemodel.ToolCall
	policy string
	flags  []string
	args   []string
	// env is added to the launch's environment; timeout, when set, bounds
	// the launch instead of geminiLaunchTimeout.
	env     []string
	timeout time.Duration
}

// geminiLaunched is a Gemini launch's outcome as the host saw it.
type geminiLaunched struct {
	*launchResult
	// settings are the host's reads of the session's system settings,
	// one per model turn.
	settings []string
}

// launch runs `sandboxd launch gemini` in the world's host namespace from
// the workspace, with the fake model serving run.calls behind
// api.model.test, within geminiLaunchTimeout. The user's and the
// workspace's MCP hosts are allowed: only the session's configuration
// keeps Gemini CLI from them.
// geminiAPIKey is the launch's Gemini API key: long enough to be a
// credential (a launch's default for the model's host).
const geminiAPIKey = "test-key"

func (b *geminiLaunchBox) launch(t *testing.T, w *world, m *launchModel, run geminiLaunchRun) *geminiLaunched {
	t.Helper()
	c, policy := newLaunchCmd(t, b.root, cmp.Or(run.policy, geminiLaunchPolicy), func(logf func(string, ...any)) (*fakemodel.Server, error) {
		return fakemodel.GeminiWith(run.calls, fakemodel.GeminiOptions{Logf: logf})
	})
	if c.argv = run.args; c.argv == nil {
		c.argv = geminiLaunchArgs()
	}
	c.file, c.sub, c.transcript = geminiSystemSettingsPath, []string{"launch", "gemini"}, geminiLaunchTranscript
	c.flags = append([]string{"--policy", policy, "--api-host", launchModelHost, "--program", b.program,
		"--allow-domain", launchMCPHost, "--allow-domain", launchWSMCPHost}, run.flags...)
	c.dir, c.home, c.what, c.ran, c.timeout = b.ws, b.home, "gemini", b.ran, cmp.Or(run.timeout, geminiLaunchTimeout)
	c.env = []string{"HOME=" + b.home, "USER=" + claudeUser(), "LANG=C.UTF-8", "TERM=dumb", "NO_COLOR=1",
		"GEMINI_API_KEY=" + geminiAPIKey, "GOOGLE_GEMINI_BASE_URL=https://" + launchModelHost, "NODE_EXTRA_CA_CERTS=" + w.caFile,
		"GEMINI_TELEMETRY_ENABLED=false", geminiTokenEnv + "=" + geminiToken}
	c.env = append(c.env, run.env...)
	lr, reads := c.run(t, w, m)
	return &geminiLaunched{launchResult: lr, settings: reads}
}

// geminiLaunchTranscript reads the fake Gemini API's requests as the
// launch results hold them: each function call with the function
// response Gemini CLI sent back (an error when the response holds
// "error"), and the function declarations offered.
func geminiLaunchTranscript(reqs [][]byte) ([]fakemodel.AnthropicExchange, []string) {
	var out []fakemodel.AnthropicExchange
	for _, e := range fakemodel.GeminiTranscript(reqs) {
		var resp struct {
			Error json.RawMessage `json:"error"`
		}
		json.Unmarshal(e.Response, &resp)
		out = append(out, fakemodel.AnthropicExchange{ID: e.ID, Name: e.Name, Input: e.Args, Answered: e.Answered,
			Result: e.Text(), IsError: len(resp.Error) > 0})
	}
	return out, fakemodel.GeminiToolNames(reqs)
}

// geminiSystemSettingsPath returns the session's system settings file,
// from the audit file's session start line: the sandbox's id names its
// runtime directory, /run/ID for root ("" before there is a start line).
func geminiSystemSettingsPath(auditFile string) string {
	data, _ := os.ReadFile(auditFile)
	id := launchStartLine(string(data)).Sandbox
	if id == "" {
		return ""
	}
	return filepath.Join("/run", id, "launch", "system-settings.json")
}

// requireOffered checks the function declarations: each of want offered,
// none of denied.
func (r *geminiLaunched) requireOffered(t *testing.T, want, denied []string) {
	t.Helper()
	for _, name := range denied {
		if slices.Contains(r.tools, name) {
			t.Errorf("Gemini CLI offered %s, which the ceiling took back", name)
		}
	}
	for _, name := range want {
		if !slices.Contains(r.tools, name) {
			t.Errorf("Gemini CLI did not offer %s, which the session allows", name)
		}
	}
}

// requireMCP checks the MCP tools offered: those named in want, and none
// named in denied.
func (r *geminiLaunched) requireMCP(t *testing.T, want, denied []string) {
	t.Helper()
	var mcp []string
	for _, n := range r.tools {
		if strings.HasPrefix(n, "mcp_") {
			mcp = append(mcp, n)
		}
	}
	for _, tool := range want {
		if !slices.ContainsFunc(mcp, func(n string) bool { return strings.HasSuffix(n, "_"+tool) }) {
			t.Errorf("Gemini CLI offered the MCP tools %v, not %s", mcp, tool)
		}
	}
	for _, tool := range denied {
		if slices.ContainsFunc(mcp, func(n string) bool { return strings.HasSuffix(n, "_"+tool) }) {
			t.Errorf("Gemini CLI offered the MCP tools %v, %s among them", mcp, tool)
		}
	}
}

// geminiHookEntry is one hook of the BeforeTool entry of Gemini CLI's
// settings.
type geminiHookEntry struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Name    string `json:"name"`
}

// geminiSystemSettings is what the session's system settings hold.
type geminiSystemSettings struct {
	Hooks struct {
		BeforeTool []struct {
			Matcher string            `json:"matcher"`
			Hooks   []geminiHookEntry `json:"hooks"`
		} `json:"BeforeTool"`
	} `json:"hooks"`
	HooksConfig struct {
		Enabled *bool `json:"enabled"`
	} `json:"hooksConfig"`
	Security struct {
		FolderTrust struct {
			Enabled *bool `json:"enabled"`
		} `json:"folderTrust"`
	} `json:"security"`
	Tools struct {
		Exclude []string `json:"exclude"`
	} `json:"tools"`
	MCPServers map[string]json.RawMessage `json:"mcpServers"`
	MCP        *struct {
		Allowed  []string `json:"allowed"`
		Excluded []string `json:"excluded"`
	} `json:"mcp"`
}

// geminiSessionHookName is the form of the hook's name in a session:
// hookgate and 12 hex digits of the session's own (a user's
// hooksConfig.disabled cannot name it in advance).
var geminiSessionHookName = regexp.MustCompile(`^hookgate-[0-9a-f]{12}$`)

// hook returns the session's hook as the host's first read of the system
// settings holds it: hookgate's fail-closed command under a name of the
// session's own.
func (r *geminiLaunched) hook(t *testing.T) geminiHookEntry {
	t.Helper()
	if len(r.settings) == 0 {
		t.Fatalf("no host read of the session's system settings")
	}
	var s geminiSystemSettings
	if err := json.Unmarshal([]byte(r.settings[0]), &s); err != nil || len(s.Hooks.BeforeTool) != 1 || len(s.Hooks.BeforeTool[0].Hooks) != 1 {
		t.Fatalf("the session's system settings (%v) hold no single BeforeTool hook: %.300q", err, r.settings[0])
	}
	h := s.Hooks.BeforeTool[0].Hooks[0]
	if h.Type != "command" || !strings.Contains(h.Command, hookgateBin+" check --harness gemini") || !geminiSessionHookName.MatchString(h.Name) {
		t.Fatalf("the session's BeforeTool hook %+v is not hookgate's under a name of the session's", h)
	}
	return h
}

// requireSettingsUnchanged checks the host's reads of the session's
// system settings: at least turns+1 of them (the last after the last
// tool call), all the same, holding hooks on, folder trust off, the
// ceiling in tools.exclude and the session's MCP server, allowed alone
// (with the user's and the workspace's excluded) unless relaxed.
func (r *geminiLaunched) requireSettingsUnchanged(t *testing.T, turns int, relaxed bool) {
	t.Helper()
	if len(r.settings) < turns+1 {
		t.Fatalf("%d reads of the session's system settings for %d tool calls", len(r.settings), turns)
	}
	first := r.settings[0]
	var s geminiSystemSettings
	if err := json.Unmarshal([]byte(first), &s); err != nil {
		t.Fatalf("the session's system settings at the first turn: %v: %.300q", err, first)
	}
	if s.HooksConfig.Enabled == nil || !*s.HooksConfig.Enabled || s.Security.FolderTrust.Enabled == nil || *s.Security.FolderTrust.Enabled ||
		!slices.Equal(s.Tools.Exclude, geminiLaunchCeiling) || len(s.MCPServers) != 1 || s.MCPServers["barry"] == nil {
		t.Errorf("the session's system settings lack hooks on, folder trust off, tools.exclude %v or the one MCP server barry: %s",
			geminiLaunchCeiling, first)
	}
	switch {
	case relaxed && s.MCP != nil:
		t.Errorf("the relaxed session's system settings restrict MCP: %+v", *s.MCP)
	case !relaxed && (s.MCP == nil || !slices.Equal(s.MCP.Allowed, []string{"barry"}) ||
		!slices.Equal(s.MCP.Excluded, []string{"mcp", launchMCPName, launchWSMCPName})):
		t.Errorf("the strict session's system settings do not allow barry alone and exclude mcp (mcp.serverCommand's), %s and %s: %s", launchMCPName, launchWSMCPName, first)
	}
	for i, got := range r.settings {
		if got != first {
			t.Errorf("the session's system settings changed by turn %d: %.300q", i, got)
		}
	}
}
