package policy

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDenyAnywhereAndFoldCase: the FileMatcher options a hook ruling uses,
// where Cwd follows the harness's "cd" and macOS ignores case.
func TestDenyAnywhereAndFoldCase(t *testing.T) {
	cases := []struct {
		name           string
		anywhere, fold bool
		pattern, path  string
		wantDenied     bool
	}{
		{"**/ is anchored at Cwd by default", false, false, "**/.env*", "/w/proj/.env", false},
		{"**/ matches anywhere with DenyAnywhere", true, false, "**/.env*", "/w/proj/.env", true},
		{"other relative patterns stay at Cwd", true, false, "proj/**", "/w/proj/a", false},
		{"case is exact by default", false, false, "~/.ssh", "/home/u/.SSH/id_rsa", false},
		{"case folds with FoldCase", false, true, "~/.ssh", "/home/u/.SSH/id_rsa", true},
		{"a segment pattern folds", false, true, "*.pem", "/w/KEY.PEM", true},
	}
	for _, c := range cases {
		m := FileMatcher{Home: "/home/u", Cwd: "/tmp", DenyAnywhere: c.anywhere, FoldCase: c.fold}
		if got := m.Denied(c.path, []string{c.pattern}) != ""; got != c.wantDenied {
			t.Errorf("%s: Denied(%q, %q) = %v, want %v", c.name, c.path, c.pattern, got, c.wantDenied)
		}
		// Allow patterns never fold: a path in another case is outside.
		if c.fold && m.Allowed(c.path, []string{c.pattern}) != "" {
			t.Errorf("%s: Allowed folded case", c.name)
		}
	}
}

// TestThroughProcessView: paths whose meaning depends on the process that
// resolves them, directly or through a symlink.
func TestThroughProcessView(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/proc/self/cwd", filepath.Join(dir, "here")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		path string
		want bool
	}{
		{"/proc/self/cwd/x", true},
		{"/proc/thread-self/root/etc", true},
		{"/proc/1/root/etc/passwd", true},
		{"/dev/fd/3", true},
		{"/dev/stdin", true},
		{filepath.Join(dir, "here", "x"), true},
		{"/proc/cpuinfo", false},
		{"/proc/sys/kernel/hostname", false},
		{"/procx/self", false},
		{"/w/proj/a.go", false},
		{filepath.Join(dir, "x"), false},
	}
	m := FileMatcher{Home: "/home/u", Cwd: "/w"}
	for _, c := range cases {
		if got := m.ThroughProcessView(c.path); got != c.want {
			t.Errorf("ThroughProcessView(%q) = %v, want %v", c.path, got, c.want)
		}
	}
}
