//go:build linux

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestHarnessPi drives the real Pi coding agent (the version
// scripts/install-harnesses pins) in print mode, on the host, against the
// fake Anthropic Messages API on loopback (a custom provider in
// models.json), with hookgate's extension installed by `hookgate install
// --harness pi`, as a user would, into a throwaway home. Pi has no
// permission prompts: the extension's tool_call handler is the only thing
// between the model and the tool. Each case checks the host (a marker file
// the tool would create) and the tool result Pi sent back to the model.
//
// Subtests under failclosed/ break hookgate (missing, not executable,
// crashing, killed, hanging past the extension's TIMEOUT_MS, answering
// garbage) after installing it: each must still end in a deny that Pi
// honoured.
func TestHarnessPi(t *testing.T) {
	pi := piCLI(t)

	shellPolicy := "version: 1\nharness: pi\n" +
		"bounds:\n  no-push: {bash: {denyPrograms: [\"git:push\"]}}\n" +
		"session: {bounds: [no-push]}\n"
	const pushReason = `hookgate: shell command runs git push, denied by bash.denyPrograms "git:push"`
	filesPolicy := func(b *piBox) string {
		return "version: 1\nharness: pi\nsession:\n  bound:\n    files:\n      deny: [\"" + filepath.Join(b.proj, "forbidden*") + "\"]\n"
	}
	bash := func(cmd string) fakemodel.ToolCall {
		return fakemodel.ToolCall{Name: "bash", Input: map[string]any{"command": cmd}}
	}

	t.Run("shell/denied", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "bash", pushReason)
		piRequireAbsent(t, marker)
	})

	t.Run("shell/allowed", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		b.spy(t)
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && echo made-it")})
		r.requireRan(t, 0, "bash")
		if !strings.Contains(r.exchanges[0].Result, "made-it") {
			t.Errorf("bash result %q lacks the command's output", r.exchanges[0].Result)
		}
		b.requireGateSaw(t, "bash", map[string]any{"command": "touch " + marker + " && echo made-it"})
		piRequirePresent(t, marker)
		checkInventory(t, "pi", r.tools)
	})

	t.Run("files/write-denied", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "user", b.writePolicy(t, filesPolicy(b)))
		b.spy(t)
		existing := filepath.Join(b.proj, "forbidden-existing.txt")
		piWriteFile(t, existing, "original\n")
		created := filepath.Join(b.proj, "forbidden-new.txt")
		allowed := filepath.Join(b.proj, "allowed.txt")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "write", Input: map[string]any{"path": created, "content": "written\n"}},
			{Name: "edit", Input: map[string]any{"path": existing, "edits": []any{map[string]any{"oldText": "original", "newText": "edited"}}}},
			// Relative to the working directory, as Pi resolves it.
			{Name: "write", Input: map[string]any{"path": "forbidden-relative.txt", "content": "written\n"}},
			{Name: "write", Input: map[string]any{"path": allowed, "content": "written\n"}},
		})
		reason := `matches files.deny "` + filepath.Join(b.proj, "forbidden*") + `"`
		r.requireDenied(t, 0, "write", "hookgate: file denied: "+created+" "+reason)
		r.requireDenied(t, 1, "edit", "hookgate: file denied: "+existing+" "+reason)
		r.requireDenied(t, 2, "write", reason)
		r.requireRan(t, 3, "write")
		b.requireGateSaw(t, "write", map[string]any{"path": allowed, "content": "written\n"})
		piRequireAbsent(t, created)
		piRequireAbsent(t, filepath.Join(b.proj, "forbidden-relative.txt"))
		if got, _ := os.ReadFile(existing); string(got) != "original\n" {
			t.Errorf("%s now holds %q: the denied edit ran", existing, got)
		}
		piRequirePresent(t, allowed)
	})

	// Pi's file tools strip a leading "@" from a path (path-utils.js
	// normalizeAtPrefix: models copy @file mentions) and turn Unicode
	// spaces into plain ones before resolving it: a write hookgate rules on
	// the raw string must still be denied where Pi writes.
	t.Run("files/write-denied-pi-path-forms", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		secret := filepath.Join(b.proj, "my secrets")
		if err := os.MkdirAll(secret, 0o755); err != nil {
			t.Fatal(err)
		}
		b.install(t, "user", b.writePolicy(t, "version: 1\nharness: pi\nsession:\n  bound:\n    files:\n      deny: [\""+
			filepath.Join(b.proj, "forbidden*")+"\", \""+filepath.Join(secret, "*")+"\"]\n"))
		atPath := filepath.Join(b.proj, "forbidden-at.txt")
		nbspPath := filepath.Join(secret, "nbsp.txt")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "write", Input: map[string]any{"path": "@" + atPath, "content": "written\n"}},
			{Name: "write", Input: map[string]any{"path": strings.Replace(nbspPath, "my secrets", "my\u00a0secrets", 1), "content": "written\n"}},
		})
		r.requireDenied(t, 0, "write", "hookgate")
		r.requireDenied(t, 1, "write", "hookgate")
		piRequireAbsent(t, atPath)
		piRequireAbsent(t, nbspPath)
	})

	t.Run("native/read", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "user", b.writePolicy(t, filesPolicy(b)))
		b.spy(t)
		readme := filepath.Join(b.proj, "readme.txt")
		piWriteFile(t, readme, "hello from the readme\n")
		piWriteFile(t, filepath.Join(b.proj, "forbidden-secret.txt"), "the secret\n")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "read", Input: map[string]any{"path": readme}},
			{Name: "read", Input: map[string]any{"path": filepath.Join(b.proj, "forbidden-secret.txt")}},
		})
		r.requireRan(t, 0, "read")
		b.requireGateSaw(t, "read", map[string]any{"path": readme})
		if !strings.Contains(r.exchanges[0].Result, "hello from the readme") {
			t.Errorf("read result %q lacks the file's text", r.exchanges[0].Result)
		}
		r.requireDenied(t, 1, "read", "hookgate: file denied: "+filepath.Join(b.proj, "forbidden-secret.txt"))
		if strings.Contains(r.exchanges[1].Result, "the secret") {
			t.Errorf("denied read result %q carries the file's text", r.exchanges[1].Result)
		}
	})

	// Pi 0.73.1's default tool set is read, bash, edit and write; grep,
	// find and ls are built in and --tools turns them on.
	t.Run("native/grep+find+ls", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		b.spy(t)
		piWriteFile(t, filepath.Join(b.proj, "readme.txt"), "hello from the readme\n")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "grep", Input: map[string]any{"pattern": "hello", "path": b.proj}},
			{Name: "find", Input: map[string]any{"pattern": "*.txt", "path": b.proj}},
			{Name: "ls", Input: map[string]any{"path": b.proj}},
		}, "--tools", "read,bash,edit,write,grep,find,ls")
		for i, name := range []string{"grep", "find", "ls"} {
			// grep and find run rg and fd, from PATH or ~/.pi/agent/bin;
			// offline, Pi does not download them, and the allowed call
			// fails in the tool.
			if e := r.exchange(t, i, name); strings.Contains(e.Result, "is not available and could not be downloaded") {
				t.Logf("note: %s ran but its helper is missing here: %q", name, e.Result)
				continue
			}
			r.requireRan(t, i, name)
			if !strings.Contains(r.exchanges[i].Result, "readme.txt") {
				t.Errorf("%s result %q does not list readme.txt", name, r.exchanges[i].Result)
			}
		}
		for _, name := range []string{"grep", "find", "ls"} {
			b.requireGateSaw(t, name, nil)
		}
		checkInventory(t, "pi", r.tools)
	})

	// A search tool whose root holds denied paths is denied (no deny
	// pattern may reach below a search root), before rg or fd run.
	t.Run("native/search-denied", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "user", b.writePolicy(t, filesPolicy(b)))
		piWriteFile(t, filepath.Join(b.proj, "forbidden-secret.txt"), "the secret\n")
		r := b.run(t, []fakemodel.ToolCall{
			{Name: "grep", Input: map[string]any{"pattern": "secret", "path": b.proj}},
			{Name: "find", Input: map[string]any{"pattern": "*.txt", "path": b.proj}},
			{Name: "ls", Input: map[string]any{"path": b.proj}},
			{Name: "grep", Input: map[string]any{"pattern": "secret"}},
		}, "--tools", "read,bash,edit,write,grep,find,ls")
		for i, name := range []string{"grep", "find", "ls", "grep"} {
			r.requireDenied(t, i, name, "hookgate: ")
			if i < len(r.exchanges) && strings.Contains(r.exchanges[i].Result, "forbidden-secret") {
				t.Errorf("denied %s result %q lists the denied file", name, r.exchanges[i].Result)
			}
		}
	})

	t.Run("policy/missing-file", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		missing := filepath.Join(b.root, "policy", "does-not-exist.yaml")
		b.install(t, "user", missing)
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker)})
		r.requireDenied(t, 0, "bash", "hookgate: no policy: "+missing)
		piRequireAbsent(t, marker)
	})

	// Each breaks the installed hookgate binary after install; an allowed
	// command must then be denied.
	for _, c := range []struct {
		name     string
		breakBin func(t *testing.T, bin string)
		// want is a part of the reason the extension gives.
		want string
	}{
		{"missing-binary", func(t *testing.T, bin string) { piRemove(t, bin) }, "hookgate: no ruling (spawnSync "},
		{"not-executable", func(t *testing.T, bin string) {
			if err := os.Chmod(bin, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "hookgate: no ruling (spawnSync "},
		// The stand-ins read the payload first, as hookgate does, so the
		// extension's write does not race their exit (EPIPE).
		{"crash-exit-1", func(t *testing.T, bin string) { piReplaceBin(t, bin, "cat >/dev/null; echo crashed >&2; exit 1") }, "hookgate: no ruling (crashed); denied"},
		{"exit-1-with-allow", func(t *testing.T, bin string) {
			piReplaceBin(t, bin, `cat >/dev/null; echo '{"block":false}'; exit 1`)
		}, "hookgate: no ruling (exit 1); denied"},
		{"exit-2-with-allow", func(t *testing.T, bin string) {
			piReplaceBin(t, bin, `cat >/dev/null; echo '{"block":false}'; exit 2`)
		}, "hookgate: no ruling (exit 2); denied"},
		{"exit-without-reading", func(t *testing.T, bin string) { piReplaceBin(t, bin, "exit 0") }, "hookgate: "},
		{"killed-by-signal", func(t *testing.T, bin string) { piReplaceBin(t, bin, "cat >/dev/null; kill -9 $$") }, "hookgate: no ruling (killed by SIGKILL); denied"},
		// hang's sleep is a child of the shell (spawnSync's SIGTERM goes to
		// the shell alone); hang-exec's replaces it.
		{"hang", func(t *testing.T, bin string) { piReplaceBin(t, bin, "sleep 600") }, "hookgate: no ruling (spawnSync " + "%BIN% ETIMEDOUT); denied"},
		{"hang-exec", func(t *testing.T, bin string) { piReplaceBin(t, bin, "exec sleep 600") }, "hookgate: no ruling (spawnSync %BIN% ETIMEDOUT); denied"},
		// A hookgate that does not die on SIGTERM (stuck in the kernel, or
		// a wrapper that ignores it): spawnSync's timeout only sends
		// SIGTERM (its default killSignal) and then waits for the exit,
		// with Node's event loop blocked, so TIMEOUT_MS must not be the
		// end of the wait for the extension to bound it.
		{"hang-ignoring-sigterm", func(t *testing.T, bin string) {
			piReplaceBin(t, bin, "trap '' TERM; cat >/dev/null; while :; do sleep 1; done")
		}, "hookgate: no ruling ("},
		{"garbage", func(t *testing.T, bin string) { piReplaceBin(t, bin, "cat >/dev/null; echo not-json") }, "hookgate: unreadable answer; denied"},
		{"garbage-braces", func(t *testing.T, bin string) { piReplaceBin(t, bin, "cat >/dev/null; echo '{not json}'") }, "hookgate: unreadable answer; denied"},
		{"empty", func(t *testing.T, bin string) { piReplaceBin(t, bin, "cat >/dev/null; exit 0") }, "hookgate: unreadable answer; denied"},
		{"schema-invalid", func(t *testing.T, bin string) { piReplaceBin(t, bin, `cat >/dev/null; echo '{"block":"no"}'`) }, "hookgate: denied"},
		{"null", func(t *testing.T, bin string) { piReplaceBin(t, bin, "cat >/dev/null; echo null") }, "hookgate: denied"},
		{"allow-then-garbage", func(t *testing.T, bin string) {
			piReplaceBin(t, bin, `cat >/dev/null; echo '{"block":false}'; echo trailing`)
		}, "hookgate: unreadable answer; denied"},
	} {
		t.Run("failclosed/"+c.name, func(t *testing.T) {
			t.Parallel()
			b := newPiBox(t, pi)
			if strings.HasPrefix(c.name, "hang") {
				b.runTimeout = 3 * piTimeout
			}
			b.install(t, "user", b.writePolicy(t, shellPolicy))
			c.breakBin(t, b.hookgate)
			marker := filepath.Join(b.proj, "MARKER")
			r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker)})
			r.requireDenied(t, 0, "bash", strings.ReplaceAll(c.want, "%BIN%", b.hookgate))
			piRequireAbsent(t, marker)
			if strings.HasPrefix(c.name, "hang") && r.elapsed < piTimeout {
				t.Errorf("a hanging hookgate was given up on after %v, before the extension's TIMEOUT_MS (%v)", r.elapsed, piTimeout)
			}
		})
	}

	// Pi has no notion of trusted projects: it loads .pi/extensions from
	// the working directory unconditionally (package-manager.js
	// projectBaseDir = cwd/.pi), so a project install gates without any
	// trust step.
	t.Run("scope/project", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.install(t, "project", b.writePolicy(t, shellPolicy))
		if _, err := os.Stat(filepath.Join(b.proj, ".pi", "extensions", "hookgate.ts")); err != nil {
			t.Fatalf("project scope wrote no project extension: %v", err)
		}
		if _, err := os.Stat(filepath.Join(b.home, ".pi", "agent", "extensions", "hookgate.ts")); err == nil {
			t.Fatalf("project scope also wrote the user extension")
		}
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "bash", pushReason)
		piRequireAbsent(t, marker)
	})

	// Both scopes installed: Pi loads both extensions and the first block
	// wins; a deny from either is honoured.
	t.Run("scope/user+project", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		p := b.writePolicy(t, shellPolicy)
		b.install(t, "user", p)
		b.install(t, "project", p)
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "bash", pushReason)
		piRequireAbsent(t, marker)
	})

	// A user who keeps Pi's configuration elsewhere (PI_CODING_AGENT_DIR)
	// installs with that variable set, as Pi itself sees it.
	t.Run("scope/PI_CODING_AGENT_DIR", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		b.agentDir = filepath.Join(b.root, "pi-agent")
		b.extraEnv = []string{"PI_CODING_AGENT_DIR=" + b.agentDir}
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		b.verify(t, "user")
		marker := filepath.Join(b.proj, "MARKER")
		r := b.run(t, []fakemodel.ToolCall{bash("touch " + marker + " && git push origin main")})
		r.requireDenied(t, 0, "bash", pushReason)
		piRequireAbsent(t, marker)
	})

	// Pi's discovery takes a directory holding index.ts (or a package.json
	// with a "pi" manifest) as one extension and loads nothing else from
	// it (package-manager.js collectAutoExtensionEntries ->
	// resolveExtensionEntries): a user who keeps an index.ts in
	// ~/.pi/agent/extensions hides hookgate.ts beside it.
	t.Run("scope/user-with-index.ts", func(t *testing.T) {
		t.Parallel()
		b := newPiBox(t, pi)
		// Pi loads only index.ts from a directory that has one: an install
		// beside it would be skipped, so install refuses, and verify fails
		// for one made before the index.ts appeared.
		piWriteFile(t, filepath.Join(b.home, ".pi", "agent", "extensions", "index.ts"), "export default function () {}\n")
		out, err := b.hookgateCmd("install", "--harness", "pi", "--policy", b.writePolicy(t, shellPolicy))
		if err == nil || !strings.Contains(out, "index.ts") {
			t.Fatalf("install beside an index.ts: %v %s", err, out)
		}
		os.Remove(filepath.Join(b.home, ".pi", "agent", "extensions", "index.ts"))
		b.install(t, "user", b.writePolicy(t, shellPolicy))
		piWriteFile(t, filepath.Join(b.home, ".pi", "agent", "extensions", "index.ts"), "export default function () {}\n")
		if out, err := b.hookgateCmd("verify", "--harness", "pi"); err == nil || !strings.Contains(out, "index.ts") {
			t.Errorf("verify with an index.ts beside hookgate.ts: %v %s", err, out)
		}
	})
}

// piVersion is the Pi release scripts/install-harnesses pins.
const piVersion = "0.73.1"

// piTimeout is the extension's TIMEOUT_MS (hooks/pi/hookgate.ts).
const piTimeout = 10 * time.Second

// piRunTimeout bounds one Pi run (a hanging hookgate takes the
// extension's 10 s).
const piRunTimeout = 90 * time.Second

// piFakeProvider and piFakeModel name the models.json provider that
// points Pi at the fake Anthropic API.
const (
	piFakeProvider = "fakemodel"
	piFakeModel    = "claude-fake"
)

// piCLI returns the pinned Pi binary under $BARRY_HARNESSES (default
// /opt/barry-harnesses), or skips (fails under CI) without it.
func piCLI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BARRY_HARNESSES")
	if dir == "" {
		dir = "/opt/barry-harnesses"
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "pi")
	if _, err := os.Stat(bin); err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("Pi is not installed (run scripts/install-harnesses): %v", err))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "PI_OFFLINE=1"}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != piVersion {
		t.Fatalf("%s --version: %q, %v: want %s (run scripts/install-harnesses)", bin, out, err, piVersion)
	}
	return bin
}

// piBox is one throwaway user: a home, a project directory (the working
// directory) and a copy of hookgate that install points the extension at,
// so a case can break it.
type piBox struct {
	pi       string
	root     string
	home     string
	proj     string
	hookgate string
	// agentDir is Pi's configuration directory (~/.pi/agent unless
	// PI_CODING_AGENT_DIR says otherwise): models.json goes there.
	agentDir string
	// spyLog, once spy ran, is where the stand-in logs each call.
	spyLog string
	// extraEnv is added to both hookgate install's and Pi's environment.
	extraEnv []string
	// runTimeout, when set, bounds a Pi run instead of piRunTimeout.
	runTimeout time.Duration
}

func newPiBox(t *testing.T, pi string) *piBox {
	t.Helper()
	root := t.TempDir()
	b := &piBox{pi: pi, root: root, home: filepath.Join(root, "home"), proj: filepath.Join(root, "proj"),
		hookgate: filepath.Join(root, "bin", "hookgate")}
	b.agentDir = filepath.Join(b.home, ".pi", "agent")
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

// env is a clean environment: nothing of the host's Pi, model vendor or
// Barry settings leaks in.
func (b *piBox) env(extra ...string) []string {
	user := os.Getenv("USER")
	if user == "" {
		user = "barry"
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.home, "USER=" + user, "LANG=C.UTF-8"}
	env = append(env, b.extraEnv...)
	return append(env, extra...)
}

func (b *piBox) writePolicy(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(b.root, "policy", "session.yaml")
	piWriteFile(t, p, yaml)
	return p
}

// install runs `hookgate install --harness pi --policy FILE` (and --scope
// project, from the project directory) the way a user would.
func (b *piBox) install(t *testing.T, scope, policy string) {
	t.Helper()
	args := []string{"install", "--harness", "pi", "--policy", policy}
	if scope == "project" {
		args = append(args, "--scope", "project")
	}
	out, err := b.hookgateCmd(args...)
	if err != nil || !strings.Contains(out, "hookgate installed") {
		t.Fatalf("hookgate %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("hookgate %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

// verify runs `hookgate verify --harness pi` and logs its verdict.
func (b *piBox) verify(t *testing.T, scope string) {
	t.Helper()
	out, err := b.hookgateCmd("verify", "--harness", "pi", "--scope", scope)
	t.Logf("hookgate verify --harness pi --scope %s: %v: %s", scope, err, strings.TrimSpace(out))
}

func (b *piBox) hookgateCmd(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := combinedOutputOfCopy(func() *exec.Cmd {
		cmd := exec.CommandContext(ctx, b.hookgate, args...)
		cmd.Dir = b.proj
		cmd.Env = b.env()
		return cmd
	})
	return string(out), err
}

// spy puts a shell stand-in where the installed hookgate is: it logs each
// payload, answer and exit status to spyLog and passes them through, so a
// case can show that a call ran because hookgate allowed it, not because
// no extension fired.
func (b *piBox) spy(t *testing.T) {
	t.Helper()
	real := b.hookgate + ".real"
	if err := os.Rename(b.hookgate, real); err != nil {
		t.Fatal(err)
	}
	b.spyLog = filepath.Join(b.root, "hookgate-calls.jsonl")
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	piReplaceBin(t, b.hookgate, "in=$(cat)\n"+
		"out=$(printf '%s' \"$in\" | "+q(real)+" \"$@\")\nrc=$?\n"+
		"printf '{\"payload\":%s,\"answer\":%s,\"exit\":%d}\\n' \"$in\" \"${out:-null}\" \"$rc\" >>"+q(b.spyLog)+"\n"+
		"printf '%s\\n' \"$out\"\nexit $rc")
}

// piSpyCall is one line of spyLog.
type piSpyCall struct {
	Payload struct {
		HookEventName string         `json:"hook_event_name"`
		ToolName      string         `json:"tool_name"`
		ToolCallID    string         `json:"tool_call_id"`
		ToolInput     map[string]any `json:"tool_input"`
		Cwd           string         `json:"cwd"`
	} `json:"payload"`
	Answer *struct {
		Block  bool   `json:"block"`
		Reason string `json:"reason"`
	} `json:"answer"`
	Exit int `json:"exit"`
}

// requireGateSaw checks in spyLog that hookgate was run for a call of
// tool (with input, when not nil: those keys and values), from the project
// directory, and allowed it (exit 0, {"block":false}).
func (b *piBox) requireGateSaw(t *testing.T, tool string, input map[string]any) {
	t.Helper()
	data, err := os.ReadFile(b.spyLog)
	if err != nil {
		t.Errorf("no hookgate call logged: %v", err)
		return
	}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var c piSpyCall
		if err := json.Unmarshal([]byte(l), &c); err != nil {
			t.Errorf("spy log line %q: %v", l, err)
			continue
		}
		if c.Payload.ToolName != tool {
			continue
		}
		match := true
		for k, v := range input {
			if fmt.Sprint(c.Payload.ToolInput[k]) != fmt.Sprint(v) {
				match = false
			}
		}
		if !match {
			continue
		}
		if c.Payload.HookEventName != "tool_call" || c.Payload.ToolCallID == "" || c.Payload.Cwd != b.proj {
			t.Errorf("hookgate payload for %s: %+v: want event tool_call, a tool_call_id and cwd %s", tool, c.Payload, b.proj)
		}
		if c.Exit != 0 || c.Answer == nil || c.Answer.Block {
			t.Errorf("hookgate answered %s with exit %d %+v: want exit 0 {\"block\":false}", tool, c.Exit, c.Answer)
		}
		return
	}
	t.Errorf("no hookgate call for %s %v in %s:\n%s", tool, input, b.spyLog, data)
}

// piResult is one Pi run.
type piResult struct {
	code      int
	stdout    string
	stderr    string
	elapsed   time.Duration
	exchanges []fakemodel.AnthropicExchange
	tools     []string
	// received is every request the fake model got (fakemodel.Received).
	received []string
}

// run starts a fake Anthropic API that asks for calls, one per turn,
// declares it in models.json as a custom provider, and runs Pi in print
// mode against it from the project directory, without a session file,
// offline, within piRunTimeout.
func (b *piBox) run(t *testing.T, calls []fakemodel.ToolCall, args ...string) piResult {
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
	models, _ := json.Marshal(map[string]any{"providers": map[string]any{piFakeProvider: map[string]any{
		"baseUrl": srv.URL, "api": "anthropic-messages", "apiKey": "fakemodel-key",
		"models": []any{map[string]any{"id": piFakeModel, "reasoning": false}},
	}}})
	if err := os.MkdirAll(b.agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	piWriteFile(t, filepath.Join(b.agentDir, "models.json"), string(models))

	argv := append([]string{"-p", "Run the tool calls you are given.", "--provider", piFakeProvider,
		"--model", piFakeModel, "--no-session", "--offline"}, args...)
	limit := piRunTimeout
	if b.runTimeout > 0 {
		limit = b.runTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, b.pi, argv...)
	cmd.Dir = b.proj
	cmd.Env = b.env("PI_OFFLINE=1", "PI_SKIP_VERSION_CHECK=1", "PI_TELEMETRY=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	startAt := time.Now()
	err = cmd.Run()
	r := piResult{code: exitCode(err), stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(startAt)}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	killHomeLeftovers(t, b.home, "pi")

	reqs := srv.Requests()
	r.exchanges = fakemodel.AnthropicTranscript(reqs)
	r.tools = fakemodel.AnthropicToolNames(reqs)
	r.received = srv.Received()
	t.Logf("pi %s: exit %d in %v, %d model requests; tools offered: %s",
		strings.Join(args, " "), r.code, r.elapsed.Round(time.Millisecond), len(reqs), strings.Join(r.tools, " "))
	for i, e := range r.exchanges {
		t.Logf("  call %d %s %s -> is_error=%v answered=%v: %q", i, e.Name, e.Input, e.IsError, e.Answered, e.Result)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pi stdout: %q\nstderr: %q", r.stdout, r.stderr)
			if b.spyLog != "" {
				data, _ := os.ReadFile(b.spyLog)
				t.Logf("hookgate calls:\n%s", data)
			}
		}
	})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("pi did not finish within %v", limit)
	}
	if r.code != 0 {
		t.Fatalf("pi exit %d (%v)\nstdout %q\nstderr %q", r.code, err, r.stdout, r.stderr)
	}
	if len(reqs) == 0 {
		t.Fatalf("pi sent the fake model no request")
	}
	return r
}

// exchange returns call i, which must be a call of name that Pi answered.
func (r piResult) exchange(t *testing.T, i int, name string) fakemodel.AnthropicExchange {
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

// requireDenied checks that call i was blocked and that the tool result
// Pi sent back carries want (the reason).
func (r piResult) requireDenied(t *testing.T, i int, name, want string) {
	t.Helper()
	e := r.exchange(t, i, name)
	if !e.IsError || !strings.Contains(e.Result, want) {
		t.Errorf("%s call %d: tool result is_error=%v %q: want a deny carrying %q", name, i, e.IsError, e.Result, want)
	}
}

// requireRan checks that call i ran: a tool result that is not an error.
func (r piResult) requireRan(t *testing.T, i int, name string) {
	t.Helper()
	e := r.exchange(t, i, name)
	if e.IsError {
		t.Errorf("%s call %d: tool result is an error: %q", name, i, e.Result)
	}
}

func piRequireAbsent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v): the denied tool ran", path, err)
	}
}

func piRequirePresent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("%s: %v: the allowed tool did not run", path, err)
	}
}

func piWriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func piRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// piReplaceBin puts a shell script with body where the hookgate binary was
// (written beside it and renamed over it, as an upgrade would).
func piReplaceBin(t *testing.T, bin, body string) {
	t.Helper()
	tmp := bin + ".new"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
}
