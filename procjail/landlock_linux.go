//go:build linux

package procjail

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// landlockRules are what the command's Landlock domain allows.
type landlockRules struct {
	// WriteBeneath: full write rights (write_file, truncate, make_* of
	// every kind, remove_dir, remove_file, refer (ABI>=2, rename/link
	// between permitted places), ioctl_dev (ABI>=5)) beneath each path (a
	// directory, or a single file: then only the file rights that apply
	// to files).
	WriteBeneath []string
	// WriteFileBeneath: only write_file and truncate (and ioctl_dev)
	// beneath each (used for /dev and /proc, where the command writes to
	// /dev/null, its tty, /proc/self/...).
	WriteFileBeneath []string
	// ReadBeneath: when nil, reading and executing are allowed everywhere
	// (only writes are handled); when non-nil, read_file, read_dir and
	// execute are allowed only beneath these paths (plus everything in
	// WriteBeneath).
	ReadBeneath []string
	// Scope (ABI>=6): scope abstract Unix sockets and signals to the
	// domain (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL),
	// so the command cannot signal the sandbox's init or connect to
	// abstract sockets made outside.
	Scope bool
}

// landlockMaxABI is the newest Landlock ABI whose rights restrictLandlock
// knows. A newer kernel gets the rights of this one handled: rights added
// later (ABI 9's resolve_unix, UDP) are left unhandled, so allowed.
const landlockMaxABI = 7

// Filesystem rights by kind.
const (
	llRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// llWriteFile are the write rights on the content of existing files.
	llWriteFile = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llWrite     = llWriteFile | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM | unix.LANDLOCK_ACCESS_FS_REFER
	// llFileOnly are the rights that apply to a file that is not a
	// directory; the kernel refuses a rule on such a file with any other.
	llFileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	llScope = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
)

// landlockFSRights are the filesystem rights ABI abi knows.
func landlockFSRights(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	r := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1) // ABI 1: execute .. make_sym
	if abi >= 2 {
		r |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		r |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		r |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return r
}

// restrictLandlock applies r to the calling OS thread only (never to the
// whole process: the init itself must stay unrestricted). It returns the
// ABI version in force. A kernel without Landlock (ENOSYS / EOPNOTSUPP from
// landlock_create_ruleset version query) returns abi 0 and a nil error:
// nothing applied, the caller reports it. Any other failure (a path that
// cannot be opened, add_rule failing, restrict_self failing) is an error
// naming the path or the step: the caller turns it into a refused start.
//
// The rights handled are those the kernel's ABI knows (up to
// landlockMaxABI; network rights never): writes of every kind are denied
// except as r grants them, and reads and executes too when r.ReadBeneath
// is non-nil. The returned abi is the kernel's version, also on error once
// it is known.
//
// The calling thread must have no_new_privs set (or CAP_SYS_ADMIN), or
// landlock_restrict_self fails with EPERM, and must not be the process's
// main thread (errLandlockMainThread; offMainThread gives another one). Once the thread is restricted,
// the calling goroutine stays locked to it for good (runtime.LockOSThread
// without an unlock): no other goroutine ever runs on the restricted
// thread, and the runtime ends the thread when the goroutine exits. The
// runtime never clones new threads from a locked one, so the domain
// reaches only children forked from this thread.
func restrictLandlock(r landlockRules) (abi int, err error) {
	abi, err = landlockVersion(landlockKernelABI())
	if err != nil || abi == 0 {
		return abi, err
	}
	return abi, applyLandlock(r, abi)
}

// errLandlockMainThread refuses to restrict the process's main thread: it
// is the thread group leader, the task that signals and ptrace aimed at
// the process's pid are checked against, so a domain there would put the
// init itself inside the command's domain (Scope would not keep the
// command from signalling it). See offMainThread.
var errLandlockMainThread = errors.New("landlock: refusing to restrict the process's main thread (the thread group leader): call from another thread")

// offMainThread runs f on a goroutine locked to an OS thread other than
// the process's main thread, and waits for f to return. f's goroutine
// exits still locked, so the runtime ends that thread after it: whatever
// f did to the thread (restrictLandlock, a seccomp filter, ...) goes with
// it. A goroutine that locks itself may well land on the main thread (an
// idle main thread takes the next goroutine to run), where
// restrictLandlock refuses to work.
func offMainThread(f func()) {
	done := make(chan struct{})
	run := func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked
		f()
	}
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() != unix.Getpid() {
			run()
			return
		}
		// This goroutine holds the main thread, so run's cannot get it.
		go run()
		<-done
		runtime.UnlockOSThread()
	}()
	<-done
}

// landlockKernelABI asks the kernel for its Landlock ABI version.
func landlockKernelABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(v), nil
}

// landlockVersion interprets the result of the version query: no Landlock
// in the kernel (ENOSYS) or disabled at boot (EOPNOTSUPP) is ABI 0.
func landlockVersion(v int, err error) (int, error) {
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("landlock ABI version query: %w", err)
	case v < 1:
		return 0, fmt.Errorf("landlock ABI version query: unexpected version %d", v)
	}
	return v, nil
}

// commandRuleset makes the ruleset of r (nil: no Landlock rules) for the
// kernel's ABI: -1 when there is none to apply (r nil, or abi 0: no
// Landlock in the kernel).
func commandRuleset(r *landlockRules) (ruleset, abi int, err error) {
	if r == nil {
		return -1, 0, nil
	}
	abi, err = landlockVersion(landlockKernelABI())
	if err != nil || abi == 0 {
		return -1, abi, err
	}
	ruleset, err = landlockRuleset(*r, abi)
	return ruleset, abi, err
}

// applyLandlock restricts the calling thread to r, handling the rights of
// abi (which must be at most the kernel's).
func applyLandlock(r landlockRules, abi int) error {
	ruleset, err := landlockRuleset(r, abi)
	if err != nil {
		return err
	}
	defer unix.Close(ruleset)
	return restrictLandlockSelf(ruleset)
}

// landlockRuleset makes the ruleset of r for abi: a descriptor
// (close-on-exec) whose rules hold the paths' inodes as they resolved
// now, which a later rename or symlink at a path does not change.
func landlockRuleset(r landlockRules, abi int) (int, error) {
	known := min(abi, landlockMaxABI)
	handled := landlockFSRights(known) &^ llRead
	if r.ReadBeneath != nil {
		handled |= landlockFSRights(known) & llRead
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	// The attr struct grew with the ABI (handled_access_net at 4, scoped
	// at 6, ...); the size passed covers exactly the fields filled, which
	// every kernel since ABI 1 (or 6 for scoped) accepts.
	size := unsafe.Offsetof(attr.Handled_access_fs) + unsafe.Sizeof(attr.Handled_access_fs)
	if r.Scope && known >= 6 {
		attr.Scoped = llScope
		size = unsafe.Offsetof(attr.Scoped) + unsafe.Sizeof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	ruleset := int(fd)

	type rule struct {
		paths  []string
		access uint64
	}
	for _, ru := range []rule{
		{r.WriteBeneath, llWrite | llRead},
		{r.WriteFileBeneath, llWriteFile},
		{r.ReadBeneath, llRead},
	} {
		for _, p := range ru.paths {
			if err := addLandlockPath(ruleset, p, ru.access&handled); err != nil {
				unix.Close(ruleset)
				return -1, err
			}
		}
	}
	return ruleset, nil
}

// restrictLandlockSelf restricts the calling thread (never the main
// thread) to ruleset.
func restrictLandlockSelf(ruleset int) error {
	// Lock before restricting so the goroutine cannot move off the thread
	// in between; kept locked on success (see restrictLandlock).
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		runtime.UnlockOSThread()
		return errLandlockMainThread
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		runtime.UnlockOSThread()
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// addLandlockPath adds to ruleset a path-beneath rule granting access on p,
// masked to the file rights when p is not a directory.
func addLandlockPath(ruleset int, p string, access uint64) error {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule for %q: open: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule for %q: stat: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= llFileOnly
	}
	if access == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock rule for %q: landlock_add_rule: %w", p, errno)
	}
	return nil
}
