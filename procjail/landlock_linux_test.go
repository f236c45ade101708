//go:build linux

package procjail

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// restrictLandlock restricts the calling thread, so every test that
// applies it runs in a helper process: the test binary re-executed with
// -test.run=^TestLandlockHelper$ and the scenario in landlockHelperEnv.
// In the helper, each restriction happens on a goroutine locked to its OS
// thread that exits locked (the runtime then ends the thread), and the
// checks are raw system calls made on that same thread.
const (
	landlockHelperEnv = "PROCJAIL_LANDLOCK_HELPER"
	landlockDirEnv    = "PROCJAIL_LANDLOCK_DIR"
)

// kernelLandlockABI asks the kernel directly (0: no Landlock).
func kernelLandlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

func runLandlockHelper(t *testing.T, scenario string) {
	t.Helper()
	if kernelLandlockABI() == 0 {
		testenv.SkipOrFail(t, "the kernel has no Landlock")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLandlockHelper$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), landlockHelperEnv+"="+scenario, landlockDirEnv+"="+dir,
		"GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0") // no 1s pause at exit under -race
	out, err := cmd.CombinedOutput()
	if err == nil && bytes.Contains(out, []byte("--- SKIP: TestLandlockHelper")) {
		testenv.SkipOrFail(t, fmt.Sprintf("helper %q skipped:\n%s", scenario, out))
	}
	if err != nil || !bytes.Contains(out, []byte("--- PASS: TestLandlockHelper")) {
		t.Fatalf("helper %q: %v\n%s", scenario, err, out)
	}
	t.Logf("helper %q:\n%s", scenario, out)
}

func TestLandlockHelper(t *testing.T) {
	scenario := testenv.Child(t, landlockHelperEnv, "the Landlock tests")
	f, ok := landlockScenarios[scenario]
	if !ok {
		t.Fatalf("no scenario %q", scenario)
	}
	f(t, os.Getenv(landlockDirEnv))
}

var landlockScenarios = map[string]func(t *testing.T, dir string){
	"write":      landlockWriteScenario,
	"read":       landlockReadScenario,
	"writefile":  landlockWriteFileScenario,
	"singlefile": landlockSingleFileScenario,
	"scope":      landlockScopeScenario,
	"threads":    landlockThreadsScenario,
	"errors":     landlockErrorsScenario,
	"abis":       landlockABIsScenario,
	"mainthread": landlockMainThreadScenario,
}

func TestLandlockWrite(t *testing.T)      { runLandlockHelper(t, "write") }
func TestLandlockRead(t *testing.T)       { runLandlockHelper(t, "read") }
func TestLandlockWriteFile(t *testing.T)  { runLandlockHelper(t, "writefile") }
func TestLandlockSingleFile(t *testing.T) { runLandlockHelper(t, "singlefile") }
func TestLandlockScope(t *testing.T)      { runLandlockHelper(t, "scope") }
func TestLandlockThreads(t *testing.T)    { runLandlockHelper(t, "threads") }
func TestLandlockErrors(t *testing.T)     { runLandlockHelper(t, "errors") }
func TestLandlockABIs(t *testing.T)       { runLandlockHelper(t, "abis") }
func TestLandlockMainThread(t *testing.T) { runLandlockHelper(t, "mainthread") }

// TestLandlockOffMainThread: offMainThread's f never runs on the main
// thread, even when the goroutine it starts first lands there.
func TestLandlockOffMainThread(t *testing.T) {
	for range 50 {
		var tid int
		offMainThread(func() { tid = unix.Gettid() })
		if tid == 0 || tid == unix.Getpid() {
			t.Fatalf("f ran on thread %d, the process is %d", tid, unix.Getpid())
		}
	}
}

func TestLandlockVersion(t *testing.T) {
	for _, tc := range []struct {
		v       int
		err     error
		want    int
		wantErr bool
	}{
		{7, nil, 7, false},
		{1, nil, 1, false},
		{-1, unix.ENOSYS, 0, false},
		{-1, unix.EOPNOTSUPP, 0, false},
		{-1, unix.EPERM, 0, true},
		{0, nil, 0, true},
	} {
		got, err := landlockVersion(tc.v, tc.err)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("landlockVersion(%d, %v) = %d, %v; want %d, error %v", tc.v, tc.err, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestLandlockFSRights(t *testing.T) {
	abi1 := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM)
	abi2 := abi1 | unix.LANDLOCK_ACCESS_FS_REFER
	abi3 := abi2 | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	abi5 := abi3 | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	for abi, want := range map[int]uint64{0: 0, 1: abi1, 2: abi2, 3: abi3, 4: abi3, 5: abi5, 6: abi5, 7: abi5} {
		if got := landlockFSRights(abi); got != want {
			t.Errorf("landlockFSRights(%d) = %#x, want %#x", abi, got, want)
		}
	}
	// The kernel's ACCESS_FILE (security/landlock/fs.c).
	file := uint64(unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV)
	if llFileOnly != file {
		t.Errorf("llFileOnly = %#x, want %#x", llFileOnly, file)
	}
	if all := uint64(llRead | llWrite); all != abi5 {
		t.Errorf("llRead|llWrite = %#x, want every right of ABI 5..7 %#x", all, abi5)
	}
	if llScope != unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET|unix.LANDLOCK_SCOPE_SIGNAL {
		t.Errorf("llScope = %#x", llScope)
	}
}

// onLandlockedThread runs f with offMainThread, after setting
// no_new_privs on its thread and restricting it with restrict (nil:
// restrictLandlock). The goroutine exits locked: the runtime ends the
// restricted thread.
func onLandlockedThread(t *testing.T, r landlockRules, restrict func(landlockRules) (int, error), f func(abi int)) {
	t.Helper()
	if restrict == nil {
		restrict = restrictLandlock
	}
	offMainThread(func() {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			t.Errorf("no_new_privs: %v", err)
			return
		}
		abi, err := restrict(r)
		if err != nil {
			t.Errorf("restrictLandlock(%+v): %v", r, err)
			return
		}
		f(abi)
	})
}

// llExpect checks err: nil when want is empty, else one of want.
func llExpect(t *testing.T, what string, err error, want ...unix.Errno) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: %v, want success", what, err)
		}
		return
	}
	for _, w := range want {
		if errors.Is(err, w) {
			return
		}
	}
	t.Errorf("%s: %v, want %v", what, err, want)
}

// Raw file operations, made on the calling thread.

func llTryCreate(p string) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

func llTryWrite(p string, flags int) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC|flags, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Write(fd, []byte("x"))
	return err
}

func llTryRead(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Read(fd, make([]byte, 16))
	return err
}

func llTryReadDir(p string) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Getdents(fd, make([]byte, 4096))
	return err
}

// llTryTCP listens on 127.0.0.1 and connects to it.
func llTryTCP() error {
	l, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(l)
	if err := unix.Bind(l, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(l, 1); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(l)
	if err != nil {
		return err
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(c)
	if err := unix.Connect(c, sa); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	return nil
}

// llExists stats p (allowed whatever the domain).
func llExists(p string) bool {
	var st unix.Stat_t
	return unix.Lstat(p, &st) == nil
}

// llTree makes dirs (names ending in /) and files beneath dir.
func llTree(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(dir, n)
		var err error
		if strings.HasSuffix(n, "/") {
			err = os.MkdirAll(p, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte("data\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// llCountFDs counts the process's open descriptors.
func llCountFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func landlockWriteScenario(t *testing.T, dir string) {
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	llTree(t, dir, "in/a.txt", "in/c.txt", "in/sub1/", "in/sub2/", "in/rmdir/",
		"out/b.txt", "out/rmdir/")
	llCountFDs(t) // warm up whatever the runtime opens once
	fds := llCountFDs(t)
	want := kernelLandlockABI()
	onLandlockedThread(t, landlockRules{WriteBeneath: []string{in}}, nil, func(abi int) {
		if abi != want {
			t.Errorf("abi = %d, the kernel says %d", abi, want)
		}
		t.Logf("abi %d", abi)
		j := func(d, n string) string { return filepath.Join(d, n) }
		// Inside: everything.
		llExpect(t, "create inside", llTryCreate(j(in, "new")))
		llExpect(t, "write inside", llTryWrite(j(in, "a.txt"), 0))
		llExpect(t, "open O_TRUNC inside", llTryWrite(j(in, "a.txt"), unix.O_TRUNC))
		llExpect(t, "truncate inside", unix.Truncate(j(in, "a.txt"), 0))
		llExpect(t, "mkdir inside", unix.Mkdir(j(in, "newdir"), 0o755))
		llExpect(t, "rename inside", unix.Rename(j(in, "new"), j(in, "renamed")))
		llExpect(t, "rename between dirs inside", unix.Rename(j(in, "renamed"), j(in, "sub1/moved")))
		llExpect(t, "symlink inside", unix.Symlink("a.txt", j(in, "sym")))
		llExpect(t, "hardlink inside", unix.Link(j(in, "a.txt"), j(in, "hard")))
		llExpect(t, "hardlink between dirs inside", unix.Link(j(in, "a.txt"), j(in, "sub2/hard")))
		llExpect(t, "mkfifo inside", unix.Mkfifo(j(in, "fifo"), 0o644))
		llExpect(t, "unlink inside", unix.Unlink(j(in, "hard")))
		llExpect(t, "rmdir inside", unix.Rmdir(j(in, "rmdir")))
		llExpect(t, "read inside", llTryRead(j(in, "c.txt")))
		// Outside: no write of any kind.
		llExpect(t, "create outside", llTryCreate(j(out, "new")), unix.EACCES)
		llExpect(t, "write outside", llTryWrite(j(out, "b.txt"), 0), unix.EACCES)
		llExpect(t, "truncate outside", unix.Truncate(j(out, "b.txt"), 0), unix.EACCES)
		llExpect(t, "mkdir outside", unix.Mkdir(j(out, "newdir"), 0o755), unix.EACCES)
		llExpect(t, "rename outside", unix.Rename(j(out, "b.txt"), j(out, "b2.txt")), unix.EACCES)
		llExpect(t, "symlink outside", unix.Symlink("b.txt", j(out, "sym")), unix.EACCES)
		llExpect(t, "hardlink outside", unix.Link(j(out, "b.txt"), j(out, "hard")), unix.EACCES)
		llExpect(t, "mkfifo outside", unix.Mkfifo(j(out, "fifo"), 0o644), unix.EACCES)
		llExpect(t, "unlink outside", unix.Unlink(j(out, "b.txt")), unix.EACCES)
		llExpect(t, "rmdir outside", unix.Rmdir(j(out, "rmdir")), unix.EACCES)
		llExpect(t, "create in the parent", llTryCreate(j(dir, "new")), unix.EACCES)
		// Across: in → out and out → in are both refused.
		llExpect(t, "rename inside to outside", unix.Rename(j(in, "c.txt"), j(out, "c.txt")), unix.EACCES, unix.EXDEV)
		llExpect(t, "rename outside to inside", unix.Rename(j(out, "b.txt"), j(in, "b.txt")), unix.EACCES, unix.EXDEV)
		llExpect(t, "hardlink inside to outside", unix.Link(j(in, "c.txt"), j(out, "c.txt")), unix.EACCES, unix.EXDEV)
		llExpect(t, "hardlink outside to inside", unix.Link(j(out, "b.txt"), j(in, "b.txt")), unix.EACCES, unix.EXDEV)
		if !llExists(j(in, "c.txt")) || llExists(j(out, "c.txt")) || llExists(j(in, "b.txt")) {
			t.Errorf("a refused rename or link moved something")
		}
		// Reading is not handled (ReadBeneath nil).
		llExpect(t, "read outside", llTryRead(j(out, "b.txt")))
		llExpect(t, "read dir outside", llTryReadDir(out))
		llExpect(t, "read /proc/self/status", llTryRead("/proc/self/status"))
		// Network rights are not handled: TCP bind, listen and connect work.
		llExpect(t, "TCP on loopback", llTryTCP())
	})
	if got := llCountFDs(t); got != fds {
		t.Errorf("%d descriptors open after restrictLandlock, %d before", got, fds)
	}
	// Unrestricted again (another thread): the writes refused did not happen.
	for _, n := range []string{"out/new", "out/newdir", "out/sym", "out/hard", "out/fifo", "new"} {
		if llExists(filepath.Join(dir, n)) {
			t.Errorf("%s exists", n)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "b.txt")); string(b) != "data\n" {
		t.Errorf("out/b.txt = %q", b)
	}
}

func landlockReadScenario(t *testing.T, dir string) {
	in, ro, out := filepath.Join(dir, "in"), filepath.Join(dir, "ro"), filepath.Join(dir, "out")
	single := filepath.Join(dir, "single.txt")
	llTree(t, dir, "in/a.txt", "ro/r.txt", "ro/sub/r2.txt", "out/b.txt", "single.txt", "other.txt")
	r := landlockRules{WriteBeneath: []string{in}, ReadBeneath: []string{ro, single}}
	onLandlockedThread(t, r, nil, func(abi int) {
		llExpect(t, "read beneath ReadBeneath", llTryRead(filepath.Join(ro, "r.txt")))
		llExpect(t, "read deeper beneath ReadBeneath", llTryRead(filepath.Join(ro, "sub/r2.txt")))
		llExpect(t, "read dir beneath ReadBeneath", llTryReadDir(ro))
		llExpect(t, "read a single-file ReadBeneath", llTryRead(single))
		llExpect(t, "read beneath WriteBeneath", llTryRead(filepath.Join(in, "a.txt")))
		llExpect(t, "read dir beneath WriteBeneath", llTryReadDir(in))
		llExpect(t, "create beneath WriteBeneath", llTryCreate(filepath.Join(in, "new")))
		llExpect(t, "read outside", llTryRead(filepath.Join(out, "b.txt")), unix.EACCES)
		llExpect(t, "read the single file's sibling", llTryRead(filepath.Join(dir, "other.txt")), unix.EACCES)
		llExpect(t, "read dir outside", llTryReadDir(out), unix.EACCES)
		llExpect(t, "read the parent dir", llTryReadDir(dir), unix.EACCES)
		llExpect(t, "read /etc/passwd", llTryRead("/etc/passwd"), unix.EACCES)
		llExpect(t, "write beneath ReadBeneath", llTryWrite(filepath.Join(ro, "r.txt"), 0), unix.EACCES)
		_, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", "exit 0"}, &syscall.ProcAttr{Files: []uintptr{0, 1, 2}})
		llExpect(t, "exec /bin/sh outside ReadBeneath", err, unix.EACCES)
	})
}

func landlockWriteFileScenario(t *testing.T, dir string) {
	wf, one := filepath.Join(dir, "wf"), filepath.Join(dir, "one.txt")
	llTree(t, dir, "wf/e.txt", "wf/sub/e2.txt", "one.txt", "other.txt")
	onLandlockedThread(t, landlockRules{WriteFileBeneath: []string{wf, one}}, nil, func(abi int) {
		j := func(n string) string { return filepath.Join(wf, n) }
		llExpect(t, "write existing file", llTryWrite(j("e.txt"), 0))
		llExpect(t, "write existing file deeper", llTryWrite(j("sub/e2.txt"), 0))
		llExpect(t, "open O_TRUNC", llTryWrite(j("e.txt"), unix.O_TRUNC))
		llExpect(t, "truncate", unix.Truncate(j("e.txt"), 1))
		llExpect(t, "read", llTryRead(j("e.txt")))
		llExpect(t, "write a single-file WriteFileBeneath", llTryWrite(one, 0))
		llExpect(t, "create", llTryCreate(j("new")), unix.EACCES)
		llExpect(t, "open O_CREAT existing-less", llTryWrite(j("new2"), unix.O_CREAT), unix.EACCES)
		llExpect(t, "mkdir", unix.Mkdir(j("d"), 0o755), unix.EACCES)
		llExpect(t, "unlink", unix.Unlink(j("e.txt")), unix.EACCES)
		llExpect(t, "symlink", unix.Symlink("e.txt", j("sym")), unix.EACCES)
		llExpect(t, "rename", unix.Rename(j("e.txt"), j("f.txt")), unix.EACCES)
		llExpect(t, "mkfifo", unix.Mkfifo(j("fifo"), 0o644), unix.EACCES)
		llExpect(t, "write the single file's sibling", llTryWrite(filepath.Join(dir, "other.txt"), 0), unix.EACCES)
	})
}

func landlockSingleFileScenario(t *testing.T, dir string) {
	out := filepath.Join(dir, "out")
	one := filepath.Join(out, "one.txt")
	llTree(t, dir, "out/one.txt", "out/b.txt")
	// ReadBeneath nil, then non-nil (the read rights handled must be
	// masked to the file ones too: no read_dir on a file).
	for _, read := range [][]string{nil, {}} {
		onLandlockedThread(t, landlockRules{WriteBeneath: []string{one}, ReadBeneath: read}, nil, func(abi int) {
			j := func(n string) string { return filepath.Join(out, n) }
			llExpect(t, "write the file", llTryWrite(one, 0))
			llExpect(t, "open the file O_TRUNC", llTryWrite(one, unix.O_TRUNC))
			llExpect(t, "truncate the file", unix.Truncate(one, 0))
			llExpect(t, "read the file", llTryRead(one))
			llExpect(t, "write its sibling", llTryWrite(j("b.txt"), 0), unix.EACCES)
			llExpect(t, "create beside it", llTryCreate(j("new")), unix.EACCES)
			llExpect(t, "unlink it", unix.Unlink(one), unix.EACCES)
			llExpect(t, "rename it", unix.Rename(one, j("two.txt")), unix.EACCES)
			if read != nil {
				llExpect(t, "read its sibling", llTryRead(j("b.txt")), unix.EACCES)
				llExpect(t, "read its dir", llTryReadDir(out), unix.EACCES)
			} else {
				llExpect(t, "read its sibling", llTryRead(j("b.txt")))
			}
		})
	}
}

// landlockShell runs script with /bin/sh forked from the calling thread
// and returns its combined output.
func landlockShell(t *testing.T, script string) string {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Errorf("pipe: %v", err)
		return ""
	}
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", script}, &syscall.ProcAttr{Files: []uintptr{0, uintptr(p[1]), uintptr(p[1])}})
	unix.Close(p[1])
	if err != nil {
		unix.Close(p[0])
		t.Errorf("fork /bin/sh: %v", err)
		return ""
	}
	var out []byte
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(p[0], buf)
		if n <= 0 || err != nil {
			break
		}
		out = append(out, buf[:n]...)
	}
	unix.Close(p[0])
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
		t.Errorf("sh: %v %v\n%s", err, ws, out)
	}
	return string(out)
}

func landlockScopeScenario(t *testing.T, dir string) {
	if kernelLandlockABI() < 6 {
		testenv.SkipOrFail(t, "scopes need Landlock ABI 6")
	}
	abstract := fmt.Sprintf("@procjail-landlock-test-%d", os.Getpid())
	lfd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrUnix{Name: abstract}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 8); err != nil {
		t.Fatal(err)
	}
	connect := func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: abstract})
	}
	// helper: this process (the shell's parent); outer: the test process
	// that started it. Neither is in the domain.
	script := fmt.Sprintf(`kill -0 %d 2>&1; echo "helper=$?"
kill -0 %d 2>&1; echo "outer=$?"
sleep 30 & kill $!; echo "own=$?"; wait
: >%q; echo "write=$?"`, os.Getpid(), os.Getppid(), filepath.Join(dir, "written"))
	for _, scope := range []bool{true, false} {
		onLandlockedThread(t, landlockRules{WriteBeneath: []string{dir}, Scope: scope}, nil, func(abi int) {
			out := landlockShell(t, script)
			t.Logf("scope %v (tid %d pid %d): %s", scope, unix.Gettid(), unix.Getpid(), out)
			lines := map[string]bool{}
			for _, l := range strings.Split(out, "\n") {
				lines[l] = true
			}
			if scope {
				llExpect(t, "connect to an abstract socket made outside", connect(), unix.EPERM)
				if lines["helper=0"] || lines["outer=0"] || !strings.Contains(out, "not permitted") {
					t.Errorf("scoped: the shell could signal outside its domain:\n%s", out)
				}
			} else {
				llExpect(t, "connect to an abstract socket, unscoped", connect())
				if !lines["helper=0"] || !lines["outer=0"] {
					t.Errorf("unscoped: the shell could not signal (control):\n%s", out)
				}
			}
			if !lines["own=0"] || !lines["write=0"] {
				t.Errorf("scope %v: the shell could not signal its own child or write beneath WriteBeneath:\n%s", scope, out)
			}
		})
	}
	// The listener is still there, and reachable from this (unrestricted) thread.
	if err := connect(); err != nil {
		t.Errorf("connect from outside the domain: %v", err)
	}
}

func landlockThreadsScenario(t *testing.T, dir string) {
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	llTree(t, dir, "in/", "out/")
	// other: a goroutine locked to its own thread before the restriction.
	type res struct {
		tid int
		err error
	}
	start, otherRes := make(chan struct{}), make(chan res, 1)
	otherTid := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		otherTid <- unix.Gettid()
		<-start
		otherRes <- res{unix.Gettid(), llTryCreate(filepath.Join(out, "other-thread"))}
	}()
	oTid := <-otherTid
	onLandlockedThread(t, landlockRules{WriteBeneath: []string{in}}, nil, func(abi int) {
		tid := unix.Gettid()
		llExpect(t, "create outside on the restricted thread", llTryCreate(filepath.Join(out, "restricted-thread")), unix.EACCES)
		// While the restricted thread is alive (this goroutine holds it):
		close(start)
		o := <-otherRes
		if o.tid == tid || oTid != o.tid {
			t.Errorf("thread ids: restricted %d, other %d then %d", tid, oTid, o.tid)
		}
		llExpect(t, "create outside on another thread", o.err)
		// Goroutines started now run on other threads, old or new: none restricted.
		errs := make(chan error, 16)
		for i := range 16 {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if unix.Gettid() == tid {
					errs <- fmt.Errorf("goroutine %d ran on the restricted thread", i)
					return
				}
				errs <- llTryCreate(filepath.Join(out, "g"+strconv.Itoa(i)))
			}()
		}
		for range 16 {
			llExpect(t, "create outside from a new goroutine", <-errs)
		}
		// os functions called here run on this thread: refused too.
		if err := os.WriteFile(filepath.Join(out, "os-writefile"), nil, 0o644); !errors.Is(err, unix.EACCES) {
			t.Errorf("os.WriteFile outside on the restricted thread: %v, want EACCES", err)
		}
		// A goroutine that is not locked runs elsewhere.
		go func() {
			errs <- os.WriteFile(filepath.Join(out, "os-writefile-goroutine"), nil, 0o644)
		}()
		llExpect(t, "os.WriteFile outside from an unlocked goroutine", <-errs)
		llExpect(t, "create outside on the restricted thread, again", llTryCreate(filepath.Join(out, "restricted-thread")), unix.EACCES)
	})
	// And the main test goroutine, after the restricted thread has gone.
	if err := os.WriteFile(filepath.Join(out, "main"), nil, 0o644); err != nil {
		t.Errorf("os.WriteFile outside afterwards: %v", err)
	}
}

func landlockErrorsScenario(t *testing.T, dir string) {
	ok := filepath.Join(dir, "ok")
	llTree(t, dir, "ok/", "ok/f.txt")
	llCountFDs(t)
	fds := llCountFDs(t)
	for i, r := range []landlockRules{
		{WriteBeneath: []string{ok, filepath.Join(dir, "missing-write")}},
		{WriteBeneath: []string{ok}, WriteFileBeneath: []string{filepath.Join(dir, "missing-writefile")}},
		{WriteBeneath: []string{ok}, ReadBeneath: []string{filepath.Join(ok, "f.txt"), filepath.Join(dir, "missing-read")}},
		{WriteBeneath: []string{filepath.Join(ok, "f.txt", "not-a-dir")}},
	} {
		all := append(append(append([]string(nil), r.WriteBeneath...), r.WriteFileBeneath...), r.ReadBeneath...)
		bad := all[len(all)-1] // the last one listed is the bad one
		offMainThread(func() { // if anything was applied, the thread goes
			_, err := restrictLandlock(r)
			if err == nil {
				t.Errorf("%d: restrictLandlock(%+v): no error", i, r)
				return
			}
			if !strings.Contains(err.Error(), strconv.Quote(bad)) {
				t.Errorf("%d: error %q does not name %s", i, err, bad)
			}
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
				t.Errorf("%d: error %v is not ENOENT/ENOTDIR", i, err)
			}
			t.Logf("%d: %v", i, err)
			// Nothing was applied to this thread.
			llExpect(t, "create after a failed restrictLandlock", llTryCreate(filepath.Join(dir, "after-"+strconv.Itoa(i))))
		})
	}
	if got := llCountFDs(t); got != fds {
		t.Errorf("%d descriptors open after the failures, %d before", got, fds)
	}
	// restrict_self refused (no no_new_privs, no CAP_SYS_ADMIN): dropping
	// CAP_SYS_ADMIN from the thread's effective set is enough.
	offMainThread(func() {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var data [2]unix.CapUserData
		if err := unix.Capget(&hdr, &data[0]); err != nil {
			t.Errorf("capget: %v", err)
			return
		}
		data[unix.CAP_SYS_ADMIN/32].Effective &^= 1 << (unix.CAP_SYS_ADMIN % 32)
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			t.Errorf("capset: %v", err)
			return
		}
		_, err := restrictLandlock(landlockRules{WriteBeneath: []string{ok}})
		if !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), "landlock_restrict_self") {
			t.Errorf("restrictLandlock without no_new_privs: %v, want landlock_restrict_self EPERM", err)
		}
	})
	if got := llCountFDs(t); got != fds {
		t.Errorf("%d descriptors open after the restrict_self failure, %d before", got, fds)
	}
}

// landlockABIsScenario applies the rules of each ABI from 1 to the
// kernel's (a kernel handles any subset of its rights): what is not known
// at an ABI is not handled, so allowed, except reparenting, which ABI 1
// always denies.
func landlockABIsScenario(t *testing.T, dir string) {
	kabi := kernelLandlockABI()
	for abi := 1; abi <= kabi; abi++ {
		d := filepath.Join(dir, strconv.Itoa(abi))
		in, out := filepath.Join(d, "in"), filepath.Join(d, "out")
		llTree(t, d, "in/a.txt", "in/sub/", "out/b.txt")
		abstract := fmt.Sprintf("@procjail-landlock-abi-%d-%d", os.Getpid(), abi)
		lfd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Bind(lfd, &unix.SockaddrUnix{Name: abstract}); err != nil {
			t.Fatal(err)
		}
		if err := unix.Listen(lfd, 8); err != nil {
			t.Fatal(err)
		}
		restrict := func(r landlockRules) (int, error) { return abi, applyLandlock(r, abi) }
		onLandlockedThread(t, landlockRules{WriteBeneath: []string{in}, Scope: true}, restrict, func(int) {
			name := func(s string) string { return fmt.Sprintf("ABI %d: %s", abi, s) }
			llExpect(t, name("create inside"), llTryCreate(filepath.Join(in, "new")))
			llExpect(t, name("create outside"), llTryCreate(filepath.Join(out, "new")), unix.EACCES)
			llExpect(t, name("write outside"), llTryWrite(filepath.Join(out, "b.txt"), 0), unix.EACCES)
			reparent := unix.Rename(filepath.Join(in, "a.txt"), filepath.Join(in, "sub/a.txt"))
			truncate := unix.Truncate(filepath.Join(out, "b.txt"), 0)
			fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
			if err != nil {
				t.Error(err)
				return
			}
			connect := unix.Connect(fd, &unix.SockaddrUnix{Name: abstract})
			unix.Close(fd)
			if abi >= 2 {
				llExpect(t, name("rename between dirs inside"), reparent)
			} else {
				llExpect(t, name("rename between dirs inside"), reparent, unix.EXDEV)
			}
			if abi >= 3 {
				llExpect(t, name("truncate outside"), truncate, unix.EACCES)
			} else {
				llExpect(t, name("truncate outside"), truncate)
			}
			if abi >= 6 {
				llExpect(t, name("connect abstract"), connect, unix.EPERM)
			} else {
				llExpect(t, name("connect abstract"), connect)
			}
		})
		unix.Close(lfd)
	}
}

// landlockMainThreadScenario: restrictLandlock refuses the main thread
// and applies nothing there. To get onto the main thread (only an idle
// one takes goroutines), rounds of goroutines lock threads at once, each
// holding its thread until the round ends, so that the scheduler hands
// out its idle threads, the main one among them.
func landlockMainThreadScenario(t *testing.T, dir string) {
	out := filepath.Join(dir, "out")
	llTree(t, dir, "in/", "out/")
	const perRound = 64
	for round := range 50 {
		found := make(chan bool, perRound)
		release := make(chan struct{})
		for range perRound {
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if unix.Gettid() != unix.Getpid() {
					found <- false
					<-release
					return
				}
				if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
					t.Errorf("no_new_privs: %v", err)
				}
				_, err := restrictLandlock(landlockRules{WriteBeneath: []string{filepath.Join(dir, "in")}})
				if !errors.Is(err, errLandlockMainThread) {
					t.Errorf("restrictLandlock on the main thread: %v, want %v", err, errLandlockMainThread)
				}
				llExpect(t, "create outside on the main thread after the refusal", llTryCreate(filepath.Join(out, "main-thread")))
				found <- true
				<-release
			}()
		}
		hit := false
		for range perRound {
			hit = <-found || hit
		}
		close(release)
		if hit {
			t.Logf("on the main thread in round %d", round)
			return
		}
	}
	testenv.SkipOrFail(t, "no goroutine landed on the main thread")
}
