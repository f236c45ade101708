//go:build linux

package procjail

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestAccessAs: the answers are uid's, and the calling thread has root's
// ids and groups back afterwards (no thread is ended for it).
func TestAccessAs(t *testing.T) {
	testenv.NeedRoot(t)
	dir, err := os.MkdirTemp("", "access-as-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	const uid = 1_700_000_001
	mine, theirs, shut := filepath.Join(dir, "mine"), filepath.Join(dir, "theirs"), filepath.Join(dir, "shut")
	os.WriteFile(mine, nil, 0o600)
	os.Chown(mine, uid, uid)
	os.WriteFile(theirs, nil, 0o644)
	os.WriteFile(shut, nil, 0o600)
	before, _ := unix.Getgroups()
	r, err := AccessAs(uid, uid, []string{mine, theirs, shut}, AccessRead)
	if err != nil || !slices.Equal(r, []string{mine, theirs}) {
		t.Errorf("readable as %d: %v, %v; want mine and theirs", uid, r, err)
	}
	w, err := AccessAs(uid, uid, []string{mine, theirs, shut, dir}, AccessWrite)
	if err != nil || !slices.Equal(w, []string{mine}) {
		t.Errorf("writable as %d: %v, %v; want mine", uid, w, err)
	}
	after, _ := unix.Getgroups()
	if os.Geteuid() != 0 || os.Getegid() != 0 || !slices.Equal(before, after) {
		t.Errorf("after AccessAs: euid %d egid %d groups %v (before %v)", os.Geteuid(), os.Getegid(), after, before)
	}
}
