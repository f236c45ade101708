package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestWrapperFailsClosed runs the hook command Install writes through
// /bin/sh, as the harnesses do, with stand-ins for hookgate that fail in
// every way: each failure must be the harness's deny (exit 2, a reason on
// stderr, the JSON deny where the harness reads one), and hookgate's own
// answers must pass through unchanged.
func TestWrapperFailsClosed(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notExec := filepath.Join(dir, "not-executable")
	os.WriteFile(notExec, []byte("#!/bin/sh\nexit 0\n"), 0o644)
	// Every answer hookgate itself writes passes through unchanged.
	events := map[Harness][]string{ClaudeCode: {"PreToolUse", "PermissionRequest"}, Codex: {"PreToolUse", "PermissionRequest"},
		Cursor: {"beforeShellExecution", "preToolUse", "beforeReadFile"}, Gemini: {"BeforeTool"}}
	for h, evs := range events {
		for _, ev := range evs {
			kind := KindTool
			if ev == "PermissionRequest" {
				kind = KindPermission
			}
			for _, r := range []Reply{ReplyAllow, ReplyPass, ReplyDeny, ReplyAsk} {
				out := Encode(Call{Harness: h, Event: ev, Kind: kind, Tool: "Bash"}, Answer{Reply: r, Reason: "why 'quoted' \"here\""})
				bin := script(fmt.Sprintf("real-%s-%s-%d", h, ev, r), "cat >/dev/null; printf '%s' '"+strings.ReplaceAll(string(out.Stdout), "'", `'\''`)+"'; : >\"$HOOKGATE_DONE\"")
				cmd := wrappedCommandWithin(h, []string{bin}, 50)
				sh := exec.Command("/bin/sh", "-c", cmd)
				sh.Stdin = strings.NewReader("{}")
				got, err := sh.Output()
				if err != nil || string(got) != string(out.Stdout) {
					t.Errorf("%s %s reply %d: hookgate's answer %q came out as %q (%v)", h, ev, r, out.Stdout, got, err)
				}
			}
		}
	}
	cases := []struct {
		name   string
		bin    string
		code   int
		stdout string // exact, "" for none; "DENY" for the harness's deny
		stderr string // a substring
	}{
		{"hookgate's own deny passes", script("deny", "cat >/dev/null; echo 'reason here' >&2; exit 2"), 2, "", "reason here"},
		{"missing", filepath.Join(dir, "no-such-hookgate"), 2, "DENY", "hookgate not found"},
		{"not executable", notExec, 2, "DENY", "not executable"},
		{"exit 1", script("crash", "exit 1"), 2, "DENY", "exit status 1"},
		{"killed", script("killed", "kill -9 $$"), 2, "DENY", "exit status 137"},
		{"garbage", script("garbage", "cat >/dev/null; echo not-json; : >\"$HOOKGATE_DONE\""), 2, "DENY", "a form the harness cannot read"},
		{"JSON of no answer's shape", script("bogus", `cat >/dev/null; echo '{"decision":"perhaps"}'; : >"$HOOKGATE_DONE"`), 2, "DENY", "a form the harness cannot read"},
		{"exit 0 with nothing written (an empty file at hookgate's path)", script("empty", ""), 2, "DENY", "without writing its answer"},
		{"exit 0 silently, not hookgate", script("silent", "cat >/dev/null; exit 0"), 2, "DENY", "without writing its answer"},
		{"a bogus JSON with exit 2", script("bogus2", `cat >/dev/null; echo '{"decision":"perhaps"}'; echo x >&2; exit 2`), 2, "DENY", "a form the harness cannot read"},
		{"hang", script("hang", "exec sleep 600"), 2, "DENY", "did not answer within 0.5 s"},
		{"hang with stdout held by a child", script("hangchild", "sleep 600 & echo partial; wait"), 2, "DENY", "did not answer"},
	}
	for _, h := range []Harness{ClaudeCode, Codex, Copilot, Cursor, Gemini} {
		deny := strings.TrimSpace(string(Fail(h, "hookgate failed; denied").Stdout))
		for _, c := range cases {
			t.Run(string(h)+"/"+c.name, func(t *testing.T) {
				cmd := wrappedCommandWithin(h, []string{c.bin, "check", "--harness", string(h)}, 5)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				sh := exec.CommandContext(ctx, "/bin/sh", "-c", cmd)
				sh.Stdin = strings.NewReader(`{"hook_event_name":"PreToolUse"}`)
				var out, errb bytes.Buffer
				sh.Stdout, sh.Stderr = &out, &errb
				start := time.Now()
				err := sh.Run()
				code := 0
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if time.Since(start) > 10*time.Second {
					t.Errorf("took %v", time.Since(start))
				}
				want := c.stdout
				if want == "DENY" {
					want = deny
					if want != "" {
						want += "\n"
					}
				}
				if code != c.code || out.String() != want || !strings.Contains(errb.String(), c.stderr) {
					t.Errorf("exit %d stdout %q stderr %q; want exit %d stdout %q stderr containing %q", code, out.String(), errb.String(), c.code, want, c.stderr)
				}
				if c.code == 2 && strings.TrimSpace(errb.String()) == "" {
					t.Errorf("a deny without a reason on stderr (Codex and Gemini need one)")
				}
				if want != "" && c.stdout == "DENY" && !json.Valid([]byte(want)) {
					t.Errorf("the deny answer is not JSON: %q", want)
				}
			})
		}
	}
}

// TestWrapperPassesThePayload checks that hookgate gets the payload and
// its arguments intact through the wrapper, quoting included.
func TestWrapperPassesThePayload(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "my apps"), 0o755)
	bin := filepath.Join(dir, "my apps", "hookgate")
	os.WriteFile(bin, []byte("#!/bin/sh\nprintf '%s|' \"$@\" >&2; cat >\""+dir+"/got\"; : >\"$HOOKGATE_DONE\"\n"), 0o755)
	payload := `{"tool_input":{"command":"echo 'a' \"b\" $HOME"}}`
	cmd := wrappedCommand(ClaudeCode, []string{bin, "check", "--policy", "/p/it's.yaml"})
	sh := exec.Command("/bin/sh", "-c", cmd)
	sh.Stdin = strings.NewReader(payload)
	var errb bytes.Buffer
	sh.Stderr = &errb
	if err := sh.Run(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "got")); string(got) != payload {
		t.Errorf("payload %q, want %q", got, payload)
	}
	if errb.String() != "check|--policy|/p/it's.yaml|" {
		t.Errorf("arguments %q", errb.String())
	}
	if HookgateCommand(cmd) != shellQuote(bin)+" check --policy '/p/it'\\''s.yaml'" {
		t.Errorf("HookgateCommand = %q", HookgateCommand(cmd))
	}
}

// TestWrapperLeavesNoProcess: once the wrapper has answered, nothing it
// started is left running (its watchdog's sleep included), so a harness
// waiting for the hook's process group, or counting leftovers, sees none.
func TestWrapperLeavesNoProcess(t *testing.T) {
	testenv.OnlyOn(t, "linux") // reads /proc
	dir := t.TempDir()
	bin := filepath.Join(dir, "hookgate")
	os.WriteFile(bin, []byte("#!/bin/sh\ncat >/dev/null; : >\"$HOOKGATE_DONE\"\n"), 0o755)
	// An odd deadline names the watchdog's sleep uniquely.
	cmd := wrappedCommandWithin(ClaudeCode, []string{bin, "check"}, 737)
	sh := exec.Command("/bin/sh", "-c", cmd)
	sh.Stdin = strings.NewReader(`{}`)
	// Its own process group tells its processes from other tests' runs.
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pgid := sh.Process.Pid
	deadline := time.Now().Add(2 * time.Second)
	for {
		left := sleepers("73.7", pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes left running after the answer: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sleepers lists the pids of "sleep ARG" processes in process group pgid.
func sleepers(arg string, pgid int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(b) != "sleep\x00"+arg+"\x00" {
			continue
		}
		st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, e.Name())
		}
	}
	return out
}
