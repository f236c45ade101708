//go:build linux

package integration

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestHarnessClaude drives the real Claude Code CLI (the version
// scripts/install-harnesses pins) in print mode, on the host, against a
// fake Anthropic Messages API on loopback that asks for tool calls, with
// hookgate installed as its PreToolUse hook by `hookgate install`, as a
// user would, into a throwaway home. Permission prompts are bypassed, so
// the hook is the only thing between the model and the tool. Each case
// checks the host (a marker file the tool would create) and the
// tool_result Claude Code sent back to the model.
//
// Subtests under failclosed/ break hookgate (missing, not executable,
// crashing, killed, hanging, answering garbage) after installing it: each
// must still end in a deny that Claude Code honoured.
func TestHarnessClaude(t *testing.T) {
	claude := claudeCLI(t)

	shellPolicy := "version: 1\nharness: claude-code\n" +
		"bounds:\n  no-push: {bash: {denyPrograms: [\"git:push\"]}}\n" +
		"session: {bounds: [no-push]}\n"
	const pushReason = `hookgate: shell command runs git push, denied by bash.denyPrograms "git:push"`

	// bash runs a shell command through Claude Code's Bash tool.
	bash := func(cmd string) fakemodel.ToolCall {
		return fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "fakemodel"}}
	}

	t.Run("shell/denied", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "Bash", pushReason)
		claudeRequireAbsent(t, marker)
	})

	t.Run("shell/allowed", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker)})
		r.requireRan(t, 0, "Bash")
		r.requireGateSaw(t, "Bash")
		claudeRequirePresent(t, marker)
	})

	t.Run("files/write-denied", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, "version: 1\nharness: claude-code\n"+
			"session:\n  bound:\n    files:\n      deny: [\""+filepath.Join(b.proj, "forbidden*")+"\"]\n"))
		existing := filepath.Join(b.proj, "forbidden-existing.txt")
		claudeWriteFile(t, existing, "original\n")
		created := filepath.Join(b.proj, "forbidden-new.txt")
		allowed := filepath.Join(b.proj, "allowed.txt")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "Write", Input: map[string]any{"file_path": created, "content": "written\n"}},
			{Name: "Edit", Input: map[string]any{"file_path": existing, "old_string": "original", "new_string": "edited"}},
			{Name: "Write", Input: map[string]any{"file_path": allowed, "content": "written\n"}},
		})
		reason := `matches files.deny "` + filepath.Join(b.proj, "forbidden*") + `"`
		r.requireDenied(t, 0, "Write", "hookgate: file denied: "+created+" "+reason)
		r.requireDenied(t, 1, "Edit", "hookgate: file denied: "+existing+" "+reason)
		r.requireRan(t, 2, "Write")
		claudeRequireAbsent(t, created)
		if got, _ := os.ReadFile(existing); string(got) != "original\n" {
			t.Errorf("%s now holds %q: the denied Edit ran", existing, got)
		}
		claudeRequirePresent(t, allowed)
	})

	t.Run("native/Read", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		readme := filepath.Join(b.proj, "readme.txt")
		claudeWriteFile(t, readme, "hello from the readme\n")
		r := b.run(t, []fakemodel.ToolCall{{Name: "Read", Input: map[string]any{"file_path": readme}}})
		r.requireRan(t, 0, "Read")
		r.requireGateSaw(t, "Read")
		if !strings.Contains(r.exchanges[0].Result, "hello from the readme") {
			t.Errorf("Read result %q lacks the file's text", r.exchanges[0].Result)
		}
		// Claude Code 2.1.332's default tool set has no Glob or Grep (the
		// system prompt sends the model to find and grep via Bash); they
		// are still built in and --tools turns them on (native/Glob+Grep).
		for _, name := range []string{"Glob", "Grep"} {
			if slices.Contains(r.tools, name) {
				t.Logf("note: the default tool set now offers %s", name)
			}
		}
		checkInventory(t, "claude-code", r.tools)
	})

	t.Run("native/Glob+Grep", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		claudeWriteFile(t, filepath.Join(b.proj, "readme.txt"), "hello from the readme\n")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "Glob", Input: map[string]any{"pattern": "*.txt", "path": b.proj}},
			{Name: "Grep", Input: map[string]any{"pattern": "hello", "path": b.proj}},
		}, "--tools", "Bash,Read,Write,Edit,Glob,Grep")
		r.requireRan(t, 0, "Glob")
		r.requireRan(t, 1, "Grep")
		r.requireGateSaw(t, "Glob")
		r.requireGateSaw(t, "Grep")
		for i := range 2 {
			if !strings.Contains(r.exchanges[i].Result, "readme.txt") {
				t.Errorf("%s result %q does not list readme.txt", r.exchanges[i].Name, r.exchanges[i].Result)
			}
		}
	})

	// Hooks only, a Grep over a project that holds denied files is not
	// refused: hookgate rewrites it (updatedInput) to leave them out, and
	// what Claude Code then runs lists the other files and none of theirs:
	// not a .env at the top or below, not a directory named .env, not a
	// symbolic link to a .env under another name, not with a glob of the
	// call's own that names them.
	t.Run("native/Grep-rewrite", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, "version: 1\nharness: claude-code\n"+
			"session:\n  bound:\n    files:\n      deny: [\"**/.env\"]\n"))
		const secret = "needle-7c1e-secretvalue"
		claudeWriteFile(t, filepath.Join(b.proj, "notes.txt"), "needle-7c1e in the notes\n")
		claudeWriteFile(t, filepath.Join(b.proj, "sub", "main.go"), "// needle-7c1e in the code\n")
		for _, f := range []string{".env", "sub/.env", "deep/.env/inner.txt"} {
			claudeWriteFile(t, filepath.Join(b.proj, f), "TOKEN="+secret+"\n")
		}
		if err := os.Symlink(".env", filepath.Join(b.proj, "link.txt")); err != nil {
			t.Fatal(err)
		}
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "Grep", Input: map[string]any{"pattern": "needle-7c1e", "path": b.proj, "output_mode": "content"}},
			{Name: "Grep", Input: map[string]any{"pattern": "needle-7c1e", "path": b.proj, "glob": "**/.env,*.txt", "output_mode": "files_with_matches"}},
		}, "--tools", "Bash,Read,Write,Edit,Glob,Grep")
		r.requireRan(t, 0, "Grep")
		r.requireRan(t, 1, "Grep")
		r.requireGateSaw(t, "Grep")
		for i, want := range [][]string{{"in the notes", "in the code"}, {"notes.txt"}} {
			res := r.exchanges[i].Result
			for _, w := range want {
				if !strings.Contains(res, w) {
					t.Errorf("Grep %d result %q lacks %q: the rewritten search left out an allowed file", i, res, w)
				}
			}
			if strings.Contains(res, ".env") || strings.Contains(res, "link.txt") {
				t.Errorf("Grep %d result %q lists a denied file", i, res)
			}
		}
		for i, body := range r.received {
			if strings.Contains(body, secret) {
				t.Errorf("request %d to the model carries the .env value", i)
			}
		}
	})

	// A non-file native tool the policy allows. The pinned Claude Code
	// disables TodoWrite in print mode and refuses the call itself ("No such
	// tool available", an error result: nothing ran); a version that offers
	// it must run it. ToolSearch (below) is the non-file tool that runs.
	t.Run("native/TodoWrite", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		r := b.run(t, []fakemodel.ToolCall{{Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "check the gate", "status": "pending", "activeForm": "Checking the gate"}}}}})
		if e := r.exchange(t, 0, "TodoWrite"); strings.Contains(e.Result, "No such tool available") {
			if !e.IsError {
				t.Errorf("TodoWrite: %q is not an error result", e.Result)
			}
			t.Logf("Claude Code %s has no TodoWrite here and refused the call itself: %q", claudeVersion, e.Result)
			return
		}
		r.requireRan(t, 0, "TodoWrite")
	})

	// ToolSearch loads the schemas of 2.1.332's deferred tools (WebFetch,
	// WebSearch, NotebookEdit, Monitor, ...): it reads nothing and runs
	// nothing, the non-file tool of the default set.
	t.Run("native/ToolSearch", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		r := b.run(t, []fakemodel.ToolCall{{Name: "ToolSearch", Input: map[string]any{"query": "select:NotebookEdit", "max_results": 1}}})
		r.requireRan(t, 0, "ToolSearch")
	})

	t.Run("policy/missing-file", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		missing := filepath.Join(b.root, "policy", "does-not-exist.yaml")
		b.install(t, "user", missing)
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker)})
		r.requireDenied(t, 0, "Bash", "hookgate: no policy: "+missing)
		claudeRequireAbsent(t, marker)
	})

	// Each breaks the installed hookgate binary after install; an allowed
	// command must then be denied.
	for _, c := range []struct {
		name     string
		breakBin func(t *testing.T, bin string)
	}{
		{"missing-binary", func(t *testing.T, bin string) { claudeRemove(t, bin) }},
		{"not-executable", func(t *testing.T, bin string) {
			if err := os.Chmod(bin, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"crash-exit-1", func(t *testing.T, bin string) { claudeReplaceBin(t, bin, "exit 1") }},
		{"killed-by-signal", func(t *testing.T, bin string) { claudeReplaceBin(t, bin, "kill -9 $$") }},
		{"hang", func(t *testing.T, bin string) { claudeReplaceBin(t, bin, "sleep 600") }},
		{"garbage", func(t *testing.T, bin string) { claudeReplaceBin(t, bin, "echo not-json") }},
		// Output that looks like a JSON object to a shell pattern but is
		// not one, and a JSON object Claude Code's schema rejects: Claude
		// Code treats both as a non-blocking hook error.
		{"garbage-braces", func(t *testing.T, bin string) { claudeReplaceBin(t, bin, "echo '{not json}'") }},
		{"schema-invalid", func(t *testing.T, bin string) {
			claudeReplaceBin(t, bin, `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}'`)
		}},
	} {
		t.Run("failclosed/"+c.name, func(t *testing.T) {
			t.Parallel()
			b := newClaudeBox(t, claude)
			b.install(t, "user", b.writePolicy(t, shellPolicy))
			c.breakBin(t, b.hookgate)
			marker := filepath.Join(b.proj, "MARKER")
			r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker)})
			r.requireDenied(t, 0, "Bash", "hookgate")
			claudeRequireAbsent(t, marker)
		})
	}

	t.Run("scope/project", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.install(t, "project", b.writePolicy(t, shellPolicy))
		if _, err := os.Stat(filepath.Join(b.proj, ".claude", "settings.json")); err != nil {
			t.Fatalf("project scope wrote no project settings: %v", err)
		}
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "Bash", pushReason)
		claudeRequireAbsent(t, marker)
	})

	// A user who keeps Claude Code's configuration elsewhere
	// (CLAUDE_CONFIG_DIR) installs with that variable set, as Claude Code
	// itself sees it.
	t.Run("scope/CLAUDE_CONFIG_DIR", func(t *testing.T) {
		t.Parallel()
		b := newClaudeBox(t, claude)
		b.extraEnv = []string{"CLAUDE_CONFIG_DIR=" + filepath.Join(b.root, "claude-config")}
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "Bash", pushReason)
		claudeRequireAbsent(t, marker)
	})
}

// claudeVersion is the Claude Code release scripts/install-harnesses pins.
const claudeVersion = "2.1.332"

// claudeRunTimeout bounds one Claude Code run (a hanging hook takes the
// 9 s of hookgate's wrapper or the 10 s hook timeout).
const claudeRunTimeout = 90 * time.Second

// claudeCLI returns the pinned Claude Code binary under $BARRY_HARNESSES
// (default /opt/barry-harnesses), or skips (fails under CI) without it.
func claudeCLI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BARRY_HARNESSES")
	if dir == "" {
		dir = "/opt/barry-harnesses"
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("Claude Code is not installed (run scripts/install-harnesses): %v", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "DISABLE_AUTOUPDATER=1"}
	out, err := cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), claudeVersion+" ") {
		t.Fatalf("%s --version: %q, %v: want %s (run scripts/install-harnesses)", bin, out, err, claudeVersion)
	}
	return bin
}

// claudeBox is one throwaway user: a home, a project directory (the
// working directory) and a copy of hookgate that install points the hook
// at, so a case can break it.
type claudeBox struct {
	claude   string
	root     string
	home     string
	proj     string
	hookgate string
	// extraEnv is added to both hookgate install's and Claude Code's
	// environment.
	extraEnv []string
	// runTimeout, when set, bounds a Claude Code run instead of
	// claudeRunTimeout.
	runTimeout time.Duration
}

// harnessesDir is the npm prefix the harness CLIs are installed in:
// claude is DIR/node_modules/.bin/claude, a link into DIR.
func harnessesDir(claude string) string {
	return filepath.Dir(filepath.Dir(filepath.Dir(claude)))
}

func newClaudeBox(t *testing.T, claude string) *claudeBox {
	t.Helper()
	root := t.TempDir()
	b := &claudeBox{claude: claude, root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "proj"),
		hookgate: filepath.Join(root, "bin", "hookgate")}
	for _, d := range []string{b.home, b.proj, filepath.Dir(b.hookgate), filepath.Join(root, "policy")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(hookgateBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b.hookgate, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// env is a clean environment: nothing of the host's Claude Code, Anthropic
// or Barry settings leaks in.
func (b *claudeBox) env(extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.home, "USER=" + claudeUser(), "LANG=C.UTF-8"}
	env = append(env, b.extraEnv...)
	return append(env, extra...)
}

func claudeUser() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "barry"
}

func (b *claudeBox) writePolicy(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(b.root, "policy", "session.yaml")
	claudeWriteFile(t, p, yaml)
	return p
}

// install runs `hookgate install --harness claude-code --policy FILE` (and
// --scope project, from the project directory) the way a user would.
func (b *claudeBox) install(t *testing.T, scope, policy string) {
	t.Helper()
	args := []string{"install", "--harness", "claude-code", "--policy", policy}
	if scope == "project" {
		args = append(args, "--scope", "project")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.hookgate, args...)
	cmd.Dir = b.proj
	cmd.Env = b.env()
	out, err := combinedOutputOfCopy(func() *exec.Cmd { c := *cmd; return &c })
	if err != nil || !strings.Contains(string(out), "hookgate installed") {
		t.Fatalf("hookgate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("hookgate %s: %s", strings.Join(args, " "), strings.TrimSpace(string(out)))
}

// claudeResult is one Claude Code run.
type claudeResult struct {
	code      int
	stdout    string
	stderr    string
	elapsed   time.Duration
	exchanges []fakemodel.AnthropicExchange
	tools     []string
	debugLog  string
	// received is every request the fake model got (fakemodel.Received).
	received []string
}

// run starts a fake Anthropic API that asks for calls, one per turn, and
// runs Claude Code in print mode against it from the project directory,
// with permission prompts bypassed, within claudeRunTimeout.
func (b *claudeBox) run(t *testing.T, calls []fakemodel.ToolCall, args ...string) claudeResult {
	t.Helper()
	log := newTestLog(t)
	srv, err := fakemodel.AnthropicWith(calls, fakemodel.AnthropicOptions{Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		srv.Close()
		log.Stop()
	}()

	debugLog := filepath.Join(b.root, "claude-debug.txt")
	argv := append([]string{"-p", "Run the tool calls you are given.", "--dangerously-skip-permissions",
		"--no-session-persistence", "--debug-file", debugLog}, args...)
	limit := cmp.Or(b.runTimeout, claudeRunTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.claude, argv...)
	cmd.Dir = b.proj
	cmd.Env = b.env(
		"ANTHROPIC_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=test",
		// No auto-update, telemetry, error reports or other traffic than
		// the model API (the fake).
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		// --dangerously-skip-permissions refuses root unless told it runs
		// in a sandbox.
		"IS_SANDBOX=1",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	startAt := time.Now()
	err = cmd.Run()
	r := claudeResult{code: exitCode(err), stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(startAt), debugLog: debugLog}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	killHomeLeftovers(t, b.home, "claude")

	reqs := srv.Requests()
	r.exchanges = fakemodel.AnthropicTranscript(reqs)
	r.tools = fakemodel.AnthropicToolNames(reqs)
	r.received = srv.Received()
	t.Logf("claude %s: exit %d in %v, %d model requests; tools offered: %s",
		strings.Join(args, " "), r.code, r.elapsed.Round(time.Millisecond), len(reqs), strings.Join(r.tools, " "))
	for i, e := range r.exchanges {
		t.Logf("  call %d %s %s -> is_error=%v answered=%v: %q", i, e.Name, e.Input, e.IsError, e.Answered, e.Result)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claude stdout: %q\nstderr: %q\nhook lines of %s:\n%s", r.stdout, r.stderr, debugLog, r.hookLines())
		}
	})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("claude did not finish within %v", limit)
	}
	if r.code != 0 {
		t.Fatalf("claude exit %d (%v)\nstdout %q\nstderr %q", r.code, err, r.stdout, r.stderr)
	}
	if len(reqs) == 0 {
		t.Fatalf("claude sent the fake model no request")
	}
	return r
}

// hookLines returns the debug log's lines about PreToolUse hooks, shortened.
func (r claudeResult) hookLines() string {
	data, _ := os.ReadFile(r.debugLog)
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "PreToolUse") || strings.Contains(l, "Hook ") {
			if len(l) > 400 {
				l = l[:400] + "..."
			}
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// exchange returns call i, which must be a call of name that Claude Code
// answered.
func (r claudeResult) exchange(t *testing.T, i int, name string) fakemodel.AnthropicExchange {
	t.Helper()
	if i >= len(r.exchanges) {
		t.Fatalf("call %d (%s) never reached the model's history: %d calls", i, name, len(r.exchanges))
	}
	e := r.exchanges[i]
	if e.Name != name || !e.Answered {
		t.Fatalf("call %d: %s answered=%v, want an answered %s", i, e.Name, e.Answered, name)
	}
	return e
}

// requireDenied checks that call i was blocked and that the tool_result
// Claude Code sent back carries want (hookgate's reason).
func (r claudeResult) requireDenied(t *testing.T, i int, name, want string) {
	t.Helper()
	e := r.exchange(t, i, name)
	if !e.IsError || !strings.Contains(e.Result, want) {
		t.Errorf("%s call %d: tool_result is_error=%v %q: want a deny carrying %q", name, i, e.IsError, e.Result, want)
	}
}

// requireRan checks that call i ran: a tool_result that is not an error.
func (r claudeResult) requireRan(t *testing.T, i int, name string) {
	t.Helper()
	e := r.exchange(t, i, name)
	if e.IsError {
		t.Errorf("%s call %d: tool_result is an error: %q", name, i, e.Result)
	}
}

// requireGateSaw checks in Claude Code's debug log that the PreToolUse
// hook ran hookgate for a call of tool name and exited 0: the call ran
// because hookgate allowed it, not because no hook fired.
func (r claudeResult) requireGateSaw(t *testing.T, name string) {
	t.Helper()
	data, _ := os.ReadFile(r.debugLog)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Hooks: PreToolUse:"+name+" ") && strings.Contains(l, "hookgate") && strings.Contains(l, "finished with status 0") {
			return
		}
	}
	t.Errorf("no PreToolUse:%s hookgate run that finished with status 0 in %s", name, r.debugLog)
}

func claudeRequireAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): the denied tool ran", path, err)
	}
}

func claudeRequirePresent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("%s: %v: the allowed tool did not run", path, err)
	}
}

func claudeWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func claudeRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// replaceBin puts a shell script with body where the hookgate binary was
// (written beside it and renamed over it, as an upgrade would).
func claudeReplaceBin(t *testing.T, bin, body string) {
	t.Helper()
	tmp := bin + ".new"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
}
