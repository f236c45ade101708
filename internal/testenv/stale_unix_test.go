//go:build unix

package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
)

// TestLeftBehind: an entry named for a process that is gone is named; a
// live process's, this one's and one that does not follow the pattern are
// not.
func TestLeftBehind(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("x-%d-1", gone.Process.Pid)
	for _, n := range []string{stale, fmt.Sprintf("x-%d-2", os.Getppid()), fmt.Sprintf("x-%d-3", os.Getpid()), "x-notapid-4", fmt.Sprintf("y-%d-5", gone.Process.Pid)} {
		if err := os.Mkdir(dir+"/"+n, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := LeftBehind(dir, "x-"); !slices.Equal(got, []string{stale}) {
		t.Errorf("LeftBehind = %q, want [%s] (pid %d is gone)", got, stale, gone.Process.Pid)
	}
}
