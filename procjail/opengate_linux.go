package procjail

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The open gate decides, from outside the sandbox, every open of a file
// on the sandbox's mounts where a files.deny match can appear: a file the
// host makes there during the session (no mount hides it) is refused at
// open time. It is a fanotify group of sandboxd's (FAN_CLASS_CONTENT:
// permission events), with a mount mark for FAN_OPEN_PERM and
// FAN_OPEN_EXEC_PERM on each of the sandbox's mounts at or below the
// roots, placed through /proc/<init>/root so that the sandbox's mounts
// are marked, not the host's: the host's own opens are not seen.
//
// Each event carries a descriptor of the opened file: its path (readlink
// of /proc/self/fd/N: the final file, whatever symlinks, "..", or
// /proc/PID/root led there) and identity are decided by the OpenDecider;
// a refused open fails with EPERM. An allowed file gets an inode ignore
// mark (FAN_MARK_IGNORE, evictable, not surviving a modification), so
// the next opens of the same unchanged file are not reported at all.
//
// fanotify permission events need CAP_SYS_ADMIN in the initial user
// namespace (OpenGateAvailable).

// openGateMask are the events decided.
const openGateMask = unix.FAN_OPEN_PERM | unix.FAN_OPEN_EXEC_PERM

// OpenGate is a started open gate. Its methods are safe for concurrent
// use.
type OpenGate struct {
	fd      int // the fanotify group
	stopfd  int // an eventfd that ends serve
	opts    OpenGateOptions
	once    sync.Once
	started bool // Mark started serve
	// devAlias maps a device the home overlay shows lower files under to
	// their host device (overlayDevices); read-only once serve runs.
	devAlias map[uint64]uint64
	// hostDevs are the devices of sandboxd's own mounts (the host's,
	// hostDevices): a file on one of them has the host's identity.
	hostDevs map[uint64]bool
	served   chan struct{}
	// stopping ends the pre-mark walk (Close, checkPreMark); premarked
	// is closed when it is done. walkMu guards walkStarted (the walk
	// runs: startPreMark) against closed (Close ran); walkRoots are the
	// roots the walk holds, set before it runs.
	stopping    atomic.Bool
	premarked   chan struct{}
	walkMu      sync.Mutex
	walkStarted bool
	closed      bool
	walkRoots   []preMarkRoot
	walkShown   hostShown
	walkPlan    map[string]bool // planMounts
	// inside is /proc/<init>/root once checkPreMark passed: the walk
	// then compares each directory with the sandbox's.
	inside atomic.Pointer[string]
	// preMarks is how many files the walk marked; events how many events
	// serve decided (tests).
	preMarks, events atomic.Int64
	// pidfd is the init's (Mark): serve kills the sandbox through it when
	// it fails. failed is closed, and failErr set, when serve failed.
	pidfd    int
	failOnce sync.Once
	failErr  error // "open gate: " and failWhy
	failWhy  error
	failed   chan struct{}
	// inject, set by tests only, sees each read's result (and buffer)
	// and may change them: a failure injected under the loop.
	inject func(buf []byte, n int, err error) (int, error)
	// Marked is how many mounts Mark marked.
	Marked int
}

// OpenGateAvailable says why this process cannot have an open gate, or
// nil when it can: fanotify's permission events need CAP_SYS_ADMIN in the
// initial user namespace.
func OpenGateAvailable() error {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return fmt.Errorf("open gate: %w", err)
	}
	if f := strings.Fields(string(b)); len(f) != 3 || f[0] != "0" || f[1] != "0" || f[2] != "4294967295" {
		return fmt.Errorf("fanotify permission events need CAP_SYS_ADMIN in the initial user namespace, and sandboxd runs in a user namespace of its own")
	}
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("open gate: capabilities: %w", err)
	}
	if data[0].Effective&(1<<unix.CAP_SYS_ADMIN) == 0 {
		if os.Geteuid() != 0 {
			return fmt.Errorf("fanotify permission events need CAP_SYS_ADMIN in the initial user namespace, and sandboxd runs as uid %d", os.Geteuid())
		}
		return fmt.Errorf("fanotify permission events need CAP_SYS_ADMIN in the initial user namespace, which sandboxd does not have (a container without --cap-add SYS_ADMIN)")
	}
	return nil
}

// NewOpenGate makes the gate's fanotify group; Mark marks the sandbox's
// mounts and starts deciding. The queue is unlimited: a full queue would
// let a permission event through unanswered (the kernel allows what it
// cannot queue).
func NewOpenGate(o OpenGateOptions) (*OpenGate, error) {
	if o.Decide == nil {
		return nil, errors.New("open gate: no decider")
	}
	// O_NONBLOCK: the event's descriptor of a FIFO is opened without
	// waiting for a writer.
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_CONTENT|unix.FAN_CLOEXEC|unix.FAN_UNLIMITED_QUEUE,
		unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC|unix.O_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("open gate: fanotify_init: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("open gate: eventfd: %w", err)
	}
	return &OpenGate{fd: fd, stopfd: stop, opts: o, served: make(chan struct{}), premarked: make(chan struct{}), failed: make(chan struct{}), pidfd: -1}, nil
}

// Mark marks, with a mount mark, every mount of initPID's mount namespace
// at or below the gate's roots, and the mount each root is on, through
// /proc/<initPID>/root; then it starts deciding (on a goroutine of its
// own). A mount point that does not resolve inside (covered by a mask)
// cannot be reached by path there and is left; any other failure is an
// error, and the sandbox must not start.
func (g *OpenGate) Mark(initPID int) error {
	root := "/proc/" + strconv.Itoa(initPID) + "/root"
	mounts, overlays, err := mountPoints("/proc/" + strconv.Itoa(initPID) + "/mountinfo")
	if err != nil {
		return fmt.Errorf("open gate: %w", err)
	}
	targets := map[string]bool{}
	for _, r := range g.opts.Roots {
		// The mount a root is on: that of its nearest ancestor that
		// exists inside (an anchored pattern's directory may not yet).
		at := r
		for at != "/" {
			var st unix.Stat_t
			if unix.Lstat(root+at, &st) == nil {
				break
			}
			at = filepath.Dir(at)
		}
		targets[at] = true
		for _, m := range mounts {
			if under(m, r) && !kernelMount(m) {
				targets[m] = true
			}
		}
	}
	for t := range targets {
		err := unix.FanotifyMark(g.fd, unix.FAN_MARK_ADD|unix.FAN_MARK_MOUNT|unix.FAN_MARK_DONT_FOLLOW, openGateMask, unix.AT_FDCWD, root+t)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("open gate: mark the mount at %s: %w", t, err)
		}
		g.Marked++
	}
	g.devAlias = overlayDevices(root, overlays)
	if g.hostDevs, err = hostDevices("/proc/self/mountinfo"); err != nil {
		return fmt.Errorf("open gate: %w", err)
	}
	if g.Marked == 0 {
		return fmt.Errorf("open gate: none of %s is a mount or on one inside the sandbox", strings.Join(g.opts.Roots, ", "))
	}
	// The pre-mark walk (started with the sandbox, before its mounts
	// existed) read the sandbox's view from the plan: its roots must be
	// the host's directories inside, or its marks go.
	g.checkPreMark(root, mounts)
	// The init, held for serve to kill should it fail (a pidfd: never
	// another process that got its pid after it was reaped).
	if g.pidfd, err = unix.PidfdOpen(initPID, 0); err != nil {
		return fmt.Errorf("open gate: pidfd_open of the init: %w", err)
	}
	g.started = true
	go g.serve()
	return nil
}

// kernelMount says whether a mount point is the sandbox's /proc, /sys or
// /dev, or below them (a write root "/" holds them): no host file
// appears there, and the event's descriptor of a device or a /proc file,
// opened by sandboxd, could act on sandboxd itself.
func kernelMount(m string) bool {
	return under(m, "/proc") || under(m, "/sys") || under(m, "/dev")
}

// Close stops deciding and closes the group. Call it once nothing runs
// in the sandbox any more: the kernel allows the events still pending
// when the group is closed.
func (g *OpenGate) Close() {
	g.once.Do(func() {
		g.walkMu.Lock()
		g.closed = true
		walking := g.walkStarted
		g.walkMu.Unlock()
		if walking {
			g.stopping.Store(true)
			<-g.premarked
		} else {
			close(g.premarked) // no walk will start now
		}
		if g.started {
			one := [8]byte{1}
			unix.Write(g.stopfd, one[:])
			<-g.served
		}
		unix.Close(g.fd)
		unix.Close(g.stopfd)
		if g.pidfd >= 0 {
			unix.Close(g.pidfd)
		}
	})
}

// Failed is closed when the gate failed (Err says why): it stopped
// deciding and killed the sandbox. Safe for concurrent use.
func (g *OpenGate) Failed() <-chan struct{} { return g.failed }

// Err is why the gate failed, or nil. Safe for concurrent use.
func (g *OpenGate) Err() error {
	select {
	case <-g.failed:
		return g.failErr
	default:
		return nil
	}
}

// fail ends the session: serve cannot decide any more, and an open it
// does not answer would wait until the group is closed, which allows it.
// The sandbox is killed (its init, and with it the pid namespace);
// Sandbox.Wait reports err with status 125.
func (g *OpenGate) fail(err error) {
	g.failOnce.Do(func() {
		g.failWhy = fmt.Errorf("%w; the sandbox was killed (its opens could no longer be decided)", err)
		g.failErr = fmt.Errorf("open gate: %w", g.failWhy)
		close(g.failed)
		if g.pidfd >= 0 {
			unix.PidfdSendSignal(g.pidfd, unix.SIGKILL, nil, 0)
		}
	})
}

// serve reads the events in batches and answers each, until Close. Any
// failure (poll, read, an event it cannot parse) fails the gate (fail):
// the events of the batch not yet answered are denied, the sandbox is
// killed.
func (g *OpenGate) serve() {
	defer close(g.served)
	buf := make([]byte, 64<<10)
	fds := []unix.PollFd{{Fd: int32(g.fd), Events: unix.POLLIN}, {Fd: int32(g.stopfd), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil && err != unix.EINTR {
			g.fail(fmt.Errorf("poll: %w", err))
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		if fds[0].Revents&(unix.POLLERR|unix.POLLNVAL|unix.POLLHUP) != 0 {
			g.fail(fmt.Errorf("poll: the group's descriptor reports %#x", fds[0].Revents))
			return
		}
		if fds[0].Revents == 0 {
			continue
		}
		n, err := unix.Read(g.fd, buf)
		if g.inject != nil {
			n, err = g.inject(buf, n, err)
		}
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			g.fail(fmt.Errorf("read: %w", err))
			if n > 0 {
				g.deny(buf[:n])
			}
			return
		}
		if rest, err := g.batch(buf[:n]); err != nil {
			// Failed first, then the rest denied: a caller that sees
			// its open refused finds the gate's failure already set
			// (Start reports it, not the command's EPERM).
			g.fail(err)
			g.deny(rest)
			return
		}
	}
}

// metaSize is the size of struct fanotify_event_metadata.
const metaSize = int(unsafe.Sizeof(unix.FanotifyEventMetadata{}))

// batch answers each event of buf. An event it cannot parse (a bad
// length, another metadata version) or answer is an error, returned with
// what of buf is not answered (the caller denies it).
func (g *OpenGate) batch(buf []byte) ([]byte, error) {
	for len(buf) >= metaSize {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[0]))
		if m.Event_len < uint32(metaSize) || int(m.Event_len) > len(buf) {
			return buf, fmt.Errorf("an event of length %d in %d bytes read", m.Event_len, len(buf))
		}
		if m.Vers != unix.FANOTIFY_METADATA_VERSION {
			return buf, fmt.Errorf("event version %d, want %d", m.Vers, unix.FANOTIFY_METADATA_VERSION)
		}
		buf = buf[m.Event_len:]
		if m.Fd < 0 {
			// No descriptor: the kernel already answered (it denies a
			// permission event it could not give one for).
			continue
		}
		g.events.Add(1)
		err := g.answer(int(m.Fd), int(m.Pid), m.Mask)
		unix.Close(int(m.Fd))
		if err != nil {
			return buf, err // the events after this one
		}
	}
	return nil, nil
}

// deny answers FAN_DENY to every event of buf it can find, whatever its
// version (the descriptor and length are where every version has them),
// and closes its descriptor: the events a failed serve already read.
func (g *OpenGate) deny(buf []byte) {
	for len(buf) >= metaSize {
		m := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[0]))
		if m.Fd >= 0 {
			g.respond(int(m.Fd), unix.FAN_DENY, "")
			unix.Close(int(m.Fd))
		}
		if m.Event_len < uint32(metaSize) || int(m.Event_len) > len(buf) {
			return
		}
		buf = buf[m.Event_len:]
	}
}

// respond writes the answer to the event whose descriptor is fd. An
// answer that cannot be written leaves the open waiting: an error.
func (g *OpenGate) respond(fd int, resp uint32, path string) error {
	r := unix.FanotifyResponse{Fd: int32(fd), Response: resp}
	b := (*[unsafe.Sizeof(r)]byte)(unsafe.Pointer(&r))[:]
	if _, err := unix.Write(g.fd, b); err != nil {
		return fmt.Errorf("answer for %s: %w", path, err)
	}
	return nil
}

// answer decides one event and answers it: FAN_ALLOW, or FAN_DENY when
// the decider refuses or the file cannot be named or identified. An
// allowed file's ignore mark is added before the answer (markAllowed); a
// modification between the fstat the decision used and the mark (a mark
// added after it would outlive it) removes the mark again.
func (g *OpenGate) answer(fd, pid int, mask uint64) error {
	path, id, st, unlinked, err := eventFile(fd)
	if err != nil {
		g.refused(OpenRefusal{Path: path, Pid: pid, Rule: "open gate", Reason: "the opened file cannot be named or identified: " + err.Error()})
		return g.respond(fd, unix.FAN_DENY, path)
	}
	id, known := g.identify(path, id)
	if refused, rule, reason := g.opts.Decide(path, id, known); refused {
		g.refused(OpenRefusal{Path: path, Pid: pid, Rule: rule, Reason: reason})
		return g.respond(fd, unix.FAN_DENY, path)
	}
	// The next opens of this file, unchanged, are not reported: the mark
	// goes when it is modified (no FAN_MARK_IGNORED_SURV_MODIFY) or its
	// inode is evicted. A failure only costs the next event. The mark is
	// made before the answer: answered first, the caller's next open of
	// the same file could come before the mark and be decided again
	// (TestOpenGate saw it on a loaded machine). A file whose name was
	// removed during the open is not marked: its other names (a host's
	// hard link) are decided at their own opens.
	if !unlinked {
		g.markAllowed(fd, st)
	}
	return g.respond(fd, unix.FAN_ALLOW, path)
}

// markAllowed adds the ignore mark of an allowed file (markIgnored).
func (g *OpenGate) markAllowed(fd int, st unix.Stat_t) bool { return markIgnored(g.fd, fd, false, st) }

// markIgnored adds group's ignore mark to the file fd, whose status was st
// when it was decided, and removes it again when the file was modified
// since (mtime or ctime changed; a write or a new name changes them). The
// open gate marks what it allowed, the create gate a file it made
// (createMarked). An O_PATH descriptor (oPath) is marked through its
// /proc/self/fd link, which names that file and no other: fanotify_mark
// takes no O_PATH descriptor (EBADF).
func markIgnored(group, fd int, oPath bool, st unix.Stat_t) bool {
	dir, path := fd, ""
	if oPath {
		dir, path = unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd)
	}
	if unix.FanotifyMark(group, unix.FAN_MARK_ADD|unix.FAN_MARK_IGNORE|unix.FAN_MARK_EVICTABLE, openGateMask, dir, path) != nil {
		return false
	}
	var after unix.Stat_t
	if unix.Fstat(fd, &after) != nil || after.Mtim != st.Mtim || after.Ctim != st.Ctim {
		unix.FanotifyMark(group, unix.FAN_MARK_REMOVE|unix.FAN_MARK_IGNORE, openGateMask, dir, path)
		return false
	}
	return true
}

// hostID is id with an overlay's device for its lower layer's files
// mapped to the host's (overlayDevices): a hidden file's identity is the
// host's.
func (g *OpenGate) hostID(id FileID) FileID {
	if d, ok := g.devAlias[id.Dev]; ok {
		id.Dev = d
	}
	return id
}

// identify is the host's identity of the event's file at path whose
// identity inside is id, and whether it could be established (known). In
// order:
//
//  1. a file on a device of the host's mounts (hostDevs) is id;
//  2. a file on a device overlayDevices mapped is the host's file;
//  3. a file whose host path (the sandbox's paths are the host's) is, by
//     lstat, a file with the same inode number is that host file: the
//     home overlay's lower file, when overlayDevices learnt no mapping
//     (a home holding nothing but hidden files);
//  4. anything else (an overlay's upper file, the sandbox's own tmpfs, a
//     lower file whose host name went since) is not known: the decider
//     must refuse a hidden identity by its inode number alone.
func (g *OpenGate) identify(path string, id FileID) (FileID, bool) {
	if g.hostDevs[id.Dev] {
		return id, true
	}
	if d, ok := g.devAlias[id.Dev]; ok {
		return FileID{Dev: d, Ino: id.Ino}, true
	}
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil && st.Ino == id.Ino && st.Mode&unix.S_IFMT == unix.S_IFREG {
		return FileID{Dev: st.Dev, Ino: st.Ino}, true
	}
	return id, false
}

// hostDevices are the devices (major:minor) of the mounts a mountinfo
// file lists.
func hostDevices(path string) (map[uint64]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	devs := map[uint64]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var maj, min uint32
		if len(f) < 3 {
			return nil, fmt.Errorf("%s: %q", path, line)
		}
		if _, err := fmt.Sscanf(f[2], "%d:%d", &maj, &min); err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, line, err)
		}
		devs[unix.Mkdev(maj, min)] = true
	}
	return devs, nil
}

// refused fills in the process's inside pid and name and reports r.
func (g *OpenGate) refused(r OpenRefusal) {
	if g.opts.Refused == nil {
		return
	}
	if c, err := os.ReadFile("/proc/" + strconv.Itoa(r.Pid) + "/comm"); err == nil {
		r.Comm = strings.TrimSpace(string(c))
	}
	r.Pid = insidePID(r.Pid)
	g.opts.Refused(r)
}

// eventFile is the path, identity and status of an event's file. A file
// whose name was removed since the open ("... (deleted)", whether other
// names are left or not) has the name it had; unlinked says so.
func eventFile(fd int) (path string, id FileID, st unix.Stat_t, unlinked bool, err error) {
	if path, err = os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil {
		return "", FileID{}, st, false, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return path, FileID{}, st, false, err
	}
	// The kernel names a file whose name was removed since the open
	// "NAME (deleted)", whether or not other names remain: it is decided
	// by the name it was opened by, and answer leaves it unmarked.
	path, unlinked = strings.CutSuffix(path, " (deleted)")
	if !strings.HasPrefix(path, "/") {
		return path, FileID{}, st, unlinked, fmt.Errorf("%q is not a path", path)
	}
	return path, FileID{Dev: st.Dev, Ino: st.Ino}, st, unlinked, nil
}

// insidePID is host pid as its innermost pid namespace numbers it
// (NSpid's last field), or pid when that cannot be read.
func insidePID(pid int) int {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return pid
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				if n, err := strconv.Atoi(f[len(f)-1]); err == nil {
					return n
				}
			}
		}
	}
	return pid
}

// mountPoints are the mount points a mountinfo file lists
// (parseMountLine), and those of its overlay mounts.
func mountPoints(path string) (all, overlays []string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if len(strings.Fields(line)) == 0 {
			continue
		}
		m, ok := parseMountLine(line)
		if !ok {
			return nil, nil, fmt.Errorf("%s: %q", path, line)
		}
		all = append(all, m.point)
		if m.fsType == "overlay" {
			overlays = append(overlays, m.point)
		}
	}
	return all, overlays, nil
}

// overlayDevices maps the devices an overlay mount of the sandbox's (the
// home overlay) shows its lower layer's files under to the host's device
// of those files: overlayfs gives a file of a lower layer on another
// filesystem than the upper a device of its own and the real inode
// number. Each overlay's mount point is the host's directory of its lower
// layer; its first regular files (at most 256 entries looked at) are
// compared, by inode, with what the sandbox sees at the same path.
func overlayDevices(root string, overlays []string) map[uint64]uint64 {
	alias := map[uint64]uint64{}
	for _, o := range overlays {
		seen := 0
		filepath.WalkDir(o, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if seen++; seen > 256 {
				return filepath.SkipAll
			}
			if !d.Type().IsRegular() {
				return nil
			}
			var host, inside unix.Stat_t
			if unix.Lstat(p, &host) != nil || unix.Lstat(root+p, &inside) != nil {
				return nil
			}
			if host.Ino == inside.Ino && host.Dev != inside.Dev {
				alias[inside.Dev] = host.Dev
				return filepath.SkipAll
			}
			return nil
		})
	}
	return alias
}
