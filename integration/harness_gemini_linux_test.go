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
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestHarnessGemini drives the real Gemini CLI (0.61, from
// $BARRY_HARNESSES) on the host against a fake Gemini API
// (fakemodel.Gemini), with hookgate installed the way a user installs it
// (hookgate install --harness gemini --policy FILE), and checks, for each
// tool call the fake model asks for, both the host (a marker file the tool
// would write) and the function response Gemini CLI sent back to the model.
//
// Groups:
//   - install: what hookgate install writes.
//   - policy, natives: the policy's answers reach the tools.
//   - failclosed: a broken policy or hookgate (missing, not executable,
//     exit 1, killed, hanging past the hook timeout, garbage) must still be
//     a deny.
//   - scope: user and project installs, with and without workspace trust;
//     every way of running Gemini must either gate the call or not run it.
//   - protocol: Gemini CLI's own handling of raw hook answers (no
//     hookgate), pinned as observed, so a change in the CLI shows up.
//
// Every run: gemini -m MODEL --approval-mode yolo -p PROMPT (yolo, so the
// hook is the only gate), a throwaway HOME whose settings select the API
// key auth (gemini-api-key) and turn off auto-update and usage statistics,
// GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL (the fake API),
// GEMINI_TELEMETRY_ENABLED=false, the system settings paths pointed at
// nothing, and, unless the case says otherwise, GEMINI_CLI_TRUST_WORKSPACE=true
// (Gemini CLI refuses to run headless in an untrusted folder).
func TestHarnessGemini(t *testing.T) {
	gemini := geminiBinary(t)

	t.Run("install", func(t *testing.T) {
		w := newGeminiWorld(t)
		path := w.install(t)
		if want := filepath.Join(w.home, ".gemini", "settings.json"); path != want {
			t.Fatalf("install wrote %s, want %s", path, want)
		}
		var s struct {
			Security json.RawMessage `json:"security"`
			Hooks    map[string][]struct {
				Matcher string `json:"matcher"`
				Hooks   []struct {
					Type    string `json:"type"`
					Command string `json:"command"`
					Name    string `json:"name"`
					Timeout int    `json:"timeout"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		b, _ := os.ReadFile(path)
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		bt := s.Hooks["BeforeTool"]
		if len(s.Security) == 0 || len(s.Hooks) != 1 || len(bt) != 1 || bt[0].Matcher != ".*" || len(bt[0].Hooks) != 1 {
			t.Fatalf("settings after install (other settings must stay):\n%s", b)
		}
		h := bt[0].Hooks[0]
		if h.Type != "command" || h.Name != "hookgate" || h.Timeout != 30000 ||
			!strings.Contains(h.Command, w.bin) || !strings.Contains(h.Command, "check --harness gemini --policy "+w.policy) {
			t.Fatalf("hook entry %+v", h)
		}
		t.Logf("settings.json after install:\n%s", b)
	})

	// tools: what Gemini CLI 0.61 offers the model, against what hookgate
	// knows.
	t.Run("tools", func(t *testing.T) {
		w := newGeminiWorld(t)
		w.install(t)
		r := w.run(t, gemini, nil, geminiOpts{})
		if r.code != 0 || !strings.Contains(r.stdout, fakemodel.GeminiFinalText) {
			t.Fatalf("run failed: %s", r)
		}
		t.Logf("tools offered to the model: %s", strings.Join(r.tools, ", "))
		checkInventory(t, "gemini", r.tools)
		for _, want := range []string{"run_shell_command", "read_file", "write_file", "replace", "glob", "grep_search", "list_directory", "web_fetch", "google_web_search"} {
			if !slices.Contains(r.tools, want) {
				t.Errorf("tool %s not offered", want)
			}
		}
	})

	for _, c := range geminiPolicyCases() {
		t.Run(c.name, func(t *testing.T) {
			w := newGeminiWorld(t)
			w.install(t)
			r := w.run(t, gemini, []fakemodel.ToolCall{c.call(w)}, geminiOpts{})
			c.check(t, w, r)
		})
	}

	// failclosed: an otherwise allowed shell command must be denied when
	// the policy or hookgate is broken.
	for _, c := range []struct {
		name    string
		breakIt func(t *testing.T, w *geminiWorld)
		// install without --policy
		noPolicy bool
		// cpuLoad busy loops run beside Gemini CLI
		cpuLoad int
	}{
		{name: "policy-deleted", breakIt: func(t *testing.T, w *geminiWorld) { os.Remove(w.policy) }},
		{name: "policy-unset", noPolicy: true},
		{name: "hookgate-missing", breakIt: func(t *testing.T, w *geminiWorld) { os.Remove(w.bin) }},
		{name: "hookgate-not-executable", breakIt: func(t *testing.T, w *geminiWorld) { os.Chmod(w.bin, 0o644) }},
		{name: "hookgate-exit1", breakIt: standIn(`cat >/dev/null; echo 'panic: boom' >&2; exit 1`)},
		{name: "hookgate-killed", breakIt: standIn(`cat >/dev/null; kill -9 $$`)},
		{name: "hookgate-hang", breakIt: standIn(`exec sleep 60`)},
		// The same on a busy machine (eight busy loops per CPU):
		// the hook timeout is Gemini CLI's wall clock.
		{name: "hookgate-hang-busy-machine", breakIt: standIn(`exec sleep 60`), cpuLoad: 8 * runtime.NumCPU()},
		{name: "hookgate-garbage", breakIt: standIn(`cat >/dev/null; echo 'not json at all'`)},
		{name: "hookgate-garbage-braces", breakIt: standIn(`cat >/dev/null; echo '{not json}'`)},
		{name: "hookgate-bogus-decision", breakIt: standIn(`cat >/dev/null; echo '{"decision":"perhaps"}'`)},
		{name: "hookgate-silent-exit0", breakIt: standIn(`cat >/dev/null; exit 0`)},
		{name: "hookgate-silent-exit2", breakIt: standIn(`cat >/dev/null; exit 2`)},
		{name: "hookgate-exit2-bogus-decision", breakIt: standIn(`cat >/dev/null; echo '{"decision":"perhaps"}'; echo 'boom' >&2; exit 2`)},
	} {
		t.Run("failclosed/"+c.name, func(t *testing.T) {
			w := newGeminiWorld(t)
			if c.noPolicy {
				w.installWith(t, false)
			} else {
				w.install(t)
			}
			if c.breakIt != nil {
				c.breakIt(t, w)
			}
			if c.cpuLoad > 0 {
				defer busyLoops(t, c.cpuLoad)()
			}
			marker := filepath.Join(w.ws, "ran.txt")
			r := w.run(t, gemini, []fakemodel.ToolCall{shellCall("echo ran > " + marker)}, geminiOpts{})
			wantNoFile(t, marker, r)
			wantBlocked(t, r, 0, "")
			if r.elapsed > 60*time.Second {
				t.Errorf("took %v", r.elapsed)
			}
		})
	}

	// scope: user and project installs under each kind of trust. The call
	// is one the policy denies; each run must gate it (or not run at all).
	type scopeCase struct {
		name    string
		project bool               // --scope project
		opts    geminiOpts         // how gemini is run
		setup   func(*geminiWorld) // after install
		// noRun: Gemini CLI is expected to refuse to start (untrusted
		// headless); the call must not run either way.
		noRun bool
		// trust installs with --trust-project; installRefused expects the
		// install itself to refuse (a project Gemini CLI would ignore).
		trust, installRefused bool
		// verifyFails: hookgate verify must fail naming this (the
		// harness's own settings switch the hook off: hookgate cannot
		// answer a call it is not asked about, verify says so).
		verifyFails string
	}
	trustEnv := map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"}
	untrusted := map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": ""}
	for _, c := range []scopeCase{
		{name: "user-trust-env", opts: geminiOpts{env: trustEnv}},
		{name: "user-skip-trust", opts: geminiOpts{env: untrusted, args: []string{"--skip-trust"}}},
		{name: "user-trusted-folders-file", opts: geminiOpts{env: untrusted}, setup: trustFolder},
		{name: "user-untrusted", opts: geminiOpts{env: untrusted}, noRun: true},
		{name: "project-trust-env", project: true, trust: true, opts: geminiOpts{env: trustEnv}},
		{name: "project-skip-trust", project: true, trust: true, opts: geminiOpts{env: untrusted, args: []string{"--skip-trust"}}},
		{name: "project-trusted-folders-file", project: true, trust: true, opts: geminiOpts{env: untrusted}},
		{name: "project-untrusted", project: true, installRefused: true},
		// The workspace's own .gemini/settings.json (which the agent can
		// write) turning the user's hooks off.
		{name: "user-workspace-disables-hooks", opts: geminiOpts{env: trustEnv},
			setup: workspaceSettings(`{"hooksConfig":{"enabled":false}}`), verifyFails: "hooksConfig.enabled"},
		{name: "user-workspace-disables-hookgate", opts: geminiOpts{env: trustEnv},
			setup: workspaceSettings(`{"hooksConfig":{"disabled":["hookgate"]}}`), verifyFails: "hooksConfig.disabled"},
		// --skip-trust: the workspace settings are read (and dropped as
		// untrusted) before the flag trusts the folder.
		{name: "user-workspace-disables-hooks-skip-trust", opts: geminiOpts{env: untrusted, args: []string{"--skip-trust"}},
			setup: workspaceSettings(`{"hooksConfig":{"enabled":false}}`)},
	} {
		t.Run("scope/"+c.name, func(t *testing.T) {
			w := newGeminiWorld(t)
			switch {
			case c.installRefused:
				cmd := exec.Command(w.bin, "install", "--harness", "gemini", "--policy", w.policy, "--scope", "project", "--project", w.ws)
				cmd.Dir, cmd.Env = w.ws, []string{"HOME=" + w.home, "PATH=" + os.Getenv("PATH")}
				out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
				if err == nil || !strings.Contains(string(out), "--trust-project") {
					t.Fatalf("install into an untrusted project: %v %s", err, out)
				}
				return
			case c.project && c.trust:
				w.install(t, "--scope", "project", "--project", w.ws, "--trust-project")
			case c.project:
				w.install(t, "--scope", "project", "--project", w.ws)
			default:
				w.install(t)
			}
			if c.setup != nil {
				c.setup(w)
			}
			if c.verifyFails != "" {
				cmd := exec.Command(w.bin, "verify", "--harness", "gemini")
				cmd.Dir, cmd.Env = w.ws, []string{"HOME=" + w.home, "PATH=" + os.Getenv("PATH")}
				out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
				if err == nil || !strings.Contains(string(out), c.verifyFails) {
					t.Errorf("hookgate verify with the hook switched off: %v %s", err, out)
				}
				return
			}
			marker := filepath.Join(w.ws, "shell-denied.txt")
			r := w.run(t, gemini, []fakemodel.ToolCall{shellCall("echo deny-marker > " + marker)}, c.opts)
			wantNoFile(t, marker, r)
			if c.noRun {
				if r.code == 0 || len(r.calls) != 0 {
					t.Errorf("expected Gemini CLI to refuse an untrusted headless run: %s", r)
				}
				t.Logf("gemini exit %d: %s", r.code, lastLines(r.stderr, 3))
				return
			}
			wantBlocked(t, r, 0, "bash.deny")
		})
	}

	// protocol: Gemini CLI's reading of raw hook answers (no hookgate, no
	// wrapper): "ran" means the tool ran despite the hook.
	for _, c := range []struct {
		name    string
		script  string
		timeout int    // ms
		ran     bool   // the tool ran
		reason  string // when blocked, in the function response
	}{
		{"exit0-json-deny", `echo '{"decision":"deny","reason":"raw deny"}'`, 10000, false, "raw deny"},
		{"exit0-json-block", `echo '{"decision":"block","reason":"raw deny"}'`, 10000, false, "raw deny"},
		{"exit2-stderr", `echo 'raw deny' >&2; exit 2`, 10000, false, "raw deny"},
		{"exit3-stderr", `echo 'raw deny' >&2; exit 3`, 10000, false, "raw deny"},
		{"exit1-json-deny", `echo '{"decision":"deny","reason":"raw deny"}'; exit 1`, 10000, false, "raw deny"},
		{"exit127-missing-binary", `exec /nonexistent/hookgate check`, 10000, false, "/nonexistent/hookgate: not found"},
		{"exit1-stderr", `echo 'raw failure' >&2; exit 1`, 10000, true, ""},
		{"exit2-silent", `exit 2`, 10000, true, ""},
		{"exit137-killed", `kill -9 $$`, 10000, true, ""},
		{"exit0-text", `echo 'not json'`, 10000, true, ""},
		{"exit0-braces-not-json", `echo '{not json}'`, 10000, true, ""},
		{"exit0-bogus-decision", `echo '{"decision":"perhaps"}'`, 10000, true, ""},
		{"exit2-json-bogus-decision", `echo '{"decision":"perhaps"}'; exit 2`, 10000, true, ""},
		{"exit2-broken-json-deny", `echo '{"decision":"deny","reason":"raw deny"'; exit 2`, 10000, false, "raw deny"},
		{"timeout", `exec sleep 60`, 2000, true, ""},
	} {
		t.Run("protocol/"+c.name, func(t *testing.T) {
			w := newGeminiWorld(t)
			script := filepath.Join(w.dir, "bin", "raw-hook")
			os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\n"+c.script+"\n"), 0o755)
			w.writeUserHooks(t, script, c.timeout)
			marker := filepath.Join(w.ws, "ran.txt")
			r := w.run(t, gemini, []fakemodel.ToolCall{shellCall("echo ran > " + marker)}, geminiOpts{})
			_, err := os.Stat(marker)
			ran := err == nil
			t.Logf("hook %q (timeout %d ms): tool ran=%v after %v; function response: %s", c.script, c.timeout, ran, r.elapsed.Round(100*time.Millisecond), r.responseText(0))
			if ran != c.ran {
				t.Errorf("tool ran=%v, pinned %v: %s", ran, c.ran, r)
			}
			if !c.ran {
				wantBlocked(t, r, 0, c.reason)
			}
		})
	}
}

// geminiCase is one call under the normal install and the test policy.
type geminiCase struct {
	name  string
	call  func(w *geminiWorld) fakemodel.ToolCall
	check func(t *testing.T, w *geminiWorld, r geminiResult)
}

func geminiPolicyCases() []geminiCase {
	return []geminiCase{
		{"policy/shell-denied",
			func(w *geminiWorld) fakemodel.ToolCall {
				return shellCall("echo deny-marker > " + filepath.Join(w.ws, "shell-denied.txt"))
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantNoFile(t, filepath.Join(w.ws, "shell-denied.txt"), r)
				wantBlocked(t, r, 0, `shell command contains "deny-marker", denied by bash.deny`)
			}},
		{"policy/shell-allowed",
			func(w *geminiWorld) fakemodel.ToolCall {
				return shellCall("echo allowed > " + filepath.Join(w.ws, "shell-allowed.txt"))
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantFile(t, filepath.Join(w.ws, "shell-allowed.txt"), "allowed\n", r)
				wantRan(t, r, 0, "")
			}},
		{"policy/write_file-denied",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "write_file", Input: map[string]any{
					"file_path": filepath.Join(w.ws, "protected", "new.txt"), "content": "written\n"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantNoFile(t, filepath.Join(w.ws, "protected", "new.txt"), r)
				wantBlocked(t, r, 0, "files.deny")
			}},
		{"policy/replace-denied",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "replace", Input: map[string]any{
					"file_path": filepath.Join(w.ws, "protected", "existing.txt"), "instruction": "change it",
					"old_string": "old secret", "new_string": "new secret"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantFile(t, filepath.Join(w.ws, "protected", "existing.txt"), "old secret\n", r)
				wantBlocked(t, r, 0, "files.deny")
			}},
		{"policy/write_file-allowed",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "write_file", Input: map[string]any{
					"file_path": filepath.Join(w.ws, "src", "new.txt"), "content": "written\n"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantFile(t, filepath.Join(w.ws, "src", "new.txt"), "written\n", r)
				wantRan(t, r, 0, "")
			}},
		{"policy/replace-allowed",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "replace", Input: map[string]any{
					"file_path": filepath.Join(w.ws, "src", "edit.txt"), "instruction": "change it",
					"old_string": "old line", "new_string": "new line"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantFile(t, filepath.Join(w.ws, "src", "edit.txt"), "new line\n", r)
				wantRan(t, r, 0, "")
			}},
		// grep_search's 0.61 glob filter is include_pattern: one that
		// climbs out of dir_path must not reach files.deny.
		{"policy/grep_search-include-escape",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep_search", Input: map[string]any{"pattern": "secret",
					"dir_path": filepath.Join(w.ws, "src"), "include_pattern": "../protected/*"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				if len(r.calls) == 0 || !r.calls[0].Answered {
					t.Fatalf("no function response: %s", r)
				}
				if txt := r.calls[0].Text(); strings.Contains(txt, "old secret") {
					t.Fatalf("grep_search read a files.deny file: %s", r.calls[0].Response)
				}
				t.Logf("function response: %s", r.calls[0].Response)
			}},
		{"policy/read_file-denied",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "read_file", Input: map[string]any{"file_path": filepath.Join(w.ws, "protected", "existing.txt")}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantBlocked(t, r, 0, "files.deny")
				if strings.Contains(r.calls[0].Text(), "old secret") {
					t.Fatalf("content leaked: %s", r.calls[0].Response)
				}
			}},
		{"natives/read_file",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "read_file", Input: map[string]any{"file_path": filepath.Join(w.ws, "src", "hello.txt")}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantFile(t, filepath.Join(w.ws, "src", "hello.txt"), "hello from src\n", r)
				wantRan(t, r, 0, "hello from src")
			}},
		{"natives/glob",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "glob", Input: map[string]any{"pattern": "*.txt", "dir_path": filepath.Join(w.ws, "src")}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantRan(t, r, 0, "hello.txt")
			}},
		{"natives/grep_search",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep_search", Input: map[string]any{"pattern": "hello", "dir_path": filepath.Join(w.ws, "src")}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantRan(t, r, 0, "hello from src")
			}},
		{"natives/list_directory",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "list_directory", Input: map[string]any{"dir_path": filepath.Join(w.ws, "src")}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantRan(t, r, 0, "hello.txt")
			}},
		// The policy selects no web trait: the network tools are denied.
		{"natives/web_fetch-denied",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "web_fetch", Input: map[string]any{"prompt": "Summarize http://127.0.0.1:9/marker"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantBlocked(t, r, 0, "web_fetch")
				wantNoSideRequest(t, r, "127.0.0.1:9/marker")
			}},
		{"natives/google_web_search-denied",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "google_web_search", Input: map[string]any{"query": "search-marker"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) {
				wantBlocked(t, r, 0, "google_web_search")
				wantNoSideRequest(t, r, "search-marker")
			}},
		// Tools Gemini CLI 0.61 added (hookgate's catalog has them since
		// 2d16290; before, they were denied as unknown).
		{"natives/write_todos",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "write_todos", Input: map[string]any{"todos": []any{map[string]any{"description": "todo-marker", "status": "pending"}}}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) { wantRan(t, r, 0, "todo-marker") }},
		{"natives/list_background_processes",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "list_background_processes", Input: map[string]any{}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) { wantRan(t, r, 0, "No background processes") }},
		{"natives/update_topic",
			func(w *geminiWorld) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "update_topic", Input: map[string]any{"strategic_intent": "topic-marker", "title": "t"}}
			},
			func(t *testing.T, w *geminiWorld, r geminiResult) { wantRan(t, r, 0, "topic-marker") }},
	}
}

// busyLoops starts n busy-looping /bin/sh processes and returns the
// function that kills them (by pid).
func busyLoops(t *testing.T, n int) func() {
	t.Helper()
	var cmds []*exec.Cmd
	for range n {
		c := exec.Command("/bin/sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	return func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
	}
}

func shellCall(cmd string) fakemodel.ToolCall {
	return fakemodel.ToolCall{Name: "run_shell_command", Input: map[string]any{"command": cmd, "description": "test"}}
}

// standIn replaces hookgate (after install) with a /bin/sh script.
func standIn(body string) func(t *testing.T, w *geminiWorld) {
	return func(t *testing.T, w *geminiWorld) {
		os.Remove(w.bin)
		if err := os.WriteFile(w.bin, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func trustFolder(w *geminiWorld) {
	b, _ := json.Marshal(map[string]string{w.ws: "TRUST_FOLDER"})
	os.WriteFile(filepath.Join(w.home, ".gemini", "trustedFolders.json"), b, 0o600)
}

func workspaceSettings(s string) func(*geminiWorld) {
	return func(w *geminiWorld) {
		os.MkdirAll(filepath.Join(w.ws, ".gemini"), 0o755)
		os.WriteFile(filepath.Join(w.ws, ".gemini", "settings.json"), []byte(s), 0o644)
	}
}

func geminiBinary(t *testing.T) string {
	t.Helper()
	root := os.Getenv("BARRY_HARNESSES")
	if root == "" {
		root = "/opt/barry-harnesses"
	}
	p := filepath.Join(root, "node_modules", ".bin", "gemini")
	if _, err := os.Stat(p); err != nil {
		testenv.SkipOrFail(t, "Gemini CLI is not installed at "+p+" (scripts/install-harnesses)")
	}
	testenv.NeedCommand(t, "node")
	out, err := exec.Command(p, "--version").Output()
	if err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("%s --version: %v", p, err))
	}
	t.Logf("gemini %s at %s", strings.TrimSpace(string(out)), p)
	return p
}

// geminiWorld is one throwaway HOME, workspace, hookgate copy and policy.
type geminiWorld struct {
	dir, home, ws, bin, policy string
}

// geminiUserSettings is what the user's settings.json holds before
// hookgate install: API-key auth (GOOGLE_GEMINI_BASE_URL alone selects the
// "gateway" auth type, which 0.61's validateAuthMethod refuses), no
// auto-update, no usage statistics, no telemetry.
const geminiUserSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`

func newGeminiWorld(t *testing.T) *geminiWorld {
	t.Helper()
	dir := t.TempDir()
	w := &geminiWorld{dir: dir, home: filepath.Join(dir, "home"), ws: filepath.Join(dir, "ws"),
		bin: filepath.Join(dir, "bin", "hookgate"), policy: filepath.Join(dir, "policy", "session.yaml")}
	for _, d := range []string{filepath.Join(w.home, ".gemini"), filepath.Join(w.ws, "src"), filepath.Join(w.ws, "protected"),
		filepath.Join(dir, "bin"), filepath.Join(dir, "policy"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(w.home, ".gemini", "settings.json"): geminiUserSettings,
		filepath.Join(w.ws, "src", "hello.txt"):           "hello from src\n",
		filepath.Join(w.ws, "src", "edit.txt"):            "old line\n",
		filepath.Join(w.ws, "protected", "existing.txt"):  "old secret\n",
		w.policy: fmt.Sprintf(`version: 1
harness: gemini
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
	return w
}

// install runs this world's hookgate install --harness gemini --policy
// POLICY [args...] as the user (HOME, in the workspace) and returns the
// file it wrote.
func (w *geminiWorld) install(t *testing.T, args ...string) string {
	return w.installWith(t, true, args...)
}

func (w *geminiWorld) installWith(t *testing.T, policy bool, args ...string) string {
	t.Helper()
	argv := []string{"install", "--harness", "gemini"}
	if policy {
		argv = append(argv, "--policy", w.policy)
	}
	cmd := exec.Command(w.bin, append(argv, args...)...)
	cmd.Dir = w.ws
	cmd.Env = []string{"HOME=" + w.home, "PATH=" + os.Getenv("PATH")}
	out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
	if err != nil {
		t.Fatalf("hookgate %s: %v\n%s", strings.Join(cmd.Args[1:], " "), err, out)
	}
	path, _, ok := strings.Cut(strings.TrimSpace(string(out)), ": hookgate installed")
	if !ok {
		t.Fatalf("hookgate install said %q", out)
	}
	return path
}

// writeUserHooks puts one raw BeforeTool command hook into the user's
// settings (the protocol cases: no hookgate, no wrapper).
func (w *geminiWorld) writeUserHooks(t *testing.T, command string, timeoutMS int) {
	t.Helper()
	var s map[string]any
	json.Unmarshal([]byte(geminiUserSettings), &s)
	s["hooks"] = map[string]any{"BeforeTool": []any{map[string]any{"matcher": ".*", "hooks": []any{
		map[string]any{"type": "command", "command": command, "name": "raw", "timeout": timeoutMS}}}}}
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(filepath.Join(w.home, ".gemini", "settings.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

type geminiOpts struct {
	// env overrides the run's environment; an empty value removes the
	// variable.
	env  map[string]string
	args []string
	// timeout, when set, bounds the run instead of 120 s.
	timeout time.Duration
}

type geminiResult struct {
	code           int
	stdout, stderr string
	elapsed        time.Duration
	requests       [][]byte
	calls          []fakemodel.GeminiExchange
	tools          []string
	// received is every request the fake model got (fakemodel.Received).
	received []string
}

func (r geminiResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "gemini exit %d after %v\nstdout: %q\nstderr (tail): %s\n%d model requests; calls:",
		r.code, r.elapsed.Round(100*time.Millisecond), r.stdout, lastLines(r.stderr, 12), len(r.requests))
	for i, c := range r.calls {
		fmt.Fprintf(&b, "\n  [%d] %s %s answered=%v: %s", i, c.Name, c.Args, c.Answered, c.Response)
	}
	return b.String()
}

func (r geminiResult) responseText(i int) string {
	if i >= len(r.calls) || !r.calls[i].Answered {
		return "(none)"
	}
	return string(r.calls[i].Response)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n  ")
}

// run runs Gemini CLI once, non-interactive, in the workspace, against a
// fresh fake model asking for calls.
func (w *geminiWorld) run(t *testing.T, gemini string, calls []fakemodel.ToolCall, o geminiOpts) geminiResult {
	t.Helper()
	srv, err := fakemodel.GeminiWith(calls, fakemodel.GeminiOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"HOME":                            w.home,
		"TMPDIR":                          filepath.Join(w.dir, "tmp"),
		"LANG":                            "C.UTF-8",
		"TERM":                            "dumb",
		"NO_COLOR":                        "1",
		"GEMINI_API_KEY":                  "test-key",
		"GOOGLE_GEMINI_BASE_URL":          srv.URL,
		"GEMINI_TELEMETRY_ENABLED":        "false",
		"GEMINI_CLI_SYSTEM_SETTINGS_PATH": filepath.Join(w.dir, "no-system", "settings.json"),
		"GEMINI_CLI_SYSTEM_DEFAULTS_PATH": filepath.Join(w.dir, "no-system", "system-defaults.json"),
		"GEMINI_CLI_TRUST_WORKSPACE":      "true",
	}
	for k, v := range o.env {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	args := append([]string{"-m", "gemini-2.5-flash", "--approval-mode", "yolo"}, o.args...)
	args = append(args, "-p", "Run the tool calls.")
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(o.timeout, 120*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, args...)
	cmd.Dir = w.ws
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
	r := geminiResult{elapsed: time.Since(start), stdout: stdout.String(), stderr: stderr.String()}
	if cmd.Process != nil {
		// Whatever the run left behind (hook stand-ins) goes with it.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running gemini: %v", err)
	}
	if ctx.Err() != nil {
		t.Errorf("gemini did not finish within the bound: %v", ctx.Err())
	}
	r.requests = srv.Requests()
	r.received = srv.Received()
	r.calls = fakemodel.GeminiTranscript(r.requests)
	r.tools = fakemodel.GeminiToolNames(r.requests)
	return r
}

const geminiBlocked = "Tool execution blocked: "

// wantBlocked checks that call i was answered with Gemini CLI's hook block
// ("Tool execution blocked: REASON"), REASON containing reason.
func wantBlocked(t *testing.T, r geminiResult, i int, reason string) {
	t.Helper()
	if i >= len(r.calls) || !r.calls[i].Answered {
		t.Fatalf("call %d got no function response: %s", i, r)
	}
	txt := r.calls[i].Text()
	if !strings.Contains(txt, geminiBlocked) || !strings.Contains(txt, reason) {
		t.Fatalf("call %d not blocked (want %q): function response %s\n%s", i, reason, r.calls[i].Response, r)
	}
	t.Logf("function response: %s", r.calls[i].Response)
}

// wantRan checks that call i ran (no hook block), its response holding out.
func wantRan(t *testing.T, r geminiResult, i int, out string) {
	t.Helper()
	if i >= len(r.calls) || !r.calls[i].Answered {
		t.Fatalf("call %d got no function response: %s", i, r)
	}
	txt := r.calls[i].Text()
	if strings.Contains(txt, geminiBlocked) || !strings.Contains(txt, out) {
		t.Fatalf("call %d did not run (want %q): function response %s\n%s", i, out, r.calls[i].Response, r)
	}
	t.Logf("function response: %s", r.calls[i].Response)
}

func wantFile(t *testing.T, path, content string, r geminiResult) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != content {
		t.Fatalf("%s: %q, %v (want %q)\n%s", path, b, err, content, r)
	}
}

func wantNoFile(t *testing.T, path string, r geminiResult) {
	t.Helper()
	if b, err := os.ReadFile(path); err == nil {
		t.Fatalf("%s was written (%q): the tool ran\n%s", path, b, r)
	}
}

// wantNoSideRequest checks that no model request outside the agent loop
// (one without function declarations: web_fetch's and google_web_search's
// own calls to the model) holds s.
func wantNoSideRequest(t *testing.T, r geminiResult, s string) {
	t.Helper()
	for _, b := range r.requests {
		if strings.Contains(string(b), s) && !strings.Contains(string(b), "functionDeclarations") {
			t.Errorf("a model request outside the agent loop holds %q (the tool ran): %.300s", s, b)
		}
	}
}
