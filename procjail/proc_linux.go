//go:build linux

package procjail

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procEmptyDirs are the directories of a procfs that are permanently
// empty: the kernel lets a mount there leave the procfs "fully visible"
// (fs/namespace.c, mnt_already_visible), so a new procfs may still be
// mounted beside it.
var procEmptyDirs = []string{"sys/fs/binfmt_misc", "fs/nfsd"}

// procModeOf decides, from the mount table, which /proc the sandbox can
// have: fresh when some procfs mount shows its whole filesystem (its
// root, writable, with nothing mounted on it but on the permanently empty
// directories), as the kernel requires before it mounts a new procfs in a
// user namespace; else the container's, and why (the mounts that cover
// parts of /proc).
func procModeOf(all []mountEntry) (mode ProcMode, why string) {
	var covers []string
	for _, m := range all {
		if m.fsType != "proc" {
			continue
		}
		visible := m.root == "/" && !m.readOnly
		for _, c := range all {
			if c.parent != m.id || c.id == m.id {
				continue
			}
			rel, ok := cutDir(c.point, m.point)
			if ok && isProcEmptyDir(rel) {
				continue
			}
			visible = false
			if m.point == "/proc" && len(covers) < 4 {
				covers = append(covers, c.point)
			}
		}
		if visible {
			return ProcFresh, ""
		}
	}
	if len(covers) == 0 {
		return ProcContainer, "no procfs mount here shows all of /proc"
	}
	return ProcContainer, "the container covers parts of /proc (" + strings.Join(covers, ", ") + ", ...), so the kernel refuses a new procfs"
}

func isProcEmptyDir(rel string) bool {
	for _, d := range procEmptyDirs {
		if rel == d {
			return true
		}
	}
	return false
}

// cutDir returns p relative to dir when p is strictly below it.
func cutDir(p, dir string) (string, bool) {
	if dir == "/" {
		return p[1:], len(p) > 1
	}
	if len(p) > len(dir)+1 && p[:len(dir)] == dir && p[len(dir)] == '/' {
		return p[len(dir)+1:], true
	}
	return "", false
}

// ProbeProc tells which /proc a sandbox started now would get (ProcMode),
// and why when it is not a fresh one. sandboxd asks before it starts the
// sandbox, so the session's first audit line, its status and `sandboxd
// doctor` all say what the init then does.
func ProbeProc() (ProcMode, string) {
	all, err := readMounts()
	if err != nil {
		// The fresh mount then fails or not on its own, and says why.
		return ProcFresh, ""
	}
	return procModeOf(all)
}

// mountProc gives the sandbox its /proc (in the init, after the
// filesystem layer made every mount read-only): a fresh procfs, or with
// ProcContainer the container's own, checked to be a procfs and made
// read-only, nosuid, nodev and noexec with everything mounted below it.
func mountProc(mode ProcMode) error {
	switch mode {
	case "", ProcFresh:
		err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		if err == unix.EPERM {
			if m, why := ProbeProc(); m == ProcContainer {
				err = fmt.Errorf("%w: %s", err, why)
			}
		}
		if err != nil {
			return stepErr("mount /proc", err)
		}
		return nil
	case ProcContainer:
		var st unix.Statfs_t
		if err := unix.Statfs("/proc", &st); err != nil {
			return stepErr("container /proc", err)
		}
		if st.Type != unix.PROC_SUPER_MAGIC {
			return stepErrf("container /proc", "/proc is not a procfs (type %#x)", st.Type)
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
		if err := unix.MountSetattr(unix.AT_FDCWD, "/proc", unix.AT_RECURSIVE, &attr); err != nil {
			return stepErr("container /proc", fmt.Errorf("read-only: %w", err))
		}
		return nil
	}
	return stepErrf("mount /proc", "unknown /proc mode %q", mode)
}

// threadPidfd opens a pidfd (with flags) of the thread tid, which a
// seccomp notification names and which is often not its process's first:
// a thread's pidfd (PIDFD_THREAD, Linux 6.9), or where the kernel refuses
// that flag (EINVAL) a process's, which only a first thread has.
func threadPidfd(tid, flags int) (int, error) {
	fd, err := unix.PidfdOpen(tid, flags|unix.PIDFD_THREAD)
	if err == unix.EINVAL {
		fd, err = unix.PidfdOpen(tid, flags)
	}
	return fd, err
}

// procDirOf returns the /proc directory of the process the init knows as
// pid (a pid of the sandbox's PID namespace). Under ProcContainer the
// mounted /proc numbers processes as the container does: a pidfd of the
// process, opened by the sandbox's number, tells its number there (its
// fdinfo's Pid is in the namespace of the procfs read). The caller checks
// afterwards that the process is still the one it asked about.
func procDirOf(mode ProcMode, pid int) (string, error) {
	if mode != ProcContainer {
		return "/proc/" + strconv.Itoa(pid), nil
	}
	// A seccomp notification names the calling thread, often not its
	// process's first (node's file calls come from libuv's pool): a
	// thread's pidfd tells the thread's number there, as /proc/TID
	// names it.
	fd, err := threadPidfd(pid, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 {
				return "", fmt.Errorf("pidfd of %d: Pid %q", pid, v)
			}
			return "/proc/" + strconv.Itoa(n), nil
		}
	}
	return "", fmt.Errorf("pidfd of %d: no Pid in its fdinfo", pid)
}
