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

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// recorderJail is the throwaway root the differential tests run lines in
// (bubblewrap: no network, a private /tmp, /usr/bin holding only
// recorders): every program a line could name is a recorder that notes
// its name and does nothing else; bash and sh note it and run the real
// bash, so nested shells are followed; an interpreter (interps) notes it
// and runs the real interpreter, so the code it is given runs.
type recorderJail struct {
	bwrap, bash string
	root, bin   string
	interps     map[string]string // name in /usr/bin → real binary, bound at /ri/NAME
	binds       []string          // extra read-only binds the interpreters need
	n           int
}

// newRecorderJail makes the jail for lines; names run as interpreters
// (the real one at the path given) and shNoRecord says whether sh runs
// bash without noting itself (an interpreter's system() runs /bin/sh,
// which the classifier rightly does not report). It skips the test, or
// fails it under BARRY_REQUIRE_PRIVILEGED=1, when bubblewrap is missing
// or cannot make a sandbox.
func newRecorderJail(t *testing.T, lines []string, interps map[string]string, shNoRecord bool) *recorderJail {
	t.Helper()
	bwrap := testenv.NeedCommand(t, "bwrap")
	bash := testenv.NeedCommand(t, "bash")
	if out, err := exec.Command(bwrap, "--ro-bind", "/", "/", "--unshare-all", "true").CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "bubblewrap cannot make a sandbox here: "+err.Error()+": "+string(out))
	}
	j := &recorderJail{bwrap: bwrap, bash: bash, root: t.TempDir(), interps: interps}
	j.bin = filepath.Join(j.root, "bin")
	if err := os.Mkdir(j.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := map[string]string{
		"recorder": "#!/rb/bash\nprintf '%s\\n' \"${0##*/}\" >> \"$RECORD\"\n",
		"shell":    "#!/rb/bash\nprintf '%s\\n' \"${0##*/}\" >> \"$RECORD\"\nexec /rb/bash \"$@\"\n",
		"interp":   "#!/rb/bash\nprintf '%s\\n' \"${0##*/}\" >> \"$RECORD\"\nexec \"/ri/${0##*/}\" \"$@\"\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(j.root, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Every word of every line that could name a program.
	names := map[string]bool{}
	reName := regexp.MustCompile(`[A-Za-z_][A-Za-z0-9._+-]*`)
	for _, l := range lines {
		for _, w := range reName.FindAllString(l, -1) {
			names[w] = true
		}
	}
	for n := range interps {
		names[n] = true
	}
	names["sh"], names["bash"] = true, true
	for n := range names {
		target := "/rec/recorder"
		switch {
		case n == "sh" && shNoRecord:
			target = "/rb/bash"
		case n == "bash" || n == "sh":
			target = "/rec/shell"
		case interps[n] != "":
			target = "/rec/interp"
		}
		if err := os.Symlink(target, filepath.Join(j.bin, n)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	return j
}

// run runs line under bash in the jail and returns the programs it ran,
// in order, and bash's exit status.
func (j *recorderJail) run(line string) ([]string, int) {
	// A file per line: a background job of an earlier line (nohup … &)
	// may still be writing to its own.
	j.n++
	recName := "rec-" + strconv.Itoa(j.n) + ".txt"
	work := filepath.Join(j.root, "work")
	os.RemoveAll(work)
	os.Mkdir(work, 0o755)
	args := []string{
		"--ro-bind", "/usr/lib", "/usr/lib", "--ro-bind-try", "/usr/lib64", "/usr/lib64",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
		"--ro-bind", j.bash, "/rb/bash", "--ro-bind", j.root, "/rec", "--ro-bind", j.bin, "/usr/bin",
		"--symlink", "usr/bin", "/bin", "--bind", work, "/work", "--bind", j.root, "/out",
		"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
	}
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range j.interps {
			if !yield(n) {
				return
			}
		}
	}) {
		args = append(args, "--ro-bind", j.interps[n], "/ri/"+n)
	}
	for _, b := range j.binds {
		args = append(args, "--ro-bind-try", b, b)
	}
	args = append(args, "--unshare-all", "--die-with-parent", "--new-session", "--chdir", "/work", "--clearenv",
		"--setenv", "PATH", "/usr/bin", "--setenv", "RECORD", "/out/"+recName, "--setenv", "HOME", "/work",
		"/rb/bash", "-c", line)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, j.bwrap, args...)
	cmd.Stdin = strings.NewReader("")
	status := 0
	if err := cmd.Run(); err != nil {
		status = -1
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		}
	}
	b, _ := os.ReadFile(filepath.Join(j.root, recName))
	return strings.Fields(string(b)), status
}

// missed returns the programs in ran that c does not report, as the
// classifier names programs ("GIT", "git.exe" and "hub" run git).
func missed(c Classification, ran []string) []string {
	var out []string
	for _, p := range ran {
		if n, _ := normalizeProgram(p); !slices.Contains(c.Programs, n) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// TestDifferentialBash confirms the classifier against the shell it models,
// as mvdan/sh confirms its parser against real shells: every parseable row
// of the table runs under a real bash in the recorder jail. Every program
// bash actually ran must be among the programs the classifier reported: a
// program run but not reported is a false allow, by the test's
// construction and not the table's expectations. Wrappers (xargs, env,
// sudo) are recorders too, so what they would run is not observed: the
// test finds missed programs, not missed wrappers.
func TestDifferentialBash(t *testing.T) {
	var lines []string
	for _, tc := range table {
		lines = append(lines, tc.line)
	}
	j := newRecorderJail(t, lines, nil, false)
	ran, skipped, recorded := 0, 0, 0
	for _, tc := range table {
		c := Classify(tc.line)
		if c.Unparseable {
			skipped++ // refused whatever it runs
			continue
		}
		progs, _ := j.run(tc.line)
		ran++
		if len(progs) > 0 {
			recorded++
		}
		if m := missed(c, progs); len(m) > 0 {
			t.Errorf("%q: bash ran %v, which the classifier did not report (it reported %v)", tc.line, m, c.Programs)
		}
	}
	t.Logf("%d rows run under bash (%d ran a program), %d unparseable rows skipped", ran, recorded, skipped)
	// Most rows run a program: a sandbox in which none did (a recorder
	// that cannot start) would pass every row above.
	if recorded < ran/2 {
		t.Errorf("only %d of %d rows ran a recorded program: the test's sandbox does not work", recorded, ran)
	}
}

// inlineInterpreters are the interpreters whose inline code
// TestDifferentialInline runs for real: the names a row may use for each,
// the binary to look for, a line that must run git under it (the jail's
// check that the interpreter starts and its code runs programs), and the
// directories outside /usr/lib its library lives in.
var inlineInterpreters = []struct {
	family string
	names  []string
	binary string
	canary string
	binds  []string
}{
	{"python", []string{"python3", "python"}, "python3", `python3 -c 'import subprocess; subprocess.run(["git", "status"])'`, nil},
	{"node", []string{"node", "nodejs"}, "node", `node -e 'require("child_process").execFileSync("git", ["status"])'`, nil},
	{"perl", []string{"perl"}, "perl", `perl -e 'system("git", "status")'`, []string{"/usr/share/perl", "/usr/share/perl5", "/etc/perl"}},
	{"ruby", []string{"ruby"}, "ruby", `ruby -e 'system("git", "status")'`, []string{"/usr/share/ruby", "/var/lib/gems", "/usr/share/rubygems-integration"}},
}

// TestDifferentialInline is TestDifferentialBash for inline interpreter
// code: every parseable row of the tables that runs python,
// node, perl or ruby code runs under the real interpreter in the recorder
// jail, where a program the code runs is a recorder, and every program
// that ran must be one the classifier reported. It is how code that
// reaches exec under another name (import … as, getattr, a pipe open) is
// caught when the classifier reads it as running nothing. sh is not
// recorded here: system() and execSync run /bin/sh, an implementation
// detail the classifier does not report; what sh runs is recorded. An
// interpreter that is not installed skips its subtest, or fails it under
// BARRY_REQUIRE_PRIVILEGED=1.
func TestDifferentialInline(t *testing.T) {
	var all []tcase
	for _, rows := range [][]tcase{table, bypassTable, inlineTable} {
		all = append(all, rows...)
	}
	for _, in := range inlineInterpreters {
		t.Run(in.family, func(t *testing.T) {
			// The system's interpreter: the jail shows /usr/lib, not a
			// version manager's tree (a pyenv shim is a script).
			real := "/usr/bin/" + in.binary
			if _, err := os.Stat(real); err != nil {
				real = testenv.NeedCommand(t, in.binary)
			}
			if r, err := filepath.EvalSymlinks(real); err == nil {
				real = r
			}
			var rows []string
			for _, tc := range all {
				c := Classify(tc.line)
				for _, n := range in.names {
					if slices.Contains(c.Programs, n) && !slices.Contains(rows, tc.line) {
						rows = append(rows, tc.line)
					}
				}
			}
			interps := map[string]string{}
			for _, n := range in.names {
				interps[n] = real
			}
			j := newRecorderJail(t, append([]string{in.canary}, rows...), interps, true)
			j.binds = in.binds
			if progs, status := j.run(in.canary); !slices.Contains(progs, "git") {
				t.Fatalf("%q ran %v (exit %d) in the jail, not git: the interpreter does not run there", in.canary, progs, status)
			}
			ran, skipped := 0, 0
			for _, line := range rows {
				c := Classify(line)
				if c.Unparseable {
					skipped++ // refused whatever it runs
					continue
				}
				progs, _ := j.run(line)
				ran++
				if m := missed(c, progs); len(m) > 0 {
					t.Errorf("%q: the code ran %v, which the classifier did not report (it reported %v)", line, m, c.Programs)
				}
			}
			t.Logf("%d %s rows run, %d unparseable rows skipped", ran, in.family, skipped)
			if ran == 0 {
				t.Errorf("no parseable %s row: the test checks nothing", in.family)
			}
		})
	}
}
