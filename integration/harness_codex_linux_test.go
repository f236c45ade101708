//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestHarnessCodex drives the real Codex CLI (codex exec, on the host,
// approvals and Codex's own sandbox off, so the hook is the only gate)
// against the fake Responses API, with hookgate installed by `hookgate
// install --harness codex`, and checks each ruling twice: the marker file
// the tool call would create, and the tool output Codex sent back to the
// model (the function_call_output of the next request).
//
// Codex runs a non-managed hook only when the user's config records a
// trusted hash for it ([hooks.state."KEY"] trusted_hash = "sha256:..."),
// and `codex exec` has no review UI, so an untrusted hook is skipped
// silently: the tool call runs. The subtests:
//
//   - trust/...: what `hookgate install` alone gives. They
//     require the deny, so they fail while install leaves the entry
//     untrusted, or writes ~/.codex when CODEX_HOME points elsewhere.
//   - handtrust/...: install, then the trust entry written by the test with
//     Codex's rule (codexTrustEntries): the deny path once trust is right.
//   - handtrust/failclosed/...: hookgate missing, crashing, hanging,
//     answering garbage, or without its policy: each must be a deny.
func TestHarnessCodex(t *testing.T) {
	codex := codexBinary(t)

	t.Run("trust", func(t *testing.T) {
		t.Run("hash-matches-codex", func(t *testing.T) {
			t.Parallel()
			codexHashMatches(t, codex)
		})
		t.Run("hash-rule-edge-cases", func(t *testing.T) {
			t.Parallel()
			codexHashEdgeCases(t, codex)
		})
		t.Run("install-only", func(t *testing.T) {
			// What Codex itself says about the entries install wrote.
			t.Run("hooks-list-trusted", func(t *testing.T) {
				t.Parallel()
				w := newCodexWorld(t, codex, nil, codexOpts{})
				w.install(t, "user")
				w.requireTrusted(t)
			})
			for _, c := range []codexCase{codexShellDeny, codexPatchDeny} {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					w := newCodexWorld(t, codex, c.calls, codexOpts{})
					w.install(t, "user")
					w.logHooks(t)
					w.check(t, c, w.run(t))
				})
			}
			t.Run("project-"+codexShellDeny.name, func(t *testing.T) {
				t.Parallel()
				w := newCodexWorld(t, codex, codexShellDeny.calls, codexOpts{})
				// Trusting the project is the user's decision (the
				// trust prompt, or codex exec --trust); trusting
				// hookgate's entry in it is install's job.
				w.trustProject(t)
				w.install(t, "project")
				w.logHooks(t)
				w.check(t, codexShellDeny, w.run(t))
			})
		})
		t.Run("codex-home", func(t *testing.T) {
			// CODEX_HOME outside ~/.codex: Codex reads only
			// $CODEX_HOME/hooks.json and $CODEX_HOME/config.toml.
			t.Run("install-only", func(t *testing.T) {
				t.Parallel()
				w := newCodexWorld(t, codex, codexShellDeny.calls, codexOpts{codexHomeElsewhere: true})
				w.install(t, "user")
				w.logHooks(t)
				w.check(t, codexShellDeny, w.run(t))
			})
			t.Run("handtrust", func(t *testing.T) {
				t.Parallel()
				w := newCodexWorld(t, codex, codexShellDeny.calls, codexOpts{codexHomeElsewhere: true})
				w.handTrust(t, w.install(t, "user"))
				w.logHooks(t)
				w.check(t, codexShellDeny, w.run(t))
			})
		})
	})

	t.Run("handtrust", func(t *testing.T) {
		for _, c := range []codexCase{codexShellDeny, codexShellAllow, codexPatchDeny, codexPatchAllow, codexNative} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				w := newCodexWorld(t, codex, c.calls, codexOpts{})
				w.handTrust(t, w.install(t, "user"))
				r := w.run(t)
				w.check(t, c, r)
				if c.name == codexShellAllow.name {
					checkInventory(t, "codex", r.tools)
				}
			})
		}
		t.Run("project-"+codexShellDeny.name, func(t *testing.T) {
			t.Parallel()
			w := newCodexWorld(t, codex, codexShellDeny.calls, codexOpts{})
			w.trustProject(t)
			w.handTrust(t, w.install(t, "project"))
			w.check(t, codexShellDeny, w.run(t))
		})
		t.Run("failclosed", func(t *testing.T) {
			breaks := []struct {
				name  string
				apply func(t *testing.T, w *codexWorld)
			}{
				{"missing-policy", func(t *testing.T, w *codexWorld) { os.Remove(w.policy) }},
				{"hookgate-missing", func(t *testing.T, w *codexWorld) { os.Remove(w.hookgate) }},
				{"hookgate-crash", func(t *testing.T, w *codexWorld) { w.replaceHookgate(t, "echo 'hookgate: boom' >&2\nexit 1") }},
				{"hookgate-hang", func(t *testing.T, w *codexWorld) { w.replaceHookgate(t, "exec sleep 30") }},
				{"hookgate-garbage", func(t *testing.T, w *codexWorld) {
					w.replaceHookgate(t, "cat >/dev/null\necho 'allow, I guess {'\nexit 0")
				}},
			}
			// Codex runs no PreToolUse hook for write_stdin: what is typed
			// into a shell exec_command left running is never ruled on, so
			// starting one must be denied.
			t.Run("write-stdin-into-shell", func(t *testing.T) {
				t.Parallel()
				w := newCodexWorld(t, codex, codexStdinShell.calls, codexOpts{})
				w.handTrust(t, w.install(t, "user"))
				w.check(t, codexStdinShell, w.run(t))
			})
			for _, b := range breaks {
				t.Run(b.name, func(t *testing.T) {
					t.Parallel()
					c := codexRanDeny
					w := newCodexWorld(t, codex, c.calls, codexOpts{})
					w.handTrust(t, w.install(t, "user"))
					b.apply(t, w)
					w.check(t, c, w.run(t))
				})
			}
		})
	})
}

// codexModel is the model Codex is told to use: a name in Codex 0.171's
// bundled catalog whose tools include apply_patch (a freeform tool);
// "gpt-fake" would get fallback metadata and no apply_patch.
const codexModel = "gpt-5.5"

// codexPolicy denies shell commands containing MARKER and writes to
// files named forbidden-*; the base default traits grant Codex's shell
// and apply_patch.
const codexPolicy = `version: 1
harness: codex
session:
  bound:
    bash:
      deny: ["MARKER"]
    files:
      deny: ["**/forbidden-*"]
`

// codexCase is one tool call and the outcome it must have.
type codexCase struct {
	name  string
	calls func(w *codexWorld) []fakemodel.ToolCall
	// marker is the file the call creates when it runs (relative to the
	// world's root).
	marker string
	// deny: the call must not run and Codex must tell the model it was
	// blocked by the hook; otherwise it must run and the output must
	// contain want.
	deny bool
	want string
}

var (
	codexShellDeny = codexCase{name: "shell-deny", marker: "MARKER-shell", deny: true,
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "touch " + w.path("MARKER-shell")}}}
		}}
	codexShellAllow = codexCase{name: "shell-allow", marker: "allowed-shell", want: "Process exited with code 0",
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "touch " + w.path("allowed-shell")}}}
		}}
	codexPatchDeny = codexCase{name: "apply-patch-deny", marker: "work/forbidden-patch.txt", deny: true,
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{{Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: forbidden-patch.txt\n+secret\n*** End Patch\n"}}}
		}}
	codexPatchAllow = codexCase{name: "apply-patch-allow", marker: "work/patched.txt", want: "patched.txt",
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{{Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** Add File: patched.txt\n+ok\n*** End Patch\n"}}}
		}}
	// codexNative is a benign native tool: get_goal reads the thread's
	// goal and touches nothing. Codex runs PreToolUse for it.
	codexNative = codexCase{name: "native-get_goal", want: `"goal"`,
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{{Name: "get_goal", Input: map[string]any{}}}
		}}
	// codexStdinShell starts an interactive shell (a command the policy
	// allows) and types a denied command into it with write_stdin.
	codexStdinShell = codexCase{name: "write-stdin-into-shell", marker: "MARKER-stdin", deny: true,
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{
				{Name: "exec_command", Input: map[string]any{"cmd": "bash", "tty": true, "yield_time_ms": 1000}},
				{Name: "write_stdin", Input: map[string]any{"session_id": fakemodel.OpenAILastSessionID,
					"chars": "touch " + w.path("MARKER-stdin") + "\n", "yield_time_ms": 2000}},
			}
		}}
	// codexRanDeny is a command the policy allows: when hookgate fails,
	// the failure alone must deny it.
	codexRanDeny = codexCase{name: "ran", marker: "ran-marker", deny: true,
		calls: func(w *codexWorld) []fakemodel.ToolCall {
			return []fakemodel.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "touch " + w.path("ran-marker")}}}
		}}
)

// codexBinary returns the Codex CLI under $BARRY_HARNESSES (default
// /opt/barry-harnesses), as scripts/install-harnesses installs it.
func codexBinary(t *testing.T) string {
	t.Helper()
	base := os.Getenv("BARRY_HARNESSES")
	if base == "" {
		base = "/opt/barry-harnesses"
	}
	p := filepath.Join(base, "node_modules", ".bin", "codex")
	if _, err := os.Stat(p); err != nil {
		testenv.SkipOrFail(t, "Codex CLI not installed: "+err.Error()+" (scripts/install-harnesses; BARRY_HARNESSES)")
	}
	if _, err := exec.LookPath("node"); err != nil {
		testenv.SkipOrFail(t, "node is not on PATH (the codex launcher is a node script)")
	}
	return p
}

// codexWorld is one throwaway Codex setup: HOME, CODEX_HOME, the
// workspace, a private copy of hookgate (so a test can break it), the
// policy and the fake model.
type codexWorld struct {
	codex     string
	root      string
	home      string
	codexHome string
	work      string
	hookgate  string
	policy    string
	model     *fakemodel.Server
	calls     []fakemodel.ToolCall
	// extraEnv is added to hookgate install's and Codex's environment;
	// runTimeout, when set, bounds a run instead of 90 s.
	extraEnv   []string
	runTimeout time.Duration
}

type codexOpts struct {
	// codexHomeElsewhere sets CODEX_HOME to a directory other than
	// ~/.codex.
	codexHomeElsewhere bool
}

func newCodexWorld(t *testing.T, codex string, calls func(*codexWorld) []fakemodel.ToolCall, o codexOpts) *codexWorld {
	t.Helper()
	root, err := filepath.EvalSymlinks(sharedDir(t))
	if err != nil {
		t.Fatal(err)
	}
	w := &codexWorld{codex: codex, root: root, home: filepath.Join(root, "home"), work: filepath.Join(root, "work")}
	w.codexHome = filepath.Join(w.home, ".codex")
	if o.codexHomeElsewhere {
		w.codexHome = filepath.Join(root, "codex-home")
	}
	for _, d := range []string{w.home, w.codexHome, w.work, filepath.Join(root, "bin"), filepath.Join(root, "tmp")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.hookgate = filepath.Join(root, "bin", "hookgate")
	bin, err := os.ReadFile(hookgateBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.hookgate, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	w.policy = filepath.Join(root, "policy.yaml")
	if err := os.WriteFile(w.policy, []byte(codexPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	var c []fakemodel.ToolCall
	if calls != nil {
		c = calls(w)
	}
	w.useModel(t, c)
	return w
}

// useModel starts a fake model asking for calls (stopped when the test
// ends) and writes the user config that points Codex at it, replacing
// what the file held (hooks.state entries too).
func (w *codexWorld) useModel(t *testing.T, calls []fakemodel.ToolCall) {
	t.Helper()
	model, err := fakemodel.OpenAIWith(calls, fakemodel.OpenAIOptions{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { model.Close() })
	w.model, w.calls = model, calls
	// No login (the provider's env_key), no update check, no analytics,
	// no feedback upload; the file is Codex's user config layer.
	cfg := "check_for_update_on_startup = false\n" + w.model.CodexConfig(codexModel) +
		"\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n"
	if err := os.WriteFile(filepath.Join(w.codexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (w *codexWorld) path(rel string) string { return filepath.Join(w.root, rel) }

// env is the environment of hookgate install and Codex: nothing of the
// caller's but PATH.
func (w *codexWorld) env() []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"CODEX_HOME=" + w.codexHome,
		"TMPDIR=" + filepath.Join(w.root, "tmp"),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		fakemodel.OpenAIKeyEnv + "=fake-key",
	}, w.extraEnv...)
}

// install runs hookgate install --harness codex (scope user or project)
// the way a user would, and returns the file it says it wrote.
func (w *codexWorld) install(t *testing.T, scope string) string {
	t.Helper()
	args := []string{"install", "--harness", "codex", "--policy", w.policy}
	if scope == "project" {
		args = append(args, "--scope", "project", "--project", w.work)
	}
	cmd := exec.Command(w.hookgate, args...)
	cmd.Dir = w.work
	cmd.Env = w.env()
	out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
	if err != nil {
		t.Fatalf("hookgate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	// The first line is "FILE: hookgate installed" (or "FILE: unchanged").
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	file, _, ok := strings.Cut(line, ": ")
	if !ok || !filepath.IsAbs(file) {
		t.Fatalf("hookgate install: unexpected output %q", out)
	}
	t.Logf("hookgate install --scope %s: %s", scope, strings.TrimSpace(string(out)))
	want := filepath.Join(w.codexHome, "hooks.json")
	if scope == "project" {
		want = filepath.Join(w.work, ".codex", "hooks.json")
	}
	if file != want {
		t.Logf("install wrote %s; Codex reads %s", file, want)
	}
	return file
}

// replaceHookgate swaps hookgate's binary for a shell script (the entry
// keeps naming the same path, and its trust does not cover the bytes).
func (w *codexWorld) replaceHookgate(t *testing.T, body string) {
	t.Helper()
	os.Remove(w.hookgate)
	if err := os.WriteFile(w.hookgate, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// trustProject marks the workspace a trusted project in the user config,
// as Codex's trust prompt (or codex exec --trust) does; only then does
// Codex load its .codex/ layer at all.
func (w *codexWorld) trustProject(t *testing.T) {
	t.Helper()
	w.appendConfig(t, fmt.Sprintf("\n[projects.%s]\ntrust_level = \"trusted\"\n", codexTOMLKey(w.work)))
}

func (w *codexWorld) appendConfig(t *testing.T, s string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(w.codexHome, "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// handTrust records, in the user config ($CODEX_HOME/config.toml: the
// only layer whose hooks.state Codex reads, for user and project hooks
// alike), a trusted hash for every hook entry of hooksFile, computed with
// Codex's rule.
func (w *codexWorld) handTrust(t *testing.T, hooksFile string) {
	t.Helper()
	entries, err := codexTrustEntries(hooksFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := os.ReadFile(filepath.Join(w.codexHome, "config.toml"))
	doc := codexConfigDoc(t, string(cfg))
	var b strings.Builder
	for _, e := range entries {
		// A key install already recorded is left to install (a second
		// [hooks.state."KEY"] table would make the file invalid TOML).
		if tomlAt(doc, "hooks", "state", e.Key) != nil {
			t.Logf("%s already has a hooks.state entry; not adding one", e.Key)
			continue
		}
		fmt.Fprintf(&b, "\n[hooks.state.%s]\ntrusted_hash = %q\n", codexTOMLKey(e.Key), e.Hash)
	}
	w.appendConfig(t, b.String())
	t.Logf("hand-trusted %d hook entries of %s", len(entries), hooksFile)
}

// codexRun is the outcome of one codex exec.
type codexRun struct {
	stdout, stderr string
	err            error
	took           time.Duration
	exchanges      []fakemodel.OpenAIExchange
	tools          []string // the tools Codex offered its model
	received       []string // every request the fake model got
}

// run runs codex exec non-interactively in the workspace with approvals
// and Codex's sandbox off (so the hook is the only gate), bounded.
func (w *codexWorld) run(t *testing.T) codexRun {
	t.Helper()
	limit := cmp.Or(w.runTimeout, 90*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.codex, "exec",
		"--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--color", "never",
		"-C", w.work, "Run the tool call you are given.")
	cmd.Dir = w.work
	cmd.Env = w.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := codexRun{stdout: stdout.String(), stderr: stderr.String(), err: err, took: time.Since(start)}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	r.exchanges = fakemodel.OpenAITranscript(w.model.Requests())
	r.tools = fakemodel.OpenAIToolNames(w.model.Requests())
	r.received = w.model.Received()
	if ctx.Err() != nil {
		t.Fatalf("codex exec did not finish in %v\nstderr:\n%s", limit, r.stderr)
	}
	return r
}

// hookLines returns Codex's "hook: ..." progress lines (codex exec prints
// one when a hook starts and one when it completes, fails or blocks).
func (r codexRun) hookLines() []string {
	var out []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "hook: ") {
			out = append(out, l)
		}
	}
	return out
}

// check asserts the case's outcome on the marker and on the tool output
// the model got back.
func (w *codexWorld) check(t *testing.T, c codexCase, r codexRun) {
	t.Helper()
	t.Logf("codex exec took %s, err %v; hook lines %q", r.took.Round(time.Millisecond), r.err, r.hookLines())
	if r.err != nil {
		t.Errorf("codex exec: %v\nstderr:\n%s", r.err, r.stderr)
	}
	if len(r.exchanges) != len(w.calls) {
		t.Fatalf("the model saw %d tool calls, want %d (%+v)\nstderr:\n%s", len(r.exchanges), len(w.calls), r.exchanges, r.stderr)
	}
	blocked := false
	for _, x := range r.exchanges {
		t.Logf("tool %s output sent to the model: %q", x.Name, x.Output)
		if !x.Answered {
			t.Fatalf("Codex sent no output for call %s\nstderr:\n%s", x.CallID, r.stderr)
		}
		blocked = blocked || strings.Contains(x.Output, "blocked by PreToolUse hook")
	}
	x := r.exchanges[len(r.exchanges)-1]
	ran := false
	if c.marker != "" {
		_, err := os.Lstat(w.path(c.marker))
		ran = err == nil
	}
	if c.deny {
		if ran {
			t.Errorf("the denied call ran: %s exists", c.marker)
		}
		if !blocked {
			t.Errorf("no output the model got says the hook blocked a call")
		}
		if ran || !blocked {
			t.Logf("stderr:\n%s", r.stderr)
		}
		return
	}
	if c.marker != "" && !ran {
		t.Errorf("the allowed call did not run: no %s", c.marker)
	}
	if blocked || !strings.Contains(x.Output, c.want) {
		t.Errorf("output %q: want %q and no block", x.Output, c.want)
	}
	if len(r.hookLines()) == 0 {
		t.Errorf("no hook ran (the call was allowed without asking hookgate)")
	}
}

// logHooks logs what Codex reports about the hooks for the workspace
// (hooks/list): the why of a trust/ failure.
func (w *codexWorld) logHooks(t *testing.T) {
	t.Helper()
	hooks, err := w.hooksList(t)
	if err != nil {
		t.Logf("hooks/list: %v", err)
		return
	}
	if len(hooks) == 0 {
		t.Logf("hooks/list: Codex sees no hooks for %s", w.work)
	}
	for _, h := range hooks {
		t.Logf("hooks/list: %s source=%s enabled=%v trustStatus=%s", h.Key, h.Source, h.Enabled, h.TrustStatus)
	}
}

// requireTrusted fails unless Codex lists hookgate's entries and reports
// each one trusted (so codex exec runs it).
func (w *codexWorld) requireTrusted(t *testing.T) {
	t.Helper()
	hooks, err := w.hooksList(t)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, h := range hooks {
		if !strings.Contains(h.Command, "hookgate") {
			continue
		}
		n++
		if !h.Enabled || (h.TrustStatus != "trusted" && h.TrustStatus != "managed") {
			t.Errorf("%s: enabled=%v trustStatus=%s: codex exec skips it silently", h.Key, h.Enabled, h.TrustStatus)
		}
	}
	if n == 0 {
		t.Errorf("Codex lists no hookgate hook for %s (CODEX_HOME %s)", w.work, w.codexHome)
	}
}

// codexHook is one entry of the app-server's hooks/list.
type codexHook struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	Matcher     string `json:"matcher"`
	SourcePath  string `json:"sourcePath"`
	Source      string `json:"source"`
	Enabled     bool   `json:"enabled"`
	CurrentHash string `json:"currentHash"`
	TrustStatus string `json:"trustStatus"`
}

// hooksList asks Codex itself: codex app-server over stdio (JSON-RPC,
// one JSON object per line, no "jsonrpc" member needed): initialize,
// initialized, then hooks/list for the workspace.
func (w *codexWorld) hooksList(t *testing.T) ([]codexHook, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.codex, "app-server")
	cmd.Dir = w.work
	cmd.Env = w.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		in.Close()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(v any) error {
		b, _ := json.Marshal(v)
		_, err := in.Write(append(b, '\n'))
		return err
	}
	wait := func(id int) (json.RawMessage, error) {
		for sc.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil || *m.ID != id {
				continue
			}
			if m.Error != nil {
				return nil, fmt.Errorf("app-server error: %s", m.Error)
			}
			return m.Result, nil
		}
		return nil, fmt.Errorf("app-server closed its output (%v); stderr: %s", sc.Err(), stderr.String())
	}
	if err := send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"clientInfo": map[string]any{"name": "hookgate-test", "version": "0"}}}); err != nil {
		return nil, err
	}
	if _, err := wait(1); err != nil {
		return nil, err
	}
	send(map[string]any{"method": "initialized"})
	send(map[string]any{"id": 2, "method": "hooks/list", "params": map[string]any{"cwds": []string{w.work}}})
	res, err := wait(2)
	if err != nil {
		return nil, err
	}
	var list struct {
		Data []struct {
			Cwd      string      `json:"cwd"`
			Hooks    []codexHook `json:"hooks"`
			Warnings []string    `json:"warnings"`
			Errors   []any       `json:"errors"`
		} `json:"data"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return nil, fmt.Errorf("hooks/list: %v: %s", err, res)
	}
	var hooks []codexHook
	for _, d := range list.Data {
		if len(d.Warnings) > 0 || len(d.Errors) > 0 {
			t.Logf("hooks/list %s: warnings %q errors %v", d.Cwd, d.Warnings, d.Errors)
		}
		hooks = append(hooks, d.Hooks...)
	}
	return hooks, nil
}

// codexHashMatches checks the trust rule against Codex itself: for
// hookgate's entries in user and project scope, the key and hash
// codexTrustEntries computes are the key and currentHash hooks/list
// reports, and once written Codex reports them trusted.
func codexHashMatches(t *testing.T, codex string) {
	w := newCodexWorld(t, codex, nil, codexOpts{})
	w.trustProject(t)
	files := []string{w.install(t, "user"), w.install(t, "project")}
	var want []codexTrustEntry
	for _, f := range files {
		es, err := codexTrustEntries(f)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, es...)
	}
	hooks, err := w.hooksList(t)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]codexHook{}
	for _, h := range hooks {
		got[h.Key] = h
	}
	if len(want) == 0 {
		t.Fatal("install wrote no hook entries")
	}
	for _, e := range want {
		h, ok := got[e.Key]
		if !ok {
			t.Errorf("Codex does not list %s (it lists %v)", e.Key, codexKeys(got))
			continue
		}
		if h.CurrentHash != e.Hash {
			t.Errorf("%s: Codex's currentHash %s, computed %s from %s", e.Key, h.CurrentHash, e.Hash, e.Identity)
		} else {
			t.Logf("%s: hash %s matches Codex (identity %s)", e.Key, e.Hash, e.Identity)
		}
	}
	for _, f := range files {
		w.handTrust(t, f)
	}
	hooks, err = w.hooksList(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hooks {
		if h.TrustStatus != "trusted" {
			t.Errorf("after writing the trust entries: %s is %s", h.Key, h.TrustStatus)
		}
	}
}

// codexHashEdgeCases checks the rule on the corners of the identity
// against Codex: no matcher, "*" and "" matchers, a matcher on an event
// that ignores it, no timeout (600), timeout 0 (1), async, statusMessage,
// additionalContextLimit, and characters encoding/json would escape
// differently from serde_json.
func codexHashEdgeCases(t *testing.T, codex string) {
	w := newCodexWorld(t, codex, nil, codexOpts{})
	hooksFile := filepath.Join(w.codexHome, "hooks.json")
	const edge = `{"hooks": {
  "PreToolUse": [
    {"hooks": [{"type": "command", "command": "echo a"}]},
    {"matcher": "*", "hooks": [{"type": "command", "command": "echo <b> & \u2028 \"q\" \\ \t\u0001 \u00e9 \u007f", "timeout": 0}]},
    {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo c", "timeout": 5, "async": true, "statusMessage": "s"}]},
    {"matcher": "", "hooks": [{"type": "command", "command": "echo d", "timeout": 7, "additionalContextLimit": 4096},
                              {"type": "command", "command": "echo d2", "timeout": 8}]}
  ],
  "PermissionRequest": [{"matcher": ".*", "hooks": [{"type": "command", "command": "echo p", "timeout": 10}]}],
  "UserPromptSubmit": [{"matcher": "ignored", "hooks": [{"type": "command", "command": "echo e", "timeout": 3}]}]
}}`
	if err := os.WriteFile(hooksFile, []byte(edge), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := codexTrustEntries(hooksFile)
	if err != nil {
		t.Fatal(err)
	}
	hooks, err := w.hooksList(t)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]codexHook{}
	for _, h := range hooks {
		got[h.Key] = h
	}
	if len(hooks) != len(want) {
		t.Errorf("Codex lists %d hooks %v, computed %d", len(hooks), codexKeys(got), len(want))
	}
	for _, e := range want {
		h, ok := got[e.Key]
		switch {
		case !ok:
			t.Errorf("Codex does not list %s", e.Key)
		case h.CurrentHash != e.Hash:
			t.Errorf("%s: Codex's currentHash %s, computed %s from %s", e.Key, h.CurrentHash, e.Hash, e.Identity)
		default:
			t.Logf("%s: matches (%s)", e.Key, e.Identity)
		}
	}
}

func codexKeys(m map[string]codexHook) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// codexTrustEntry is the hooks.state entry Codex expects for one hook.
type codexTrustEntry struct {
	// Key is "<source file>:<event label>:<group index>:<handler index>",
	// the source file's canonical path (symlinks resolved).
	Key string
	// Hash is "sha256:" and the hex SHA-256 of Identity.
	Hash string
	// Identity is the canonical JSON Codex hashes.
	Identity string
}

// codexEventLabels are the snake_case event labels Codex uses in hook
// keys and hash identities (codex-rs/hooks/src/lib.rs
// hook_event_key_label), and whether the event keeps its matcher
// (HOOK_EVENT_NAMES_WITH_MATCHERS; for the others the matcher is dropped
// before hashing).
var codexEventLabels = map[string]struct {
	label   string
	matcher bool
}{
	"PreToolUse":        {"pre_tool_use", true},
	"PermissionRequest": {"permission_request", true},
	"PostToolUse":       {"post_tool_use", true},
	"PreCompact":        {"pre_compact", true},
	"PostCompact":       {"post_compact", true},
	"SessionStart":      {"session_start", true},
	"SubagentStart":     {"subagent_start", true},
	"SubagentStop":      {"subagent_stop", true},
	"UserPromptSubmit":  {"user_prompt_submit", false},
	"Stop":              {"stop", false},
}

// codexTrustEntries computes, for every command hook of a hooks.json
// file, the trust entry Codex 0.171 expects (codex-rs/hooks/src/engine/
// discovery.rs: the normalized handler {type, command, timeout (default
// 600, at least 1), async, statusMessage when set} in a group with the
// event label and the effective matcher, serialized through TOML to
// canonical JSON (keys sorted, compact, serde_json escaping) and hashed
// with SHA-256: codex-rs/config version_for_toml).
func codexTrustEntries(hooksFile string) ([]codexTrustEntry, error) {
	data, err := os.ReadFile(hooksFile)
	if err != nil {
		return nil, err
	}
	src, err := filepath.EvalSymlinks(hooksFile)
	if err != nil {
		return nil, err
	}
	var file struct {
		Hooks map[string][]struct {
			Matcher *string          `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&file); err != nil {
		return nil, fmt.Errorf("%s: %v", hooksFile, err)
	}
	var events []string
	for ev := range file.Hooks {
		events = append(events, ev)
	}
	sort.Strings(events)
	var out []codexTrustEntry
	for _, ev := range events {
		lab, ok := codexEventLabels[ev]
		if !ok {
			continue
		}
		for gi, g := range file.Hooks[ev] {
			for hi, h := range g.Hooks {
				if h["type"] != "command" {
					continue
				}
				cmd, _ := h["command"].(string)
				timeout := int64(600)
				if n, ok := h["timeout"].(json.Number); ok {
					if v, err := n.Int64(); err == nil {
						timeout = max(v, 1)
					}
				}
				async, _ := h["async"].(bool)
				norm := map[string]any{"type": "command", "command": cmd, "timeout": timeout, "async": async}
				if sm, ok := h["statusMessage"].(string); ok {
					norm["statusMessage"] = sm
				}
				if n, ok := h["additionalContextLimit"].(json.Number); ok {
					v, _ := n.Int64()
					norm["additionalContextLimit"] = v
				}
				identity := map[string]any{"event_name": lab.label, "hooks": []any{norm}}
				if lab.matcher && g.Matcher != nil {
					identity["matcher"] = *g.Matcher
				}
				var b strings.Builder
				codexCanonicalJSON(&b, identity)
				sum := sha256.Sum256([]byte(b.String()))
				out = append(out, codexTrustEntry{
					Key:      fmt.Sprintf("%s:%s:%d:%d", src, lab.label, gi, hi),
					Hash:     "sha256:" + hex.EncodeToString(sum[:]),
					Identity: b.String(),
				})
			}
		}
	}
	return out, nil
}

// codexCanonicalJSON writes v the way serde_json::to_vec writes Codex's
// canonical value: objects with keys sorted bytewise, no spaces, strings
// escaping only '"', '\\' and control characters (\b \t \n \f \r, others
// \u00xx) — not '<', '>', '&', U+2028 or U+2029, which encoding/json
// would escape.
func codexCanonicalJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case string:
		b.WriteByte('"')
		for i := 0; i < len(x); i++ {
			c := x[i]
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\b':
				b.WriteString(`\b`)
			case '\t':
				b.WriteString(`\t`)
			case '\n':
				b.WriteString(`\n`)
			case '\f':
				b.WriteString(`\f`)
			case '\r':
				b.WriteString(`\r`)
			default:
				if c < 0x20 {
					fmt.Fprintf(b, `\u%04x`, c)
				} else {
					b.WriteByte(c)
				}
			}
		}
		b.WriteByte('"')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			codexCanonicalJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		ks := make([]string, 0, len(x))
		for k := range x {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		b.WriteByte('{')
		for i, k := range ks {
			if i > 0 {
				b.WriteByte(',')
			}
			codexCanonicalJSON(b, k)
			b.WriteByte(':')
			codexCanonicalJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("codexCanonicalJSON: %T", v))
	}
}

// codexTOMLKey quotes s as a TOML basic-string key.
// codexConfigDoc decodes a config.toml text with the TOML library (as
// Codex reads it, not as the code under test writes it).
func codexConfigDoc(t *testing.T, text string) map[string]any {
	t.Helper()
	doc := map[string]any{}
	if err := toml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("config.toml does not decode: %v\n%s", err, text)
	}
	return doc
}

// tomlAt is the value at path in a decoded document, nil when absent.
func tomlAt(doc map[string]any, path ...string) any {
	var v any = doc
	for _, k := range path {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func codexTOMLKey(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
