//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
)

// TestUnsetEnv: --unset-env and the policy's environment.unset leave
// variables out of the sandbox's environment altogether: no process inside
// has them (every /proc/*/environ is read inside, a background process's
// too), the others pass, the session's start line names them; sandboxd
// explain --env says the same by name, never printing a value; a pattern
// that is not one refuses to start, naming it.
func TestUnsetEnv(t *testing.T) {
	w := newWorld(t)
	dir := sharedDir(t)
	os.Mkdir(filepath.Join(dir, "pol"), 0o755)
	pol := filepath.Join(dir, "pol", "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nharness: claude-code\nenvironment:\n  unset: [\"AWS_*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"GITHUB_TOKEN=ghp_s3cretgithubvalue", "GITHUB_ENTERPRISE_TOKEN=s3cretvalue2",
		"AWS_SECRET_ACCESS_KEY=s3cretvalue3", "KEEP_ME=visible-value"}
	script := `sleep 2 & cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'; kill $!`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, dir: dir, flags: []string{"--policy", pol, "--unset-env", "GITHUB_*"},
				argv: []string{"sh", "-c", script}, extraEnv: secrets})
			if r.code != 0 {
				t.Fatalf("exit %d\nstderr %q", r.code, r.stderr)
			}
			if strings.Count(r.stdout, "KEEP_ME=visible-value") < 2 {
				t.Errorf("KEEP_ME is not in both processes' environments:\n%s", r.stdout)
			}
			if strings.Contains(r.stdout, "s3cret") || strings.Contains(r.stdout, "GITHUB_") || strings.Contains(r.stdout, "AWS_") {
				t.Errorf("a removed variable is inside:\n%s", r.stdout)
			}
			var removed []string
			for _, l := range strings.Split(r.audit, "\n") {
				var m map[string]any
				if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == audit.MsgSessionStart {
					for _, n := range asSlice(m[audit.AttrEnvRemoved]) {
						removed = append(removed, n)
					}
				}
			}
			slices.Sort(removed)
			if want := []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_TOKEN"}; !slices.Equal(removed, want) {
				t.Errorf("session start names %q as removed, want %q\n%s", removed, want, r.audit)
			}
			if strings.Contains(r.audit, "s3cret") {
				t.Errorf("a removed variable's value is in the audit:\n%s", r.audit)
			}

			explain := append(setpriv(u.uid), sandboxdBin, "explain", "--env", "--policy", pol, "--unset-env", "GITHUB_*")
			cmd := exec.Command(explain[0], explain[1:]...)
			cmd.Dir, cmd.Env = dir, w.env(dir, secrets)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("explain --env: %v\n%s", err, out)
			}
			for _, want := range []string{"KEEP_ME\thost\n", "PATH\thost\n", "HTTPS_PROXY\tsandboxd\n", "BARRY_SANDBOX_ID\tsandboxd\n",
				"BARRY_HOOK_SOCKET\tsandboxd\n", "GITHUB_TOKEN\tremoved (GITHUB_*)\n", "AWS_SECRET_ACCESS_KEY\tremoved (AWS_*)\n"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("explain --env has no line %q:\n%s", want, out)
				}
			}
			if strings.Contains(string(out), "s3cret") || strings.Contains(string(out), "visible-value") || strings.Contains(string(out), "=") {
				t.Errorf("explain --env printed a value:\n%s", out)
			}

			for _, bad := range []struct {
				flags []string
				want  string
			}{
				{[]string{"--unset-env", "A=B"}, `--unset-env: "A=B": a variable name or glob has no '=' and no control characters`},
				{[]string{"--unset-env", "[x"}, `--unset-env: "[x": not a glob`},
			} {
				r := w.sandboxd(t, runOpts{uid: u.uid, dir: dir, flags: bad.flags, argv: []string{"true"}})
				if r.code != 125 || !strings.Contains(r.stderr, bad.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
					t.Errorf("%v: exit %d, stderr %q; want 125 and one line with %q", bad.flags, r.code, r.stderr, bad.want)
				}
			}
		})
	}
}

// TestUnsetEnvReload: a reload that changes environment.unset says that the
// command keeps the environment it started with (on stderr and in the
// audit), and it does.
func TestUnsetEnvReload(t *testing.T) {
	w := newWorld(t)
	dir := sharedDir(t)
	os.Mkdir(filepath.Join(dir, "pol"), 0o755)
	pol := filepath.Join(dir, "pol", "p.yaml")
	write := func(unset string) {
		if err := os.WriteFile(pol+".new", []byte("version: 1\nharness: claude-code\nenvironment:\n  unset: ["+unset+"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(pol+".new", pol); err != nil {
			t.Fatal(err)
		}
	}
	write(`"AWS_*"`)
	auditFile := filepath.Join(dir, "audit.jsonl")
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The edit comes once the command runs (its start line is in the
		// audit).
		for i := 0; i < 400; i++ {
			if b, _ := os.ReadFile(auditFile); strings.Contains(string(b), `"msg":"`+audit.MsgSessionStart+`"`) {
				write(`"AWS_*", "KEEP_*"`)
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
	}()
	r := w.sandboxd(t, runOpts{dir: dir, audit: auditFile, flags: []string{"--policy", pol},
		// The command waits for the reload's note (the audit file is in
		// its working directory), then shows its own environment.
		argv:     []string{"sh", "-c", `for i in $(seq 100); do grep -q '"environment fixed"' audit.jsonl && break; sleep 0.1; done; printenv KEEP_ME`},
		extraEnv: []string{"KEEP_ME=visible-value"}})
	<-done
	if r.code != 0 || strings.TrimSpace(r.stdout) != "visible-value" {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the start's environment kept", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "environment.unset changed: the command keeps the environment it started with") ||
		!strings.Contains(r.audit, `"msg":"`+audit.MsgEnvFixed+`"`) {
		t.Errorf("no note of the fixed environment:\nstderr %q\naudit %s", r.stderr, r.audit)
	}
}

// setpriv is the prefix that runs a command as uid (nothing for root).
func setpriv(uid int) []string {
	if uid == 0 {
		return nil
	}
	return []string{"setpriv", "--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups", "--"}
}
