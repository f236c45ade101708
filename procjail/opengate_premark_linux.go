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
// by the walk below, beside the command, instead of at their first open:
// each one allowed gets the same ignore mark an allowed open gets, so its
// first open inside is not reported at all. Correctness does not depend
// on it: an open of a file the walk has not reached (yet, or at all) is
// decided as an event.
//
// The walk goes down the host's tree (its mounts are not the sandbox's,
// so its own opens are not events) from held directory descriptors, and
// beside it the sandbox's view of the same directories
// (/proc/<init>/root): a file is marked only when
//
//  1. it is a regular file, opened O_PATH|O_NOFOLLOW relative to its held
//     parent (never by a path resolved again);
//  2. the sandbox shows the very same inode at the same path (a file the
//     plan hides, under a mount, or in a directory a mount covers, is
//     never marked);
//  3. the decider allows its path and identity (a file hidden at start,
//     under another name, is refused: never marked);
//  4. it was not modified between the decision and the mark (its mtime
//     and ctime after the mark are those before the decision; otherwise
//     the mark is removed again).
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

// preMarkWalk is one walk's budget.
type preMarkWalk struct {
	g        *OpenGate
	left     int
	deadline time.Time
}

// PreMarkDone is closed when the pre-mark walk is over. Safe for
// concurrent use.
func (g *OpenGate) PreMarkDone() <-chan struct{} { return g.premarked }

// PreMarks is how many files the pre-mark walk has marked. Safe for
// concurrent use.
func (g *OpenGate) PreMarks() int { return int(g.preMarks.Load()) }

// preMark walks OpenGateOptions.PreMark; root is /proc/<init>/root.
func (g *OpenGate) preMark(root string) {
	defer close(g.premarked)
	w := &preMarkWalk{g: g, left: preMarkEntries, deadline: time.Now().Add(preMarkTime)}
	for _, r := range g.opts.PreMark {
		if !filepath.IsAbs(r) || kernelMount(r) {
			continue
		}
		r = filepath.Clean(r)
		host, err := unix.Open(r, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		inside, err := unix.Open(root+r, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(host)
			continue
		}
		if w.same(host, inside, "") {
			w.dir(host, inside, r)
		}
		unix.Close(host)
		unix.Close(inside)
	}
}

// done says whether the walk must stop: Close, or a bound reached.
func (w *preMarkWalk) done() bool {
	if w.g.stopping.Load() || w.left <= 0 {
		return true
	}
	return w.left%256 == 0 && time.Now().After(w.deadline)
}

// same says whether host and inside (or, with name, the entries name of
// those directories) are the same inode, the sandbox's overlay devices
// mapped to the host's (hostID).
func (w *preMarkWalk) same(host, inside int, name string) bool {
	var h, i unix.Stat_t
	flags := unix.AT_SYMLINK_NOFOLLOW
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	if unix.Fstatat(host, name, &h, flags) != nil || unix.Fstatat(inside, name, &i, flags) != nil {
		return false
	}
	return w.g.hostID(FileID{Dev: i.Dev, Ino: i.Ino}) == FileID{Dev: h.Dev, Ino: h.Ino}
}

// dir walks the directory host (read-only) whose sandbox's view is inside
// (O_PATH), at path.
func (w *preMarkWalk) dir(host, inside int, path string) {
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
			switch t := e.Type(); {
			case t.IsDir():
				if kernelMount(p) {
					continue
				}
				w.sub(host, inside, e.Name(), p)
			case t.IsRegular():
				w.file(host, inside, e.Name(), p)
			}
		}
		if err != nil {
			return
		}
	}
}

// sub walks the subdirectory name of host and inside when the sandbox
// shows it (the same inode: not covered by a mount).
func (w *preMarkWalk) sub(host, inside int, name, path string) {
	h, err := unix.Openat(host, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(h)
	i, err := unix.Openat(inside, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(i)
	if w.same(h, i, "") {
		w.dir(h, i, path)
	}
}

// file decides, and marks when allowed, the regular file name of host
// (see the numbered conditions above).
func (w *preMarkWalk) file(host, inside int, name, path string) {
	fd, err := unix.Openat(host, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return
	}
	var in unix.Stat_t
	if unix.Fstatat(inside, name, &in, unix.AT_SYMLINK_NOFOLLOW) != nil ||
		w.g.hostID(FileID{Dev: in.Dev, Ino: in.Ino}) != (FileID{Dev: st.Dev, Ino: st.Ino}) {
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
