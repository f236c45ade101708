package shell

import (
	"regexp"
	"testing"
)

// TestVersionedBase: versionedBase is the regexp it replaced.
func TestVersionedBase(t *testing.T) {
	re := regexp.MustCompile(`^(python|pypy|ruby|perl|php|lua|node)[0-9.]*$`)
	for _, prog := range []string{"python", "python3", "python3.12", "python3.12.1", "pypy3", "ruby3.3", "perl5.36",
		"php8", "lua5.4", "node20", "node", "nodejs", "python3x", "pythonw", "3", "", ".", "perl.", "bash5", "rubyy",
		"xpython3", "python-3", "php.8.1", "luajit"} {
		want := ""
		if m := re.FindStringSubmatch(prog); m != nil {
			want = m[1]
		}
		if got := versionedBase(prog); got != want {
			t.Errorf("versionedBase(%q) = %q, want %q", prog, got, want)
		}
	}
}
