package policy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// gitRunKeyCases are GitConfigRunKeys's specification (and the fuzz
// target's seeds).
var gitRunKeyCases = []struct {
	config string
	want   []string
}{
	{"[core]\n\trepositoryformatversion = 0\n\tbare = false\n", nil},
	{"[core]\n\tfsmonitor = touch /tmp/x\n", []string{"core.fsmonitor"}},
	{"[CORE]\n\tHooksPath = ../evil\n", []string{"core.hookspath"}},
	{"[core] sshCommand = ssh -oProxyCommand=x\n", []string{"core.sshcommand"}},
	{"[filter \"lfs\"]\n\tclean = git-lfs clean\n\tsmudge = x\n\trequired = true\n", []string{"filter.lfs.clean", "filter.lfs.smudge"}},
	{"[diff \"bin\"]\n\ttextconv = hexdump\n", []string{"diff.bin.textconv"}},
	{"[alias]\n\tst = status\n\tx = !sh -c 'id'\n", []string{"alias.x"}},
	{"[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil\n", []string{"includeif.gitdir:/.path"}},
	{"[include]\n\tpath = other\n", []string{"include.path"}},
	{"[user]\n\tname = x\n# core.fsmonitor = y\n", nil},
	{"[core.fsmonitor]\n", nil},
	{"[remote \"origin\"]\n\turl = x\n\tuploadpack = evil\n", []string{"remote.origin.uploadpack"}},
	{"[credential]\n\thelper = store\n", []string{"credential.helper"}},
	{"[core]\n\tfsmonitor = a\n\tfsmonitor = b\n", []string{"core.fsmonitor"}},
}

func TestGitConfigRunKeys(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range gitRunKeyCases {
		if seen[c.config] {
			t.Fatalf("duplicate case %q", c.config)
		}
		seen[c.config] = true
		if got := GitConfigRunKeys([]byte(c.config)); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.config, got, c.want)
		}
	}
}

// FuzzGitConfigRunKeys: every key found is in a section gitRunKeys names,
// once.
func FuzzGitConfigRunKeys(f *testing.F) {
	for _, c := range gitRunKeyCases {
		f.Add(c.config)
	}
	sections := map[string]bool{}
	for _, k := range gitRunKeys {
		sections[k[:strings.Index(k, ".")]] = true
	}
	f.Fuzz(func(t *testing.T, config string) {
		seen := map[string]bool{}
		for _, k := range GitConfigRunKeys([]byte(config)) {
			s, _, _ := strings.Cut(k, ".")
			if !sections[s] || seen[k] {
				t.Fatalf("%q: key %q (section %q known %v, seen %v)", config, k, s, sections[s], seen[k])
			}
			seen[k] = true
		}
	})
}

func TestGitConfigs(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		p = filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/.git/config", "[core]\n\tbare = false\n")
	write("b/.git/config", "[core]\n\tfsmonitor = x\n")
	write("node_modules/c/.git/config", "[core]\n\tfsmonitor = x\n")
	before, complete := GitConfigs(context.Background(), []string{root}, 1000)
	if !complete || len(before) != 2 {
		t.Fatalf("before: %v %v", before, complete)
	}
	write("a/.git/config", "[core]\n\tbare = false\n\thooksPath = ../h\n")
	write("d/.git/config", "[core]\n\tfsmonitor = y\n")
	write("e/.git", "gitdir: ../gd\n")
	write("gd/config", "[core]\n\tsshCommand = z\n")
	write("f/.git/config", "[user]\n\tname = x\n")
	// Hooks git runs from where a .git file, a commondir or a
	// submodule's git directory lead (the create gate refuses only
	// .git/hooks and .git/modules/*/hooks by name).
	write("sub2/.git", "gitdir: ../gd2\n")
	write("gd2/HEAD", "ref: refs/heads/main\n")
	write("gd2/hooks/pre-commit", "#!/bin/sh\necho x\n")
	write("gd2/hooks/pre-commit.sample", "#!/bin/sh\n")
	write("gd2/commondir", "../evil\n")
	write("evil/hooks/post-checkout", "#!/bin/sh\necho y\n")
	write("evil/config", "[core]\n\tfsmonitor = z\n")
	write("a/.git/modules/lib/x/HEAD", "ref: refs/heads/main\n")
	write("a/.git/modules/lib/x/hooks/commit-msg", "#!/bin/sh\n")
	write("a/.git/modules/lib/x/commondir", "../../../../../cd\n")
	write("cd/config", "[alias]\n\tst = !sh -c x\n")
	// Neither a FIFO nor an endless device hangs the walk: named, not read.
	os.MkdirAll(filepath.Join(root, "g", ".git"), 0o755)
	if err := syscall.Mkfifo(filepath.Join(root, "g", ".git", "config"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(root, "h", ".git"), 0o755)
	if err := os.Symlink("/dev/zero", filepath.Join(root, "h", ".git", "config")); err != nil {
		t.Fatal(err)
	}
	after, _ := GitConfigs(context.Background(), []string{root}, 1000)
	var reports []string
	for p := range after {
		if r := GitConfigReport(p, before, after); r != "" {
			reports = append(reports, r)
		}
	}
	all := strings.Join(reports, "\n")
	for _, want := range []string{"a/.git/config changed during the session and sets core.hookspath", "d/.git/config appeared during the session and sets core.fsmonitor", "gd/config appeared during the session and sets core.sshcommand",
		"g/.git/config appeared during the session and was not checked (it is not a regular file)",
		"h/.git/config appeared during the session and was not checked (it is not a regular file)",
		"gd2/hooks/pre-commit appeared during the session: a git hook", "evil/hooks/post-checkout appeared during the session: a git hook",
		"evil/config appeared during the session and sets core.fsmonitor", "a/.git/modules/lib/x/hooks/commit-msg appeared during the session: a git hook",
		"cd/config appeared during the session and sets alias.st"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in\n%s", want, all)
		}
	}
	if len(reports) != 10 {
		t.Errorf("%d reports, want 10 (b unchanged, f names no program, node_modules not walked, no sample hook):\n%s", len(reports), all)
	}
	if _, complete := GitConfigs(context.Background(), []string{root}, 3); complete {
		t.Errorf("a walk past its limit says it is complete")
	}
}
