package proxytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestNewNetnsPrunesStale: a namespace left by a test process that is gone
// (killed before its cleanup ran) is deleted by the next NewNetns; one of
// a live process is kept.
func TestNewNetnsPrunesStale(t *testing.T) {
	testenv.NeedRoot(t)
	ip := testenv.NeedCommand(t, "ip")
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-1-1", netnsPrefix, gone.Process.Pid)
	live := fmt.Sprintf("%s%d-1-2", netnsPrefix, os.Getppid())
	for _, n := range []string{stale, live} {
		if out, err := exec.Command(ip, "netns", "add", n).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v: %s", n, err, out)
		}
		t.Cleanup(func() { exec.Command(ip, "netns", "delete", n).Run() })
	}
	NewNetns(t)
	if _, err := os.Stat(filepath.Join(netnsDir, stale)); !os.IsNotExist(err) {
		t.Errorf("%s (pid %d is gone) is still there: %v", stale, gone.Process.Pid, err)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, live)); err != nil {
		t.Errorf("%s (a live process's) was deleted: %v", live, err)
	}
}
