//go:build linux

package procjail

// The Unix socket gate. Host Unix sockets are egress (a Docker or SSH-agent
// socket on the host filesystem is a way out), and a network namespace
// hides only abstract sockets, not pathname ones. The mechanism:
//
//   - By default the seccomp filter refuses socket(AF_UNIX, ...) to the
//     command's whole tree (EPERM), and socketpair only makes stream and
//     seqpacket pairs (a datagram socket could sendto any host path).
//     Everything sandboxd offers inside (proxy, DNS) is forwarded on
//     loopback TCP by the init, which is not under the filter.
//     Abstract sockets are also cut off by the network namespace.
//   - With AllowUnixSockets, the filter lets the command create AF_UNIX
//     stream/seqpacket sockets, and sends every connect(2) to the init as a
//     seccomp user notification. The init never lets the kernel carry on
//     with the call (SECCOMP_USER_NOTIF_FLAG_CONTINUE would re-read the
//     descriptor and the address after the check: another thread could
//     dup2 a Unix socket onto the descriptor or rewrite the address
//     meanwhile). Instead it takes its own copy of the socket (pidfd_getfd),
//     reads the address once into its own memory, and performs the connect
//     itself on that copy: a non-Unix socket is connected to the copied
//     address as is (the init shares the sandbox's network namespace); a
//     Unix socket is connected only to an allowed socket, through an O_PATH
//     descriptor the init opened at setup (/proc/self/fd/N), so a path
//     swapped or re-linked later cannot redirect it. Abstract names connect
//     only within the sandbox's own network namespace. Every other
//     pathname, including sockets the command creates itself, gets EACCES.

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Seccomp notification ioctls (linux/seccomp.h).
const (
	ioctlNotifRecv    = 0xc0502100
	ioctlNotifSend    = 0xc0182101
	ioctlNotifIDValid = 0x40082102
)

// notifIoctl makes one of the listener's ioctls (SEND, ID_VALID, ADDFD),
// again while it fails with EINTR. Each takes the filter's notify_lock
// with mutex_lock_interruptible, which gives up with EINTR, before the
// call did anything, when a signal comes to the waiting thread (an
// orphan's SIGCHLD to the init, Go's preemption), and the kernel does
// not restart it. Taken for an answer, that EINTR lost a SEND (the
// caller waits for good), failed an ID_VALID (a live caller refused with
// EPERM: a create of 6,400 in TestFSCreateGateSemantics's stress, with
// orphans ending all along, failed so once in 150 boxes) or passed EINTR
// to an open as its result. An ADDFD interrupted later, while its
// descriptor waits for the caller, is restarted by the kernel or
// returns what the caller did with it: again is right in every case.
func notifIoctl(listener int, req uintptr, arg unsafe.Pointer) (uintptr, unix.Errno) {
	for {
		r, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(listener), req, uintptr(arg))
		if e != unix.EINTR {
			return r, e
		}
	}
}

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// unixGate decides the command's connect calls when AllowUnixSockets is set.
// The same listener serves the create gate (creategate_linux.go): one
// seccomp filter, one notification descriptor.
type unixGate struct {
	allowed   map[string]int // clean absolute path -> O_PATH fd
	unixOn    bool           // connect goes to the gate (AllowUnixSockets)
	create    *createGate    // the create gate, or nil
	listener  int
	proc      ProcMode // which /proc names the callers (procDirOf)
	shared    bool     // container mode: the network namespace is the container's
	connectNr uint32   // connect's number
}

// startUnixGate opens the allowed sockets (each must exist and be a
// socket) and makes the create gate (FileSystem.CreateGuard); it returns
// nil when there is neither.
func startUnixGate(s *initSpec, report func(CreateRefusal)) (*unixGate, error) {
	create, err := newCreateGate(s, report)
	if err != nil {
		return nil, fmt.Errorf("create gate: %w", err)
	}
	if len(s.AllowUnixSockets) == 0 && create == nil {
		return nil, nil
	}
	g := &unixGate{allowed: map[string]int{}, unixOn: len(s.AllowUnixSockets) > 0, create: create, listener: -1, proc: s.Proc, shared: s.Container != nil}
	if arch, ok := seccompArches[runtime.GOARCH]; ok {
		g.connectNr = arch.Connect
	}
	for _, p := range s.AllowUnixSockets {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			unix.Close(fd)
			return nil, fmt.Errorf("%s is not a socket", p)
		}
		g.allowed[filepath.Clean(p)] = fd
	}
	return g, nil
}

// serve answers notifications until the listener fails (the init exits
// with the sandbox).
func (g *unixGate) serve() {
	for {
		var req seccompNotif
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(g.listener), ioctlNotifRecv, uintptr(unsafe.Pointer(&req))); errno != 0 {
			if errno == unix.EINTR || errno == unix.ENOENT {
				continue
			}
			return
		}
		switch {
		case g.unixOn && req.Nr >= 0 && uint32(req.Nr) == g.connectNr:
			go g.answer(req)
		case g.create != nil && g.create.handles(req.Nr):
			g.answerCreate(req) // hands the call to a worker
		default:
			go g.refuse(req)
		}
	}
}

// refuse answers a call no gate serves (none is sent here) with EPERM.
func (g *unixGate) refuse(req seccompNotif) {
	resp := seccompNotifResp{ID: req.ID, Error: -int32(unix.EPERM)}
	notifIoctl(g.listener, ioctlNotifSend, unsafe.Pointer(&resp))
}

func (g *unixGate) answer(req seccompNotif) {
	resp := seccompNotifResp{ID: req.ID}
	if errno := g.decide(&req); errno != 0 {
		resp.Error = -int32(errno)
	}
	notifIoctl(g.listener, ioctlNotifSend, unsafe.Pointer(&resp))
}

// decide performs or refuses one connect(fd, addr, len) on the caller's
// behalf; it returns 0 when it connected the socket, or the errno of the
// call.
func (g *unixGate) decide(req *seccompNotif) unix.Errno {
	pidfd, err := threadPidfd(int(req.Pid), 0)
	if err != nil {
		return unix.EPERM
	}
	defer unix.Close(pidfd)
	// Copying a socket and reading memory need ptrace access to the
	// caller: asCommand gives it in container mode.
	var sock int
	if rerr := asCommandReal(func() { sock, err = unix.PidfdGetfd(pidfd, int(req.Args[0]), 0) }); rerr != nil {
		return unix.EPERM
	}
	if err != nil {
		return unix.EBADF
	}
	defer unix.Close(sock)
	domain, err := unix.GetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return unix.ENOTSOCK
	}
	n := int(req.Args[2])
	if n < 2 || n > int(unsafe.Sizeof(unix.RawSockaddrAny{})) {
		return unix.EINVAL
	}
	buf := make([]byte, n)
	var read int
	if rerr := asCommandReal(func() {
		read, err = unix.ProcessVMReadv(int(req.Pid), []unix.Iovec{{Base: &buf[0], Len: uint64(n)}},
			[]unix.RemoteIovec{{Base: uintptr(req.Args[1]), Len: n}}, 0)
	}); rerr != nil {
		return unix.EPERM
	}
	if err != nil || read != n {
		return unix.EFAULT
	}
	// The request must still be live: the pid was not reused meanwhile.
	id := req.ID
	if _, errno := notifIoctl(g.listener, ioctlNotifIDValid, unsafe.Pointer(&id)); errno != 0 {
		return unix.EPERM
	}
	if domain != unix.AF_UNIX {
		if g.shared && domain != unix.AF_INET && domain != unix.AF_INET6 {
			// Container mode: the init is root in the container's
			// network namespace, and a netlink connect is checked
			// against the connecting thread's capabilities (its
			// multicast groups).
			return unix.EACCES
		}
		// The copy is the very socket checked; the address is our copy.
		// An inet socket is the command's whoever connects it (the
		// container's rules match the socket's creator).
		return rawConnect(sock, buf)
	}
	if binary.NativeEndian.Uint16(buf) != unix.AF_UNIX {
		return unix.EAFNOSUPPORT
	}
	path := buf[2:]
	if len(path) > 0 && path[0] == 0 {
		if g.shared {
			// Container mode: the namespace is the container's, and
			// its abstract sockets are other processes' (a display, a
			// bus).
			return unix.EACCES
		}
		// Abstract: only the sandbox's own network namespace.
		return g.connect(sock, &unix.SockaddrUnix{Name: "@" + string(path[1:])})
	}
	name := strings.TrimRight(string(path), "\x00")
	if name == "" {
		return unix.EINVAL
	}
	if !filepath.IsAbs(name) {
		var cwd string
		asCommand(func() {
			var dir string
			if dir, err = procDirOf(g.proc, int(req.Pid)); err == nil {
				cwd, err = os.Readlink(dir + "/cwd")
			}
		})
		if err != nil {
			return unix.EACCES
		}
		// Still the caller: its pid was not reused while its /proc
		// entry was looked up.
		if _, errno := notifIoctl(g.listener, ioctlNotifIDValid, unsafe.Pointer(&id)); errno != 0 {
			return unix.EPERM
		}
		name = filepath.Join(cwd, name)
	}
	fd, ok := g.allowed[filepath.Clean(name)]
	if !ok {
		return unix.EACCES
	}
	return g.connect(sock, &unix.SockaddrUnix{Name: fmt.Sprintf("/proc/self/fd/%d", fd)})
}

// connect connects sock to an allowed socket or an abstract one. In
// container mode it connects as the command's uid (commandThread): the
// socket file's permissions are checked, and the server's SO_PEERCRED
// names, the command's uid, not root's.
func (g *unixGate) connect(sock int, sa *unix.SockaddrUnix) unix.Errno {
	var err error
	asCommand(func() { err = unix.Connect(sock, sa) })
	if err != nil {
		if errno, ok := err.(unix.Errno); ok {
			return errno
		}
		return unix.ECONNREFUSED
	}
	return 0
}

// rawConnect is connect(2) with a sockaddr given as bytes.
func rawConnect(sock int, addr []byte) unix.Errno {
	_, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(sock), uintptr(unsafe.Pointer(&addr[0])), uintptr(len(addr)))
	return errno
}
