package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileMatcherGlobs(t *testing.T) {
	m := FileMatcher{Home: "/home/u", Cwd: "/w"}
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"/etc/secret", "/etc/secret", true},
		{"/etc/secret", "/etc/secret/key", true},
		{"/etc/secret", "/etc/secretive", false},
		{"/etc/*", "/etc/passwd", true},
		{"/etc/*", "/etc/ssl/certs/x", true},
		{"/etc/*.conf", "/etc/a.conf", true},
		{"/etc/*.conf", "/etc/sub/a.conf", false},
		{"/w/**/*.go", "/w/a.go", true},
		{"/w/**/*.go", "/w/x/y/a.go", true},
		{"/w/**/*.go", "/v/a.go", false},
		{"/w/?.txt", "/w/a.txt", true},
		{"/w/?.txt", "/w/ab.txt", false},
		{"/w/[ab].txt", "/w/b.txt", true},
		{"~/.ssh", "/home/u/.ssh/id_rsa", true},
		{"~/.ssh/**", "/home/u/.ssh/id_rsa", true},
		{"~", "/home/u/x", true},
		{"~/.ssh", "/root/.ssh/id_rsa", false},
		{".env", "/w/app/.env", true},
		{".env", "/w/app/.envrc", false},
		{"*.pem", "/etc/ssl/key.pem", true},
		{".ssh", "/home/u/.ssh/id_rsa", true},
		{"src/**", "/w/src/a.go", true},
		{"src/**", "/other/src/a.go", false},
		{"**", "/anything", true},
	}
	// The same answers with a memo shared by every case.
	for _, m := range []FileMatcher{m, m.Memo()} {
		for _, c := range cases {
			if got := m.match(c.pattern, c.path); got != c.want {
				t.Errorf("memo %v: pattern %q on %q = %v, want %v", m.memo != nil, c.pattern, c.path, got, c.want)
			}
		}
	}
}

func TestCanonicalize(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "secret"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "work", "a"), 0o755))
	must(os.MkdirAll(filepath.Join(dir, "deep", "x"), 0o755))
	must(os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "work", "link")))
	must(os.Symlink("../deep/x", filepath.Join(dir, "work", "rel")))
	must(os.Symlink("loop2", filepath.Join(dir, "loop1")))
	must(os.Symlink("loop1", filepath.Join(dir, "loop2")))
	cases := []struct{ in, cwd, want string }{
		{"./a/../../secret/k", filepath.Join(dir, "work"), filepath.Join(dir, "secret", "k")},
		{"link/key", filepath.Join(dir, "work"), filepath.Join(dir, "secret", "key")},
		{"link/../x", filepath.Join(dir, "work"), filepath.Join(dir, "x")},
		{"rel/../y", filepath.Join(dir, "work"), filepath.Join(dir, "deep", "y")},
		{filepath.Join(dir, "work", "new", "..", "file"), "/", filepath.Join(dir, "work", "file")},
		{"//" + dir + "/./work//a/", "/", filepath.Join(dir, "work", "a")},
		{filepath.Join(dir, "loop1", "x"), "/", filepath.Join(dir, "loop1", "x")},
		{"", filepath.Join(dir, "work"), filepath.Join(dir, "work")},
	}
	for _, c := range cases {
		if got := Canonicalize(c.in, c.cwd); got != c.want {
			t.Errorf("Canonicalize(%q, %q) = %q, want %q", c.in, c.cwd, got, c.want)
		}
	}
	// A symlink into a denied directory is caught, with and without a memo.
	m0 := FileMatcher{Home: "/nonexistent", Cwd: filepath.Join(dir, "work")}
	for _, m := range []FileMatcher{m0, m0.Memo()} {
		rules := &FileRules{Deny: []string{filepath.Join(dir, "secret")}}
		d := m.Check("link/key", rules)
		if d.Allowed() || d.Reason != "file denied: "+filepath.Join(dir, "secret", "key")+" matches files.deny \""+filepath.Join(dir, "secret")+"\"" {
			t.Errorf("Check(link/key) = %+v", d)
		}
		if d := m.Check("./a/../../secret/k", rules); d.Allowed() {
			t.Errorf("dot-dot path into a denied directory allowed: %+v", d)
		}
		// Under allowOnly, nothing matching is a denial; an empty allowOnly denies all.
		allow := &FileRules{AllowOnly: []string{filepath.Join(dir, "work", "**")}}
		if d := m.Check("a/file", allow); !d.Allowed() {
			t.Errorf("allowed path denied: %+v", d)
		}
		if d := m.Check("link/key", allow); d.Allowed() || d.Reason != "file not in the allowlist: "+filepath.Join(dir, "secret", "key")+" is outside files.allowOnly" {
			t.Errorf("path outside allowOnly (through a symlink) allowed: %+v", d)
		}
		if d := m.Check("a/file", &FileRules{AllowOnly: []string{}}); d.Allowed() {
			t.Error("empty allowOnly allowed a path")
		}
		// A pattern whose directory is a symlink matches the resolved path.
		if d := m.Check(filepath.Join(dir, "secret", "k"), &FileRules{Deny: []string{filepath.Join(dir, "work", "link")}}); d.Allowed() {
			t.Error("deny pattern through a symlinked directory missed the resolved path")
		}
	}
}

// TestMemoIsASnapshot: a memo'd matcher answers from what it saw first; a
// fresh one sees the filesystem as it is now.
func TestMemoIsASnapshot(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := FileMatcher{Cwd: dir}
	memo := m.Memo()
	rules := &FileRules{Deny: []string{filepath.Join(dir, "secret")}}
	if d := memo.Check("x/key", rules); !d.Allowed() {
		t.Fatalf("x/key denied before x exists: %+v", d)
	}
	if err := os.Symlink(filepath.Join(dir, "secret"), filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	if d := memo.Check("x/key", rules); !d.Allowed() {
		t.Errorf("the memo'd matcher looked again: %+v", d)
	}
	if d := m.Check("x/key", rules); d.Allowed() {
		t.Errorf("a matcher without a memo missed the new symlink into a denied directory: %+v", d)
	}
	if d := m.Memo().Check("x/key", rules); d.Allowed() {
		t.Errorf("a fresh memo missed the new symlink into a denied directory: %+v", d)
	}
}

func TestIsFileDeniedAllowed(t *testing.T) {
	if got := IsFileDenied("/etc/shadow", []string{"/etc/**"}); got != "/etc/**" {
		t.Errorf("IsFileDenied = %q", got)
	}
	if got := IsFileDenied("/usr/bin/env", []string{"/etc/**"}); got != "" {
		t.Errorf("IsFileDenied = %q", got)
	}
	if got := IsFileAllowed("/tmp/x", []string{"/etc/**"}); got != "" {
		t.Errorf("IsFileAllowed = %q", got)
	}
}

func TestUnreadableFilePatternsFailClosed(t *testing.T) {
	m := FileMatcher{Home: "/home/u", Cwd: "/w"}
	if got := m.Denied("/w/a", []string{"/w/["}); got != "/w/[" {
		t.Errorf("a bad deny glob must deny, got %q", got)
	}
	if got := m.Allowed("/w/a", []string{"/w/["}); got != "" {
		t.Errorf("a bad allow glob must allow nothing, got %q", got)
	}
}

func TestValidateFileGlob(t *testing.T) {
	for _, ok := range []string{"/a/**", "~/.ssh", "~", "*.pem", "src/**/x?.go", "/a/[bc]"} {
		if err := ValidateFileGlob(ok); err != nil {
			t.Errorf("ValidateFileGlob(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", "~root/x", "/a/**b", "/a/[", "a\x00b"} {
		if err := ValidateFileGlob(bad); err == nil {
			t.Errorf("ValidateFileGlob(%q) accepted", bad)
		}
	}
}

func TestGlobCovers(t *testing.T) {
	cases := []struct {
		q, p string
		want bool
	}{
		{"/w/**", "/w/src", true},
		{"/w/**", "/w/src/**", true},
		{"/w", "/w/src", true},
		{"/w/src", "/w", false},
		{"/w/*", "/w/a.go", true},
		{"/w/*.go", "/w/*", false},
		{"*.go", "/w/a.go", true},
		{"/w/**", "*.go", false},
		{"~/**", "~/.ssh", true},
		{"/home/**", "~/.ssh", false}, // home may be anywhere
		{"/home/*", "~/.ssh", false},
		{"src/**", "src/a", true},
		{"/w/src/**", "src/a", false},
	}
	for _, c := range cases {
		if got := globCovers(c.q, c.p); got != c.want {
			t.Errorf("globCovers(%q, %q) = %v, want %v", c.q, c.p, got, c.want)
		}
	}
}

// TestDecideBelow: what a search rooted at a directory reaches, hooks
// only (a walk of what exists) and in a sandboxd session (HeldBelow).
func TestDecideBelow(t *testing.T) {
	root := Canonicalize(t.TempDir(), "/")
	secret := Canonicalize(t.TempDir(), "/")
	rules := &FileRules{Deny: []string{"**/.env", "*.pem", secret}}
	m := FileMatcher{Home: "/nonexistent-home", Cwd: root, DenyAnywhere: true}
	write := func(rel string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("src/main.go")
	write("node_modules/pkg/index.js")
	if d := m.DecideBelow(root, rules, "grep"); !d.Allowed() {
		t.Fatalf("nothing denied below: %+v", d)
	}
	if d := m.DecideBelow(root, &FileRules{Deny: []string{"/elsewhere/**"}}, "grep"); !d.Allowed() || !strings.Contains(d.Reason, "no files.deny pattern reaches") {
		t.Errorf("a pattern that cannot reach below: %+v", d)
	}
	// A link to a denied directory, anywhere.
	if err := os.Symlink(secret, filepath.Join(root, "src", "keys")); err != nil {
		t.Fatal(err)
	}
	if d := m.DecideBelow(root, rules, "grep"); d.Allowed() || !strings.Contains(d.Reason, "a denied path in "+root+"/src ") || strings.Contains(d.Reason, "keys") || d.Rule != "files.deny:"+secret {
		t.Errorf("a symlink to a denied directory: %+v", d)
	}
	os.Remove(filepath.Join(root, "src", "keys"))
	// Deep, in a directory a plan's scan would skip.
	write("node_modules/pkg/test/.env")
	d := m.DecideBelow(root, rules, "grep")
	want := Denied(Because(ReasonSearchReachesDeny, "grep below %s reaches a denied path in %s/node_modules/pkg/test (files.deny %q)", root, root, "**/.env"), "files.deny:**/.env")
	if d != want {
		t.Errorf("a .env in node_modules:\n got %+v\nwant %+v", d, want)
	}
	// Below a subdirectory that holds none: allowed.
	if d := m.DecideBelow(root+"/src", rules, "grep"); !d.Allowed() {
		t.Errorf("src holds no denied file: %+v", d)
	}
	// A root that does not exist yet: what appears there could match.
	if d := m.DecideBelow(root+"/later", rules, "grep"); d.Allowed() || !strings.Contains(d.Reason, "could reach") {
		t.Errorf("a missing root: %+v", d)
	}
	// In a sandboxd session the filesystem layer holds the rule.
	held := m
	held.HeldBelow = true
	if d := held.DecideBelow(root, rules, "grep"); !d.Allowed() || !strings.Contains(d.Reason, "held by the sandbox's filesystem layer") {
		t.Errorf("held below: %+v", d)
	}
	// Past the walk's bound, it cannot tell: denied.
	defer func(l int) { reachLimit = l }(reachLimit)
	reachLimit = 2000
	for i := 0; i <= reachLimit/1000; i++ {
		d := filepath.Join(root, "many", fmt.Sprint(i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 1000; j++ {
			if err := os.WriteFile(filepath.Join(d, fmt.Sprint(j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := m.DecideBelow(root+"/many", rules, "grep"); d.Allowed() || !strings.Contains(d.Reason, "search a narrower directory") {
		t.Errorf("past the bound: %+v", d)
	}
}
