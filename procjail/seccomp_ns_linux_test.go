//go:build linux

package procjail

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestSeccompSyscallNumbers: the filter's syscall numbers for this
// architecture are those of golang.org/x/sys/unix (seccomp_bpf_test.go
// checks both architectures against the kernel's tables).
func TestSeccompSyscallNumbers(t *testing.T) {
	arch, ok := seccompArches[runtime.GOARCH]
	if !ok {
		testenv.SkipOrFail(t, "no seccomp filter for "+runtime.GOARCH)
	}
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"socket", arch.Socket, unix.SYS_SOCKET},
		{"socketpair", arch.Socketpair, unix.SYS_SOCKETPAIR},
		{"ioctl", arch.Ioctl, unix.SYS_IOCTL},
		{"connect", arch.Connect, unix.SYS_CONNECT},
		{"add_key", arch.AddKey, unix.SYS_ADD_KEY},
		{"request_key", arch.AddKey + 1, unix.SYS_REQUEST_KEY},
		{"keyctl", arch.AddKey + 2, unix.SYS_KEYCTL},
		{"io_uring_setup", arch.IoUringBase, unix.SYS_IO_URING_SETUP},
		{"io_uring_register", arch.IoUringBase + 2, unix.SYS_IO_URING_REGISTER},
		{"mount", arch.Mount, unix.SYS_MOUNT},
		{"umount2", arch.Umount2, unix.SYS_UMOUNT2},
		{"pivot_root", arch.PivotRoot, unix.SYS_PIVOT_ROOT},
		{"setns", arch.Setns, unix.SYS_SETNS},
		{"unshare", arch.Unshare, unix.SYS_UNSHARE},
		{"clone", arch.Clone, unix.SYS_CLONE},
		{"clone3", arch.Clone3, unix.SYS_CLONE3},
		{"open_tree", arch.OpenTree, unix.SYS_OPEN_TREE},
		{"move_mount", arch.OpenTree + 1, unix.SYS_MOVE_MOUNT},
		{"fsopen", arch.OpenTree + 2, unix.SYS_FSOPEN},
		{"fsconfig", arch.OpenTree + 3, unix.SYS_FSCONFIG},
		{"fsmount", arch.OpenTree + 4, unix.SYS_FSMOUNT},
		{"fspick", arch.OpenTree + 5, unix.SYS_FSPICK},
		{"mount_setattr", arch.MountSetattr, unix.SYS_MOUNT_SETATTR},
		{"open_tree_attr", arch.OpenTreeAttr, unix.SYS_OPEN_TREE_ATTR},
	} {
		if c.got != c.want {
			t.Errorf("%s/%s: filter has %d, x/sys/unix %d", runtime.GOARCH, c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		got, want uint32
	}{
		{"CLONE_NEWNS", cloneNewNS, unix.CLONE_NEWNS},
		{"CLONE_NEWCGROUP", cloneNewCgroup, unix.CLONE_NEWCGROUP},
		{"CLONE_NEWUTS", cloneNewUTS, unix.CLONE_NEWUTS},
		{"CLONE_NEWIPC", cloneNewIPC, unix.CLONE_NEWIPC},
		{"CLONE_NEWUSER", cloneNewUser, unix.CLONE_NEWUSER},
		{"CLONE_NEWPID", cloneNewPID, unix.CLONE_NEWPID},
		{"CLONE_NEWNET", cloneNewNet, unix.CLONE_NEWNET},
		{"CLONE_NEWTIME", cloneNewTime, unix.CLONE_NEWTIME},
	} {
		if c.got != c.want {
			t.Errorf("%s: filter has %#x, x/sys/unix %#x", c.name, c.got, c.want)
		}
	}
}

// TestSeccompNamespaces: inside the sandbox, real programs cannot create
// namespaces, mount, or enter another namespace, while fork, threads,
// posix_spawn (glibc falls back from clone3 to clone), pipelines, Python's
// subprocess and Go's os/exec keep working.
func TestSeccompNamespaces(t *testing.T) {
	t.Run("shell", func(t *testing.T) {
		testenv.NeedCommand(t, "unshare")
		testenv.NeedCommand(t, "mount")
		target := "/mnt"
		if fi, err := os.Stat(target); err != nil || !fi.IsDir() {
			target = t.TempDir()
		}
		spec := sh(`for c in "unshare -rm true" "unshare -U true" "unshare -rn true" "mount -t tmpfs none $1"; do
	msg=$($c 2>&1 >/dev/null); echo "$c => $? $msg"
done
echo "ls => $(ls / | wc -l)"
echo "pipeline => $(printf 'a\nb\nc\n' | sort -r | head -n 1)"
echo "subshell => $( (sh -c 'echo nested') & wait)"`)
		spec.Args = append(spec.Args, "sh", target)
		code, out, stderr := run(t, spec)
		t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr)
		if code != 0 {
			t.Fatalf("exit %d", code)
		}
		lines := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			k, v, _ := strings.Cut(l, " => ")
			lines[k] = v
		}
		for _, c := range []string{"unshare -rm true", "unshare -U true", "unshare -rn true"} {
			if v := lines[c]; v != "1 unshare: unshare failed: Operation not permitted" {
				t.Errorf("%q: got %q, want exit 1 and EPERM", c, v)
			}
		}
		if v := lines["mount -t tmpfs none "+target]; v == "" || strings.HasPrefix(v, "0 ") {
			t.Errorf("mount: got %q, want a failure", v)
		}
		if n, err := strconv.Atoi(lines["ls"]); err != nil || n == 0 {
			t.Errorf("ls / | wc -l gave %q", lines["ls"])
		}
		if lines["pipeline"] != "c" || lines["subshell"] != "nested" {
			t.Errorf("pipeline %q, subshell %q", lines["pipeline"], lines["subshell"])
		}
	})

	t.Run("python", func(t *testing.T) {
		testenv.NeedCommand(t, "python3")
		code, out, stderr := run(t, Spec{Command: "python3", Args: []string{"-c", seccompPythonScript,
			strconv.Itoa(unix.SYS_CLONE), strconv.Itoa(unix.SYS_CLONE3), strconv.Itoa(unix.SYS_SETNS),
			strconv.Itoa(unix.SYS_PIVOT_ROOT), strconv.Itoa(unix.SYS_OPEN_TREE), strconv.Itoa(unix.SYS_FSOPEN),
			strconv.Itoa(unix.SYS_MOUNT_SETATTR)}})
		want := `unshare(CLONE_NEWUSER) EPERM
unshare(CLONE_NEWUSER|CLONE_NEWNS) EPERM
unshare(CLONE_NEWNET) EPERM
unshare(CLONE_FILES|CLONE_FS|CLONE_SYSVSEM) ok
setns(own user namespace) EPERM
mount EPERM
umount2 EPERM
pivot_root EPERM
open_tree EPERM
fsopen EPERM
mount_setattr EPERM
clone(CLONE_NEWUSER|SIGCHLD) EPERM
clone3(CLONE_NEWUSER) ENOSYS
clone3(0) ENOSYS
fork ok 7
thread ok
posix_spawn ok 0
subprocess ok 0
subprocess shell ok True
`
		if code != 0 || out != want {
			t.Fatalf("exit %d\nout  %q\nwant %q\nstderr %s", code, out, want, stderr)
		}
	})

	t.Run("go", func(t *testing.T) {
		prog := os.Getenv("PROCJAIL_SECCOMP_GOPROG")
		if prog == "" {
			prog = buildSeccompGoProg(t, t.TempDir())
		}
		code, out, stderr := run(t, Spec{Command: prog})
		t.Logf("stdout:\n%s\nstderr:\n%s", out, stderr)
		want := []string{
			`exec "child\n" <nil>`,
			"threads ok",
			"exec CLONE_NEWUSER: operation not permitted",
			"exec CLONE_NEWNET: operation not permitted",
			"unshare CLONE_NEWUSER: operation not permitted",
			"exec after refusals <nil>",
		}
		got := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(got) < len(want) {
			t.Fatalf("exit %d, out %q, stderr %q", code, out, stderr)
		}
		for i, w := range want {
			if got[i] != w {
				t.Errorf("line %d: %q, want %q", i, got[i], w)
			}
		}
		// Where Go's syscall package uses clone3 (and has no fallback),
		// starting a process fails: with ENOSYS, not EPERM.
		for _, l := range got[len(want):] {
			if !strings.HasSuffix(l, "function not implemented") {
				t.Errorf("%q: want ENOSYS", l)
			}
		}
	})
}

// seccompPythonScript takes the syscall numbers of clone, clone3, setns,
// pivot_root, open_tree, fsopen and mount_setattr. Python 3.11 has no
// os.unshare; every call goes through libc.
const seccompPythonScript = `
import ctypes, errno, os, subprocess, sys, threading
clone, clone3, setns, pivot_root, open_tree, fsopen, mount_setattr = map(int, sys.argv[1:])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x20000, 0x10000000, 0x40000000
CLONE_FS, CLONE_FILES, CLONE_SYSVSEM, SIGCHLD = 0x200, 0x400, 0x40000, 17

def report(name, r, child_exits=False):
    e = ctypes.get_errno()
    if r == 0 and child_exits:
        os._exit(0)  # the child of a clone that should have failed
    if r > 0 and child_exits:
        os.waitpid(r, 0)
    print(name, "ok" if r >= 0 else errno.errorcode.get(e, e))

def call(name, f, *args, child_exits=False):
    # In a child of its own, so that a call that succeeds (when the filter
    # is wrong) leaves the next ones unchanged.
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            ctypes.set_errno(0)
            report(name, f(*args), child_exits)
        finally:
            sys.stdout.flush()
            os._exit(0)
    os.waitpid(pid, 0)

call("unshare(CLONE_NEWUSER)", libc.unshare, CLONE_NEWUSER)
call("unshare(CLONE_NEWUSER|CLONE_NEWNS)", libc.unshare, CLONE_NEWUSER | CLONE_NEWNS)
call("unshare(CLONE_NEWNET)", libc.unshare, CLONE_NEWNET)
call("unshare(CLONE_FILES|CLONE_FS|CLONE_SYSVSEM)", libc.unshare, CLONE_FILES | CLONE_FS | CLONE_SYSVSEM)
# Without the filter this is EINVAL (one cannot enter one's own user
# namespace), not EPERM.
fd = os.open("/proc/self/ns/user", os.O_RDONLY)
call("setns(own user namespace)", libc.syscall, L(setns), L(fd), L(CLONE_NEWUSER))
os.close(fd)
call("mount", libc.mount, b"none", b"/tmp", b"tmpfs", L(0), None)
call("umount2", libc.umount2, b"/proc", 2)
call("pivot_root", libc.syscall, L(pivot_root), b".", b".")
# Without OPEN_TREE_CLONE, open_tree needs no capability: it would succeed.
call("open_tree", libc.syscall, L(open_tree), L(-100), b"/", L(0))
call("fsopen", libc.syscall, L(fsopen), b"tmpfs", L(0))
attr = (ctypes.c_uint64 * 4)()
call("mount_setattr", libc.syscall, L(mount_setattr), L(-100), b"/tmp", L(0), ctypes.byref(attr), L(32))
call("clone(CLONE_NEWUSER|SIGCHLD)", libc.syscall, L(clone), L(CLONE_NEWUSER | SIGCHLD), L(0), L(0), L(0), L(0), child_exits=True)
args = (ctypes.c_uint64 * 8)(CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0)
call("clone3(CLONE_NEWUSER)", libc.syscall, L(clone3), ctypes.byref(args), L(64), child_exits=True)
args = (ctypes.c_uint64 * 8)(0, 0, 0, 0, SIGCHLD, 0, 0, 0)
call("clone3(0)", libc.syscall, L(clone3), ctypes.byref(args), L(64), child_exits=True)

pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork ok", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
out = []
th = threading.Thread(target=lambda: out.append("ok"))
th.start()
th.join()
print("thread", out[0])
pid = os.posix_spawn("/bin/true", ["true"], os.environ)
print("posix_spawn ok", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print("subprocess ok", subprocess.run(["true"]).returncode)
r = subprocess.run("ls / | wc -l", shell=True, capture_output=True, text=True)
print("subprocess shell ok", r.returncode == 0 and int(r.stdout) > 0)
`

// seccompGoProg starts processes with os/exec, and tries to start them in
// new namespaces.
const seccompGoProg = `package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

func main() {
	out, err := exec.Command("sh", "-c", "echo child").Output()
	fmt.Printf("exec %q %v\n", out, err)

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the thread exits with the goroutine: the runtime makes new ones
			exec.Command("true").Run()
		}()
	}
	wg.Wait()
	fmt.Println("threads ok")

	try := func(name string, attr *syscall.SysProcAttr) {
		cmd := exec.Command("true")
		cmd.SysProcAttr = attr
		err := cmd.Run()
		var errno syscall.Errno
		if errors.As(err, &errno) {
			err = errno // without "fork/exec /usr/bin/true: "
		}
		fmt.Printf("%s: %v\n", name, err)
	}
	try("exec CLONE_NEWUSER", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER})
	try("exec CLONE_NEWNET", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET})
	fmt.Printf("unshare CLONE_NEWUSER: %v\n", syscall.Unshare(syscall.CLONE_NEWUSER))
	fmt.Println("exec after refusals", exec.Command("true").Run())

	// Go uses clone3, with no fallback to clone, for these two.
	try("exec CLONE_NEWUSER|CLONE_NEWTIME (clone3)", &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWTIME})
	cg, err := os.Open("/sys/fs/cgroup")
	if err == nil {
		try("exec UseCgroupFD (clone3)", &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())})
	}
}
`

// buildSeccompGoProg builds seccompGoProg into dir.
func buildSeccompGoProg(t *testing.T, dir string) string {
	t.Helper()
	goTool := testenv.NeedCommand(t, "go")
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(seccompGoProg), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "seccompprog")
	cmd := exec.Command(goTool, "build", "-o", prog, "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOTOOLCHAIN=local", "GO111MODULE=on", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return prog
}

// TestSeccompNamespacesUnprivileged runs TestSeccompNamespaces again as uid
// 65534 (as TestUnprivileged does for the other jail tests), failing
// rather than skipping.
func TestSeccompNamespacesUnprivileged(t *testing.T) {
	testenv.NeedRoot(t)
	testenv.NotInChild(t, "PROCJAIL_UNPRIVILEGED_CHILD", "already unprivileged")
	dir, exe, tmp := nobodyCopy(t)
	// Built here: uid 65534 may have no Go toolchain or build cache.
	prog := buildSeccompGoProg(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "-test.count=1", "-test.v", "-test.run", "^TestSeccompNamespaces$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + tmp, "TMPDIR=" + tmp,
		"PROCJAIL_UNPRIVILEGED_CHILD=1", "PROCJAIL_SECCOMP_GOPROG=" + prog, testenv.RequirePrivilegedEnv + "=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("TestSeccompNamespaces as uid 65534 failed: %v\n%s", err, out)
	}
	for _, name := range []string{"shell", "python", "go"} {
		if !strings.Contains(string(out), fmt.Sprintf("--- PASS: TestSeccompNamespaces/%s", name)) {
			t.Fatalf("TestSeccompNamespaces/%s as uid 65534 did not pass:\n%s", name, out)
		}
	}
	t.Logf("as uid 65534:\n%s", out)
}
