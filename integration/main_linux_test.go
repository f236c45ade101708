//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
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
	base := os.TempDir()
	if fi, err := os.Stat("/run"); err == nil && fi.IsDir() && os.Geteuid() == 0 {
		base = "/run"
	}
	// The shareRoots of earlier test binaries killed before their cleanup
	// (the binaries they built and their tests' files, tens of megabytes).
	for _, stale := range testenv.LeftBehind(base, shareRootPrefix) {
		os.RemoveAll(filepath.Join(base, stale))
	}
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
	// The container image some tests build (docker_linux_test.go) is this
	// binary's, like shareRoot.
	defer removeContainerImage()
	return m.Run()
}

// shareRootPrefix names each test binary's shareRoot, with its pid:
// barry-integration-PID-RANDOM.
const shareRootPrefix = "barry-integration-"

// testLog is the Logf of a server that may log after its test has ended
// (a late request): lines go to t until Stop.
type testLog struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func newTestLog(t testing.TB) *testLog { return &testLog{t: t} }

// Logf logs to the test unless Stop was called.
func (l *testLog) Logf(f string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Logf(f, a...)
	}
}

// Stop ends the logging.
func (l *testLog) Stop() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}
