package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
)

// runIn runs a hookgate binary in dir with HOME=home and nothing else but
// PATH, and a hard kill after 20 s.
func runIn(t *testing.T, binary, home, dir string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return runCmd(t, cmd, &stdout, &stderr)
}

// hookCommands reads a harness config file and returns, per event, the
// commands of its handlers in order (Cursor's flat definitions, or the
// handlers inside Claude-style matcher groups), and the Cursor entries'
// failClosed values.
func hookCommands(t *testing.T, path string) (map[string][]string, []bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Hooks map[string][]struct {
			Command    string `json:"command"`
			FailClosed *bool  `json:"failClosed"`
			Hooks      []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("%s is not JSON: %v\n%s", path, err, data)
	}
	cmds := map[string][]string{}
	var failClosed []bool
	for ev, list := range root.Hooks {
		for _, item := range list {
			if item.Command != "" {
				cmds[ev] = append(cmds[ev], item.Command)
				failClosed = append(failClosed, item.FailClosed != nil && *item.FailClosed)
			}
			for _, h := range item.Hooks {
				cmds[ev] = append(cmds[ev], h.Command)
			}
		}
	}
	return cmds, failClosed
}

// A user's Claude Code settings with a hook of their own, written the way
// install writes JSON (two-space indent) so uninstall must give back these
// very bytes.
const userClaudeSettings = `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "/opt/guard/bin/guard --strict"
          }
        ]
      }
    ]
  },
  "permissions": {
    "deny": [
      "Bash(git push *)"
    ]
  }
}
`

// TestInstallCommand runs the built hookgate install and uninstall with
// HOME in a temp dir: the entry runs this very binary by its absolute path
// with check --harness H (and --policy, made absolute, when given); a
// second install reports no change and leaves the file byte-identical;
// uninstall removes hookgate's entries and gives back the user's file.
func TestInstallCommand(t *testing.T) {
	realBin, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	// A copy in a directory with a space and with a platform suffix, and
	// a symlink: install names the file it resolves to (on Linux
	// os.Executable already resolves it; install's EvalSymlinks is for
	// macOS, where it does not).
	odd := filepath.Join(t.TempDir(), "my apps", "hookgate-linux-amd64")
	os.MkdirAll(filepath.Dir(odd), 0o755)
	if data, err := os.ReadFile(bin); err != nil || os.WriteFile(odd, data, 0o755) != nil {
		t.Fatal("copying hookgate:", err)
	}
	link := filepath.Join(t.TempDir(), "hookgate")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name     string
		binary   string
		harness  string
		scope    string // "" user; "project" with --project; "cwd" project scope without --project
		policy   string // relative to the working directory
		existing string // the config file before install ("" none)
		wantCmd  string // the command install writes, with BIN for the binary
		events   []string
	}{
		{"claude-code user", bin, "claude-code", "", "policies/session.yaml", userClaudeSettings,
			"BIN check --harness claude-code --policy WD/policies/session.yaml", []string{"PreToolUse", "PermissionRequest"}},
		{"claude-code project", bin, "claude-code", "project", "", "",
			"BIN check --harness claude-code", []string{"PreToolUse", "PermissionRequest"}},
		{"claude-code project from cwd", bin, "claude-code", "cwd", "", userClaudeSettings,
			"BIN check --harness claude-code", []string{"PreToolUse", "PermissionRequest"}},
		{"cursor user", bin, "cursor", "", "p.yaml", "",
			"BIN check --harness cursor --policy WD/p.yaml", []string{"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "preToolUse", "subagentStart"}},
		{"claude-code from a path with a space", odd, "claude-code", "", "", userClaudeSettings,
			"'" + odd + "' check --harness claude-code", []string{"PreToolUse", "PermissionRequest"}},
		{"cursor from a symlink", link, "cursor", "", "", "",
			realBin + " check --harness cursor", []string{"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "preToolUse", "subagentStart"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, proj, wd := t.TempDir(), t.TempDir(), t.TempDir()
			args := []string{"--harness", tc.harness}
			base, dir := home, wd
			switch tc.scope {
			case "project":
				args = append(args, "--scope", "project", "--project", proj)
				base = proj
			case "cwd":
				args = append(args, "--scope", "project")
				base, dir = proj, proj
			}
			if tc.policy != "" {
				args = append(args, "--policy", tc.policy)
			}
			path := filepath.Join(base, ".claude", "settings.json")
			if tc.harness == "cursor" {
				path = filepath.Join(base, ".cursor", "hooks.json")
			}
			if tc.existing != "" {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(tc.existing), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want := strings.NewReplacer("BIN", realBin, "WD", dir).Replace(tc.wantCmd)
			if tc.binary == odd {
				want = tc.wantCmd
			}

			r := runIn(t, tc.binary, home, dir, append([]string{"install"}, args...)...)
			if r.code != 0 || r.stdout != path+": hookgate installed\n" || r.stderr != "" {
				t.Fatalf("install: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if tc.scope != "" {
				if _, err := os.Stat(filepath.Join(home, filepath.Base(filepath.Dir(path)))); !os.IsNotExist(err) {
					t.Errorf("project install touched HOME: %v", err)
				}
			}
			cmds, failClosed := hookCommands(t, path)
			for _, ev := range tc.events {
				c := cmds[ev]
				if len(c) == 0 || hooks.HookgateCommand(c[len(c)-1]) != want {
					t.Errorf("%s: commands %q, want the last to be %q", ev, c, want)
				}
				n := 0
				for _, x := range c {
					if strings.Contains(x, "hookgate") {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s: %d hookgate entries, want 1: %q", ev, n, c)
				}
			}
			if tc.existing != "" && cmds["PreToolUse"][0] != "/opt/guard/bin/guard --strict" {
				t.Errorf("the user's own hook is gone or moved: %q", cmds["PreToolUse"])
			}
			if tc.harness == "cursor" {
				if len(failClosed) != len(tc.events) {
					t.Errorf("%d cursor entries, want %d", len(failClosed), len(tc.events))
				}
				for i, f := range failClosed {
					if !f {
						t.Errorf("cursor entry %d is not failClosed: true", i)
					}
				}
			}
			installed, _ := os.ReadFile(path)

			r = runIn(t, tc.binary, home, dir, append([]string{"install"}, args...)...)
			if r.code != 0 || r.stdout != path+": unchanged\n" {
				t.Errorf("second install: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			if again, _ := os.ReadFile(path); string(again) != string(installed) {
				t.Errorf("second install rewrote the file:\n%s", again)
			}

			r = runIn(t, tc.binary, home, dir, append([]string{"uninstall"}, args...)...)
			if r.code != 0 || r.stdout != path+": hookgate removed\n" {
				t.Errorf("uninstall: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
			after, _ := os.ReadFile(path)
			if strings.Contains(string(after), "hookgate") {
				t.Errorf("hookgate left after uninstall:\n%s", after)
			}
			if tc.existing != "" && string(after) != tc.existing {
				t.Errorf("after uninstall:\n%s\nwant the user's file back:\n%s", after, tc.existing)
			}
			r = runIn(t, tc.binary, home, dir, append([]string{"uninstall"}, args...)...)
			if r.code != 0 || r.stdout != path+": unchanged\n" {
				t.Errorf("second uninstall: exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestInstallCommandRefusals: a bad --scope or harness is a non-zero exit
// with one line on stderr, and no file written.
func TestInstallCommandRefusals(t *testing.T) {
	for _, args := range [][]string{
		{"install", "--harness", "claude-code", "--scope", "system"},
		{"uninstall", "--harness", "cursor", "--scope", "global"},
		{"install", "--harness", "vim"},
		{"uninstall", "--harness", "vim"},
		{"install"},
		{"install", "--harness", "codex", "extra"},
	} {
		home := t.TempDir()
		r := runIn(t, bin, home, home, args...)
		if r.code == 0 || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "hookgate "+args[0]+": ") {
			t.Errorf("%q: exit %d stdout %q stderr %q; want a non-zero exit and one line on stderr", args, r.code, r.stdout, r.stderr)
		}
		if entries, _ := os.ReadDir(home); len(entries) != 0 {
			t.Errorf("%q wrote %v", args, entries)
		}
	}
}

// TestCheckDeadlineOverMax: a --deadline above hooks.MaxDeadline (which
// keeps hookgate under the harness's hook timeout) is a deny in the
// harness's protocol that says why; MaxDeadline itself is accepted.
func TestCheckDeadlineOverMax(t *testing.T) {
	over := (hooks.MaxDeadline + time.Millisecond).String()
	reason := "hookgate: --deadline " + over + " must be positive and at most " + hooks.MaxDeadline.String() + ", under the harness's hook timeout; denied"
	claude := runGate(t, bin, nil, fixture(t, "claude-code/pretooluse-bash-simple-allow"),
		"check", "--harness", "claude-code", "--policy", policyFile(t, "open", "claude-code"), "--deadline", over)
	wantClaude := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"` + reason + `"}}` + "\n"
	if claude.code != 2 || claude.stdout != wantClaude || claude.stderr != reason+"\n" {
		t.Errorf("claude-code: exit %d stdout %q stderr %q\nwant exit 2, stdout %q and the reason on stderr", claude.code, claude.stdout, claude.stderr, wantClaude)
	}
	// Codex: exit 2 with the reason on stderr and nothing on stdout.
	codex := runGate(t, bin, nil, fixture(t, "codex/pretooluse-bash"),
		"check", "--harness", "codex", "--policy", policyFile(t, "open", "codex"), "--deadline", "10m")
	if want := strings.Replace(reason, over, "10m0s", 1) + "\n"; codex.code != 2 || codex.stdout != "" || codex.stderr != want {
		t.Errorf("codex: exit %d stdout %q stderr %q; want exit 2, empty stdout, stderr %q", codex.code, codex.stdout, codex.stderr, want)
	}
	ok := runGate(t, bin, nil, fixture(t, "codex/pretooluse-bash"),
		"check", "--harness", "codex", "--policy", policyFile(t, "open", "codex"), "--deadline", hooks.MaxDeadline.String())
	if ok.code != 0 || ok.stdout != "" || ok.stderr != "" {
		t.Errorf("--deadline %s: exit %d stdout %q stderr %q; want codex's allow", hooks.MaxDeadline, ok.code, ok.stdout, ok.stderr)
	}
}

// TestCheckHelpDenies: check --help exits 2 with the usage on stderr and
// nothing on stdout, which every harness reads as a deny (exit 0 with an
// empty stdout would be Claude Code's and Codex's "no objection"); the
// program's and install's help still exit 0.
func TestCheckHelpDenies(t *testing.T) {
	for _, args := range [][]string{{"check", "--help"}, {"check", "-h"}, {"check", "--harness", "codex", "--help"}, {"check", "--harness", "claude-code", "-help"}} {
		r := runGate(t, bin, nil, fixture(t, "codex/pretooluse-bash"), args...)
		if r.code != 2 || r.stdout != "" || !strings.HasPrefix(r.stderr, "usage: hookgate check") {
			t.Errorf("%q: exit %d stdout %q stderr %.40q; want exit 2, empty stdout, usage on stderr", args, r.code, r.stdout, r.stderr)
		}
		for _, want := range []string{"exits 2", "as a deny", "at most", hooks.MaxDeadline.String()} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%q: usage does not say %q", args, want)
			}
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"install", "--help"}, {"uninstall", "-h"}} {
		if r := runGate(t, bin, nil, []byte{}, args...); r.code != 0 || r.stderr == "" {
			t.Errorf("%q: exit %d stderr %q; want exit 0 and usage", args, r.code, r.stderr)
		}
	}
}
