//go:build linux

package procjail

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hardenThread prepares the calling OS thread (locked by the caller, not
// the main thread) so that a child forked from it runs with no core
// dumps, no new
// privileges, no capabilities, the Landlock domain of ruleset (when
// landlock; ruleset is -1 and abi 0 on a kernel without Landlock, which
// leaves the mount layer alone, and the session start line says so, but
// not in container mode) and the seccomp filter of seccomp_bpf.go. Each step
// names itself in its error.
func hardenThread(o seccompOptions, gate *unixGate, landlock bool, ruleset, abi int, as *ContainerMode) error {
	// No core dumps: the kernel writes a core file itself, in the
	// crashing process's directory and under a name core_pattern may take
	// from the process (%e), past the create gate. RLIMIT_CORE is the
	// process's (the init's too, which has no use for one); with the
	// capabilities dropped below, the command cannot raise it.
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}); err != nil {
		return stepErr("no core dumps", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return stepErr("no new privileges", err)
	}
	last, err := lastCap()
	if err != nil {
		return stepErr("drop capabilities", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return stepErr("drop capabilities", fmt.Errorf("bounding set %d: %w", c, err))
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return stepErr("drop capabilities", fmt.Errorf("ambient: %w", err))
	}
	if as != nil {
		// Container mode: the command's own uid, on this thread only
		// (the child inherits it); its capabilities go with uid 0.
		if err := setThreadIDs(as.UID, as.GID); err != nil {
			return stepErr("command's uid", err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return stepErr("drop capabilities", fmt.Errorf("capset: %w", err))
	}
	if landlock {
		if ruleset >= 0 {
			if err := restrictLandlockSelf(ruleset); err != nil {
				return stepErr("landlock", err)
			}
		}
		if as != nil && abi == 0 {
			// Container mode: Landlock is what holds the write roots.
			return stepErrf("landlock", "container mode needs Landlock, and this kernel has none")
		}
	}
	arch, ok := seccompArches[runtime.GOARCH]
	if !ok {
		return stepErrf("seccomp filter", "no filter for architecture %s", runtime.GOARCH)
	}
	prog, err := buildSeccompProgram(arch, o)
	if err != nil {
		return stepErr("seccomp filter", err)
	}
	var flags uintptr
	if gate != nil {
		// Once the gate has taken a call, the caller waits for it
		// ignoring signals but fatal ones (Linux 5.19): the gate
		// performs the call on its behalf, and a call interrupted and
		// restarted then would run twice (a rename done, then ENOENT;
		// an O_EXCL file made, then EEXIST; a connect made, then
		// EISCONN). Go's runtime preempts with signals all the time.
		flags = unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
	}
	fd, err := loadSeccomp(prog, flags)
	if err == unix.EINVAL && gate != nil {
		// An older kernel: the gate still works, and a call a signal
		// interrupts after the gate made it may fail when restarted
		// (docs/limits.md).
		fd, err = loadSeccomp(prog, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER)
	}
	if err != nil {
		return stepErr("seccomp filter", err)
	}
	if gate != nil {
		gate.listener = fd
		// Wake the gate on the caller's CPU and switch to it at once
		// (Linux 6.6; older kernels refuse the ioctl and wake it the
		// usual way): each notified call costs one round trip less of
		// the scheduler.
		// (EINTR: the notify_lock's wait was interrupted; see
		// notifIoctl.)
		for {
			if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlNotifSetFlags, notifFDSyncWakeUp); e != unix.EINTR {
				break
			}
		}
	}
	return nil
}

// SECCOMP_IOCTL_NOTIF_SET_FLAGS and SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP.
const (
	ioctlNotifSetFlags = 0x40082104
	notifFDSyncWakeUp  = 1
)

// loadSeccomp installs prog on the calling thread; with
// SECCOMP_FILTER_FLAG_NEW_LISTENER it returns the notification fd.
func loadSeccomp(prog []sockFilter, flags uintptr) (int, error) {
	filters := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filters[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filters)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

func lastCap() (int, error) {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
