package procjail

import (
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// The pre-mark: the files that exist at start under
// OpenGateOptions.PreMark (the workspace and the write roots) are decided
// by the walk below instead of at their first open: each one allowed gets
// the same ignore mark an allowed open gets, so its first open inside is
// not reported at all. Correctness does not depend on it: an open of a
// file the walk has not reached (yet, or at all) is decided as an event.
//
// The walk starts with the sandbox's start (startPreMark, from Start,
// before the spec goes to the init): it runs while the init builds the
// sandbox's mounts and beside the command after. An inode ignore mark is
// the group's, on the inode: it needs no mount mark to exist. The
// sandbox's view does not exist yet, so what it will show is read from
// the plan (hostShown, fs_linux.go: the mounts setupFileSystem makes). The
// walk goes down the host's tree from held directory descriptors (the
// host's mounts are never marked, so its own opens are not events), and a
// file is marked only when
//
//  1. it is a regular file, opened O_PATH|O_NOFOLLOW relative to its held
//     parent (never by a path resolved again);
//  2. the plan shows it as the host's file at that path: never a Hidden
//     path or anything below a hidden directory, /tmp, /var/tmp, the home
//     overlay, /proc, /sys, /dev, resolv.conf (hostShown); and it and
//     every directory above it up to the walked root are on the root's
//     own host mount (statx's mount id: a host mount made after the
//     sandbox's mount namespace went private is not inside);
//  3. the decider allows its path and identity (a file hidden at start,
//     under another name, is refused: never marked);
//  4. it was not modified between the decision and the mark (its mtime
//     and ctime after the mark are those before the decision; otherwise
//     the mark is removed again).
//
// Mark then checks what the plan cannot say (checkPreMark): that the
// sandbox shows each walked root as the host's directory, and has no mount
// below one, where the walk goes, that is neither the plan's nor the
// host's. If not, the walk is stopped and every inode mark of the group
// flushed before any event is decided. After that the walk enters only
// the directories the sandbox shows as the same inode.
//
// The mark is added through a read-only descriptor reopened from the
// O_PATH one (/proc/self/fd/N: the same inode, on the host's mount, so no
// event): fanotify_mark does not take an O_PATH descriptor.

// preMarkEntries and preMarkTime bound the walk: as many entries as the
// plan's scan looks at (policy.DefaultScanLimit), and at most 10 s.
const (
	preMarkEntries = 200000
	preMarkTime    = 10 * time.Second
)

// preMarkRoot is one walked root: held open from before the walk marks
// anything, with the host's identity and mount id it had.
type preMarkRoot struct {
	path  string
	fd    int
	id    FileID
	mntID uint64
}

// preMarkWalk is one walk's plan and budget.
type preMarkWalk struct {
	g        *OpenGate
	shown    hostShown
	mntID    uint64 // the root being walked's
	left     int
	deadline time.Time
}

// PreMarkDone is closed when the pre-mark walk is over (or it never
// started and the gate is closed). Safe for concurrent use.
func (g *OpenGate) PreMarkDone() <-chan struct{} { return g.premarked }

// PreMarks is how many files the pre-mark walk has marked. Safe for
// concurrent use.
func (g *OpenGate) PreMarks() int { return int(g.preMarks.Load()) }

// Decided is how many permission events the gate has decided (opens of
// files no ignore mark covered). Safe for concurrent use.
func (g *OpenGate) Decided() int { return int(g.events.Load()) }

// startPreMark starts the pre-mark walk of OpenGateOptions.PreMark under
// the sandbox fs describes (the spec's, as the init will build it). The
// roots are opened here, before anything is marked (Mark checks them);
// the walk runs on a goroutine of its own. Only the first call walks.
func (g *OpenGate) startPreMark(fs FileSystem) {
	g.walkMu.Lock()
	defer g.walkMu.Unlock()
	if g.closed || g.walkStarted {
		return
	}
	shown := newHostShown(&fs)
	for _, r := range g.opts.PreMark {
		if !filepath.IsAbs(r) {
			continue
		}
		r = filepath.Clean(r)
		if !shown.at(r) {
			continue
		}
		fd, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		st, mnt, ok := statMount(fd)
		if !ok {
			unix.Close(fd)
			continue
		}
		g.walkRoots = append(g.walkRoots, preMarkRoot{path: r, fd: fd, id: FileID{Dev: st.Dev, Ino: st.Ino}, mntID: mnt})
	}
	g.walkShown, g.walkPlan = shown, planMounts(&fs)
	g.walkStarted = true
	go g.preMark(shown)
}

// preMark walks the held roots, then closes them.
func (g *OpenGate) preMark(shown hostShown) {
	defer close(g.premarked)
	w := &preMarkWalk{g: g, shown: shown, left: preMarkEntries, deadline: time.Now().Add(preMarkTime)}
	for _, r := range g.walkRoots {
		if !w.done() {
			w.mntID = r.mntID
			w.dir(r.fd, r.path)
		}
		unix.Close(r.fd)
	}
}

// checkPreMark checks, once the sandbox exists (its root directory is
// root, /proc/<init>/root; mounts its mount points), what the plan could
// not say: that it shows each walked root as the host's directory, and
// that every mount point inside below a walked root, where the walk goes
// (hostShown), is the plan's own or one the host has too (a host mount
// the walk does not cross); a mount the host has since removed would
// cover, inside, files the walk finds on the host. If either fails, the
// walk is stopped and every inode mark of the group flushed; Mark calls
// it before any event is decided. From then on the walk compares each
// directory it enters with the sandbox's (preMarkWalk.sub). It says
// whether the marks were kept.
func (g *OpenGate) checkPreMark(root string, mounts []string) bool {
	if len(g.walkRoots) == 0 {
		return true
	}
	ok := true
	for _, r := range g.walkRoots {
		var in unix.Stat_t
		if unix.Lstat(root+r.path, &in) != nil || g.hostID(FileID{Dev: in.Dev, Ino: in.Ino}) != r.id {
			ok = false
		}
	}
	var host map[string]bool
	for _, m := range mounts {
		inner := false
		for _, r := range g.walkRoots {
			if under(m, r.path) && m != r.path {
				inner = true
			}
		}
		if !ok || !inner || g.walkPlan[m] || !g.walkShown.at(filepath.Dir(m)) {
			continue
		}
		if host == nil {
			all, _, err := mountPoints("/proc/self/mountinfo")
			if err != nil {
				ok = false
				break
			}
			host = map[string]bool{}
			for _, h := range all {
				host[h] = true
			}
		}
		if !host[m] {
			ok = false
		}
	}
	if !ok {
		g.stopping.Store(true)
		<-g.premarked
		unix.FanotifyMark(g.fd, unix.FAN_MARK_FLUSH, 0, unix.AT_FDCWD, "")
		g.preMarks.Store(0)
		return false
	}
	g.inside.Store(&root)
	return true
}

// done says whether the walk must stop: Close, or a bound reached.
func (w *preMarkWalk) done() bool {
	if w.g.stopping.Load() || w.left <= 0 {
		return true
	}
	return w.left%256 == 0 && time.Now().After(w.deadline)
}

// statMount is fd's status and mount id (statx, not following a final
// symlink).
func statMount(fd int) (unix.Stat_t, uint64, bool) {
	var x unix.Statx_t
	var st unix.Stat_t
	if unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &x) != nil ||
		x.Mask&unix.STATX_MNT_ID == 0 {
		return st, 0, false
	}
	st.Dev = unix.Mkdev(x.Dev_major, x.Dev_minor)
	st.Ino = x.Ino
	st.Mode = uint32(x.Mode)
	st.Mtim = unix.Timespec{Sec: x.Mtime.Sec, Nsec: int64(x.Mtime.Nsec)}
	st.Ctim = unix.Timespec{Sec: x.Ctime.Sec, Nsec: int64(x.Ctime.Nsec)}
	return st, x.Mnt_id, true
}

// dir walks the directory host (read-only), at path, which the plan
// shows as the host's.
func (w *preMarkWalk) dir(host int, path string) {
	d, err := unix.Dup(host)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(d), path)
	defer f.Close()
	for !w.done() {
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			if w.left--; w.done() {
				return
			}
			p := filepath.Join(path, e.Name())
			if !w.shown.child(p) {
				continue
			}
			switch t := e.Type(); {
			case t.IsDir():
				w.sub(host, e.Name(), p)
			case t.IsRegular():
				w.file(host, e.Name(), p)
			}
		}
		if err != nil {
			return
		}
	}
}

// sub walks the subdirectory name of host when it is on the root's mount
// (and, once the sandbox exists, the sandbox shows it).
func (w *preMarkWalk) sub(host int, name, path string) {
	h, err := unix.Openat(host, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(h)
	st, mnt, ok := statMount(h)
	if !ok || mnt != w.mntID {
		return
	}
	// Once the sandbox exists (checkPreMark), a directory it shows as
	// another inode (a mount the host has removed since) is not entered.
	if root := w.g.inside.Load(); root != nil {
		var in unix.Stat_t
		if unix.Lstat(*root+path, &in) != nil || w.g.hostID(FileID{Dev: in.Dev, Ino: in.Ino}) != (FileID{Dev: st.Dev, Ino: st.Ino}) {
			return
		}
	}
	w.dir(h, path)
}

// file decides, and marks when allowed, the regular file name of host
// (see the numbered conditions above).
func (w *preMarkWalk) file(host int, name, path string) {
	fd, err := unix.Openat(host, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	st, mnt, ok := statMount(fd)
	if !ok || st.Mode&unix.S_IFMT != unix.S_IFREG || mnt != w.mntID {
		return
	}
	if refused, _, _ := w.g.opts.Decide(path, FileID{Dev: st.Dev, Ino: st.Ino}, true); refused {
		return
	}
	rfd, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(rfd)
	if w.g.markAllowed(rfd, st) {
		w.g.preMarks.Add(1)
	}
}
