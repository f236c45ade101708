package policy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// fsFixture makes home/{.ssh/id_rsa,.bashrc,ws/{.env,src/a.go,sub/.env,.git/hooks}}.
func fsFixture(t testing.TB) (home, ws string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(base, "home")
	ws = filepath.Join(home, "ws")
	for _, d := range []string{home + "/.ssh", ws + "/src", ws + "/sub", ws + "/.git/hooks", base + "/other"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{home + "/.ssh/id_rsa", home + "/.bashrc", ws + "/.env", ws + "/src/a.go", ws + "/sub/.env", ws + "/key.pem"} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, ws
}

func TestPlanFilesystemDefault(t *testing.T) {
	home, ws := fsFixture(t)
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, AlwaysProtected: []string{"/etc/hosts"}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.WriteRoots) != fmt.Sprint([]string{ws}) {
		t.Errorf("write roots %v, want the workspace", p.WriteRoots)
	}
	if p.HomeOverlay != home {
		t.Errorf("home overlay %q, want %q", p.HomeOverlay, home)
	}
	if len(p.Hidden) != 0 {
		t.Errorf("hidden %v without file rules", p.Hidden)
	}
	for _, want := range []string{home + "/.bashrc", home + "/.ssh", ws + "/.git/hooks", ws + "/.git/config", "/etc/hosts"} {
		if !hasPath(p.Protected, want) {
			t.Errorf("%s not protected: %v", want, p.Protected)
		}
	}
	for _, c := range []struct {
		path  string
		write bool
		allow bool
		rule  string
	}{
		{ws + "/new", true, true, "filesystem.write:" + ws},
		{ws + "/.git/hooks/pre-commit", true, false, "filesystem.protected:" + ws + "/.git/hooks"},
		{home + "/.bashrc", true, false, "filesystem.protected:" + home + "/.bashrc"},
		{home + "/.cache/x", true, true, "filesystem.home"},
		{"/tmp/x", true, true, "filesystem.tmp"},
		{"/var/tmp/x", true, true, "filesystem.tmp"},
		{"/etc/passwd", true, false, "filesystem.readonly"},
		{"/etc/passwd", false, true, ""},
	} {
		d := p.Explain(c.path, c.write)
		if d.Allowed() != c.allow || d.Rule != c.rule {
			t.Errorf("Explain(%s, write=%v) = %v %q (%s), want allow=%v %q", c.path, c.write, d.Verdict, d.Rule, d.Reason, c.allow, c.rule)
		}
	}
}

func TestPlanFilesystemDeny(t *testing.T) {
	home, ws := fsFixture(t)
	files := &FileRules{Deny: []string{"~/.ssh", "**/.env", "*.pem", "/nonexistent/secret"}}
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{home + "/.ssh", ws + "/.env", ws + "/key.pem", ws + "/sub/.env"}
	if fmt.Sprint(p.Hidden) != fmt.Sprint(want) {
		t.Errorf("hidden %v, want %v", p.Hidden, want)
	}
	// ~/.ssh is hidden, so it is not also bound read-only.
	if hasPath(p.Protected, home+"/.ssh") {
		t.Errorf("hidden ~/.ssh also protected")
	}
	if len(p.NotCovered) != 3 || !strings.Contains(strings.Join(p.NotCovered, "\n"), "/nonexistent/secret does not exist at start") {
		t.Errorf("not covered: %q", p.NotCovered)
	}
	for _, c := range []struct{ path, rule string }{
		{ws + "/sub/../.env", "files.deny:**/.env"},
		{home + "/.ssh/id_rsa", "files.deny:~/.ssh"},
		{ws + "/key.pem", "files.deny:*.pem"},
	} {
		if d := p.Explain(c.path, false); d.Allowed() || d.Rule != c.rule {
			t.Errorf("Explain(%s) = %v %q, want deny %q", c.path, d.Verdict, d.Rule, c.rule)
		}
	}
	// A symlink in the workspace to a denied file is hidden by its target.
	if err := os.Symlink(home+"/.ssh/id_rsa", ws+"/link"); err != nil {
		t.Fatal(err)
	}
	if d := p.Explain(ws+"/link", false); d.Allowed() {
		t.Errorf("symlink to a hidden file: %v", d)
	}
}

func TestPlanFilesystemDenyCoversWriteRoot(t *testing.T) {
	home, ws := fsFixture(t)
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Write: []string{"~/.ssh"}, Files: &FileRules{Deny: []string{"~/.ssh"}}})
	if err != nil {
		t.Fatal(err)
	}
	if hasPath(p.WriteRoots, home+"/.ssh") || !hasPath(p.Hidden, home+"/.ssh") {
		t.Errorf("a denied write root: roots %v hidden %v", p.WriteRoots, p.Hidden)
	}
}

func TestPlanFilesystemExactWriteRootUnprotects(t *testing.T) {
	home, ws := fsFixture(t)
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Write: []string{"~/.bashrc", ".git/hooks"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []string{home + "/.bashrc", ws + "/.git/hooks"} {
		if hasPath(p.Protected, x) || !hasPath(p.WriteRoots, x) {
			t.Errorf("%s named exactly: roots %v protected has it %v", x, p.WriteRoots, hasPath(p.Protected, x))
		}
	}
	// The workspace's .git/config stays protected.
	if !hasPath(p.Protected, ws+"/.git/config") {
		t.Errorf(".git/config lost its protection")
	}
}

func TestPlanFilesystemAllowOnly(t *testing.T) {
	home, ws := fsFixture(t)
	files := &FileRules{AllowOnly: []string{"src/**", "*.go"}}
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(p.WriteRoots) != fmt.Sprint([]string{ws + "/src"}) {
		t.Errorf("write roots %v, want only src", p.WriteRoots)
	}
	if p.HomeOverlay != "" {
		t.Errorf("home overlay under allowOnly: %q", p.HomeOverlay)
	}
	// Home (here under the private /tmp, so out of sight already) is not
	// readable.
	if d := p.Explain(home+"/.bashrc", false); d.Allowed() {
		t.Errorf("home readable: %v", d)
	}
	if !hasPath(p.Revealed, ws) {
		t.Errorf("workspace not revealed: %v", p.Revealed)
	}
	if !strings.Contains(strings.Join(p.NotCovered, "\n"), "files.allowOnly: the other names (hard links) of the files it hides are not looked for") {
		t.Errorf("not covered: %q", p.NotCovered)
	}
	for _, c := range []struct {
		path  string
		write bool
		allow bool
	}{
		{ws + "/src/b.go", true, true},
		{ws + "/README", true, false},
		{ws + "/README", false, true},
		{home + "/.bashrc", false, false},
		{filepath.Dir(home) + "/other", false, false},
		{"/usr/bin/env", false, true},
	} {
		if d := p.Explain(c.path, c.write); d.Allowed() != c.allow {
			t.Errorf("Explain(%s, write=%v) = %v (%s), want allow=%v", c.path, c.write, d.Verdict, d.Reason, c.allow)
		}
	}
}

func TestPlanFilesystemScanLimit(t *testing.T) {
	home, ws := fsFixture(t)
	for i := range 50 {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), nil, 0o644)
	}
	_, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"**/.env"}}, ScanLimit: 20})
	if err == nil || !strings.Contains(err.Error(), "more than 20 entries") {
		t.Fatalf("err = %v, want the scan limit", err)
	}
	// A pattern over the whole filesystem cannot be scanned: refused.
	if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"/*/secret"}}}); err == nil {
		t.Fatal("a pattern below / was planned")
	}
}

// TestPlanFilesystemScanCanceled: once its context is done the files.deny
// scan stops (it looks every 256 entries) and the plan fails with the
// context's error (sandboxd run cancels it on a signal during the setup); the same
// workspace plans with a live context.
func TestPlanFilesystemScanCanceled(t *testing.T) {
	home, ws := fsFixture(t)
	for i := range 2000 {
		os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), nil, 0o644)
	}
	in := FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"**/.env"}}}
	p, err := PlanFilesystem(context.Background(), in)
	if err != nil || p.Scanned < 2000 {
		t.Fatalf("live context: err %v, scanned %d", err, p.Scanned)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	why := errors.New("interrupted by interrupt")
	cancel(why)
	if _, err := PlanFilesystem(ctx, in); !errors.Is(err, why) || !strings.Contains(err.Error(), "scan for hidden paths stopped") {
		t.Fatalf("canceled context: err %v, want the scan stopped by %v", err, why)
	}
}

func TestPlanFilesystemRefuses(t *testing.T) {
	home, ws := fsFixture(t)
	for _, w := range []string{"", "src/*.go", "/does/not/exist", "~other/x"} {
		if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Write: []string{w}}); err == nil {
			t.Errorf("write root %q accepted", w)
		}
	}
}

func TestDecodeFilesystemSection(t *testing.T) {
	doc := "version: 1\nharness: claude-code\nfilesystem:\n  write: [\"~/.npm\", /srv/data]\n"
	pf, err := DecodePolicyFile([]byte(doc), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if pf.Filesystem == nil || fmt.Sprint(pf.Filesystem.Write) != "[~/.npm /srv/data]" {
		t.Fatalf("filesystem = %+v", pf.Filesystem)
	}
	for bad, want := range map[string]string{
		"filesystem:\n  write: [\"src/*\"]\n": "filesystem.write[0]",
		"filesystem:\n  writ: [x]\n":          "filesystem.writ",
		"filesystem:\n  write: x\n":           "filesystem.write",
	} {
		_, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"+bad), FormatYAML)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one naming %s", bad, err, want)
		}
	}
}

// BenchmarkPlanFilesystem10k plans a "**/" deny pattern over a 10,000-file
// workspace (the start-up budget of docs/benchmarks.md): with no hidden
// file of more than one name, and with ~/.ssh/id_rsa linked outside what
// is searched, so that the search for its other names walks the whole
// workspace (the most it costs).
func BenchmarkPlanFilesystem10k(b *testing.B) {
	home, ws := fsFixture(b)
	for d := range 100 {
		dir := filepath.Join(ws, "pkg", fmt.Sprint(d))
		os.MkdirAll(dir, 0o755)
		for f := range 100 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), nil, 0o644)
		}
	}
	files := &FileRules{Deny: []string{"**/.env", "**/*.pem", "~/.ssh"}}
	run := func(b *testing.B) {
		var p *FSPlan
		for b.Loop() {
			var err error
			if p, err = PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: files}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(p.Scanned), "scanned")
		b.ReportMetric(float64(p.LinkScanned), "link-scanned")
	}
	b.Run("no links", run)
	if err := os.Link(home+"/.ssh/id_rsa", filepath.Dir(home)+"/other/id_rsa"); err != nil {
		b.Fatal(err)
	}
	b.Run("linked outside", run)
}

func TestPlanFilesystemHomeScanDepth(t *testing.T) {
	home, ws := fsFixture(t)
	shallow := filepath.Join(home, "proj", ".env")
	deep := filepath.Join(home, "a", "b", "c", "d", ".env")
	vendored := filepath.Join(ws, "node_modules", "pkg", ".env")
	for _, f := range []string{shallow, deep, vendored} {
		os.MkdirAll(filepath.Dir(f), 0o755)
		os.WriteFile(f, nil, 0o644)
	}
	// Home alone is far past the limit in entries a real one holds; here
	// the limit is small and home is scanned only HomeScanDepth deep, so
	// it does not count against it.
	for i := range 30 {
		os.WriteFile(filepath.Join(home, "a", "b", "c", "d", fmt.Sprintf("f%d", i)), nil, 0o644)
	}
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"**/.env"}}, ScanLimit: 25})
	if err != nil {
		t.Fatal(err)
	}
	if !hasPath(p.Hidden, shallow) || !hasPath(p.Hidden, ws+"/.env") {
		t.Errorf("hidden %v lacks %s or the workspace's .env", p.Hidden, shallow)
	}
	if hasPath(p.Hidden, deep) || hasPath(p.Hidden, vendored) {
		t.Errorf("hidden %v has a path past the home depth or in node_modules", p.Hidden)
	}
	if !strings.Contains(strings.Join(p.NotCovered, "\n"), "3 levels into home") {
		t.Errorf("not covered: %q", p.NotCovered)
	}
}

// The bypass hunt's findings, each refused or held by the plan.
func TestPlanFilesystemHunt(t *testing.T) {
	home, ws := fsFixture(t)
	// A write root through a symlink planted in the workspace.
	os.Symlink("/", ws+"/out")
	if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Write: []string{"out"}}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("write root through a planted symlink: %v", err)
	}
	// A write root that is a symlink outside every writable place is fine.
	os.Symlink(ws+"/src", filepath.Dir(home)+"/srclink")
	if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Write: []string{filepath.Dir(home) + "/srclink"}}); err != nil {
		t.Errorf("a symlink outside the writable places: %v", err)
	}
	// Protected paths' parents inside a write root are pinned.
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"**/.env"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{ws + "/.git", ws + "/sub"} {
		if !hasPath(p.Pinned, want) {
			t.Errorf("%s not pinned: %v", want, p.Pinned)
		}
	}
	// And in the home overlay: a harness reads its settings there by path
	// during the session.
	if err := os.MkdirAll(home+"/.claude", 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(home+"/.claude/settings.json", []byte("{}"), 0o644)
	if p, err = PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home}); err != nil {
		t.Fatal(err)
	}
	if p.HomeOverlay != home || !hasPath(p.Pinned, home+"/.claude") || hasPath(p.Pinned, home) {
		t.Errorf("home overlay %q, pinned %v: want %s/.claude pinned, not the home", p.HomeOverlay, p.Pinned, home)
	}
	// A protected name that is a symlink inside a write root is refused.
	os.RemoveAll(ws + "/.git/hooks")
	os.Mkdir(ws+"/githooks", 0o755)
	os.Symlink("../githooks", ws+"/.git/hooks")
	if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home}); err == nil || !strings.Contains(err.Error(), "symlink inside a write root") {
		t.Errorf("symlinked .git/hooks: %v", err)
	}
	os.Remove(ws + "/.git/hooks")
	// core.hooksPath into the work tree is protected.
	os.WriteFile(ws+"/.git/config", []byte("[core]\n\thooksPath = .husky\n[remote \"o\"]\n\turl = x\n"), 0o644)
	os.Mkdir(ws+"/.husky", 0o755)
	if p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home}); err != nil || !hasPath(p.Protected, ws+"/.husky") {
		t.Errorf("core.hooksPath not protected: %v %v", err, p.Protected)
	}
	// files.deny of everything is refused, not an empty mask over /.
	if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"/"}}}); err == nil {
		t.Error("files.deny / planned")
	}
}

func TestPlanFilesystemAllowOnlyAtRoot(t *testing.T) {
	// A workspace right under / (a container's /app): its parent is not
	// hidden, so the system stays; nothing hides "/".
	ws, err := os.MkdirTemp("/", "barry-plan-")
	if err != nil {
		testenv.SkipOrFail(t, "cannot make a directory under /: "+err.Error())
	}
	defer os.RemoveAll(ws)
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Files: &FileRules{AllowOnly: []string{ws + "/**"}}})
	if err != nil {
		t.Fatal(err)
	}
	if hasPath(p.Hidden, "/") {
		t.Errorf("/ hidden: %v", p.Hidden)
	}
	if d := p.Explain("/usr/bin/env", false); !d.Allowed() {
		t.Errorf("/usr/bin/env: %v", d)
	}
}

func FuzzGitHooksPath(f *testing.F) {
	f.Add("[core]\n\thooksPath = .husky\n")
	f.Add("[]\n[core \"x\"]\nhookspath=\"/abs\"\n[include] path = ../x ; c\n")
	f.Fuzz(func(t *testing.T, config string) {
		root := t.TempDir()
		os.Mkdir(root+"/.git", 0o755)
		os.WriteFile(root+"/.git/config", []byte(config), 0o644)
		for _, p := range gitProtected(root, "") {
			if !under(p, root) || p == root {
				t.Fatalf("protected %q outside the root %q", p, root)
			}
		}
	})
}

// A container user with no passwd entry has HOME=/: the root directory is
// never overlaid (it would make the whole filesystem writable inside).
func TestPlanFilesystemHomeIsRoot(t *testing.T) {
	_, ws := fsFixture(t)
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: "/"})
	if err != nil {
		t.Fatal(err)
	}
	if p.HomeOverlay != "" {
		t.Errorf("home overlay %q with HOME=/, want none", p.HomeOverlay)
	}
	if p.AllWritable || fmt.Sprint(p.WriteRoots) != fmt.Sprint([]string{ws}) {
		t.Errorf("write roots %v (all %v), want the workspace", p.WriteRoots, p.AllWritable)
	}
}

// With the whole filesystem a write root (a container's working directory
// "/"), the private /tmp still covers the host's: nothing under /tmp, nor
// /tmp itself, is pinned, protected or hidden (the init would find the
// tmpfs there instead, and refuse).
func TestPlanFilesystemRootWriteRootTmpOutOfSight(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "jailfs-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: "/", AlwaysProtected: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range [][]string{p.Pinned, p.Protected, p.Hidden} {
		for _, x := range l {
			if under(x, "/tmp") {
				t.Errorf("%s is planned, but the private /tmp covers it (pinned %v, protected %v)", x, p.Pinned, p.Protected)
			}
		}
	}
}

// TestPlanFilesystemHarnessConfig: the harnesses' configuration where the
// environment moves it is protected (Claude Code's settings files, all of
// CODEX_HOME), those paths that exist only.
func TestPlanFilesystemHarnessConfig(t *testing.T) {
	home, ws := fsFixture(t)
	claude, codex := filepath.Join(home, "cfg", "claude"), filepath.Join(home, "cfg", "codex")
	for _, d := range []string{claude, codex} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(claude, "settings.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CLAUDE_CONFIG_DIR": claude, "CODEX_HOME": codex}
	cfg := HarnessConfigFromEnv(func(k string) string { return env[k] })
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, HarnessConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{filepath.Join(claude, "settings.json"), codex} {
		if !hasPath(p.Protected, Canonicalize(want, "/")) {
			t.Errorf("%s not protected: %v", want, p.Protected)
		}
	}
	if missing := Canonicalize(filepath.Join(claude, "settings.local.json"), "/"); hasPath(p.Protected, missing) {
		t.Errorf("%s does not exist and is protected", missing)
	}
}

// TestPlanFilesystemHardLinks: the other names (hard links) of a hidden
// file in the workspace and the write roots are hidden too, each
// explained by the file it names and its pattern; names found nowhere the
// plan looks are reported in NotCovered with the counts; a file none of
// whose names lie outside the hidden paths costs no walk of the workspace.
func TestPlanFilesystemHardLinks(t *testing.T) {
	link := func(t *testing.T, old, new string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(new), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(old, new); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("workspace and write root", func(t *testing.T) {
		home, ws := fsFixture(t)
		base := filepath.Dir(home)
		os.WriteFile(home+"/token", []byte("x"), 0o600)
		link(t, home+"/.ssh/id_rsa", ws+"/key-link")        // to a file in a hidden directory in home
		link(t, ws+"/.env", ws+"/src/deep/env-link")        // to the workspace's .env, in a subdirectory
		link(t, home+"/.ssh/id_rsa", base+"/other/outside") // outside what is searched
		link(t, ws+"/src/a.go", ws+"/src/b.go")             // not hidden: stays
		link(t, home+"/token", base+"/extra/tok")           // to a credential's file, in a write root
		link(t, ws+"/key.pem", home+"/.ssh/pem-in-ssh")     // both names hidden anyway
		files := &FileRules{Deny: []string{"~/.ssh", "**/.env", "*.pem"}}
		os.MkdirAll(base+"/extra", 0o755)
		p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: files, Write: []string{base + "/extra"}, Hide: []string{home + "/token"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{ws + "/key-link", ws + "/src/deep/env-link", base + "/extra/tok"} {
			if !hasPath(p.Hidden, want) {
				t.Errorf("%s not hidden: %v", want, p.Hidden)
			}
		}
		for _, not := range []string{ws + "/src/b.go", ws + "/src/a.go", base + "/other/outside"} {
			if hasPath(p.Hidden, not) {
				t.Errorf("%s hidden: %v", not, p.Hidden)
			}
		}
		notes := strings.Join(p.NotCovered, "\n")
		if want := fmt.Sprintf(`files.deny "~/.ssh": %s/.ssh/id_rsa has 3 names (hard links) and 2 of them were found in the hidden paths, the workspace and the write roots; the other 1, elsewhere, are not hidden by the kernel`, home); !strings.Contains(notes, want) {
			t.Errorf("not covered:\n%s\nwant %q", notes, want)
		}
		if strings.Count(notes, "names (hard links)") != 1 {
			t.Errorf("not covered: one hidden file has names not found, got:\n%s", notes)
		}
		for _, c := range []struct {
			path, rule, reason string
			allow              bool
		}{
			{ws + "/key-link", "files.deny:~/.ssh", ws + "/key-link is another name (hard link) of " + home + "/.ssh/id_rsa, which files.deny \"~/.ssh\" hides", false},
			{ws + "/src/deep/env-link", "files.deny:**/.env", ws + "/src/deep/env-link is another name (hard link) of " + ws + "/.env, which files.deny \"**/.env\" hides", false},
			{base + "/extra/tok", RuleCredentialFile, base + "/extra/tok is another name (hard link) of " + home + "/token, which holds a credential's value", false},
			{ws + "/src/b.go", "", ws + "/src/b.go", true},
		} {
			d := p.Explain(c.path, false)
			if d.Allowed() != c.allow || d.Rule != c.rule || !strings.HasSuffix(d.Reason, ": "+c.reason) {
				t.Errorf("Explain(%s) = %v %q %q, want allow=%v %q %q", c.path, d.Verdict, d.Rule, d.Reason, c.allow, c.rule, c.reason)
			}
		}
		// The name outside: known as one, not hidden (Explain says so
		// where the sandbox shows it; the fixture is in the host's /tmp,
		// which it does not).
		if of, hidden := p.linkOf(base + "/other/outside"); of != home+"/.ssh/id_rsa" || hidden {
			t.Errorf("linkOf(outside) = %q %v, want id_rsa, not hidden", of, hidden)
		}
	})
	t.Run("names all hidden", func(t *testing.T) {
		home, ws := fsFixture(t)
		for i := range 500 {
			os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d", i)), nil, 0o644)
		}
		link(t, home+"/.ssh/id_rsa", home+"/.ssh/id_rsa.bak")
		p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"~/.ssh"}}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(strings.Join(p.NotCovered, "\n"), "hard links") {
			t.Errorf("not covered: %q", p.NotCovered)
		}
		// ~/.ssh, id_rsa, id_rsa.bak: the workspace was not walked.
		if p.LinkScanned != 3 {
			t.Errorf("the search looked at %d entries, want 3 (the hidden directory only)", p.LinkScanned)
		}
	})
	t.Run("over the limit", func(t *testing.T) {
		home, ws := fsFixture(t)
		for i := range 30 {
			os.WriteFile(filepath.Join(home, ".ssh", fmt.Sprintf("k%d", i)), nil, 0o600)
		}
		p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"~/.ssh"}}, ScanLimit: 20})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`files.deny "~/.ssh": the hidden paths hold more than 20 entries (stopped in %s/.ssh); other names (hard links) of the files past that are not hidden by the kernel`, home)
		if !hasPath(p.NotCovered, want) {
			t.Errorf("not covered %q, want %q", p.NotCovered, want)
		}
	})
	t.Run("workspace over the limit", func(t *testing.T) {
		home, ws := fsFixture(t)
		for i := range 30 {
			os.WriteFile(filepath.Join(ws, "src", fmt.Sprintf("f%d", i)), nil, 0o644)
		}
		link(t, home+"/.ssh/id_rsa", ws+"/zz-link")
		p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, Files: &FileRules{Deny: []string{"~/.ssh"}}, ScanLimit: 20})
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`files.deny "~/.ssh": %s/.ssh/id_rsa has 2 names (hard links) and 1 of them were found in the hidden paths, the workspace and the write roots (the search stopped at 20 entries); the other 1, elsewhere, are not hidden by the kernel`, home)
		if !hasPath(p.NotCovered, want) {
			t.Errorf("not covered %q, want %q", p.NotCovered, want)
		}
	})
}
