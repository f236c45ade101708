// Package testenv holds the test helpers shared across packages: whether a
// test that needs privileges (namespaces, root) may skip, or must fail
// because CI requires it.
package testenv

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// RequirePrivilegedEnv is the variable that turns skips of privileged tests
// into failures. scripts/test sets it when CI is set.
const RequirePrivilegedEnv = "BARRY_REQUIRE_PRIVILEGED"

// Required reports whether privileged tests must run.
func Required() bool { return os.Getenv(RequirePrivilegedEnv) == "1" }

// SkipOrFail skips the test with reason locally, and fails it when
// BARRY_REQUIRE_PRIVILEGED=1, so CI can never go green by skipping.
func SkipOrFail(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("required test cannot run (%s=1): %s", RequirePrivilegedEnv, reason)
	}
	t.Skip(reason)
}

// NeedRoot skips (or fails under CI) unless the test runs as root.
func NeedRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		SkipOrFail(t, "needs root")
	}
}

// NeedCommand skips (or fails under CI) unless name is on PATH, and returns
// its path.
func NeedCommand(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		SkipOrFail(t, name+" is not installed")
	}
	return p
}

// Serve accepts connections on ln until it is closed (at the end of the
// test), handling each in its own goroutine; handle need not close it.
func Serve(tb testing.TB, ln net.Listener, handle func(net.Conn)) {
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); handle(c) }()
		}
	}()
}

// HostPIDsWithArg returns the PIDs (in this PID namespace) whose argv
// contains arg.
func HostPIDsWithArg(arg string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if slices.Contains(strings.Split(string(b), "\x00"), arg) {
			pids = append(pids, pid)
		}
	}
	return pids
}
