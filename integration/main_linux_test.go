//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// sandboxdBin and goClientBin are built once for all tests, in a directory
// every uid can read (the tests also run sandboxd as uid 65534).
var sandboxdBin, goClientBin, hookgateBin string

// shareRoot is a directory readable by every uid; see sharedDir.
var shareRoot string

func TestMain(m *testing.M) {
	os.Exit(mainWithBuild(m))
}

func mainWithBuild(m *testing.M) int {
	// Not under /tmp: the sandbox's /tmp is its own, and the tests' files
	// (binaries, certificates, scripts) must be visible inside.
	base := ""
	if fi, err := os.Stat("/run"); err == nil && fi.IsDir() && os.Geteuid() == 0 {
		base = "/run"
	}
	pruneStaleShareRoots(base)
	dir, err := os.MkdirTemp(base, fmt.Sprintf("%s%d-", shareRootPrefix, os.Getpid()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	shareRoot = dir
	sandboxdBin = filepath.Join(dir, "sandboxd")
	goClientBin = filepath.Join(dir, "goclient")
	hookgateBin = filepath.Join(dir, "hookgate")
	for out, pkg := range map[string]string{sandboxdBin: "../cmd/sandboxd", goClientBin: "./testdata/goclient", hookgateBin: "../cmd/hookgate"} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n", pkg, err)
			return 1
		}
	}
	return m.Run()
}

// shareRootPrefix names each test binary's shareRoot, with its pid:
// barry-integration-PID-RANDOM.
const shareRootPrefix = "barry-integration-"

// pruneStaleShareRoots removes the shareRoots under base that a test binary
// killed before its cleanup (a timeout, ^C) left behind: the binaries it
// built and its tests' files, tens of megabytes each. One whose process is
// gone is stale; a live one's is never touched.
func pruneStaleShareRoots(base string) {
	if base == "" {
		base = os.TempDir()
	}
	ents, _ := os.ReadDir(base)
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), shareRootPrefix)
		var pid int
		if !ok || !e.IsDir() {
			continue
		}
		if n, _ := fmt.Sscanf(rest, "%d-", &pid); n != 1 || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// TestPruneStaleShareRoots: a shareRoot of a process that is gone is
// removed, a live process's is kept.
func TestPruneStaleShareRoots(t *testing.T) {
	base := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(base, fmt.Sprintf("%s%d-1", shareRootPrefix, gone.Process.Pid))
	live := filepath.Join(base, fmt.Sprintf("%s%d-2", shareRootPrefix, os.Getppid()))
	for _, d := range []string{stale, live} {
		if err := os.MkdirAll(filepath.Join(d, "t-1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pruneStaleShareRoots(base)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s (pid %d is gone) is still there: %v", stale, gone.Process.Pid, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live process's %s was removed: %v", live, err)
	}
}
