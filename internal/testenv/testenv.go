// Package testenv holds the test helpers shared across packages: whether a
// test that needs privileges (namespaces, root) may skip, or must fail
// because CI requires it.
//
// Every skip in the repository's tests goes through this package, in one of
// two kinds:
//
//   - A test that cannot run here for want of something CI provides (root,
//     namespaces, a kernel feature, a program, IPv6 loopback) calls
//     SkipOrFail, NeedRoot or NeedCommand: it skips locally and fails when
//     BARRY_REQUIRE_PRIVILEGED=1, so CI can never go green by skipping.
//   - A test that is not meant to run in this process at all skips through a
//     helper that never fails, each for one stated reason: OnlyOn (the test is
//     for another platform; CI runs Linux), OptIn (a measurement that asserts
//     nothing, run by the script that sets its variable), SkipIfShort (the
//     runner asked for -short), Child and NotInChild (the entry point of a
//     parent test's child process, which the parent judges).
package testenv

import (
	"net"
	"os"
	"os/exec"
	"runtime"
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

// OnlyOn skips the test unless it runs on one of goos (runtime.GOOS
// values). It never fails: a platform is a property of the build, and CI
// runs the tests of the platform it builds (Linux); the others run where
// they build (the darwin tests on a Mac).
func OnlyOn(t testing.TB, goos ...string) {
	t.Helper()
	if !slices.Contains(goos, runtime.GOOS) {
		t.Skipf("runs on %s only, not %s", strings.Join(goos, ", "), runtime.GOOS)
	}
}

// OptIn skips the test unless the variable env is "1". It is for tests that
// measure and print (timing tables) and assert nothing a regression would
// break, run by the script named in how; it never fails.
func OptIn(t testing.TB, env, how string) {
	t.Helper()
	if os.Getenv(env) != "1" {
		t.Skipf("set %s=1 (%s)", env, how)
	}
}

// SkipIfShort skips the test under go test -short, saying why it is long
// (reason). It never fails: the runner asked for the short set, and
// scripts/test never passes -short.
func SkipIfShort(t testing.TB, reason string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + reason)
	}
}

// Child returns the value of env, the variable a parent test sets when it
// runs this test binary again to run this test in a child process, and
// skips the test when env is unset: the test is the child's entry point,
// and parent (the test that runs it) fails when the child does not pass. It
// never fails.
func Child(t testing.TB, env, parent string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("run by %s in a child process (%s set)", parent, env)
	}
	return v
}

// NotInChild skips the test in a child process (env set) that its parent
// test made to run the whole package again (as another user, say), so the
// parent does not run itself there; reason says what the child already is.
// It never fails: the test runs, and is judged, in the parent.
func NotInChild(t testing.TB, env, reason string) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Skipf("%s (%s set)", reason, env)
	}
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
