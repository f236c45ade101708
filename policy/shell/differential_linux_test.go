//go:build linux

package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDifferentialBash confirms the classifier against the shell it models,
// as mvdan/sh confirms its parser against real shells: every parseable row
// of the table runs under a real bash in a throwaway root (bubblewrap: no
// network, a private /tmp, /usr/bin holding only recorders), where every
// program a line could name is a recorder that notes its name and does
// nothing else (bash and sh note it and run the real bash, so nested shells
// are followed). Every program bash actually ran must be among the programs
// the classifier reported: a program run but not reported is a false allow,
// by the test's construction and not the table's expectations. Wrappers
// (xargs, env, sudo) are recorders too, so what they would run is not
// observed: the test finds missed programs, not missed wrappers.
func TestDifferentialBash(t *testing.T) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed (apt-get install bubblewrap)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--unshare-all", "true").CombinedOutput(); err != nil {
		t.Skipf("bubblewrap cannot make a sandbox here: %v: %s", err, out)
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	recorder := "#!/rb/bash\nprintf '%s\\n' \"${0##*/}\" >> \"$RECORD\"\n"
	shell := "#!/rb/bash\nprintf '%s\\n' \"${0##*/}\" >> \"$RECORD\"\nexec /rb/bash \"$@\"\n"
	if err := os.WriteFile(filepath.Join(root, "recorder"), []byte(recorder), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "shell"), []byte(shell), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every word of every line that could name a program.
	names := map[string]bool{}
	reName := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9._+-]*`)
	for _, tc := range table {
		for _, w := range reName.FindAllString(tc.line, -1) {
			names[w] = true
		}
	}
	for n := range names {
		target := "/rec/recorder"
		if n == "bash" || n == "sh" {
			target = "/rec/shell"
		}
		if err := os.Symlink(target, filepath.Join(bin, n)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	ran, skipped, recorded := 0, 0, 0
	for i, tc := range table {
		c := Classify(tc.line)
		if c.Unparseable {
			skipped++ // refused whatever it runs
			continue
		}
		// A file per row: a background job of an earlier row (nohup …
		// &) may still be writing to its own.
		recName := "rec-" + strconv.Itoa(i) + ".txt"
		rec := filepath.Join(root, recName)
		work := filepath.Join(root, "work")
		os.RemoveAll(work)
		os.Mkdir(work, 0o755)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cmd := exec.CommandContext(ctx, bwrap,
			"--ro-bind", "/usr/lib", "/usr/lib", "--ro-bind-try", "/usr/lib64", "/usr/lib64",
			"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
			"--ro-bind", bash, "/rb/bash", "--ro-bind", root, "/rec", "--ro-bind", bin, "/usr/bin",
			"--symlink", "usr/bin", "/bin", "--bind", work, "/work", "--bind", root, "/out",
			"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
			"--unshare-all", "--die-with-parent", "--new-session", "--chdir", "/work", "--clearenv",
			"--setenv", "PATH", "/usr/bin", "--setenv", "RECORD", "/out/"+recName, "--setenv", "HOME", "/work",
			"/rb/bash", "-c", tc.line)
		cmd.Stdin = strings.NewReader("")
		cmd.Run()
		cancel()
		ran++
		b, _ := os.ReadFile(rec)
		if len(b) > 0 {
			recorded++
		}
		var missed []string
		for _, p := range strings.Fields(string(b)) {
			// As the classifier names programs: "GIT", "git.exe" and
			// "hub" run git.
			if n, _ := normalizeProgram(p); !slices.Contains(c.Programs, n) && !slices.Contains(missed, p) {
				missed = append(missed, p)
			}
		}
		if len(missed) > 0 {
			t.Errorf("%q: bash ran %v, which the classifier did not report (it reported %v)", tc.line, missed, c.Programs)
		}
	}
	t.Logf("%d rows run under bash (%d ran a program), %d unparseable rows skipped", ran, recorded, skipped)
	// Most rows run a program: a sandbox in which none did (a recorder
	// that cannot start) would pass every row above.
	if recorded < ran/2 {
		t.Errorf("only %d of %d rows ran a recorded program: the test's sandbox does not work", recorded, ran)
	}
}
