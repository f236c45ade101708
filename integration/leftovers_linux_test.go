//go:build linux

package integration

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// killHomeLeftovers waits up to 2 s for the processes still running with
// home as their HOME to end (a harness run's hooks and their watchdogs),
// then kills and reports those left (a hung hook's children). what names
// the harness in the log.
func killHomeLeftovers(t *testing.T, home, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		pids := pidsWithHome(home)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				t.Logf("left running 2 s after %s exited: pid %d %q; killing it", what, pid,
					strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
				syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pidsWithHome lists the live processes whose environment sets HOME to
// home (a test box's processes: nothing else has that home).
func pidsWithHome(home string) []int {
	want := []byte("HOME=" + home + "\x00")
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.HasPrefix(env, want) && !bytes.Contains(env, append([]byte{0}, want...)) {
			continue
		}
		if st, _ := os.ReadFile("/proc/" + e.Name() + "/stat"); bytes.Contains(st, []byte(") Z ")) {
			continue // a zombie, waiting for its parent
		}
		pids = append(pids, pid)
	}
	return pids
}
