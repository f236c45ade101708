//go:build linux

package procjail

// The sandbox's private /dev (as bubblewrap's --dev): the host's /dev
// would let a sandbox started by root open block devices and /dev/kmsg, and
// any sandbox open its user's other terminals under /dev/pts (read their
// keystrokes, write to them).

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// devNode is a host device node bound into the private /dev (mknod is not
// allowed in a user namespace), with the device number it must have.
type devNode struct {
	name         string
	major, minor uint32
}

var devNodes = []devNode{
	{"null", 1, 3}, {"zero", 1, 5}, {"full", 1, 7}, {"random", 1, 8}, {"urandom", 1, 9}, {"tty", 5, 0},
}

var devSymlinks = map[string]string{
	"ptmx": "pts/ptmx", "fd": "/proc/self/fd",
	"stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
}

const (
	devptsMagic = 0x1cd1
	tmpfsMagic  = 0x01021994
)

// setupDev replaces /dev with a private one: a tmpfs (read-only once
// filled) holding the nodes of devNodes bound from the host's, a new devpts
// instance on /dev/pts (only ptys opened inside are there), a fresh tmpfs
// on /dev/shm, the symlinks of devSymlinks and, when the init has a
// controlling terminal among its descriptors 0-2, that terminal on
// /dev/console. It must run after /proc is mounted. Everything is checked
// before it returns.
func setupDev() error {
	const step = "private /dev"
	// Open the host's nodes (O_PATH: the devices themselves are not
	// opened) before the tmpfs hides them.
	var hostDevpts unix.Stat_t
	if err := unix.Stat("/dev/pts", &hostDevpts); err != nil {
		hostDevpts.Dev = 0
	}
	srcs := make([]int, len(devNodes))
	defer func() {
		for _, fd := range srcs {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, n := range devNodes {
		fd, err := unix.Open("/dev/"+n.name, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return stepErr(step, &os.PathError{Op: "open", Path: "/dev/" + n.name, Err: err})
		}
		srcs[i] = fd
		if err := checkDevNode(fd, n); err != nil {
			return stepErr(step, fmt.Errorf("host /dev/%s: %w", n.name, err))
		}
	}
	console, err := controllingTerminalFD()
	if err != nil {
		return stepErr(step, err)
	}
	if console >= 0 {
		defer unix.Close(console)
	}

	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k,nr_inodes=64"); err != nil {
		return stepErr("mount /dev", err)
	}
	for i, n := range devNodes {
		if err := bindFile(fmt.Sprintf("/proc/self/fd/%d", srcs[i]), "/dev/"+n.name); err != nil {
			return stepErr("mount /dev/"+n.name, err)
		}
	}
	if console >= 0 {
		if err := bindFile(fmt.Sprintf("/proc/self/fd/%d", console), "/dev/console"); err != nil {
			return stepErr("mount /dev/console", err)
		}
	}
	if err := os.Mkdir("/dev/pts", 0o755); err != nil {
		return stepErr("mount /dev/pts", err)
	}
	if err := unix.Mount("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC,
		"newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return stepErr("mount /dev/pts", fmt.Errorf("a new devpts instance: %w", err))
	}
	if err := os.Mkdir("/dev/shm", 0o755); err != nil {
		return stepErr("mount /dev/shm", err)
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return stepErr("mount /dev/shm", err)
	}
	for name, target := range devSymlinks {
		if err := os.Symlink(target, "/dev/"+name); err != nil {
			return stepErr(step, err)
		}
	}
	if err := unix.Mount("", "/dev", "", remountFlags("/dev"), ""); err != nil {
		return stepErr("remount /dev read-only", err)
	}
	if err := checkDev(console >= 0, hostDevpts.Dev); err != nil {
		return stepErr("check /dev", err)
	}
	return nil
}

func checkDevNode(fd int, n devNode) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(uint64(st.Rdev)) != n.major || unix.Minor(uint64(st.Rdev)) != n.minor {
		return fmt.Errorf("not the character device %d:%d", n.major, n.minor)
	}
	return nil
}

// controllingTerminalFD returns an O_PATH descriptor of the init's
// controlling terminal (the caller's: the init shares its session) when one
// of descriptors 0-2 is that terminal, or -1.
func controllingTerminalFD() (int, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return -1, err
	}
	// Fields after the command name (which may hold spaces), from field 3.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return -1, fmt.Errorf("/proc/self/stat: %q", b)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 5 {
		return -1, fmt.Errorf("/proc/self/stat: %q", b)
	}
	ttyNr, err := strconv.ParseUint(f[4], 10, 64) // field 7
	if err != nil {
		return -1, fmt.Errorf("/proc/self/stat tty_nr: %w", err)
	}
	if ttyNr == 0 {
		return -1, nil
	}
	for fd := 0; fd <= 2; fd++ {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || uint64(st.Rdev) != ttyNr {
			continue
		}
		// The descriptor itself belongs to the caller's mount namespace (a
		// bind from it is refused): reopen its path in this one, and check
		// that it names the same terminal. When it cannot (a terminal from
		// another mount namespace), there is no /dev/console: the command
		// still has the terminal on its descriptors and through /dev/tty.
		path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil || !strings.HasPrefix(path, "/") {
			return -1, nil
		}
		pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, nil
		}
		if unix.Fstat(pfd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || uint64(st.Rdev) != ttyNr {
			unix.Close(pfd)
			return -1, nil
		}
		return pfd, nil
	}
	return -1, nil
}

// bindFile bind-mounts src (a file) on a new empty file dst.
func bindFile(src, dst string) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return unix.Mount(src, dst, "", unix.MS_BIND, "")
}

// checkDev checks the private /dev from the inside: exactly the expected
// entries, /dev read-only, each node the device it must be, /dev/pts a
// devpts instance other than the host's (hostDevpts) holding only ptmx,
// /dev/shm an empty tmpfs.
func checkDev(console bool, hostDevpts uint64) error {
	want := []string{"pts", "shm"}
	for _, n := range devNodes {
		want = append(want, n.name)
	}
	for name := range devSymlinks {
		want = append(want, name)
	}
	if console {
		want = append(want, "console")
	}
	sort.Strings(want)
	if got, err := dirNames("/dev"); err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		return fmt.Errorf("/dev holds %v, want %v (%v)", got, want, err)
	}
	// statfs says whether the mount is read-only without a read of the
	// mount table (~0.3 ms).
	var sfs unix.Statfs_t
	if err := unix.Statfs("/dev", &sfs); err != nil {
		return err
	}
	if sfs.Flags&unix.ST_RDONLY == 0 {
		return fmt.Errorf("/dev is writable")
	}
	for _, n := range devNodes {
		fd, err := unix.Open("/dev/"+n.name, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		err = checkDevNode(fd, n)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("/dev/%s: %w", n.name, err)
		}
	}
	for name, target := range devSymlinks {
		if got, err := os.Readlink("/dev/" + name); err != nil || got != target {
			return fmt.Errorf("/dev/%s links to %q, want %q (%v)", name, got, target, err)
		}
	}
	var fs unix.Statfs_t
	var st unix.Stat_t
	if err := unix.Statfs("/dev/pts", &fs); err != nil || fs.Type != devptsMagic {
		return fmt.Errorf("/dev/pts is not a devpts (%v)", err)
	}
	if err := unix.Stat("/dev/pts", &st); err != nil || uint64(st.Dev) == hostDevpts {
		return fmt.Errorf("/dev/pts is the host's devpts (%v)", err)
	}
	if got, err := dirNames("/dev/pts"); err != nil || len(got) != 1 || got[0] != "ptmx" {
		return fmt.Errorf("the new /dev/pts holds %v (%v)", got, err)
	}
	if err := unix.Statfs("/dev/shm", &fs); err != nil || fs.Type != tmpfsMagic {
		return fmt.Errorf("/dev/shm is not a tmpfs (%v)", err)
	}
	if got, err := dirNames("/dev/shm"); err != nil || len(got) != 0 {
		return fmt.Errorf("the new /dev/shm holds %v (%v)", got, err)
	}
	return nil
}

func dirNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, err
}
