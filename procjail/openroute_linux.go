//go:build linux

package procjail

// The open gate's seccomp route. Where sandboxd cannot have the fanotify
// gate (opengate_linux.go: it needs CAP_SYS_ADMIN in the initial user
// namespace, so rootless and container mode go without), files.deny can
// still hold at open time through the create gate's machinery
// (creategate_linux.go): with FileSystem.OpenGuard the seccomp filter
// sends every open and openat to the init (not only those with O_CREAT),
// which resolves the path itself (walker.walk: magic links, /proc/self as
// the caller, symlinks, ".."), opens the file on a worker thread that is
// the command's (uid, umask, Landlock), and then decides the file on the
// descriptor itself, before the caller ever gets it (decideOpened): a
// regular file's path (as the kernel names the open file) and identity
// (fstat), where the fanotify gate would decide it (at or below one of
// FileSystem.OpenRoots, its roots), go to policy's decider
// (OpenGuardDecider); a refused file is
// closed and the open fails with EPERM, as the fanotify gate's, and the
// refusal goes to sandboxd as one "openrefused" line. Directories and
// other non-regular files are not decided (the fanotify gate does not
// decide directories either), nor an O_PATH open (it reads nothing;
// reopening it through /proc/self/fd is an open decided here). A file the
// call created is decided as any other, as the fanotify gate decides the
// open that creates one: the create gate decides names where they land
// on the host (write roots) by its own view of the patterns, and a file
// made elsewhere (home's overlay) or below a pattern's directory the
// command has replaced must still not be held open under a denied name
// (the host could fill it).
//
// There is no cache: every open is decided (docs/benchmarks.md measures
// the cost). What it does not see: execve opens its file in the kernel,
// so running a denied binary is not decided; a script is refused all the
// same through its interpreter's open of it. Anything the route cannot
// decide (the file cannot be named or identified) is refused (EPERM).

import (
	"encoding/json"
	"strings"

	"golang.org/x/sys/unix"
)

// decideOpened decides the file open at fd, which this call opened (or
// created) for the caller: 0 to hand it over, EPERM when policy refuses
// it or it cannot be decided (w.openRefusal says why).
func (w *walker) decideOpened(fd int) unix.Errno {
	refuse := func(path, rule, reason string) unix.Errno {
		w.openRefusal = &OpenRefusal{Path: path, Rule: rule, Reason: reason}
		return unix.EPERM
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return refuse("", "open gate", "the opened file cannot be identified: "+err.Error())
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0
	}
	path, err := pathOf(fd)
	if err != nil {
		return refuse("", "open gate", "the opened file cannot be named: "+err.Error())
	}
	// A file whose name was removed since the open is named "NAME
	// (deleted)", other names left or not: decided by the name it had,
	// as the fanotify gate does (eventFile).
	path, _ = strings.CutSuffix(path, " (deleted)")
	if !strings.HasPrefix(path, "/") {
		return refuse(path, "open gate", "the opened file cannot be named: "+path+" is not a path")
	}
	if refused, rule, reason := w.c.openRefused(path, &st); refused {
		return refuse(path, rule, oneLine(reason))
	}
	return 0
}

// inOpenRoots says whether path is at or below one of the open roots.
func (c *createGate) inOpenRoots(path string) bool {
	for _, r := range c.openRoots {
		if under(path, r) {
			return true
		}
	}
	return false
}

// callerProcFile says whether dir is in the caller's own process
// directory in the sandbox's /proc (/proc/TGID and below, its threads'
// included), whose files the kernel lets a process open after a ptrace
// check that passes for itself and that a worker, in another Landlock
// domain, would fail. Any other process's files (and /proc/sys and the
// like) are opened by the worker: the kernel's checks are then the
// caller's, but for Landlock's ptrace rule, which refuses another process's
// ptrace-checked files (environ, maps, mem) that the kernel would give the
// caller; never the init's privileges (it may read any process's).
func (w *walker) callerProcFile(dir int) bool {
	var st unix.Stat_t
	if unix.Fstat(dir, &st) != nil {
		return false
	}
	if kind, _ := w.procKindOf(dir, &st); kind != procPID {
		return false
	}
	pid, ok := procDirPID(dir)
	return ok && pid != "" && pid == w.cl.tgid
}

// openProc opens name in the process directory dir for reading, as the
// init (the kernel checks ptrace access to the process at the open,
// against the opener's Landlock domain: a worker's is not the command's,
// see magic), with the command's real ids in container mode.
func (w *walker) openProc(dir int, name string, flags int) (int, error) {
	var fd int
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		if rerr := asCommandReal(func() { fd, err = unix.Openat(dir, name, flags, 0) }); rerr != nil {
			fd, err = -1, unix.EPERM
		}
	}()
	<-done
	return fd, err
}

// openRefusedLine is the control socket line that reports an open the
// open route refused.
func openRefusedLine(r OpenRefusal) string {
	b, _ := json.Marshal(r)
	return "openrefused " + string(b) + "\n"
}
