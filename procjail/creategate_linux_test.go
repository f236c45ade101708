//go:build linux

package procjail

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestParseStatus: the create gate reads a caller's umask, fs ids and
// numbers from its /proc/TID/status; a line it does not read changes
// nothing, a missing one is nil (the caller is then refused), and a later
// line of the same key wins.
func TestParseStatus(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want callerStatus
	}{
		{"all", "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t9\nNgid:\t0\nPid:\t11\nPPid:\t1\nUid:\t1000\t1000\t1000\t1000\nGid:\t100\t100\t100\t101\nGroups:\t\n",
			callerStatus{umask: []string{"0022"}, tgid: []string{"9"}, pid: []string{"11"}, uid: []string{"1000", "1000", "1000", "1000"}, gid: []string{"100", "100", "100", "101"}}},
		{"no final newline", "Umask:\t0077\nPid:\t3", callerStatus{umask: []string{"0077"}, pid: []string{"3"}}},
		{"missing lines", "Name:\tx\nState:\tR\n", callerStatus{}},
		{"later wins", "Pid:\t1\nPid:\t2\n", callerStatus{pid: []string{"2"}}},
		{"no colon", "Umask 0022\nTgid:\t5\n", callerStatus{tgid: []string{"5"}}},
		{"key is whole", "TracerPid:\t7\nPPid:\t8\nUmask:\t0002\n", callerStatus{umask: []string{"0002"}}},
		{"empty", "", callerStatus{}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.in] {
			t.Fatalf("duplicate input %q", c.in)
		}
		seen[c.in] = true
		got := parseStatus([]byte(c.in))
		if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(callerStatus{})); diff != "" {
			t.Errorf("%s: parseStatus (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestParseStatusSelf reads this process's own status as the gate reads
// a caller's.
func TestParseStatusSelf(t *testing.T) {
	var buf [4096]byte
	b, err := readSmallInto("/proc/self/status", buf[:])
	if err != nil {
		t.Fatal(err)
	}
	f := parseStatus(b)
	if len(f.uid) != 4 || f.uid[3] != strconv.Itoa(os.Getuid()) {
		t.Errorf("Uid %q, want 4 fields ending in %d", f.uid, os.Getuid())
	}
	if len(f.gid) != 4 || f.gid[3] != strconv.Itoa(os.Getgid()) {
		t.Errorf("Gid %q, want 4 fields ending in %d", f.gid, os.Getgid())
	}
	if firstField(f.tgid) != strconv.Itoa(os.Getpid()) || firstField(f.pid) != strconv.Itoa(os.Getpid()) {
		t.Errorf("Tgid %q Pid %q, want %d", f.tgid, f.pid, os.Getpid())
	}
	if _, err := strconv.ParseInt(firstField(f.umask), 8, 32); err != nil {
		t.Errorf("Umask %q: %v", f.umask, err)
	}
}

// TestGateLandlockRulesetOnce: the create gate's threads take the
// command's Landlock ruleset as it was made before the command started,
// not the write roots' paths as they are when a thread starts: a write
// root renamed away and replaced by a symlink to another directory gives
// a worker started after that no access there (in container mode,
// nothing mounted, the command could do it), while the root itself, under
// its new name, stays writable.
func TestGateLandlockRulesetOnce(t *testing.T) {
	if kernelLandlockABI() == 0 {
		t.Skip("no Landlock in this kernel")
	}
	// Not under /tmp, /var/tmp or /dev/shm, which the rules allow (nor
	// the checkout, which CI makes under /tmp): /run.
	base, err := os.MkdirTemp("/run", "procjail-llonce-")
	if err != nil {
		testenv.SkipOrFail(t, "a directory in /run: "+err.Error())
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	in, out, was := filepath.Join(base, "in"), filepath.Join(base, "out"), filepath.Join(base, "in-was")
	for _, d := range []string{in, out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := &createGate{fs: &FileSystem{Confine: true, WriteRoots: []string{in}}}
	if _, _, err := c.landlockRuleset(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(in, was); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, in); err != nil {
		t.Fatal(err)
	}
	offMainThread(func() {
		if err := c.prepareThread(); err != nil {
			t.Errorf("prepareThread: %v", err)
			return
		}
		llExpect(t, "a worker's create where the write root's path now leads", llTryCreate(filepath.Join(out, "x")), unix.EACCES)
		llExpect(t, "a worker's create through the symlink", llTryCreate(filepath.Join(in, "y")), unix.EACCES)
		llExpect(t, "a worker's create in the write root, renamed", llTryCreate(filepath.Join(was, "z")))
	})
}
