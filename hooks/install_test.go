package hooks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// userConfigs: a config per harness holding other settings and another
// tool's hook, which install and uninstall must keep, in order.
var userConfigs = map[Harness]string{
	ClaudeCode: `{
  "model": "opus",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/guard/bin/guard --strict", "timeout": 5}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "permissions": {"deny": ["Bash(git push *)", "Read(./.env)"]}
}`,
	Codex: `{"description": "team hooks", "hooks": {"PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "python3 ~/.codex/guard.py"}]}]}}`,
	Cursor: `{
  "version": 1,
  "hooks": {
    "afterFileEdit": [{"command": "./hooks/format.sh"}],
    "beforeShellExecution": [{"command": "./hooks/audit.sh", "timeout": 3}]
  }
}`,
	Gemini: `{"theme": "GitHub", "hooks": {"AfterTool": [{"matcher": ".*", "hooks": [{"type": "command", "command": "log-tool"}]}]}, "tools": {"enableHooks": true}}`,
}

func installArgs(h Harness, home string) InstallArgs {
	n := 0
	return InstallArgs{Harness: h, Scope: "user", Home: home, Binary: "/opt/barry/bin/hookgate", Policy: "/etc/barry/session policy.yaml",
		Now: func() time.Time { n++; return time.Date(2026, 11, 30, 1, 0, n, 0, time.UTC) }}
}

func TestInstallMergesAndUninstallRestores(t *testing.T) {
	for h, original := range userConfigs {
		t.Run(string(h), func(t *testing.T) {
			home := t.TempDir()
			a := installArgs(h, home)
			path, _ := ConfigPath(a)
			os.MkdirAll(filepath.Dir(path), 0o755)
			if err := os.WriteFile(path, []byte(original), 0o640); err != nil {
				t.Fatal(err)
			}
			p, changed, err := Install(a)
			if err != nil || !changed || p != path {
				t.Fatalf("Install = %s, %v, %v", p, changed, err)
			}
			installed, _ := os.ReadFile(path)
			if got := installedEvents(h, installed); !slices.Equal(got, sortedCopy(mustProtocol(h).install.events)) {
				t.Errorf("hookgate on events %v, want %v\n%s", got, mustProtocol(h).install.events, installed)
			}
			want := `'/etc/barry/session policy.yaml'`
			if !strings.Contains(string(installed), `/opt/barry/bin/hookgate check --harness `+string(h)+` --policy `+want) {
				t.Errorf("command line missing or unquoted:\n%s", installed)
			}
			// Everything else is still there, in its order.
			norm := string(encodeOrdered(mustParse(t, original)))
			for _, line := range strings.Split(norm, "\n") {
				if !strings.Contains(string(installed), strings.TrimSuffix(strings.TrimSpace(line), ",")) {
					t.Errorf("lost %q from the user's config:\n%s", line, installed)
				}
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode changed to %v", fi.Mode().Perm())
			}
			backups, _ := filepath.Glob(path + ".hookgate-*.bak")
			if len(backups) != 1 {
				t.Fatalf("backups %v, want one", backups)
			}
			if b, _ := os.ReadFile(backups[0]); string(b) != original {
				t.Errorf("backup differs from the original")
			}
			switch h {
			case Cursor:
				if strings.Count(string(installed), `"failClosed": true`) != len(mustProtocol(Cursor).install.events) {
					t.Errorf("cursor entries without failClosed: true:\n%s", installed)
				}
			case Gemini:
				if !strings.Contains(string(installed), `"timeout": 30000`) {
					t.Errorf("gemini timeout must be in milliseconds:\n%s", installed)
				}
			}

			// Idempotent: nothing changes, no new backup.
			if _, changed, err := Install(a); err != nil || changed {
				t.Errorf("second Install: changed=%v err=%v", changed, err)
			}
			again, _ := os.ReadFile(path)
			if string(again) != string(installed) {
				t.Errorf("second Install rewrote the file")
			}
			if b, _ := filepath.Glob(path + ".hookgate-*.bak"); len(b) != 1 {
				t.Errorf("second Install made a backup: %v", b)
			}
			// Reinstall with another policy replaces, never duplicates.
			a2 := a
			a2.Policy = ""
			Install(a2)
			re, _ := os.ReadFile(path)
			if strings.Count(string(re), "hookgate check") != len(mustProtocol(h).install.events) || strings.Contains(string(re), "--policy") {
				t.Errorf("reinstall duplicated or kept the old entry:\n%s", re)
			}

			if _, changed, err := Uninstall(a); err != nil || !changed {
				t.Fatalf("Uninstall: changed=%v err=%v", changed, err)
			}
			after, _ := os.ReadFile(path)
			if string(after) != norm {
				t.Errorf("after uninstall:\n%s\nwant the original:\n%s", after, norm)
			}
			if _, changed, _ := Uninstall(a); changed {
				t.Errorf("second Uninstall changed the file")
			}
		})
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func mustParse(t *testing.T, s string) any {
	t.Helper()
	v, err := parseOrdered([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestInstallRefusals(t *testing.T) {
	home := t.TempDir()
	a := installArgs(ClaudeCode, home)
	path, _ := ConfigPath(a)
	os.MkdirAll(filepath.Dir(path), 0o755)
	for _, bad := range []string{`{"hooks": [1]}`, `[1,2]`, `{"a": 1,}`, `{"hooks": {"PreToolUse": {"matcher": "*"}}}`, `{"a":1,"a":2}`} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, _, err := Install(a); err == nil {
			t.Errorf("Install over %s: want an error", bad)
		}
		if got, _ := os.ReadFile(path); string(got) != bad {
			t.Errorf("Install over %s touched the file", bad)
		}
	}
	a.Binary = "hookgate"
	os.Remove(path)
	if _, _, err := Install(a); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("relative binary: %v", err)
	}
	if _, err := ConfigPath(InstallArgs{Harness: ClaudeCode, Scope: "system", Home: home}); err == nil {
		t.Error("unknown scope must fail")
	}
}

func TestInstallNewFileAndProjectScope(t *testing.T) {
	proj := t.TempDir()
	a := installArgs(Cursor, "/nonexistent")
	a.Scope, a.Project = "project", proj
	path, changed, err := Install(a)
	if err != nil || !changed || path != filepath.Join(proj, ".cursor", "hooks.json") {
		t.Fatalf("Install = %s %v %v", path, changed, err)
	}
	data, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(data), "{\n  \"version\": 1,\n  \"hooks\": {") {
		t.Errorf("new cursor hooks.json:\n%s", data)
	}
	if b, _ := filepath.Glob(path + ".hookgate-*.bak"); len(b) != 0 {
		t.Errorf("backup of a file that did not exist: %v", b)
	}
}

func TestInstallPi(t *testing.T) {
	home := t.TempDir()
	a := installArgs(Pi, home)
	path, changed, err := Install(a)
	if err != nil || !changed || path != filepath.Join(home, ".pi", "agent", "extensions", "hookgate.ts") {
		t.Fatalf("Install = %s %v %v", path, changed, err)
	}
	src, _ := os.ReadFile(path)
	for _, want := range []string{`const HOOKGATE = "/opt/barry/bin/hookgate";`, `const ARGS = ["check","--harness","pi","--policy","/etc/barry/session policy.yaml"];`} {
		if !strings.Contains(string(src), want) {
			t.Errorf("extension lacks %s", want)
		}
	}
	if _, changed, _ := Install(a); changed {
		t.Error("second Install changed the extension")
	}
	if _, changed, err := Uninstall(a); err != nil || !changed {
		t.Errorf("Uninstall: %v %v", changed, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("extension still there: %v", err)
	}
	os.WriteFile(path, []byte("export default function () {}\n"), 0o644)
	if _, _, err := Install(a); err == nil {
		t.Error("Install over someone else's extension must fail")
	}
	if _, _, err := Uninstall(a); err == nil {
		t.Error("Uninstall of someone else's extension must fail")
	}
}

// ourCommands is the table for isOurs: which hook commands are hookgate's
// (Install replaces and Uninstall removes them) and which are not. Every
// command Install writes must be ours; TestIsOurs checks that too.
var ourCommands = []struct {
	cmd  string
	ours bool
}{
	{"hookgate check", true},
	{"hookgate check --protocol claude-code", true},
	{"hookgate  check\t--protocol cursor", true},
	{"/opt/barry/bin/hookgate check --harness codex", true},
	{"'/tmp/x/my apps/hookgate' check --harness claude-code", true},
	{`"/tmp/x/my apps/hookgate" check`, true},
	{`/tmp/x/my\ apps/hookgate check`, true},
	{`"/tmp/x/\"q\"/hookgate" check`, true},
	{`'/tmp/it'\''s/hookgate' 'check' --harness gemini`, true},
	{"/usr/local/bin/hookgate-linux-amd64 check --harness cursor", true},
	{`C:/barry/hookgate.exe check`, true},
	{"hookgate-faults check", true},
	{"hook\\\ngate check", true},
	{`/x/hook"gate" ch'eck'`, true},

	{"", false},
	{"hookgate", false},
	{"hookgate status", false},
	{"hookgate install --harness cursor", false},
	{"/x/hookgate", false},
	{"my-hookgate check", false},
	{"hookgatex check", false},
	{"/x/hookgate/guard check", false},
	{"echo hookgate check", false},
	{"FOO=1 hookgate check", false},
	{"hookgate 'check --harness x'", false},
	{"'/tmp/x/my apps/hookgate check", false},
	{`"/tmp/x/my apps/hookgate check`, false},
	{`hookgate check \`, false},
	{"hookgate check --policy '/etc/p.yaml", false},
	{`hookgate check --policy "/etc/p.yaml`, false},
	{"'/tmp/x/my apps/hookgate'check", false},
	{"/tmp/x/my apps/hookgate check", false},
}

func TestIsOurs(t *testing.T) {
	seen := map[string]bool{}
	for _, tc := range ourCommands {
		if seen[tc.cmd] {
			t.Fatalf("duplicate case %q", tc.cmd)
		}
		seen[tc.cmd] = true
		if got := isOurs(tc.cmd); got != tc.ours {
			t.Errorf("isOurs(%q) = %v, want %v", tc.cmd, got, tc.ours)
		}
	}
	for _, b := range []string{"/opt/barry/bin/hookgate", "/tmp/x/my apps/hookgate", "/tmp/it's here/hookgate-linux-amd64",
		`/tmp/"dq"/hookgate.exe`, "/tmp/back\\slash $HOME/hookgate"} {
		for _, h := range Harnesses {
			a := InstallArgs{Harness: h, Binary: b, Policy: "/etc/barry/a policy.yaml"}
			if cmd := a.command(); !isOurs(cmd) {
				t.Errorf("Install writes %q, which isOurs does not recognise", cmd)
			}
		}
	}
}

// TestInstallOddBinaryPaths: installing twice from a binary whose path has
// a space, or whose name has a platform suffix, leaves one hookgate entry
// per gated event and a byte-identical file; uninstall removes them all and
// keeps the user's hooks.
func TestInstallOddBinaryPaths(t *testing.T) {
	for _, binary := range []string{"/tmp/x/my apps/hookgate", "/opt/barry/bin/hookgate-linux-amd64", "/opt/it's/hookgate.exe"} {
		for h, original := range userConfigs {
			t.Run(string(h)+"/"+filepath.Base(binary), func(t *testing.T) {
				a := installArgs(h, t.TempDir())
				a.Binary = binary
				path, _ := ConfigPath(a)
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(original), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, changed, err := Install(a); err != nil || !changed {
					t.Fatalf("Install: changed=%v err=%v", changed, err)
				}
				first, _ := os.ReadFile(path)
				if _, changed, err := Install(a); err != nil || changed {
					t.Errorf("second Install: changed=%v err=%v", changed, err)
				}
				second, _ := os.ReadFile(path)
				if string(second) != string(first) {
					t.Errorf("second Install rewrote the file:\n%s", second)
				}
				counts := ourHandlers(t, h, second)
				for _, ev := range mustProtocol(h).install.events {
					if counts[ev] != 1 {
						t.Errorf("event %s has %d hookgate entries, want 1:\n%s", ev, counts[ev], second)
					}
				}
				if _, changed, err := Uninstall(a); err != nil || !changed {
					t.Fatalf("Uninstall: changed=%v err=%v", changed, err)
				}
				after, _ := os.ReadFile(path)
				if want := string(encodeOrdered(mustParse(t, original))); string(after) != want {
					t.Errorf("after uninstall:\n%s\nwant the original:\n%s", after, want)
				}
			})
		}
	}
}

// ourHandlers counts, per event, the handlers in a config file whose
// command is exactly one a hookgate install could write or one of the
// fixtures' "hookgate check --protocol X" lines: it reads the file's
// structure itself rather than through the code under test.
func ourHandlers(t *testing.T, h Harness, data []byte) map[string]int {
	t.Helper()
	var root struct {
		Hooks map[string][]struct {
			Command string `json:"command"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("config is not JSON: %v\n%s", err, data)
	}
	looksOurs := func(c string) bool {
		return strings.Contains(c, "hookgate") && strings.Contains(c, " check")
	}
	counts := map[string]int{}
	for ev, list := range root.Hooks {
		for _, item := range list {
			if h == Cursor {
				if looksOurs(item.Command) {
					counts[ev]++
				}
				continue
			}
			for _, hd := range item.Hooks {
				if looksOurs(hd.Command) {
					counts[ev]++
				}
			}
		}
	}
	return counts
}

// exampleConfigs are the hook-protocol notes' example configurations, each
// full of "hookgate check --protocol X" entries as a user would copy them.
var exampleConfigs = map[Harness]string{
	ClaudeCode: "claude-code/settings-example.json",
	Codex:      "codex/hooks-example.json",
	Cursor:     "cursor/hooks-example.json",
	Gemini:     "gemini/settings-example.json",
}

// foreignHandler is a user's hook next to hookgate's: shaped like a Cursor
// definition or a Claude-style handler, named after where it sits.
func foreignHandler(where string) *object {
	o := newObject()
	o.set("type", "command")
	o.set("command", "/opt/guard/bin/guard --"+where)
	return o
}

func foreignGroup(h Harness, where string) *object {
	if h == Cursor {
		return foreignHandler(where)
	}
	g := newObject()
	g.set("matcher", "Bash")
	g.set("hooks", []any{foreignHandler(where)})
	return g
}

// withForeignHooks returns the example with a user's hook added before and
// after each event's entries and, in Claude-style groups, after the
// hookgate handler in the same group, and an event of its own second in
// the list; and what uninstall must leave of it:
// the same with every hookgate handler gone (a group left empty goes too).
func withForeignHooks(t *testing.T, h Harness, example []byte) (in, wantAfterUninstall []byte) {
	t.Helper()
	build := func(withOurs bool) []byte {
		root := mustParse(t, string(example)).(*object)
		hv, _ := root.get("hooks")
		hooks := hv.(*object)
		for _, ev := range hooks.keys {
			list := []any{foreignGroup(h, ev+"-first")}
			for i, item := range hooks.vals[ev].([]any) {
				o := item.(*object)
				if h == Cursor {
					if withOurs {
						list = append(list, o)
					}
					continue
				}
				hs, _ := o.get("hooks")
				var handlers []any
				if withOurs {
					handlers = append(handlers, hs.([]any)...)
				}
				o.set("hooks", append(handlers, foreignHandler(fmt.Sprintf("%s-%d-in-group", ev, i))))
				list = append(list, o)
			}
			hooks.set(ev, append(list, foreignGroup(h, ev+"-last")))
		}
		// An event hookgate does not gate, between the example's first
		// event and the rest: install must not move events around it.
		other := "Stop"
		if h == Cursor {
			other = "afterFileEdit"
		}
		hooks.set(other, []any{foreignGroup(h, other)})
		hooks.keys = slices.Insert(hooks.keys[:len(hooks.keys)-1], 1, other)
		return encodeOrdered(root)
	}
	return build(true), build(false)
}

// TestInstallOverFixtureExamples installs over each harness's example
// config from the hook-protocol notes, as is and with a user's hooks
// around hookgate's: every other setting and hook is kept in its order,
// the "hookgate check --protocol X" entries are replaced (each gated event
// ends with exactly one hookgate entry, Install's), a second install
// changes nothing, and uninstall leaves no hookgate entry and the rest
// exactly as it was.
func TestInstallOverFixtureExamples(t *testing.T) {
	for h, name := range exampleConfigs {
		example, err := os.ReadFile(filepath.Join("testdata/fixtures", name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(example), "hookgate check --protocol "+string(h)) {
			t.Fatalf("%s no longer has a hookgate check --protocol entry", name)
		}
		withForeign, foreignOnly := withForeignHooks(t, h, example)
		// What uninstall leaves of the plain example: its settings, and
		// each of its events' lists without hookgate, here empty.
		plainAfter := map[Harness]string{
			ClaudeCode: `{"hooks": {}, "permissions": {"deny": ["Bash(git push *)", "Read(./.env)"]}}`,
			Codex:      `{"description": "hookgate policy gate", "hooks": {}}`,
			Cursor:     `{"version": 1, "hooks": {}}`,
			Gemini:     `{"hooks": {}}`,
		}[h]
		for _, tc := range []struct {
			name          string
			config        []byte
			wantUninstall []byte
		}{
			{"as-is", example, encodeOrdered(mustParse(t, plainAfter))},
			{"with-user-hooks", withForeign, foreignOnly},
		} {
			t.Run(string(h)+"/"+tc.name, func(t *testing.T) {
				a := installArgs(h, t.TempDir())
				path, _ := ConfigPath(a)
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, tc.config, 0o644); err != nil {
					t.Fatal(err)
				}
				if _, changed, err := Install(a); err != nil || !changed {
					t.Fatalf("Install: changed=%v err=%v", changed, err)
				}
				installed, _ := os.ReadFile(path)
				if strings.Contains(string(installed), "--protocol") {
					t.Errorf("the example's hookgate entries were kept:\n%s", installed)
				}
				counts := ourHandlers(t, h, installed)
				wantCmd := wrappedCommand(h, []string{"/opt/barry/bin/hookgate", "check", "--harness", string(h), "--policy", "/etc/barry/session policy.yaml"})
				for _, ev := range mustProtocol(h).install.events {
					if counts[ev] != 1 || !hasString(t, installed, wantCmd) {
						t.Errorf("event %s: %d hookgate entries, want exactly one running %s:\n%s", ev, counts[ev], wantCmd, installed)
					}
				}
				if n := strings.Count(string(installed), "hookgate check"); n != len(mustProtocol(h).install.events) {
					t.Errorf("%d hookgate entries in all, want %d", n, len(mustProtocol(h).install.events))
				}
				// The rest, in order: everything uninstall must leave is
				// in the installed file, in the same order, and installing
				// only added hookgate's lines.
				assertSubsequence(t, string(tc.wantUninstall), string(installed))

				if _, changed, err := Install(a); err != nil || changed {
					t.Errorf("second Install: changed=%v err=%v", changed, err)
				}
				if again, _ := os.ReadFile(path); string(again) != string(installed) {
					t.Errorf("second Install rewrote the file:\n%s", again)
				}

				if _, changed, err := Uninstall(a); err != nil || !changed {
					t.Fatalf("Uninstall: changed=%v err=%v", changed, err)
				}
				after, _ := os.ReadFile(path)
				if strings.Contains(string(after), "hookgate check") {
					t.Errorf("hookgate entry left after uninstall:\n%s", after)
				}
				if string(after) != string(tc.wantUninstall) {
					t.Errorf("after uninstall:\n%s\nwant:\n%s", after, tc.wantUninstall)
				}
			})
		}
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// assertSubsequence checks that the lines of want occur in got in the same
// order (ignoring indentation, trailing commas, brackets and empty
// objects).
func assertSubsequence(t *testing.T, want, got string) {
	t.Helper()
	norm := func(s string) string { return strings.TrimSuffix(strings.TrimSpace(s), ",") }
	gl := strings.Split(got, "\n")
	j := 0
	for _, w := range strings.Split(want, "\n") {
		w = norm(w)
		if w == "" || w == "{" || w == "}" || w == "[" || w == "]" || strings.HasSuffix(w, "{}") {
			continue
		}
		for j < len(gl) && norm(gl[j]) != w {
			j++
		}
		if j == len(gl) {
			t.Errorf("line %q of the user's config is missing or out of order:\n%s", w, got)
			return
		}
		j++
	}
}

// TestMaxDeadlineUnderHookTimeout: hookgate's longest deadline is shorter
// than the timeout Install gives the harness, in every harness's entries
// (Gemini's in milliseconds), so hookgate always answers first.
func TestMaxDeadlineUnderHookTimeout(t *testing.T) {
	if time.Duration(WrapperDeadline)*100*time.Millisecond <= MaxDeadline || time.Duration(WrapperDeadline)*100*time.Millisecond >= hookTimeout*time.Second/2 {
		t.Fatalf("the wrapper's deadline (%d tenths) is not between MaxDeadline %v and half the harness timeout %ds", WrapperDeadline, MaxDeadline, hookTimeout)
	}
	if MaxDeadline >= hookTimeout*time.Second {
		t.Fatalf("MaxDeadline %v is not under the harness timeout %ds", MaxDeadline, hookTimeout)
	}
	if DefaultDeadline > MaxDeadline {
		t.Errorf("DefaultDeadline %v is over MaxDeadline %v", DefaultDeadline, MaxDeadline)
	}
	// The Pi extension kills hookgate itself after TIMEOUT_MS.
	m := regexp.MustCompile(`(?m)^const TIMEOUT_MS = (\d+);`).FindStringSubmatch(piExtension)
	if m == nil {
		t.Fatal("the Pi extension has no TIMEOUT_MS")
	}
	if ms, _ := strconv.Atoi(m[1]); time.Duration(ms)*time.Millisecond <= MaxDeadline {
		t.Errorf("the Pi extension's timeout %s ms is not over MaxDeadline %v", m[1], MaxDeadline)
	}
	for _, h := range []Harness{ClaudeCode, Codex, Copilot, Cursor, Gemini} {
		a := installArgs(h, t.TempDir())
		path, _, err := Install(a)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(path)
		var root struct {
			Hooks map[string][]struct {
				Timeout    *float64 `json:"timeout"`
				TimeoutSec *float64 `json:"timeoutSec"`
				Hooks      []struct {
					Timeout *float64 `json:"timeout"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(data, &root); err != nil {
			t.Fatal(err)
		}
		unit := time.Second
		if h == Gemini {
			unit = time.Millisecond
		}
		n := 0
		for ev, list := range root.Hooks {
			for _, item := range list {
				timeouts := []*float64{item.Timeout}
				if h == Copilot {
					timeouts = []*float64{item.TimeoutSec}
				}
				if !mustProtocol(h).install.flat {
					timeouts = timeouts[:0]
					for _, hd := range item.Hooks {
						timeouts = append(timeouts, hd.Timeout)
					}
				}
				for _, to := range timeouts {
					n++
					if to == nil {
						t.Errorf("%s %s: entry without a timeout", h, ev)
					} else if d := time.Duration(*to * float64(unit)); d <= MaxDeadline {
						t.Errorf("%s %s: harness timeout %v is not above MaxDeadline %v", h, ev, d, MaxDeadline)
					}
				}
			}
		}
		if n != len(mustProtocol(h).install.events) {
			t.Errorf("%s: %d entries, want %d", h, n, len(mustProtocol(h).install.events))
		}
	}
}

// FuzzShellWords: splitting never panics, and words quoted the way Install
// quotes them split back to themselves, so hookgate always recognises the
// command it wrote.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{"hookgate check --harness claude-code", `'/my apps/hookgate' check`, `"a\"b" c\ d`, `'unterminated`, `a\`, `'it'\''s'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		shellWords(s)
		words := strings.Fields(s)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = shellQuote(w)
		}
		got, ok := shellWords(strings.Join(quoted, " "))
		if !ok || !slices.Equal(got, words) {
			t.Fatalf("%q quoted as %q split to %q (ok %v)", words, strings.Join(quoted, " "), got, ok)
		}
	})
}

// hasString reports whether the JSON document holds the string s as a value.
func hasString(t *testing.T, doc []byte, s string) bool {
	t.Helper()
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch x := v.(type) {
		case string:
			return x == s
		case []any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		case map[string]any:
			for _, e := range x {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}
