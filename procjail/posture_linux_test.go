//go:build linux

package procjail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commandHostPID finds the command's host PID among the init's children.
func commandHostPID(t *testing.T, initPID int) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", initPID))
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, s := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(s); err == nil {
					return pid
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("command process not found")
	return 0
}

func statusFields(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// TestPosture reads /proc/<pid>/{status,ns/*,uid_map,fd} of a real
// sandboxed process and checks them against what the sandbox promises.
func TestPosture(t *testing.T) {
	inR, inW, _ := os.Pipe()
	defer inW.Close()
	spec := Spec{Command: "cat", Env: []string{"PATH=/usr/bin:/bin"}, Stdin: inR, Stdout: os.Stdout, Stderr: os.Stderr}
	spec.ResolvConf = ResolvConf()
	sb, err := Start(context.Background(), spec)
	inR.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Kill()
	pid := commandHostPID(t, sb.InitPID())

	st := statusFields(t, pid)
	for k, want := range map[string]string{
		"NoNewPrivs": "1",
		"Seccomp":    "2",
		"CapInh":     "0000000000000000",
		"CapPrm":     "0000000000000000",
		"CapEff":     "0000000000000000",
		"CapBnd":     "0000000000000000",
		"CapAmb":     "0000000000000000",
		"NSpid":      fmt.Sprintf("%d\t%d", pid, sb.CommandPID()),
	} {
		if st[k] != want {
			t.Errorf("status %s = %q, want %q", k, st[k], want)
		}
	}
	if uid := strconv.Itoa(os.Getuid()); !strings.HasPrefix(st["Uid"], uid+"\t") {
		t.Errorf("Uid %q, want the caller's %s", st["Uid"], uid)
	}
	// The init: not dumpable (its /proc files are not readable to the
	// command), PID 1 inside.
	ist := statusFields(t, sb.InitPID())
	if ist["NSpid"] != fmt.Sprintf("%d\t1", sb.InitPID()) {
		t.Errorf("init NSpid %q", ist["NSpid"])
	}

	for _, ns := range []string{"user", "net", "pid", "mnt", "ipc", "uts"} {
		mine, _ := os.Readlink("/proc/self/ns/" + ns)
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err != nil || mine == theirs {
			t.Errorf("namespace %s: sandbox %q, host %q (%v): want a new one", ns, theirs, mine, err)
		}
	}

	uidMap, _ := os.ReadFile(fmt.Sprintf("/proc/%d/uid_map", pid))
	want := fmt.Sprintf("%d %d 1", os.Getuid(), os.Getuid())
	if os.Getuid() == 0 {
		want = "0 0 4294967295"
	}
	if got := strings.Join(strings.Fields(string(uidMap)), " "); got != want {
		t.Errorf("uid_map %q, want %q", got, want)
	}

	// The dynamic loader holds a library open for a moment while cat
	// starts; read the descriptors once the process has settled (blocked
	// reading stdin), for at most two seconds. A descriptor that stays open
	// still fails the test.
	var fds []string
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			t.Fatal(err)
		}
		fds = fds[:0]
		for _, e := range ents {
			fds = append(fds, e.Name())
		}
		sort.Strings(fds)
		if strings.Join(fds, ",") == "0,1,2" || time.Now().After(deadline) {
			break
		}
	}
	for _, fd := range fds {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd))
		t.Logf("fd %s -> %s", fd, l)
	}
	if got := strings.Join(fds, ","); got != "0,1,2" {
		t.Errorf("command fds %s, want only 0,1,2", got)
	}
}
