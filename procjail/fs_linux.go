//go:build linux

package procjail

// The sandbox's view of the host filesystem (FileSystem, filesystem.go),
// built in the init's mount namespace before /proc and /dev are mounted:
//
//  1. the trees that stay reachable (write roots, revealed paths) are
//     cloned first (open_tree: detached copies with the host's own
//     flags), and the home directory is opened (the overlay's lower
//     layer), since the private /tmp or a mask may cover them next;
//  2. every mount is made read-only (mount_setattr, recursively);
//  3. a staging tmpfs is mounted on /dev (the private /dev covers it
//     later): the empty, mode-0 directory and file that masks are bound
//     from, and the overlay's upper and work directories;
//  4. /tmp and /var/tmp get fresh tmpfs;
//  5. home gets an overlay whose upper layer is the staging tmpfs;
//  6. hidden directories that hold a write root or a revealed path get a
//     tmpfs skeleton, then the clones are moved into place, and the
//     skeletons made read-only;
//  7. the directories between a write root and a protected or hidden path
//     in it are pinned (bound over themselves: a mount point cannot be
//     renamed), then protected paths are bound read-only over themselves;
//  8. the other hidden paths are masked;
//  9. the staging tmpfs is detached (the overlay keeps what it uses), and
//     everything is checked from the inside.
//
// Every planned path is opened without following symlinks and checked to
// be the file the plan saw (openPlanned), and mounted through that
// descriptor, so a concurrent sandbox cannot redirect a mount by swapping
// a path between the plan and the mount.
//
// The command has no capability and the seccomp filter refuses every
// mount call, so it cannot undo any of this; a nested user namespace is
// refused too, and the kernel locks the mounts it would copy.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	stagingDir  = "/dev"
	maskDirName = "mask-dir"
	maskFileNm  = "mask-file"
	overlayMag  = 0x794c7630
)

// privateTmpDirs get a fresh tmpfs each (those that exist as directories).
var privateTmpDirs = []string{"/tmp", "/var/tmp"}

// setupFileSystem builds the view of fs (see the top of this file). It
// returns nil without doing anything when fs.Confine is unset.
func setupFileSystem(fs *FileSystem) error {
	if !fs.Confine {
		return nil
	}
	if err := fs.Validate(); err != nil {
		return stepErr("filesystem", err)
	}
	b := &fsBuilder{fs: fs, clones: map[string]int{}}
	defer b.close()
	for _, step := range []struct {
		name string
		f    func() error
	}{
		{"filesystem: keep write roots", b.cloneTrees},
		{"filesystem: read-only host", b.readOnlyHost},
		{"filesystem: staging", b.staging},
		{"filesystem: private tmp", b.privateTmp},
		{"filesystem: home overlay", b.homeOverlay},
		{"filesystem: write roots", b.placeTrees},
		{"filesystem: pinned parents", b.pin},
		{"filesystem: protected paths", b.protect},
		{"filesystem: hidden paths", b.hide},
		{"filesystem: detach staging", b.detachStaging},
		{"check filesystem", b.check},
	} {
		if err := step.f(); err != nil {
			return stepErr(step.name, err)
		}
	}
	return nil
}

type fsBuilder struct {
	fs       *FileSystem
	clones   map[string]int // write root or revealed path -> detached clone
	homeFD   int            // O_PATH of the home directory (overlay lower)
	ours     []string       // tmpfs mount points made here (mount points may be created below them)
	skeleton []string       // hidden directories that got a skeleton tmpfs
	allRW    bool           // "/" is a write root
}

func (b *fsBuilder) close() {
	for _, fd := range b.clones {
		unix.Close(fd)
	}
	if b.homeFD > 0 {
		unix.Close(b.homeFD)
	}
}

// kept returns the write roots and revealed paths, parents first, without
// those below another write root (their clone is inside its parent's).
func (b *fsBuilder) kept() []string {
	all := append(append([]string(nil), b.fs.WriteRoots...), b.fs.Revealed...)
	sort.Slice(all, func(i, j int) bool { return len(all[i]) < len(all[j]) || len(all[i]) == len(all[j]) && all[i] < all[j] })
	var out []string
	for _, p := range all {
		dup := false
		for _, q := range out {
			if p == q || (isWriteRoot(b.fs, q) && under(p, q)) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, p)
		}
	}
	return out
}

func isWriteRoot(fs *FileSystem, p string) bool {
	for _, w := range fs.WriteRoots {
		if w == p {
			return true
		}
	}
	return false
}

// under reports whether p is q or below it.
func under(p, q string) bool {
	return p == q || q == "/" || strings.HasPrefix(p, q+"/")
}

func (b *fsBuilder) cloneTrees() error {
	for _, p := range b.kept() {
		if p == "/" {
			b.allRW = true
			continue
		}
		// Opened without following symlinks and checked against the plan:
		// a concurrent sandbox could otherwise swap a parent for a link
		// and make this one's write root another directory.
		at, _, ok, err := b.openPlanned(p)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s does not exist", p)
		}
		fd, err := unix.OpenTree(at, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
		unix.Close(at)
		if err != nil {
			if err == unix.ENOSYS {
				return fmt.Errorf("open_tree %s: %w (the filesystem layer needs Linux 5.2 or later)", p, err)
			}
			return &os.PathError{Op: "open_tree", Path: p, Err: err}
		}
		b.clones[p] = fd
	}
	if h := b.fs.HomeOverlay; h != "" {
		fd, st, ok, err := b.openPlanned(h)
		if err == nil && (!ok || st.Mode&unix.S_IFMT != unix.S_IFDIR) {
			err = fmt.Errorf("%s is not a directory", h)
		}
		if err != nil {
			return err
		}
		b.homeFD = fd
	}
	return nil
}

func (b *fsBuilder) readOnlyHost() error {
	if b.allRW {
		return nil
	}
	return readOnlyTree("/")
}

// readOnlyTree makes the mount at path and every mount below it read-only
// and checks that they are.
func readOnlyTree(path string) error {
	if err := makeReadOnly(path); err != nil {
		return err
	}
	all, err := readMounts()
	if err != nil {
		return err
	}
	return checkReadOnly(all, path)
}

// makeReadOnly makes the mount at path and every mount below it
// read-only (checkReadOnly says whether it took).
func makeReadOnly(path string) error {
	err := unix.MountSetattr(unix.AT_FDCWD, path, unix.AT_RECURSIVE|unix.AT_NO_AUTOMOUNT,
		&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err != unix.ENOSYS {
		return err
	}
	// Before Linux 5.12: remount each mount of the tree, top first.
	tree, err := mountTree(path)
	if err != nil {
		return err
	}
	for _, m := range tree {
		if err := unix.Mount("", m.point, "", remountFlags(m.point), ""); err != nil {
			return err
		}
	}
	return nil
}

// checkReadOnly checks, in the mount table all (readMounts), that the
// mount at path and every mount below it are read-only.
func checkReadOnly(all []mountEntry, path string) error {
	tree, err := treeAt(all, path)
	if err != nil {
		return err
	}
	for _, m := range tree {
		if !m.readOnly {
			return fmt.Errorf("%s still writable after the remount", m.point)
		}
	}
	return nil
}

func (b *fsBuilder) staging() error {
	if err := unix.Mount("tmpfs", stagingDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700"); err != nil {
		return err
	}
	b.ours = append(b.ours, stagingDir)
	if err := unix.Mkdir(stagingDir+"/"+maskDirName, 0); err != nil {
		return err
	}
	fd, err := unix.Open(stagingDir+"/"+maskFileNm, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	unix.Close(fd)
	// Mode 0 even though umask could only have removed bits: say it.
	for _, n := range []string{maskDirName, maskFileNm} {
		if err := unix.Chmod(stagingDir+"/"+n, 0); err != nil {
			return err
		}
	}
	for _, d := range []string{"ovl", "ovl/upper", "ovl/work"} {
		if err := unix.Mkdir(stagingDir+"/"+d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (b *fsBuilder) privateTmp() error {
	for _, d := range privateTmpDirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return &os.PathError{Op: "mount tmpfs", Path: d, Err: err}
		}
		b.ours = append(b.ours, d)
	}
	return nil
}

func (b *fsBuilder) homeOverlay() error {
	h := b.fs.HomeOverlay
	if h == "" {
		return nil
	}
	if err := b.mountPoint(h, true); err != nil {
		return err
	}
	opts := fmt.Sprintf("lowerdir=/proc/self/fd/%d,upperdir=%s/ovl/upper,workdir=%s/ovl/work,userxattr,xino=off", b.homeFD, stagingDir, stagingDir)
	if err := unix.Mount("overlay", h, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return &os.PathError{Op: "mount overlay", Path: h, Err: err}
	}
	return nil
}

// mountPoint makes sure path exists as a directory (dir) or a file, to
// mount on. A missing one is created only below a tmpfs made here (or the
// home overlay, whose changes are discarded): the host is never written.
func (b *fsBuilder) mountPoint(path string, dir bool) error {
	fi, err := os.Lstat(path)
	if err == nil {
		if fi.IsDir() != dir {
			return fmt.Errorf("%s: a directory is needed where there is a file, or the other way round", path)
		}
		return nil
	}
	scratch := false
	for _, o := range append(append([]string(nil), b.ours...), nonEmpty(b.fs.HomeOverlay)...) {
		if o != stagingDir && under(path, o) && path != o {
			scratch = true
		}
	}
	if !scratch {
		return fmt.Errorf("%s does not exist", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if dir {
		return os.Mkdir(path, 0o755)
	}
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// placeTrees mounts a tmpfs skeleton on every hidden directory that holds
// a kept tree and moves the kept trees into place (revealed ones
// read-only), outermost first, then makes the skeletons read-only.
func (b *fsBuilder) placeTrees() error {
	kept := b.kept()
	type item struct {
		path     string
		skeleton bool
	}
	var items []item
	for _, k := range kept {
		items = append(items, item{path: k})
	}
	for _, h := range b.fs.Hidden {
		holds := false
		for _, k := range kept {
			if under(k, h) && k != h {
				holds = true
			}
		}
		if holds {
			items = append(items, item{path: h, skeleton: true})
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return len(items[i].path) < len(items[j].path) })
	for _, it := range items {
		if it.skeleton {
			if fi, err := os.Lstat(it.path); err != nil || !fi.IsDir() {
				continue
			}
			if err := unix.Mount("tmpfs", it.path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
				return &os.PathError{Op: "mount skeleton", Path: it.path, Err: err}
			}
			b.ours = append(b.ours, it.path)
			b.skeleton = append(b.skeleton, it.path)
			continue
		}
		k := it.path
		fd, ok := b.clones[k]
		if !ok {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if err := b.mountPoint(k, st.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
			return err
		}
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, k, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return &os.PathError{Op: "move_mount", Path: k, Err: err}
		}
		if !isWriteRoot(b.fs, k) {
			if err := readOnlyTree(k); err != nil {
				return err
			}
		}
	}
	for _, s := range b.skeleton {
		if err := unix.MountSetattr(unix.AT_FDCWD, s, unix.AT_NO_AUTOMOUNT, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			if err != unix.ENOSYS {
				return &os.PathError{Op: "read-only skeleton", Path: s, Err: err}
			}
			if err := unix.Mount("", s, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
				return &os.PathError{Op: "read-only skeleton", Path: s, Err: err}
			}
		}
	}
	return nil
}

// openPlanned opens a planned path without following any symlink
// (openat2 RESOLVE_NO_SYMLINKS: the plan's paths are canonical, so a
// symlink on the way is one planted since, by a concurrent sandbox) and
// checks that it is the file the plan saw (FileSystem.Identity). A planned
// path that has gone missing is an error when the plan saw it.
func (b *fsBuilder) openPlanned(p string) (fd int, st unix.Stat_t, ok bool, err error) {
	fd, err = unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	want, planned := b.fs.Identity[p]
	if err != nil {
		if !planned && (err == unix.ENOENT || err == unix.ENOTDIR || err == unix.EACCES) {
			return -1, st, false, nil // missing (or out of reach) at start too: nothing to do
		}
		if err == unix.ENOSYS {
			return -1, st, false, fmt.Errorf("openat2 %s: %w (the filesystem layer needs Linux 5.6 or later)", p, err)
		}
		return -1, st, false, &os.PathError{Op: "open (no symlinks)", Path: p, Err: err}
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, false, err
	}
	if planned && (uint64(st.Dev) != want.Dev || st.Ino != want.Ino) {
		unix.Close(fd)
		return -1, st, false, fmt.Errorf("%s changed since the sandbox was planned (replaced by another file)", p)
	}
	return fd, st, true, nil
}

// mountClone clones the tree at from (an fd, or a path under dfd),
// optionally read-only, and moves the clone onto the file open as to.
func mountClone(dfd int, from string, to int, readOnly bool) error {
	flags := uint(unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC | unix.AT_RECURSIVE)
	if from == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	c, err := unix.OpenTree(dfd, from, flags)
	if err != nil {
		return fmt.Errorf("open_tree: %w", err)
	}
	defer unix.Close(c)
	if readOnly {
		if err := unix.MountSetattr(c, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("mount_setattr: %w", err)
		}
	}
	if err := unix.MoveMount(c, "", to, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// pin binds every Pinned directory over itself (writable, as it was): a
// mount point cannot be renamed or removed, so a protected or hidden path
// below it cannot be carried away with its parent (mv .git .git.o).
func (b *fsBuilder) pin() error {
	for _, p := range b.fs.Pinned {
		fd, _, ok, err := b.openPlanned(p)
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		err = mountClone(fd, "", fd, false)
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "pin", Path: p, Err: err}
		}
	}
	return nil
}

func (b *fsBuilder) protect() error {
	for _, p := range b.fs.Placeholders {
		if err := b.placeholder(p); err != nil {
			return err
		}
	}
	for _, p := range b.fs.Protected {
		fd, _, ok, err := b.openPlanned(p)
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue // missing: nothing to bind (see FileSystem)
		}
		err = mountClone(fd, "", fd, true)
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "protect", Path: p, Err: err}
		}
	}
	return nil
}

// placeholder makes the missing protected file p, "{}\n", in the home
// overlay (see FileSystem.Placeholders); one that exists by now is left
// as it is, bound by protect like the others.
func (b *fsBuilder) placeholder(p string) error {
	h := b.fs.HomeOverlay
	if h == "" || !under(p, h) || p == h || b.underWriteRoot(p) || !contains(b.fs.Protected, p) {
		return fmt.Errorf("placeholder %s: not a protected path in the home overlay, outside the write roots", p)
	}
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	// The directories it makes on the way are pinned as the plan pins
	// the existing ones: a rename would carry the file away.
	var made []string
	for d := filepath.Dir(p); d != h; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err != nil {
			made = append(made, d)
		}
	}
	if err := b.mountPoint(p, false); err != nil {
		return &os.PathError{Op: "placeholder", Path: p, Err: err}
	}
	for _, d := range made {
		fd, err := unix.Open(d, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err == nil {
			err = mountClone(fd, "", fd, false)
			unix.Close(fd)
		}
		if err != nil {
			return &os.PathError{Op: "pin", Path: d, Err: err}
		}
	}
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return &os.PathError{Op: "placeholder", Path: p, Err: err}
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, []byte("{}\n")); err != nil {
		return &os.PathError{Op: "placeholder", Path: p, Err: err}
	}
	return nil
}

func (b *fsBuilder) hide() error {
	for _, h := range b.fs.Hidden {
		if contains(b.skeleton, h) {
			continue
		}
		fd, st, ok, err := b.openPlanned(h)
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue // missing: nothing to mask
		}
		src := stagingDir + "/" + maskFileNm
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			src = stagingDir + "/" + maskDirName
		}
		err = mountClone(unix.AT_FDCWD, src, fd, true)
		unix.Close(fd)
		if err != nil {
			return &os.PathError{Op: "mask", Path: h, Err: err}
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (b *fsBuilder) detachStaging() error {
	return unix.Unmount(stagingDir, unix.MNT_DETACH)
}

// check looks at the result from the inside: the host read-only, the
// private tmp dirs fresh tmpfs, every protected path read-only, every
// hidden path an empty mode-0 mask, home an overlay.
func (b *fsBuilder) check() error {
	ro := func(p string) (bool, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(p, &st); err != nil {
			return false, &os.PathError{Op: "statfs", Path: p, Err: err}
		}
		return st.Flags&unix.ST_RDONLY != 0, nil
	}
	if !b.allRW {
		if r, err := ro("/"); err != nil || !r {
			return fmt.Errorf("/ is writable (%v)", err)
		}
	}
	for _, d := range privateTmpDirs {
		if !contains(b.ours, d) || b.underWriteRoot(d) {
			continue
		}
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil || st.Type != tmpfsMagic {
			return fmt.Errorf("%s is not the sandbox's own tmpfs (%v)", d, err)
		}
	}
	if h := b.fs.HomeOverlay; h != "" {
		var st unix.Statfs_t
		if err := unix.Statfs(h, &st); err != nil || (st.Type != overlayMag && !b.coveredByKept(h)) {
			return fmt.Errorf("%s is not the overlay (%v)", h, err)
		}
	}
	for _, p := range b.fs.Protected {
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		if r, err := ro(p); err != nil || !r {
			return fmt.Errorf("protected %s is writable (%v)", p, err)
		}
	}
	for _, h := range b.fs.Hidden {
		fi, err := os.Lstat(h)
		if err != nil {
			if contains(b.skeleton, h) {
				return err
			}
			continue
		}
		if contains(b.skeleton, h) {
			if r, err := ro(h); err != nil || !r {
				return fmt.Errorf("hidden %s is writable (%v)", h, err)
			}
			continue
		}
		// The mask: mode 0, empty (a directory of a tmpfs with no entry has
		// two links), on the read-only staging tmpfs. Its content cannot be
		// listed here: an unprivileged init has no CAP_DAC_OVERRIDE.
		var st unix.Stat_t
		var sf unix.Statfs_t
		if err := unix.Lstat(h, &st); err != nil || unix.Statfs(h, &sf) != nil {
			return fmt.Errorf("hidden %s: cannot check the mask (%v)", h, err)
		}
		if fi.Mode().Perm() != 0 || sf.Type != tmpfsMagic || sf.Flags&unix.ST_RDONLY == 0 ||
			(fi.IsDir() && st.Nlink != 2) || (!fi.IsDir() && st.Size != 0) {
			return fmt.Errorf("hidden %s is not masked (mode %v, %d bytes)", h, fi.Mode(), fi.Size())
		}
	}
	return nil
}

// underWriteRoot reports whether a write root holds p (or is p).
func (b *fsBuilder) underWriteRoot(p string) bool {
	for _, w := range b.fs.WriteRoots {
		if under(p, w) {
			return true
		}
	}
	return false
}

// coveredByKept reports whether a write root is mounted at p itself.
func (b *fsBuilder) coveredByKept(p string) bool {
	_, ok := b.clones[p]
	return ok
}

// landlockFor is the command's Landlock domain for fs: writes only beneath
// the write roots, the private tmp dirs and the home overlay (whose
// inodes are the overlay's: a write there never reaches the host), file
// writes in /dev and /proc; signals and abstract sockets scoped to the
// sandbox. Nil when fs does not confine.
func landlockFor(fs *FileSystem) *landlockRules {
	if !fs.Confine {
		return nil
	}
	r := &landlockRules{Scope: true, WriteFileBeneath: []string{"/dev", "/proc"}}
	r.WriteBeneath = append(r.WriteBeneath, fs.WriteRoots...)
	for _, d := range append(append([]string{}, privateTmpDirs...), "/dev/shm") {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			r.WriteBeneath = append(r.WriteBeneath, d)
		}
	}
	if fs.HomeOverlay != "" {
		r.WriteBeneath = append(r.WriteBeneath, fs.HomeOverlay)
	}
	return r
}

// hostShown is, for the open gate's pre-mark, where the sandbox built from
// a FileSystem shows the host's own files at their host paths, decided
// from the plan alone (the walk starts before the init has built
// anything). Each entry is a path where setupFileSystem, setupInside or
// setupDev mounts something: shown says whether what is there inside is
// the host's file at that path (a clone or a bind of it: the same inode)
// or not (a mask, a skeleton, a tmpfs, the home overlay, /proc, /sys,
// /dev, the generated resolv.conf). A path is shown as the host's when the
// deepest entry at or above it is a shown one, or there is none (the
// host, made read-only); where a shown and a not-shown entry name the
// same path, not shown wins. It errs only toward "not shown": a kept tree
// placed above /tmp, /var/tmp or the home overlay covers them, yet they
// count as not shown.
type hostShown map[string]bool

// newHostShown is the plan's entries (see hostShown):
//
//   - not shown: every Hidden path (masked, or a skeleton tmpfs around
//     what it reveals), /tmp and /var/tmp (privateTmp), HomeOverlay (its
//     lower files show under another device, its upper ones are not the
//     host's), /proc, /sys and /dev (with /dev/shm), /etc/resolv.conf,
//     /etc/hosts and the files they lead to (generatedFile.bind binds over
//     those paths, following a symlink);
//   - shown: WriteRoots and Revealed (clones of the host's trees, moved
//     into place after the tmpfs and the overlay, outermost first, so
//     they cover them); Protected and Pinned are binds over themselves
//     and change nothing.
func newHostShown(fs *FileSystem) hostShown {
	h := hostShown{}
	for _, p := range append(append([]string(nil), fs.WriteRoots...), fs.Revealed...) {
		h[p] = true
	}
	not := append(append([]string(nil), fs.Hidden...), "/proc", "/sys", "/dev", "/etc/resolv.conf", "/etc/hosts")
	if fs.Confine {
		not = append(not, privateTmpDirs...)
	}
	if fs.HomeOverlay != "" {
		not = append(not, fs.HomeOverlay)
	}
	for _, g := range []string{"/etc/resolv.conf", "/etc/hosts"} {
		if r, err := filepath.EvalSymlinks(g); err == nil {
			not = append(not, r)
		}
	}
	for _, p := range not {
		h[filepath.Clean(p)] = false
	}
	return h
}

// at says whether the sandbox shows the host's file at p: the deepest
// entry at or above p decides.
func (h hostShown) at(p string) bool {
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if shown, ok := h[q]; ok {
			return shown
		}
		if q == "/" {
			return true
		}
	}
}

// child is what the sandbox shows at p, an entry of a directory it shows
// as the host's: an entry at p decides, else it is the parent's.
func (h hostShown) child(p string) bool {
	shown, ok := h[p]
	return !ok || shown
}

// planMounts are the paths setupFileSystem mounts something at (or may:
// a missing hidden path is not masked), from the plan: the write roots,
// revealed, hidden, protected, pinned and placeholder paths, the private
// tmp directories and the home overlay. The open gate's pre-mark tells
// them from mounts the sandbox inherited from the host.
func planMounts(fs *FileSystem) map[string]bool {
	m := map[string]bool{}
	for _, l := range [][]string{fs.WriteRoots, fs.Revealed, fs.Hidden, fs.Protected, fs.Pinned, fs.Placeholders, privateTmpDirs, nonEmpty(fs.HomeOverlay)} {
		for _, p := range l {
			m[p] = true
		}
	}
	return m
}
