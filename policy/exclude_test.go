package policy

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

func TestExcluding(t *testing.T) {
	grep, _ := NativeToolOf("claude-code", "Grep")
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"*.go", "", true},
		{"*.go !**/.env", "!**/.env", true},
		{"!**/.env *.go", "", true},
		{"!**/.env **/.env", "", true},
		{"*.go,!a,!b", "!a !b", true},
		{"{*.go,!x} !y", "!y", true},
		{"  !**/.env  !**/.ssh ", "!**/.env !**/.ssh", true},
		// White space Go and JavaScript split differently, or any byte
		// but printable ASCII and the space: not read at all.
		{"**/.env,\u0085!**/.env", "", false},
		{"!**/.env\t!**/.ssh", "", false},
		{"\ufeff!**/.env", "", false},
		{"!**/é.env", "", false},
	} {
		got, ok := grep.Excluding(map[string]any{"glob": tc.in})
		if strings.Join(got, " ") != tc.want || ok != tc.ok {
			t.Errorf("Excluding(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if _, ok := (NativeTool{}).Excluding(map[string]any{"glob": "x"}); ok {
		t.Errorf("a tool with no ExcludeKey reads globs")
	}
	rewritten := grep.WithExcludes(map[string]any{"pattern": "x", "glob": "*.go"}, "!**/.env")
	if rewritten["glob"] != "*.go !**/.env" || rewritten["pattern"] != "x" {
		t.Errorf("WithExcludes: %v", rewritten)
	}
	if got := grep.WithExcludes(map[string]any{"pattern": "x"}, "!**/.env"); got["glob"] != "!**/.env" {
		t.Errorf("WithExcludes with no glob: %v", got)
	}
}

func TestExcludeGlob(t *testing.T) {
	m := FileMatcher{Home: "/home/u", Cwd: "/ws"}
	anywhere := m
	anywhere.DenyAnywhere = true
	folded := m
	folded.FoldCase = true
	for _, tc := range []struct {
		m         FileMatcher
		root, pat string
		want      string
	}{
		{m, "/ws", ".env", "!**/.env"},
		{m, "/ws", "*.pem", "!**/*.pem"},
		{m, "/ws", ".env*", "!**/.env*"},
		{m, "/ws", "**/.env", "!**/.env"},
		{anywhere, "/elsewhere", "**/.env", "!**/.env"},
		{m, "/ws/calc", "**/secrets/**", "!**/secrets"},
		{m, "/home/u", "~/.ssh/**", "!**/.ssh"},
		{m, "/", "~/.ssh/**", "!**/.ssh"},
		{m, "/home/u", "~/.aws/*", "!**/.aws"},
		{m, "/ws", "/ws/config/*.key", "!**/*.key"},
		{m, "/ws", "config/*.key", "!**/*.key"},
		// A segment of wildcards alone, past root, excludes everything.
		{m, "/home/u/.aws", "~/.aws/*", ""},
		{m, "/ws", "*", ""},
		{m, "/ws", "**/*", ""},
		// Leading segments that cannot be root's.
		{m, "/ws/b", "/ws/a/secret", ""},
		// What ripgrep or Claude Code reads otherwise.
		{m, "/ws", "{a,b}.env", ""},
		{m, "/ws", "a b.env", ""},
		{m, "/ws", "a,b.env", ""},
		{m, "/ws", `\*.env`, ""},
		{m, "/ws", "~", ""},
		{m, "/ws", "secret[!_]key", ""},
		{m, "/ws", "?.pem", ""},
		{m, "/ws", "[a-z].pem", ""},
		{folded, "/ws", ".env", ""},
	} {
		if got := tc.m.ExcludeGlob(tc.root, tc.pat); got != tc.want {
			t.Errorf("ExcludeGlob(%q, %q) = %q, want %q", tc.root, tc.pat, got, tc.want)
		}
	}
}

func TestDecideSearchExcluding(t *testing.T) {
	root := t.TempDir()
	m := FileMatcher{Home: "/home/u", Cwd: root}
	rules := &FileRules{Deny: []string{"**/.env", "~/.ssh/**"}}
	d := m.DecideSearchExcluding(root, rules, "Grep", nil)
	if !d.Allowed() || d.Exclude != "!**/.env" || d.Rule != "files.deny:**/.env" ||
		d.Reason != Because(ReasonSearchExcludes, "Grep below %s leaves out files.deny %q (!**/.env)", root, "**/.env") {
		t.Errorf("a workspace search: %+v", d)
	}
	if d := m.DecideSearchExcluding(root, rules, "Grep", []string{"!**/.env"}); !d.Allowed() || d.Exclude != "" {
		t.Errorf("a search that leaves them out already: %+v", d)
	}
	// Two patterns, one glob.
	two := &FileRules{Deny: []string{"**/.env", ".env"}}
	if d := m.DecideSearchExcluding(root, two, "Grep", nil); !d.Allowed() || d.Exclude != "!**/.env" || !strings.Contains(d.Reason, `"**/.env", ".env"`) {
		t.Errorf("two patterns with one glob: %+v", d)
	}
	// A pattern with no glob: DecideBelow's walk decides.
	if err := os.WriteFile(filepath.Join(root, "a.key"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if d := m.DecideSearchExcluding(root, &FileRules{Deny: []string{"**/.env", "{a,b}.key"}}, "Grep", nil); d.Allowed() {
		// "{a,b}.key" is a literal name for path.Match: a.key is not it,
		// so nothing denied exists; the walk allows, with no globs.
		if d.Exclude != "" || strings.HasPrefix(d.Reason, ReasonSearchExcludes) {
			t.Errorf("the walk's allow carries globs: %+v", d)
		}
	} else {
		t.Errorf("the walk found nothing denied: %+v", d)
	}
	if d := m.DecideSearchExcluding(root, &FileRules{Deny: []string{"*"}}, "Grep", nil); d.Allowed() {
		t.Errorf("deny everything, no glob: the walk denies: %+v", d)
	}
	// Inside the sandbox the kernel holds the rules: nothing to rewrite.
	held := m
	held.HeldBelow = true
	if d := held.DecideSearchExcluding(root, rules, "Grep", nil); !d.Allowed() || d.Exclude != "" {
		t.Errorf("held below: %+v", d)
	}
	// No pattern reaches: no globs.
	if d := m.DecideSearchExcluding(root, &FileRules{Deny: []string{"/elsewhere/**"}}, "Grep", nil); !d.Allowed() || d.Exclude != "" {
		t.Errorf("nothing reaches: %+v", d)
	}
}

// TestExcludeGlobRipgrep runs the real ripgrep, as Claude Code's Grep runs
// it (--hidden --no-follow, the globs after the call's own), over a tree
// that holds files every deny pattern matches, from several working
// directories: no file the policy denies is listed, and the files it
// allows are.
func TestExcludeGlobRipgrep(t *testing.T) {
	rg := testenv.NeedCommand(t, "rg")
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	ws := filepath.Join(home, "ws")
	files := []string{
		"ws/main.go", "ws/.env", "ws/calc/.env", "ws/calc/calc.go", "ws/.env.local",
		"ws/deep/a/b/c/.env", "ws/sub/.env/inside.txt", "ws/secrets/db/pass.txt", "ws/calc/secrets.go",
		"ws/config/tls.key", "ws/config/readme.md", "ws/other/x.key",
		".ssh/id_ed25519", ".ssh/config", ".aws/credentials", "notes.txt",
	}
	for _, f := range files {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("needle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := FileMatcher{Home: home, Cwd: ws}
	for _, tc := range []struct {
		root string
		deny []string
	}{
		{ws, []string{"**/.env"}},
		{ws, []string{".env*"}},
		{ws, []string{"**/secrets/**", "/" + strings.TrimPrefix(ws, "/") + "/config/*.key"}},
		{home, []string{"~/.ssh/**", "~/.aws/*", "**/.env"}},
		{filepath.Join(ws, "calc"), []string{"**/.env"}},
	} {
		rules := &FileRules{Deny: tc.deny}
		d := m.DecideSearchExcluding(tc.root, rules, "Grep", nil)
		if !d.Allowed() || d.Exclude == "" {
			t.Errorf("%v below %s: no globs: %+v", tc.deny, tc.root, d)
			continue
		}
		for _, cwd := range []string{tc.root, filepath.Dir(tc.root), filepath.Join(ws, "calc"), "/"} {
			args := []string{"--files-with-matches", "--hidden", "--no-follow", "--glob", "*"}
			for _, g := range strings.Fields(d.Exclude) {
				args = append(args, "--glob", g)
			}
			cmd := exec.Command(rg, append(args, "needle", tc.root)...)
			cmd.Dir = cwd
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("rg %v in %s: %v", args, cwd, err)
			}
			listed := strings.Fields(string(out))
			for _, f := range files {
				p := filepath.Join(home, f)
				if !strings.HasPrefix(p, tc.root+"/") {
					continue
				}
				denied := !m.Check(p, rules).Allowed()
				switch got := slices.Contains(listed, p); {
				case denied && got:
					t.Errorf("%v below %s, rg in %s with %s: lists the denied %s", tc.deny, tc.root, cwd, d.Exclude, f)
				case !denied && !got && !strings.HasSuffix(f, ".key") && !strings.Contains(f, "secrets"):
					// The globs may leave out more than the policy
					// denies (x.key, secrets.go), never a file of
					// another name.
					t.Errorf("%v below %s, rg in %s with %s: leaves out the allowed %s", tc.deny, tc.root, cwd, d.Exclude, f)
				}
			}
		}
	}
}
