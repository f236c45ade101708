//go:build linux

package integration

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestHarnessCopilot drives the real GitHub Copilot CLI (1.0.102, from
// $BARRY_HARNESSES) on the host against a fake Chat Completions API
// (fakemodel.OpenAIChat, Copilot's BYOK "openai" provider), with hookgate
// installed the way a user installs it (hookgate install --harness copilot
// --policy FILE, COPILOT_HOME set), and checks, for each tool call the
// fake model asks for, both the host (a marker file the tool would write)
// and the tool message Copilot sent back to the model.
//
// The protocol facts the cases rely on were measured on the real binary
// and are summed up in docs/design.md ("GitHub Copilot CLI"); "FACTS §n"
// below names the fact: §0 running headless, §1 tools, §2 payload, §3
// configuration and trust, §4 answers.
//
// Groups:
//   - install: what hookgate install writes.
//   - tools: what Copilot offers the model, against the catalog.
//   - policy, natives: the policy's answers reach the tools, for a tool of
//     each kind Copilot has (shell, file read, file write, network, none).
//   - failclosed: a broken policy or hookgate (missing, not executable,
//     exit 1, killed, panicking, hanging past its deadline, garbage) must
//     still be a deny. Copilot itself runs the tool when a hook times out or
//     prints what it cannot parse (FACTS §4).
//   - scope: user and project installs, with and without folder trust;
//     every way of running Copilot must gate the call (or say, through
//     hookgate verify, that it will not).
//   - protocol: Copilot's own handling of raw hook answers (no hookgate,
//     no wrapper), pinned as observed, so a change in the CLI shows up.
//
// Every run: copilot -p PROMPT --yolo --no-auto-update
// --disable-client-telemetry --log-dir DIR in the workspace (--yolo: all
// tools, paths and URLs allowed, so the hook is the only gate, FACTS §0),
// a throwaway HOME and COPILOT_HOME, and the fake's CopilotEnv
// (COPILOT_PROVIDER_BASE_URL on loopback, COPILOT_OFFLINE=true: no GitHub
// login, telemetry, web tools or update check).
func TestHarnessCopilot(t *testing.T) {
	copilot := copilotBinary(t)

	t.Run("install", func(t *testing.T) {
		t.Parallel()
		w := newCopilotWorld(t, copilotOpts{})
		path := w.install(t)
		// User scope: a hook file under $COPILOT_HOME/hooks, or the inline
		// "hooks" of $COPILOT_HOME/settings.json (FACTS §3).
		if filepath.Dir(path) != filepath.Join(w.copilotHome, "hooks") && path != filepath.Join(w.copilotHome, "settings.json") {
			t.Fatalf("install wrote %s: Copilot reads neither (want %s/hooks/*.json or %s/settings.json)", path, w.copilotHome, w.copilotHome)
		}
		b, _ := os.ReadFile(path)
		t.Logf("%s after install:\n%s", path, b)
		e := copilotHookgateEntry(t, b)
		if !strings.Contains(e.cmd, w.bin) || !strings.Contains(e.cmd, "check --harness copilot --policy "+w.policy) {
			t.Errorf("hook entry runs %q: want %s check --harness copilot --policy %s", e.cmd, w.bin, w.policy)
		}
		// Copilot runs the tool when a hook times out (default 30 s,
		// timeoutSec 0 skips the hook): the entry's timeout must leave the
		// wrapper (9 s) time to answer (FACTS §3, §4).
		if e.timeout != nil && *e.timeout < 10 {
			t.Errorf("hook entry timeoutSec %v: Copilot would give up on the wrapper first and run the tool", *e.timeout)
		}
		// The other settings stay.
		if cfg, _ := os.ReadFile(filepath.Join(w.copilotHome, "config.json")); !bytes.Contains(cfg, []byte(`"firstLaunchAt"`)) {
			t.Errorf("config.json lost its settings:\n%s", cfg)
		}
		if other, err := os.ReadFile(filepath.Join(w.copilotHome, "hooks", "other.json")); err != nil || string(other) != copilotOtherHooks {
			t.Errorf("the user's other hook file changed: %q, %v", other, err)
		}
		// Installing twice changes nothing.
		if out := w.hookgate(t, "install", "--harness", "copilot", "--policy", w.policy); !strings.Contains(out, "unchanged") {
			t.Errorf("second install: %s", out)
		}
	})

	// tools: what Copilot 1.0.102 offers the model offline (FACTS §1),
	// against what hookgate knows.
	t.Run("tools", func(t *testing.T) {
		t.Parallel()
		w := newCopilotWorld(t, copilotOpts{})
		w.install(t)
		r := w.run(t, copilot, []fakemodel.ToolCall{{Name: "list_bash", Input: map[string]any{}}}, copilotRunOpts{})
		if r.code != 0 {
			t.Fatalf("run failed: %s", r)
		}
		t.Logf("tools offered to the model: %s", strings.Join(r.tools, ", "))
		checkInventory(t, "copilot", r.tools)
		for _, want := range []string{"bash", "read_bash", "stop_bash", "list_bash", "view", "create", "edit", "grep", "glob",
			"fetch_copilot_cli_documentation", "skill", "sql", "session_store_sql", "task", "read_agent", "list_agents", "write_agent"} {
			if !slices.Contains(r.tools, want) {
				t.Errorf("tool %s not offered", want)
			}
		}
		// The keys hookgate reads (FACTS §1): the command, the paths.
		params := fakemodel.OpenAIChatToolParams(r.requests)
		for tool, key := range map[string]string{"bash": "command", "view": "path", "create": "path", "edit": "path", "grep": "paths", "glob": "paths"} {
			if !slices.Contains(params[tool], key) {
				t.Errorf("%s no longer takes %q: its parameters are %v", tool, key, params[tool])
			}
		}
	})

	for _, c := range copilotPolicyCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newCopilotWorld(t, copilotOpts{})
			w.install(t)
			r := w.run(t, copilot, []fakemodel.ToolCall{c.call(w)}, copilotRunOpts{})
			c.check(t, w, r)
		})
	}

	// failclosed: an otherwise allowed shell command must be denied when
	// the policy or hookgate is broken.
	for _, c := range []struct {
		name    string
		breakIt func(t *testing.T, w *copilotWorld)
		// noPolicy installs without --policy.
		noPolicy bool
		// fault is HOOKGATE_FAULT for a hookgate built with the
		// hookgate_faults tag (hooks/fault_on.go), put at hookgate's path.
		fault string
		// cpuLoad busy loops run beside Copilot (not in parallel with the
		// other cases).
		cpuLoad int
		// reason, when set, must be in the deny the model gets.
		reason string
		// anonymous: the deny need not name hookgate.
		anonymous bool
	}{
		{name: "policy-deleted", breakIt: func(t *testing.T, w *copilotWorld) { os.Remove(w.policy) }, reason: "no policy"},
		{name: "policy-unset", noPolicy: true},
		{name: "hookgate-missing", breakIt: func(t *testing.T, w *copilotWorld) { os.Remove(w.bin) }},
		{name: "hookgate-not-executable", breakIt: func(t *testing.T, w *copilotWorld) { os.Chmod(w.bin, 0o644) }},
		{name: "hookgate-exit1", breakIt: copilotStandIn(`cat >/dev/null; echo 'panic: boom' >&2; exit 1`)},
		{name: "hookgate-killed", breakIt: copilotStandIn(`cat >/dev/null; kill -9 $$`)},
		{name: "hookgate-panic-at-start", fault: "panic@start"},
		{name: "hookgate-panic-after-decode", fault: "panic@decoded"},
		// Hanging past its deadline: hookgate's own (hang@decoded), and a
		// stand-in the wrapper kills after 9 s. Copilot would run the tool
		// at its hook timeout (FACTS §4).
		{name: "hookgate-hang-after-decode", fault: "hang@decoded"},
		{name: "hookgate-hang", breakIt: copilotStandIn(`exec sleep 60`)},
		{name: "hookgate-hang-busy-machine", breakIt: copilotStandIn(`exec sleep 60`), cpuLoad: 8 * runtime.NumCPU()},
		// Copilot runs the tool on stdout it cannot parse or a decision it
		// does not know (FACTS §4).
		{name: "hookgate-garbage", breakIt: copilotStandIn(`cat >/dev/null; echo 'not json at all'`)},
		{name: "hookgate-garbage-braces", breakIt: copilotStandIn(`cat >/dev/null; echo '{not json}'`)},
		{name: "hookgate-bogus-decision", breakIt: copilotStandIn(`cat >/dev/null; echo '{"permissionDecision":"perhaps"}'`)},
		{name: "hookgate-log-line-then-deny", breakIt: copilotStandIn(`cat >/dev/null; echo 'log line'; echo '{"permissionDecision":"deny"}'`)},
		{name: "hookgate-silent-exit0", breakIt: copilotStandIn(`cat >/dev/null; exit 0`)},
		// The wrapper passes an exit 2 with nothing on stdout through as
		// hookgate's own deny: a deny, but all the model reads is "hook
		// exited with code 2" (FACTS §4).
		{name: "hookgate-silent-exit2", breakIt: copilotStandIn(`cat >/dev/null; exit 2`), anonymous: true},
		{name: "hookgate-exit2-bogus-decision", breakIt: copilotStandIn(`cat >/dev/null; echo '{"permissionDecision":"perhaps"}'; echo 'boom' >&2; exit 2`)},
	} {
		t.Run("failclosed/"+c.name, func(t *testing.T) {
			if c.cpuLoad == 0 {
				t.Parallel()
			}
			w := newCopilotWorld(t, copilotOpts{})
			if c.noPolicy {
				w.installWith(t, false)
			} else {
				w.install(t)
			}
			if c.breakIt != nil {
				c.breakIt(t, w)
			}
			var o copilotRunOpts
			if c.fault != "" {
				copilotUseFaultsBuild(t, w)
				o.env = map[string]string{"HOOKGATE_FAULT": c.fault}
			}
			if c.cpuLoad > 0 {
				defer busyLoops(t, c.cpuLoad)()
			}
			marker := filepath.Join(w.ws, "ran.txt")
			r := w.run(t, copilot, []fakemodel.ToolCall{copilotShell("echo ran > " + marker)}, o)
			copilotWantNoFile(t, marker, r)
			// The wrapper's deny carries hookgate's reason in Copilot's JSON
			// deny: with exit 2 alone the model would only read "hook exited
			// with code 2" (FACTS §4).
			if c.anonymous {
				copilotWantBlocked(t, r, 0, "")
			} else {
				copilotWantBlocked(t, r, 0, "hookgate")
			}
			if c.reason != "" {
				copilotWantBlocked(t, r, 0, c.reason)
			}
			if r.elapsed > 60*time.Second {
				t.Errorf("took %v", r.elapsed)
			}
		})
	}

	// scope: user and project installs under each kind of trust. The call
	// is one the policy denies; each run must gate it, or hookgate verify
	// must say the hook is switched off.
	type scopeCase struct {
		name string
		o    copilotOpts
		// project installs with --scope project --project WS; trust adds
		// --trust-project. A project install without trust must either be
		// refused (naming --trust-project) or leave the project trusted:
		// Copilot silently skips an untrusted folder's hooks (FACTS §3).
		project, trust bool
		run            copilotRunOpts
		setup          func(t *testing.T, w *copilotWorld) // after install
		// verifyFails: hookgate verify must fail naming this (Copilot's
		// own settings switch the hook off, FACTS §3); the run is not made.
		verifyFails string
		// verifyOrDeny: either hookgate verify fails naming this, or the
		// run gates the call.
		verifyOrDeny string
		// ungated pins a way of running Copilot that reads no project
		// hooks (FACTS §3): the call runs; the case fails when Copilot
		// starts gating it (then make it a normal case).
		ungated bool
	}
	trustAll := copilotRunOpts{env: map[string]string{"COPILOT_ALLOW_ALL": "true"}}
	for _, c := range []scopeCase{
		{name: "user"},
		{name: "user-copilot-home-elsewhere", o: copilotOpts{copilotHomeElsewhere: true}},
		{name: "user-copilot-home-unset", o: copilotOpts{noCopilotHome: true}},
		{name: "user-trust-folder-flag", run: copilotRunOpts{args: []string{"--trust-folder"}}},
		// COPILOT_ALLOW_ALL=true also trusts the cwd (FACTS §0).
		{name: "user-allow-all-env", run: trustAll},
		{name: "user-workspace-trusted", setup: copilotTrust},
		{name: "project-trust-project", project: true, trust: true},
		{name: "project-trust-project-allow-all-env", project: true, trust: true, run: trustAll},
		{name: "project-untrusted", project: true},
		{name: "project-untrusted-trust-folder-flag", project: true, run: copilotRunOpts{args: []string{"--trust-folder"}}},
		// A git work tree: Copilot reads the git root's .github/hooks from a
		// subdirectory (FACTS §3).
		{name: "project-git-subdir", project: true, trust: true, o: copilotOpts{git: true}, run: copilotRunOpts{dir: "src"}},
		// Not a git work tree: from a subdirectory Copilot reads only the
		// subdirectory's .github/hooks, not the project's.
		{name: "project-nogit-subdir", project: true, trust: true, run: copilotRunOpts{dir: "src"}, ungated: true},
		// The user's own settings.json disableAllHooks: it switches off
		// only the inline hooks of settings.json, not $COPILOT_HOME/hooks/
		// (FACTS §3).
		{name: "user-settings-disables-hooks", setup: copilotUserSettings(`{"disableAllHooks": true}`), verifyOrDeny: "disableAllHooks"},
		// A trusted workspace's .github/copilot/settings.json (which the
		// agent can write) switches off every hook, the user's too.
		{name: "user-trusted-workspace-disables-hooks", setup: copilotAnd(copilotTrust, copilotRepoSettings("settings.json", `{"disableAllHooks": true}`)),
			verifyFails: "disableAllHooks"},
		{name: "user-trusted-workspace-local-disables-hooks", setup: copilotAnd(copilotTrust, copilotRepoSettings("settings.local.json", `{"disableAllHooks": true}`)),
			verifyFails: "disableAllHooks"},
		{name: "project-trusted-disables-hooks", project: true, trust: true, setup: copilotRepoSettings("settings.json", `{"disableAllHooks": true}`),
			verifyFails: "disableAllHooks"},
		// Untrusted, the workspace's settings are not read.
		{name: "user-untrusted-workspace-disables-hooks", setup: copilotRepoSettings("settings.json", `{"disableAllHooks": true}`)},
	} {
		t.Run("scope/"+c.name, func(t *testing.T) {
			t.Parallel()
			if c.o.git {
				testenv.NeedCommand(t, "git")
			}
			w := newCopilotWorld(t, c.o)
			scopeArgs := []string{}
			switch {
			case c.project && c.trust:
				scopeArgs = []string{"--scope", "project", "--project", w.ws}
				w.install(t, "--scope", "project", "--project", w.ws, "--trust-project")
			case c.project:
				scopeArgs = []string{"--scope", "project", "--project", w.ws}
				out, err := w.tryInstall(t, "--scope", "project", "--project", w.ws)
				if err != nil {
					if !strings.Contains(out, "--trust-project") {
						t.Fatalf("install into an untrusted project refused without naming --trust-project: %v %s", err, out)
					}
					t.Logf("install into an untrusted project refused: %s", strings.TrimSpace(out))
					return
				}
				t.Logf("install into an untrusted project: %s", strings.TrimSpace(out))
			default:
				w.install(t)
			}
			if c.setup != nil {
				c.setup(t, w)
			}
			verify := func() (int, string) { return w.verify(t, scopeArgs...) }
			if c.verifyFails != "" {
				code, out := verify()
				if code != 1 || !strings.Contains(out, c.verifyFails) {
					t.Errorf("hookgate verify with the hook switched off: exit %d %s", code, out)
				}
				return
			}
			if c.verifyOrDeny != "" {
				if code, out := verify(); code == 1 && strings.Contains(out, c.verifyOrDeny) {
					t.Logf("hookgate verify says the hook is off: %s", strings.TrimSpace(out))
					return
				}
			}
			marker := filepath.Join(w.ws, "shell-denied.txt")
			r := w.run(t, copilot, []fakemodel.ToolCall{copilotShell("echo deny-marker > " + marker)}, c.run)
			if c.ungated {
				if _, err := os.Stat(marker); err != nil {
					t.Errorf("Copilot now gates this run (%v): make it a gated case\n%s", err, r)
				}
				return
			}
			copilotWantNoFile(t, marker, r)
			copilotWantBlocked(t, r, 0, "bash.deny")
			if code, out := verify(); code != 0 {
				t.Errorf("the run was gated but hookgate verify fails: exit %d %s", code, out)
			}
		})
	}

	// protocol: Copilot's reading of raw hook answers (no hookgate, no
	// wrapper), as measured (FACTS §4): "ran" means the tool ran despite
	// the hook.
	for _, c := range []struct {
		name    string
		script  string
		timeout float64 // timeoutSec; 0: not set (Copilot's default, 30 s)
		ran     bool    // the tool ran
		reason  string  // when blocked, in the tool message
	}{
		{"exit0-json-deny", `echo '{"permissionDecision":"deny","permissionDecisionReason":"raw deny"}'`, 10, false, "Denied by preToolUse hook: raw deny"},
		{"exit0-json-deny-no-reason", `echo '{"permissionDecision":"deny"}'`, 10, false, "No reason provided"},
		{"exit0-json-ask", `echo '{"permissionDecision":"ask","permissionDecisionReason":"raw ask"}'`, 10, false, "unable to ask user for confirmation): raw ask"},
		{"exit2-json-deny", `echo '{"permissionDecision":"deny","permissionDecisionReason":"raw deny"}'; echo 'stderr reason' >&2; exit 2`, 10, false, "raw deny"},
		{"exit2-stderr", `echo 'raw deny' >&2; exit 2`, 10, false, "hook exited with code 2"},
		{"exit2-json-allow", `echo '{"permissionDecision":"allow"}'; exit 2`, 10, false, "hook exited with code 2"},
		{"exit2-garbage", `echo 'garbage{'; exit 2`, 10, false, "hook exited with code 2"},
		{"exit1-json-deny", `echo '{"permissionDecision":"deny","permissionDecisionReason":"raw deny"}'; exit 1`, 10, false, "(hook errored)"},
		{"exit1-stderr", `echo 'raw failure' >&2; exit 1`, 10, false, "(hook errored)"},
		{"exit137-killed", `kill -9 $$`, 10, false, "(hook errored)"},
		{"exit127-missing-binary", `exec /nonexistent/hookgate check`, 10, false, "(hook errored)"},
		{"exit0-silent", `exit 0`, 10, true, ""},
		{"exit0-json-allow", `echo '{"permissionDecision":"allow"}'`, 10, true, ""},
		{"exit0-text", `echo 'not json'`, 10, true, ""},
		{"exit0-braces-not-json", `echo '{not json}'`, 10, true, ""},
		{"exit0-bogus-decision", `echo '{"permissionDecision":"perhaps"}'`, 10, true, ""},
		{"exit0-claude-shape", `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"raw deny"}}'`, 10, true, ""},
		{"exit0-decision-block", `echo '{"decision":"block","reason":"raw deny"}'`, 10, true, ""},
		{"exit0-log-line-then-deny", `echo 'log line'; echo '{"permissionDecision":"deny","permissionDecisionReason":"raw deny"}'`, 10, true, ""},
		{"timeout", `exec sleep 60`, 2, true, ""},
	} {
		t.Run("protocol/"+c.name, func(t *testing.T) {
			t.Parallel()
			w := newCopilotWorld(t, copilotOpts{})
			script := filepath.Join(w.root, "bin", "raw-hook")
			os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\n"+c.script+"\n"), 0o755)
			w.writeRawHook(t, script, c.timeout)
			marker := filepath.Join(w.ws, "ran.txt")
			r := w.run(t, copilot, []fakemodel.ToolCall{copilotShell("echo ran > " + marker)}, copilotRunOpts{})
			_, err := os.Stat(marker)
			ran := err == nil
			t.Logf("hook %q (timeoutSec %v): tool ran=%v after %v; tool message: %s; hook log: %s",
				c.script, c.timeout, ran, r.elapsed.Round(100*time.Millisecond), r.output(0), r.hookLog)
			if ran != c.ran {
				t.Errorf("tool ran=%v, pinned %v: %s", ran, c.ran, r)
			}
			if !c.ran {
				copilotWantBlocked(t, r, 0, c.reason)
			} else {
				copilotWantRan(t, r, 0, "")
			}
		})
	}

	// The hook rewrites the call (FACTS §4: modifiedArgs is honoured), and
	// the payload's shape (FACTS §2) as a logging hook sees it.
	t.Run("protocol/payload-and-modified-args", func(t *testing.T) {
		t.Parallel()
		w := newCopilotWorld(t, copilotOpts{})
		payload := filepath.Join(w.root, "payload.json")
		rewritten := filepath.Join(w.ws, "rewritten.txt")
		answer, _ := json.Marshal(map[string]any{"permissionDecision": "allow",
			"modifiedArgs": map[string]any{"command": "echo rewritten > " + rewritten, "description": "x"}})
		script := filepath.Join(w.root, "bin", "raw-hook")
		os.WriteFile(script, []byte("#!/bin/sh\ncat >"+payload+"\necho '"+string(answer)+"'\n"), 0o755)
		w.writeRawHook(t, script, 10)
		marker := filepath.Join(w.ws, "ran.txt")
		r := w.run(t, copilot, []fakemodel.ToolCall{copilotShell("echo ran > " + marker)}, copilotRunOpts{})
		copilotWantNoFile(t, marker, r)
		if _, err := os.Stat(rewritten); err != nil {
			t.Errorf("modifiedArgs not run: %v\n%s", err, r)
		}
		b, _ := os.ReadFile(payload)
		t.Logf("payload: %s", b)
		var p struct {
			SessionID string          `json:"sessionId"`
			Timestamp json.Number     `json:"timestamp"`
			Cwd       string          `json:"cwd"`
			ToolName  string          `json:"toolName"`
			ToolArgs  json.RawMessage `json:"toolArgs"`
		}
		var keys map[string]json.RawMessage
		json.Unmarshal(b, &keys)
		if err := json.Unmarshal(b, &p); err != nil || p.SessionID == "" || p.Timestamp == "" || p.Cwd != w.ws || p.ToolName != "bash" ||
			!bytes.HasPrefix(p.ToolArgs, []byte("{")) || len(keys) != 5 {
			t.Errorf("payload %s (%v): want {sessionId, timestamp (ms), cwd, toolName, toolArgs (object)}", b, err)
		}
	})
}

// TestVerifyCopilot: hookgate verify --harness copilot fails before
// install and passes after it, in user and project scope, and fails for
// another COPILOT_HOME.
func TestVerifyCopilot(t *testing.T) {
	copilotBinary(t)
	w := newCopilotWorld(t, copilotOpts{copilotHomeElsewhere: true})
	if code, out := w.verify(t); code != 1 {
		t.Fatalf("before install: exit %d %s", code, out)
	}
	w.install(t)
	if code, out := w.verify(t); code != 0 || !strings.Contains(out, "copilot runs it") {
		t.Fatalf("after install: exit %d %s", code, out)
	}
	other := filepath.Join(w.root, "other-copilot-home")
	os.MkdirAll(other, 0o755)
	if code, out := w.verifyEnv(t, []string{"COPILOT_HOME=" + other}); code != 1 {
		t.Errorf("other COPILOT_HOME: exit %d %s", code, out)
	}
	project := []string{"--scope", "project", "--project", w.ws}
	if code, out := w.verify(t, project...); code != 1 {
		t.Errorf("project scope before a project install: exit %d %s", code, out)
	}
	w.install(t, "--scope", "project", "--project", w.ws, "--trust-project")
	if code, out := w.verify(t, project...); code != 0 || !strings.Contains(out, "copilot runs it") {
		t.Errorf("project scope after install: exit %d %s", code, out)
	}
}

// copilotVersion is the Copilot CLI release scripts/install-harnesses pins.
const copilotVersion = "1.0.102"

// copilotModel is a model id in Copilot's catalog (tool support, limits).
const copilotModel = "gpt-4.1"

// copilotRunTimeout bounds one Copilot run (a hanging hook takes the
// wrapper's 9 s, a raw one Copilot's timeoutSec).
const copilotRunTimeout = 120 * time.Second

// copilotBinary returns the pinned Copilot CLI under $BARRY_HARNESSES
// (default /opt/barry-harnesses): the npm launcher (a node script that
// runs @github/copilot-linux-x64's native binary), or that binary itself
// when node is missing. Skips locally, fails in CI, without it.
func copilotBinary(t *testing.T) string {
	t.Helper()
	root := os.Getenv("BARRY_HARNESSES")
	if root == "" {
		root = "/opt/barry-harnesses"
	}
	p := filepath.Join(root, "node_modules", ".bin", "copilot")
	if _, err := exec.LookPath("node"); err != nil {
		p = filepath.Join(root, "node_modules", "@github", "copilot-linux-x64", "copilot")
	}
	if _, err := os.Stat(p); err != nil {
		testenv.SkipOrFail(t, "GitHub Copilot CLI is not installed at "+p+" (scripts/install-harnesses)")
	}
	// --version works offline (FACTS §0): "GitHub Copilot CLI 1.0.102."
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "COPILOT_OFFLINE=true", "COPILOT_AUTO_UPDATE=false"}
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "GitHub Copilot CLI "+copilotVersion) {
		testenv.SkipOrFail(t, fmt.Sprintf("%s --version: %q, %v: want %s (scripts/install-harnesses)", p, out, err, copilotVersion))
	}
	t.Logf("%s at %s", strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]), p)
	return p
}

// copilotWorld is one throwaway HOME, COPILOT_HOME, workspace, hookgate
// copy and policy.
type copilotWorld struct {
	root, home, copilotHome, ws, bin, policy string
	// noCopilotHome leaves COPILOT_HOME unset (Copilot then uses
	// $HOME/.copilot).
	noCopilotHome bool
	runs          int
}

type copilotOpts struct {
	// copilotHomeElsewhere sets COPILOT_HOME outside $HOME/.copilot.
	copilotHomeElsewhere bool
	// noCopilotHome leaves COPILOT_HOME unset.
	noCopilotHome bool
	// git makes the workspace a git work tree.
	git bool
}

// copilotConfig is $COPILOT_HOME/config.json as Copilot writes it on its
// first run (JSON with two comment lines, FACTS §3).
const copilotConfig = `// User settings belong in settings.json.
// This file is managed automatically.
{
  "firstLaunchAt": "2026-01-01T00:00:00.000Z"
}
`

// copilotOtherHooks is a hook file of the user's own, which install must
// leave alone: a sessionStart hook, which never sees a tool call.
const copilotOtherHooks = `{"version": 1, "hooks": {"sessionStart": [{"type": "command", "bash": "true"}]}}
`

func newCopilotWorld(t *testing.T, o copilotOpts) *copilotWorld {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &copilotWorld{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws"),
		bin: filepath.Join(root, "bin", "hookgate"), policy: filepath.Join(root, "policy", "session.yaml"),
		noCopilotHome: o.noCopilotHome}
	w.copilotHome = filepath.Join(w.home, ".copilot")
	if o.copilotHomeElsewhere {
		w.copilotHome = filepath.Join(root, "copilot-home")
	}
	for _, d := range []string{filepath.Join(w.copilotHome, "hooks"), filepath.Join(w.ws, "src"), filepath.Join(w.ws, "protected"),
		filepath.Join(root, "bin"), filepath.Join(root, "policy"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(w.copilotHome, "config.json"):         copilotConfig,
		filepath.Join(w.copilotHome, "hooks", "other.json"): copilotOtherHooks,
		filepath.Join(w.ws, "src", "hello.txt"):             "hello from src\n",
		filepath.Join(w.ws, "src", "edit.txt"):              "old line\n",
		filepath.Join(w.ws, "protected", "existing.txt"):    "old secret\n",
		w.policy: fmt.Sprintf(`version: 1
harness: copilot
session:
  bound:
    files:
      deny: [%q]
    bash:
      deny: ["deny-marker"]
`, filepath.Join(w.ws, "protected")),
	}
	for p, s := range files {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(hookgateBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.git {
		cmd := exec.Command("git", "init", "-q", w.ws)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
	}
	return w
}

// env is the environment of hookgate install and verify, and the base of
// Copilot's: nothing of the caller's but PATH.
func (w *copilotWorld) env() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + filepath.Join(w.root, "tmp"), "LANG=C.UTF-8"}
	if !w.noCopilotHome {
		env = append(env, "COPILOT_HOME="+w.copilotHome)
	}
	return env
}

// hookgate runs this world's hookgate with args in the workspace and
// returns its output; it must succeed.
func (w *copilotWorld) hookgate(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir, cmd.Env = w.ws, w.env()
	out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
	if err != nil {
		t.Fatalf("hookgate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// install runs hookgate install --harness copilot --policy POLICY
// [args...] as the user (HOME and COPILOT_HOME set, in the workspace) and
// returns the file it wrote.
func (w *copilotWorld) install(t *testing.T, args ...string) string {
	return w.installWith(t, true, args...)
}

func (w *copilotWorld) installWith(t *testing.T, policy bool, args ...string) string {
	t.Helper()
	argv := []string{"install", "--harness", "copilot"}
	if policy {
		argv = append(argv, "--policy", w.policy)
	}
	out := w.hookgate(t, append(argv, args...)...)
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	path, _, ok := strings.Cut(line, ": hookgate installed")
	if !ok || !filepath.IsAbs(path) {
		t.Fatalf("hookgate install said %q", out)
	}
	t.Logf("hookgate %s: %s", strings.Join(append(argv, args...), " "), strings.TrimSpace(out))
	return path
}

// tryInstall is install that may fail.
func (w *copilotWorld) tryInstall(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(w.bin, append([]string{"install", "--harness", "copilot", "--policy", w.policy}, args...)...)
	cmd.Dir, cmd.Env = w.ws, w.env()
	out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
	return string(out), err
}

// verify runs hookgate verify --harness copilot [args...] and returns its
// exit code and output.
func (w *copilotWorld) verify(t *testing.T, args ...string) (int, string) {
	return w.verifyEnv(t, nil, args...)
}

func (w *copilotWorld) verifyEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(w.bin, append([]string{"verify", "--harness", "copilot"}, args...)...)
	cmd.Dir, cmd.Env = w.ws, append(w.env(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("hookgate verify: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// writeRawHook puts one raw preToolUse command hook into
// $COPILOT_HOME/hooks (the protocol cases: no hookgate, no wrapper), in
// the format of FACTS §3.
func (w *copilotWorld) writeRawHook(t *testing.T, command string, timeoutSec float64) {
	t.Helper()
	e := map[string]any{"type": "command", "bash": command}
	if timeoutSec > 0 {
		e["timeoutSec"] = timeoutSec
	}
	b, _ := json.Marshal(map[string]any{"version": 1, "hooks": map[string]any{"preToolUse": []any{e}}})
	if err := os.WriteFile(filepath.Join(w.copilotHome, "hooks", "raw.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copilotEntry is hookgate's preToolUse entry as install wrote it.
type copilotEntry struct {
	cmd     string
	timeout *float64
}

// copilotHookgateEntry finds the one preToolUse entry of a hook file (or
// of settings.json's inline hooks) that runs hookgate, in the format of
// FACTS §3: {"version":1,"hooks":{"preToolUse":[{"type":"command",
// "bash"|"command": CMD | "exec": BIN, "args": [...], "timeoutSec": N}]}}.
func copilotHookgateEntry(t *testing.T, b []byte) copilotEntry {
	t.Helper()
	var f struct {
		Version *int                                    `json:"version"`
		Hooks   map[string][]map[string]json.RawMessage `json:"hooks"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("not JSON (%v):\n%s", err, b)
	}
	if f.Version != nil && *f.Version != 1 {
		t.Errorf("version %d: Copilot rejects the whole file (FACTS §3)", *f.Version)
	}
	if _, ok := f.Hooks["PreToolUse"]; ok {
		t.Errorf("a PascalCase PreToolUse entry: Copilot sends those the Claude-shaped payload (FACTS §2)")
	}
	var found []copilotEntry
	for _, h := range f.Hooks["preToolUse"] {
		var e copilotEntry
		for _, k := range []string{"bash", "command"} {
			var s string
			if json.Unmarshal(h[k], &s) == nil && s != "" {
				e.cmd = s
			}
		}
		var exe string
		var args []string
		if json.Unmarshal(h["exec"], &exe) == nil && exe != "" {
			json.Unmarshal(h["args"], &args)
			e.cmd = strings.Join(append([]string{exe}, args...), " ")
		}
		for _, k := range []string{"timeoutSec", "timeout"} {
			var n float64
			if json.Unmarshal(h[k], &n) == nil {
				e.timeout = &n
			}
		}
		if strings.Contains(e.cmd, "hookgate") {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d preToolUse entries run hookgate, want 1:\n%s", len(found), b)
	}
	return found[0]
}

// copilotRunOpts say how one run differs.
type copilotRunOpts struct {
	// env overrides the run's environment; an empty value removes the
	// variable.
	env  map[string]string
	args []string
	// dir is the run's working directory relative to the workspace.
	dir string
	// timeout, when set, bounds the run instead of copilotRunTimeout.
	timeout time.Duration
}

type copilotResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	requests       [][]byte
	calls          []fakemodel.OpenAIChatExchange
	tools          []string
	// received is every request the fake model got (fakemodel.Received).
	received []string
	// hookLog holds the hook lines of Copilot's own log ([rust:hooks]:
	// timed out, fail-closed, invalid configuration; FACTS §4).
	hookLog string
}

func (r copilotResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "copilot exit %d after %v\nstdout: %q\nstderr (tail): %s\nhook log: %s\n%d model requests; calls:",
		r.code, r.elapsed.Round(100*time.Millisecond), r.stdout, lastLines(r.stderr, 12), r.hookLog, len(r.requests))
	for i, c := range r.calls {
		fmt.Fprintf(&b, "\n  [%d] %s %s answered=%v: %q", i, c.Name, c.Arguments, c.Answered, c.Output)
	}
	return b.String()
}

func (r copilotResult) output(i int) string {
	if i >= len(r.calls) || !r.calls[i].Answered {
		return "(none)"
	}
	return r.calls[i].Output
}

// run runs Copilot once, non-interactive, in the workspace, against a
// fresh fake model asking for calls.
func (w *copilotWorld) run(t *testing.T, copilot string, calls []fakemodel.ToolCall, o copilotRunOpts) copilotResult {
	t.Helper()
	log := newTestLog(t)
	srv, err := fakemodel.OpenAIChatWith(calls, fakemodel.OpenAIChatOptions{Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Close()
		log.Stop()
	}()
	env := map[string]string{"TERM": "dumb", "NO_COLOR": "1"}
	for _, kv := range append(w.env(), srv.CopilotEnv(copilotModel)...) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, v := range o.env {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	w.runs++
	logDir := filepath.Join(w.root, "logs", fmt.Sprint(w.runs))
	args := append([]string{"-p", "Run the tool calls you are given.", "--yolo", "--no-auto-update",
		"--disable-client-telemetry", "--log-dir", logDir}, o.args...)
	limit := cmp.Or(o.timeout, copilotRunTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, copilot, args...)
	cmd.Dir = filepath.Join(w.ws, o.dir)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err = cmd.Run()
	r := copilotResult{code: exitCode(err), elapsed: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	// Copilot starts every hook in a process group of its own (FACTS §3):
	// what a hung stand-in left goes by its HOME.
	killHomeLeftovers(t, w.home, "copilot")
	if ctx.Err() != nil {
		t.Errorf("copilot did not finish within %v", limit)
	}
	r.requests = srv.Requests()
	r.received = srv.Received()
	r.calls = fakemodel.OpenAIChatTranscript(r.requests)
	r.tools = fakemodel.OpenAIChatToolNames(r.requests)
	r.hookLog = copilotHookLog(logDir)
	t.Logf("copilot %s: exit %d in %v, %d model requests", strings.Join(o.args, " "), r.code, r.elapsed.Round(time.Millisecond), len(r.requests))
	if len(r.requests) == 0 {
		t.Fatalf("copilot sent the fake model no request: %s", r)
	}
	return r
}

// copilotHookLog returns the hook lines of the log files in dir.
func copilotHookLog(dir string) string {
	files, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var out []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, "[rust:hooks]") || strings.Contains(l, "repo hooks") {
				if len(l) > 400 {
					l = l[:400] + "..."
				}
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n  ")
}

// copilotDenied is how Copilot tells the model a preToolUse hook denied a
// call: "Denied by preToolUse hook: REASON", "Denied by preToolUse hook
// from FILE (hook errored)", "Denied by preToolUse hook (unable to ask
// user for confirmation): REASON" (FACTS §4).
const copilotDenied = "Denied by preToolUse hook"

// copilotWantBlocked checks that call i was answered with Copilot's hook
// deny, containing reason.
func copilotWantBlocked(t *testing.T, r copilotResult, i int, reason string) {
	t.Helper()
	if i >= len(r.calls) || !r.calls[i].Answered {
		t.Fatalf("call %d got no tool message: %s", i, r)
	}
	out := r.calls[i].Output
	if !strings.HasPrefix(out, copilotDenied) || !strings.Contains(out, reason) {
		t.Fatalf("call %d not blocked (want %q): tool message %q\n%s", i, reason, out, r)
	}
	t.Logf("tool message: %q", out)
}

// copilotWantRan checks that call i ran (no hook deny), its tool message
// holding out.
func copilotWantRan(t *testing.T, r copilotResult, i int, out string) {
	t.Helper()
	if i >= len(r.calls) || !r.calls[i].Answered {
		t.Fatalf("call %d got no tool message: %s", i, r)
	}
	txt := r.calls[i].Output
	if strings.HasPrefix(txt, copilotDenied) || !strings.Contains(txt, out) {
		t.Fatalf("call %d did not run (want %q): tool message %q\n%s", i, out, txt, r)
	}
	t.Logf("tool message: %q", txt)
}

func copilotWantFile(t *testing.T, path, content string, r copilotResult) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != content {
		t.Fatalf("%s: %q, %v (want %q)\n%s", path, b, err, content, r)
	}
}

func copilotWantNoFile(t *testing.T, path string, r copilotResult) {
	t.Helper()
	if b, err := os.ReadFile(path); err == nil {
		t.Fatalf("%s was written (%q): the tool ran\n%s", path, b, r)
	}
}

// copilotShell is a call of Copilot's shell tool (FACTS §1: bash, the
// command under "command", "description" required).
func copilotShell(cmd string) fakemodel.ToolCall {
	return fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd, "description": "test"}}
}

// copilotStandIn replaces hookgate (after install) with a /bin/sh script.
func copilotStandIn(body string) func(t *testing.T, w *copilotWorld) {
	return func(t *testing.T, w *copilotWorld) {
		os.Remove(w.bin)
		if err := os.WriteFile(w.bin, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// copilotFaultsBin is hookgate built with the hookgate_faults tag
// (HOOKGATE_FAULT=panic@start|panic@decoded|hang@decoded), built once.
var copilotFaultsBin = sync.OnceValues(func() (string, error) {
	out := filepath.Join(shareRoot, "hookgate-faults")
	cmd := exec.Command("go", "build", "-tags", "hookgate_faults", "-o", out, "../cmd/hookgate")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building hookgate with hookgate_faults: %v\n%s", err, b)
	}
	return out, nil
})

// copilotUseFaultsBuild puts the faults build at hookgate's path (the
// installed entry keeps naming it).
func copilotUseFaultsBuild(t *testing.T, w *copilotWorld) {
	t.Helper()
	p, err := copilotFaultsBin()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(w.bin)
	if err := os.WriteFile(w.bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// copilotTrust records the workspace as a trusted folder the way Copilot
// does: "trustedFolders" in $COPILOT_HOME/config.json (FACTS §3).
func copilotTrust(t *testing.T, w *copilotWorld) {
	t.Helper()
	p := filepath.Join(w.copilotHome, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"trustedFolders"`)) {
		t.Fatalf("config.json already has trustedFolders:\n%s", b)
	}
	q, _ := json.Marshal(w.ws)
	b = bytes.Replace(b, []byte("{\n"), []byte("{\n  \"trustedFolders\": ["+string(q)+"],\n"), 1)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// copilotUserSettings writes $COPILOT_HOME/settings.json.
func copilotUserSettings(s string) func(*testing.T, *copilotWorld) {
	return func(t *testing.T, w *copilotWorld) {
		if err := os.WriteFile(filepath.Join(w.copilotHome, "settings.json"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copilotRepoSettings writes the workspace's .github/copilot/NAME
// (settings.json or settings.local.json; the agent can write either).
func copilotRepoSettings(name, s string) func(*testing.T, *copilotWorld) {
	return func(t *testing.T, w *copilotWorld) {
		d := filepath.Join(w.ws, ".github", "copilot")
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func copilotAnd(fs ...func(*testing.T, *copilotWorld)) func(*testing.T, *copilotWorld) {
	return func(t *testing.T, w *copilotWorld) {
		for _, f := range fs {
			f(t, w)
		}
	}
}

// copilotCase is one call under the normal install and the test policy.
type copilotCase struct {
	name  string
	call  func(w *copilotWorld) fakemodel.ToolCall
	check func(t *testing.T, w *copilotWorld, r copilotResult)
}

func copilotPolicyCases() []copilotCase {
	return []copilotCase{
		// shell
		{"policy/shell-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return copilotShell("echo deny-marker > " + filepath.Join(w.ws, "shell-denied.txt"))
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantNoFile(t, filepath.Join(w.ws, "shell-denied.txt"), r)
				// The reason reaches the model (FACTS §4: "Denied by
				// preToolUse hook: REASON").
				copilotWantBlocked(t, r, 0, `shell command contains "deny-marker", denied by bash.deny`)
			}},
		{"policy/shell-allowed",
			func(w *copilotWorld) fakemodel.ToolCall {
				return copilotShell("echo allowed > " + filepath.Join(w.ws, "shell-allowed.txt"))
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantFile(t, filepath.Join(w.ws, "shell-allowed.txt"), "allowed\n", r)
				copilotWantRan(t, r, 0, "completed with exit code 0")
			}},
		// file writes: create (new file), edit (existing file); "path"
		// absolute (FACTS §1).
		{"policy/create-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "create", Input: map[string]any{
					"path": filepath.Join(w.ws, "protected", "new.txt"), "file_text": "written\n"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantNoFile(t, filepath.Join(w.ws, "protected", "new.txt"), r)
				copilotWantBlocked(t, r, 0, "files.deny")
			}},
		{"policy/edit-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "edit", Input: map[string]any{
					"path": filepath.Join(w.ws, "protected", "existing.txt"), "old_str": "old secret", "new_str": "new secret"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantFile(t, filepath.Join(w.ws, "protected", "existing.txt"), "old secret\n", r)
				copilotWantBlocked(t, r, 0, "files.deny")
			}},
		// A relative path: Copilot resolves it against the session's cwd
		// (FACTS §1), and the hook gets it unresolved.
		{"policy/create-relative-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "create", Input: map[string]any{"path": "protected/relative.txt", "file_text": "written\n"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantNoFile(t, filepath.Join(w.ws, "protected", "relative.txt"), r)
				copilotWantBlocked(t, r, 0, "files.deny")
			}},
		{"policy/create-allowed",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "create", Input: map[string]any{
					"path": filepath.Join(w.ws, "src", "new.txt"), "file_text": "written\n"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantFile(t, filepath.Join(w.ws, "src", "new.txt"), "written\n", r)
				copilotWantRan(t, r, 0, "Created file")
			}},
		{"policy/edit-allowed",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "edit", Input: map[string]any{
					"path": filepath.Join(w.ws, "src", "edit.txt"), "old_str": "old line", "new_str": "new line"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantFile(t, filepath.Join(w.ws, "src", "edit.txt"), "new line\n", r)
				copilotWantRan(t, r, 0, "updated")
			}},
		// file reads
		{"policy/view-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "view", Input: map[string]any{"path": filepath.Join(w.ws, "protected", "existing.txt")}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantBlocked(t, r, 0, "files.deny")
				if strings.Contains(r.calls[0].Output, "old secret") {
					t.Fatalf("content leaked: %q", r.calls[0].Output)
				}
			}},
		{"policy/view-relative-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "view", Input: map[string]any{"path": "protected/existing.txt"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantBlocked(t, r, 0, "files.deny")
			}},
		// grep over the whole workspace, paths as an array (FACTS §1: a
		// string or an array): the denied file's text must not come back.
		{"policy/grep-over-protected",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep", Input: map[string]any{"pattern": "secret", "paths": []any{w.ws}, "output_mode": "content"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				if len(r.calls) == 0 || !r.calls[0].Answered {
					t.Fatalf("no tool message: %s", r)
				}
				if strings.Contains(r.calls[0].Output, "old secret") {
					t.Fatalf("grep read a files.deny file: %q", r.calls[0].Output)
				}
				t.Logf("tool message: %q", r.calls[0].Output)
			}},
		{"natives/view",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "view", Input: map[string]any{"path": filepath.Join(w.ws, "src", "hello.txt")}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantRan(t, r, 0, "hello from src") }},
		{"natives/view-directory",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "view", Input: map[string]any{"path": filepath.Join(w.ws, "src")}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantRan(t, r, 0, "hello.txt") }},
		{"natives/glob",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "glob", Input: map[string]any{"pattern": "*.txt", "paths": filepath.Join(w.ws, "src")}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantRan(t, r, 0, "hello.txt") }},
		{"natives/grep",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep", Input: map[string]any{"pattern": "hello", "paths": filepath.Join(w.ws, "src"), "output_mode": "content"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantRan(t, r, 0, "hello from src") }},
		// network: offline, Copilot offers no web_fetch, but a call of it
		// still reaches the hook before Copilot finds no such tool (FACTS
		// §1); the policy selects no web trait, so hookgate denies it.
		{"natives/web_fetch-denied",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "web_fetch", Input: map[string]any{"url": "https://example.com/fetch-marker"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantBlocked(t, r, 0, "web_fetch") }},
		// none: a shell listing, the session's SQLite, the bundled docs.
		{"natives/list_bash",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "list_bash", Input: map[string]any{}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) {
				copilotWantRan(t, r, 0, "no active shell sessions")
			}},
		{"natives/sql",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "sql", Input: map[string]any{"description": "probe", "query": "SELECT 'sql-marker'"}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantRan(t, r, 0, "sql-marker") }},
		{"natives/fetch_copilot_cli_documentation",
			func(w *copilotWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "fetch_copilot_cli_documentation", Input: map[string]any{}}
			},
			func(t *testing.T, w *copilotWorld, r copilotResult) { copilotWantRan(t, r, 0, "Copilot CLI") }},
	}
}
