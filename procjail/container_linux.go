//go:build linux

package procjail

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uidWorker runs functions on one OS thread of the init that acts as the
// command's uid: its effective (and so filesystem) ids are the command's,
// its real and saved ids root's, and it has no supplementary groups and no
// effective capability. The kernel lets a process signal, re-limit or
// trace another thread only when the target's real or saved ids are its
// own, so the command can do none of these to this thread (it could, with
// the command's ids all through: a prlimit(RLIMIT_CPU) on it limits the
// whole init, which the kernel then kills). Reading the command's /proc
// entries needs only the effective ids. What needs the real ones
// (pidfd_getfd, process_vm_readv) runs in doReal, which holds them for
// the call alone, and only where Landlock's scope keeps the command's
// signals off the thread meanwhile (the Unix socket gate's condition).
type uidWorker struct {
	uid, gid uint32
	work     chan func()
}

// newUIDWorker starts the worker's thread (never the main thread: the
// runtime could not end it).
func newUIDWorker(uid, gid uint32) (*uidWorker, error) {
	w := &uidWorker{uid: uid, gid: gid, work: make(chan func())}
	errc := make(chan error, 1)
	go offMainThread(func() {
		if err := setThreadEffective(uid, gid); err != nil {
			errc <- err
			return
		}
		errc <- nil
		for f := range w.work {
			f()
		}
	})
	if err := <-errc; err != nil {
		return nil, err
	}
	return w, nil
}

// do runs f on the worker's thread and waits for it.
func (w *uidWorker) do(f func()) {
	done := make(chan struct{})
	w.work <- func() { f(); close(done) }
	<-done
}

// doReal runs f on the worker's thread with the command's real ids too,
// and puts root's back after it; f is not run when either change fails.
func (w *uidWorker) doReal(f func()) error {
	var err error
	w.do(func() {
		if err = setThreadReal(w.uid, w.gid); err != nil {
			return
		}
		f()
		err = setThreadReal(0, 0)
	})
	return err
}

// commandThread, in container mode's init, acts as the command's uid
// (uidWorker): what needs ptrace access to the command's processes (the
// attribution's reading of their descriptors, the Unix socket gate's copy
// of a socket, of a connect's address and its cwd) runs there, as a
// container's root has no CAP_SYS_PTRACE over another uid; so does the
// gate's connect, which the socket's server then sees as the command's.
var commandThread *uidWorker

// asCommand runs f on commandThread in container mode, else here.
func asCommand(f func()) {
	if commandThread != nil {
		commandThread.do(f)
		return
	}
	f()
}

// asCommandReal is asCommand with the command's real ids (doReal).
func asCommandReal(f func()) error {
	if commandThread != nil {
		return commandThread.doReal(f)
	}
	f()
	return nil
}

// setThreadEffective gives the calling thread (root) uid and gid as its
// effective ids, keeps root's as its real and saved ones, and drops its
// supplementary groups; its effective capabilities go with uid 0.
func setThreadEffective(uid, gid uint32) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, 0, uintptr(gid), 0); e != 0 {
		return fmt.Errorf("setresgid %d: %w", gid, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, 0, uintptr(uid), 0); e != 0 {
		return fmt.Errorf("setresuid %d: %w", uid, e)
	}
	return nil
}

// setThreadReal sets the calling thread's real uid and gid (to its
// effective or saved ones: no capability needed), keeping the others.
func setThreadReal(uid, gid uint32) error {
	minus := ^uintptr(0)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), minus, minus); e != 0 {
		return fmt.Errorf("setresgid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), minus, minus); e != 0 {
		return fmt.Errorf("setresuid: %w", e)
	}
	return nil
}

// setThreadIDs gives the calling thread uid and gid, real, effective and
// saved, and no supplementary groups; its capabilities go with uid 0.
func setThreadIDs(uid, gid uint32) error {
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
		return fmt.Errorf("setresgid %d: %w", gid, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
		return fmt.Errorf("setresuid %d: %w", uid, e)
	}
	return nil
}

// AccessAs returns those of paths that uid and gid (with no supplementary
// groups) may access with mode (AccessRead, AccessWrite), as the kernel
// decides it for them today: permissions, ACLs and every directory on the
// way (the caller adds what uid could change, as an owner). A directory
// counts as readable when it can be listed or searched. The caller must
// be root.
//
// The check runs on the calling goroutine's thread, locked, with uid and
// gid as its effective ids for the calls (faccessat with AT_EACCESS) and
// root's put back after them: no thread ends (a thread that forked a child
// with a parent-death signal, the sandbox's init, must outlive it).
func AccessAs(uid, gid uint32, paths []string, mode uint32) ([]string, error) {
	runtime.LockOSThread()
	groups := make([]uint32, 256)
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0)
	if e != 0 {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("getgroups: %w", e)
	}
	groups = groups[:n]
	if err := setThreadEffective(uid, gid); err != nil {
		// Not put back: the thread must not run anything else.
		return nil, err
	}
	var out []string
	for _, p := range paths {
		m := mode
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() && m&unix.R_OK != 0 {
			if unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW) == nil {
				out = append(out, p)
				continue
			}
		}
		if unix.Faccessat(unix.AT_FDCWD, p, m, unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW) == nil {
			out = append(out, p)
		}
	}
	// Root's ids and groups back (the real and saved ids are root's);
	// a thread that cannot have them is never unlocked: it ends with
	// this goroutine.
	minus := ^uintptr(0)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, minus, 0, minus); e != 0 {
		return nil, fmt.Errorf("setresuid back: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, minus, 0, minus); e != 0 {
		return nil, fmt.Errorf("setresgid back: %w", e)
	}
	var gp uintptr
	if len(groups) > 0 {
		gp = uintptr(unsafe.Pointer(&groups[0]))
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), gp, 0); e != 0 {
		return nil, fmt.Errorf("setgroups: %w", e)
	}
	runtime.UnlockOSThread()
	return out, nil
}

// killUID kills every process of uid, as root (CAP_KILL), in two passes
// so that forking cannot outrun it: each listed process (uidProcesses) is
// stopped (SIGSTOP) until a listing finds none that is not, then each is
// killed. A process is signalled through a pidfd after its status shows
// uid (the pid cannot be another process's once the pidfd holds it), or
// where pidfd_open is refused by pid after the same check. At most a few
// seconds. Zombies are not listed: nothing here waits for them.
func killUID(uid uint32) error {
	want := strconv.FormatUint(uint64(uid), 10)
	signal := func(pid int, sig unix.Signal) {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil && err != unix.ENOSYS && err != unix.EPERM {
			return // gone
		}
		st, serr := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		if serr != nil || !statusHasUID(st, want) {
			if err == nil {
				unix.Close(fd)
			}
			return
		}
		if err == nil {
			unix.PidfdSendSignal(fd, sig, nil, 0)
			unix.Close(fd)
			return
		}
		unix.Kill(pid, sig)
	}
	deadline := time.Now().Add(5 * time.Second)
	stopped := map[int]bool{}
	for {
		pids, err := uidProcesses(uid)
		if err != nil {
			return err
		}
		fresh := 0
		for _, pid := range pids {
			if !stopped[pid] {
				fresh++
				stopped[pid] = true
			}
			signal(pid, unix.SIGSTOP)
		}
		if fresh == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of uid %d still appearing after SIGSTOP: %v", uid, pids)
		}
		time.Sleep(time.Millisecond)
	}
	for {
		pids, err := uidProcesses(uid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			signal(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of uid %d still alive after kill: %v", uid, pids)
		}
		time.Sleep(time.Millisecond)
	}
}

// KillUID kills every process of uid in this network namespace (what
// container mode's init does at the end, and sandboxd where the init died
// before it could). The caller must have CAP_KILL.
func KillUID(uid uint32) error { return killUID(uid) }

// setupShared is setupInside for container mode: nothing is mounted and
// no namespace is made. The init becomes the subreaper of the command's
// tree (no PID namespace gathers the orphans), installs the uid's
// netfilter rules in the container's network namespace, and listens for
// the forwards on its loopback.
func setupShared(s *initSpec) (*unixGate, error) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, stepErr("init not dumpable", err)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, stepErr("subreaper", err)
	}
	if err := pinForwards(s); err != nil {
		return nil, err
	}
	w, err := newUIDWorker(s.Container.UID, s.Container.GID)
	if err != nil {
		return nil, stepErr("command's thread", err)
	}
	commandThread = w
	rules := UIDRules{UID: s.Container.UID}
	for _, f := range s.Forwards {
		switch {
		case f.Network == "capture":
			rules.CapturePort = f.InsidePort
		case f.Network == "udp":
			rules.DNSPort = f.InsidePort // the DNS forward; its TCP twin is redirected there too
		case f.Network == "tcp" || f.Network == "pass":
			rules.LoopbackTCP = append(rules.LoopbackTCP, f.InsidePort)
		}
	}
	if err := InstallUIDRules(rules); err != nil {
		// Name the missing piece and its fix where netfilter says which.
		if cerr := CheckUIDRules(); cerr != nil {
			return nil, stepErr("uid network rules", cerr)
		}
		return nil, err
	}
	gate, err := startInboundAndGate(s)
	if err != nil {
		return nil, err
	}
	if err := startForwards(s); err != nil {
		return nil, err
	}
	return gate, nil
}

// endShared kills what is left of the command's tree (every process of
// its uid) and removes the uid's rules; what fails is said on ctl's
// stderr line, and the rules then stay: the uid has no network.
func endShared(c *ContainerMode) error {
	if err := killUID(c.UID); err != nil {
		return err
	}
	return RemoveUIDRules(c.UID)
}

// UIDProcesses lists the processes of uid (any of its real, effective,
// saved or filesystem uids) in this network namespace, as far as this PID
// namespace sees; an error when /proc cannot be read.
func UIDProcesses(uid uint32) ([]int, error) { return uidProcesses(uid) }

// CheckDescriptorCopy says whether this process may copy another's
// descriptors (pidfd_getfd) and read its memory: the Unix socket gate
// needs both for container mode's command. Docker's default seccomp
// profile refuses them without CAP_SYS_PTRACE.
func CheckDescriptorCopy() error {
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return fmt.Errorf("pidfd_open: %w", err)
	}
	defer unix.Close(fd)
	cp, err := unix.PidfdGetfd(fd, fd, 0)
	if err != nil {
		return fmt.Errorf("pidfd_getfd: %w", err)
	}
	unix.Close(cp)
	var b [1]byte
	src := [1]byte{1}
	if _, err := unix.ProcessVMReadv(os.Getpid(), []unix.Iovec{{Base: &b[0], Len: 1}}, []unix.RemoteIovec{{Base: uintptr(unsafe.Pointer(&src[0])), Len: 1}}, 0); err != nil {
		return fmt.Errorf("process_vm_readv: %w", err)
	}
	return nil
}
