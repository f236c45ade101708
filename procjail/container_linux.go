//go:build linux

package procjail

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// asUID runs f on an OS thread of its own whose credentials are uid, gid
// and no supplementary groups (set on that thread alone, with the raw
// system calls: Go's wrappers change every thread). The thread is never
// given back: the runtime ends it with its goroutine. The caller must be
// root.
func asUID(uid, gid uint32, f func()) error {
	var err error
	// Never the main thread: the runtime cannot end it, so it would keep
	// uid for good (and the process would count as one of uid's).
	offMainThread(func() {
		if err = setThreadIDs(uid, gid); err == nil {
			f()
		}
	})
	return err
}

// uidWorker runs functions on one OS thread that holds a uid's identity
// for the init's whole life (never the main thread).
type uidWorker struct{ work chan func() }

// newUIDWorker starts the worker's thread with uid and gid.
func newUIDWorker(uid, gid uint32) (*uidWorker, error) {
	w := &uidWorker{work: make(chan func())}
	errc := make(chan error, 1)
	go offMainThread(func() {
		if err := setThreadIDs(uid, gid); err != nil {
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

// commandThread, in container mode's init, is a thread with the
// command's uid: what needs ptrace access to the command's processes (the
// attribution's reading of their descriptors, the Unix socket gate's copy
// of a socket and of a connect's address) runs there, as a container's
// root has no CAP_SYS_PTRACE over another uid.
var commandThread *uidWorker

// asCommand runs f on commandThread in container mode, else here.
func asCommand(f func()) {
	if commandThread != nil {
		commandThread.do(f)
		return
	}
	f()
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
// groups) may access with mode (unix.R_OK, unix.W_OK, ...), as the kernel
// decides it for them: permissions, ACLs and every directory on the way.
// Container mode's command runs so, with no mount layer to hide or protect
// a file: sandboxd refuses a start where it could read a denied file or
// write a read-only one. A directory counts as readable when it can be
// listed or searched. The caller must be root.
func AccessAs(uid, gid uint32, paths []string, mode uint32) ([]string, error) {
	var out []string
	err := asUID(uid, gid, func() {
		for _, p := range paths {
			m := mode
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() && m&unix.R_OK != 0 {
				if unix.Faccessat(unix.AT_FDCWD, p, unix.X_OK, unix.AT_SYMLINK_NOFOLLOW) == nil {
					out = append(out, p)
					continue
				}
			}
			if unix.Faccessat(unix.AT_FDCWD, p, m, unix.AT_SYMLINK_NOFOLLOW) == nil {
				out = append(out, p)
			}
		}
	})
	return out, err
}

// killUID kills every process of uid: from a thread with uid's identity,
// kill(-1) reaches exactly the processes of uid (and never the init, whose
// ids are root's), in one pass of the kernel over every process; repeated
// until none is left (one forking during a pass), for at most a few
// seconds.
func killUID(uid uint32) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := asUID(uid, uid, func() { unix.Kill(-1, unix.SIGKILL) }); err != nil {
			return err
		}
		reapAll()
		pids, err := uidProcesses(uid)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of uid %d still alive after kill: %v", uid, pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// reapAll reaps every child that has exited, without waiting.
func reapAll() {
	for {
		pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
		if err == unix.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}

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
// namespace sees; none when /proc cannot be read.
func UIDProcesses(uid uint32) []int {
	pids, _ := uidProcesses(uid)
	return pids
}
