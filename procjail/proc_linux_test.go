//go:build linux

package procjail

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// mountinfo lines as a Docker container (runc, 20.10) shows them, and as
// a host does.
const (
	hostProc = `22 1 0:21 / /proc rw,relatime - proc proc rw
23 1 0:22 / /sys rw,relatime - sysfs sysfs rw
40 22 0:35 / /proc/sys/fs/binfmt_misc rw,relatime - autofs systemd-1 rw`
	dockerProc = `77 52 0:40 / / rw,relatime master:2 - overlay overlay rw
78 77 0:43 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
79 77 0:44 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
53 78 0:43 /bus /proc/bus ro,nosuid,nodev,noexec,relatime - proc proc rw
54 78 0:43 /fs /proc/fs ro,nosuid,nodev,noexec,relatime - proc proc rw
58 78 0:44 /null /proc/kcore rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
59 78 0:44 /null /proc/keys rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755`
)

func parseMountinfo(t *testing.T, s string) []mountEntry {
	t.Helper()
	var all []mountEntry
	for _, line := range strings.Split(s, "\n") {
		m, ok := parseMountLine(line)
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		all = append(all, m)
	}
	return all
}

func TestProcModeOf(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       ProcMode
		why        string
	}{
		{"host", hostProc, ProcFresh, ""},
		{"docker", dockerProc, ProcContainer, "/proc/bus, /proc/fs, /proc/kcore, /proc/keys"},
		{"docker with a visible procfs elsewhere", dockerProc + "\n90 77 0:50 / /mnt/proc rw - proc proc rw", ProcFresh, ""},
		{"read-only procfs", "22 1 0:21 / /proc ro,relatime - proc proc rw", ProcContainer, "no procfs mount"},
		{"procfs bound from a subdirectory", "22 1 0:21 /sys /proc rw,relatime - proc proc rw", ProcContainer, "no procfs mount"},
		{"no procfs", "23 1 0:22 / /sys rw,relatime - sysfs sysfs rw", ProcContainer, "no procfs mount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := procModeOf(parseMountinfo(t, tc.info))
			if got != tc.want || !strings.Contains(why, tc.why) {
				t.Errorf("procModeOf = %q, %q; want %q and a reason naming %q", got, why, tc.want, tc.why)
			}
		})
	}
}

// maskedProcEnv tells the test binary, re-executed by TestContainerProc,
// that it runs in a mount namespace whose /proc is masked as a container
// runtime masks it.
const maskedProcEnv = "BARRY_TEST_MASKED_PROC"

// TestContainerProc runs TestContainerProcInside in a mount namespace of
// its own whose /proc has /dev/null bound over /proc/timer_list, as Docker does:
// there the kernel refuses a fresh procfs to a user namespace.
func TestContainerProc(t *testing.T) {
	testenv.NeedRoot(t)
	unshare := testenv.NeedCommand(t, "unshare")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--propagation", "private", "/bin/sh", "-c",
		`mount --bind /dev/null /proc/timer_list && exec "$0" -test.run='^TestContainerProcInside$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), maskedProcEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestContainerProcInside") {
		t.Fatalf("in a masked /proc: %v\n%s", err, out)
	}
}

func TestContainerProcInside(t *testing.T) {
	testenv.Child(t, maskedProcEnv, "TestContainerProc")
	mode, why := ProbeProc()
	if mode != ProcContainer || !strings.Contains(why, "/proc/timer_list") {
		t.Fatalf("ProbeProc = %q, %q; want container, naming /proc/timer_list", mode, why)
	}
	ws := t.TempDir()
	confined := func(script string, proc ProcMode) Spec {
		s := sh(script)
		// The workspace is the working directory: the test's own may be
		// under /tmp, which the private /tmp covers.
		s.Dir = ws
		s.FileSystem = FileSystem{Confine: true, WriteRoots: []string{ws}}
		s.Proc = proc
		return s
	}

	// A fresh /proc is refused, and the refusal says why.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Start(ctx, confined("true", ProcFresh))
	if err == nil || !strings.Contains(err.Error(), "mount /proc") || !strings.Contains(err.Error(), "/proc/timer_list") {
		t.Fatalf("fresh /proc under a masked one: %v; want a refusal naming the mask", err)
	}

	// A process outside the sandbox, of the same user and dumpable.
	outside := exec.Command("sleep", "60")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	p := strconv.Itoa(outside.Process.Pid)
	script := `
cat /proc/` + p + `/cmdline | tr '\0' ' '; echo
for f in environ maps; do cat /proc/` + p + `/$f >/dev/null 2>&1 && echo "read $f"; done
for f in root cwd exe fd/0 ns/mnt; do readlink /proc/` + p + `/$f >/dev/null 2>&1 && echo "read $f"; done
ls /proc/` + p + `/root/ >/dev/null 2>&1 && echo "listed root"
kill -0 ` + p + ` 2>/dev/null && echo "signalled"
python3 -c 'import os, signal; signal.pidfd_send_signal(os.open("/proc/` + p + `", os.O_RDONLY), 0); print("pidfd signalled")' 2>/dev/null
python3 -c 'import os; print("python ran")'
echo x 2>/dev/null >/proc/self/comm && echo "wrote /proc"
grep -q '^NoNewPrivs:.*1' /proc/self/status && echo "status ok"
`
	code, out, stderr := run(t, confined(script, ProcContainer))
	if code != 0 {
		t.Fatalf("container /proc: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "sleep 60") {
		t.Errorf("the container's processes are listed (a documented limit), but the outside process's command line was not:\n%s", out)
	}
	if !strings.Contains(out, "status ok") || !strings.Contains(out, "python ran") {
		t.Errorf("/proc/self is not the command's own, or python3 did not run:\n%s", out)
	}
	for _, leak := range []string{"read ", "listed root", "signalled", "wrote /proc"} {
		if strings.Contains(out, leak) {
			t.Errorf("inside, through the container's /proc: %q\n%s", leak, out)
		}
	}
}
