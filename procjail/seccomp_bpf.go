package procjail

import "fmt"

// This file builds the sandbox's seccomp program as plain data so that it is
// tested on every platform (seccomp_bpf_test.go runs it in a small BPF
// interpreter). seccomp_linux.go loads it.
//
// The filter, in order of checks:
//  1. a syscall of another architecture (i386 on x86-64, ...) kills the
//     process, and so does the x32 ABI on x86-64: their numbers differ and
//     would slip past the checks below;
//  2. socket(family, type, protocol): AF_INET and AF_INET6 are allowed;
//     AF_NETLINK only with protocol NETLINK_ROUTE; AF_UNIX only when Unix
//     sockets are allowed at all, and then only SOCK_STREAM and
//     SOCK_SEQPACKET (a datagram socket can send to any host path with
//     sendto, which no filter can see); every other family fails with EPERM;
//  3. socketpair: only AF_UNIX SOCK_STREAM / SOCK_SEQPACKET (same reason);
//  4. io_uring_setup, io_uring_enter, io_uring_register fail with EPERM
//     (IORING_OP_SOCKET would bypass check 2);
//  5. ioctl TIOCSTI and TIOCLINUX fail with EPERM (typing into the
//     caller's terminal would run commands outside after sandboxd exits),
//     and so do the virtual console's keymap ioctls (vtKeymapIoctls);
//  6. add_key, request_key and keyctl fail with EPERM (the session
//     keyring is shared with the host, and request_key runs a host-side
//     upcall with arguments from the caller);
//  7. mount, umount2, pivot_root, the new mount API (open_tree,
//     open_tree_attr, move_mount, fsopen, fsconfig, fsmount, fspick,
//     mount_setattr) and setns fail with EPERM. The command has no
//     capability, so the kernel refuses them already; the filter keeps
//     them refused should the command ever get capabilities in a
//     namespace of its own (checks 8 to 10 are there to prevent that);
//  8. unshare(flags) fails with EPERM when flags has a namespace flag
//     (namespaceFlags): a new user namespace would give the command every
//     capability inside it, and with them the kernel code behind mounts,
//     network configuration and the like, reachable otherwise only by
//     root. CLONE_FILES, CLONE_FS and CLONE_SYSVSEM stay allowed;
//  9. clone(flags, ...) fails with EPERM when flags has a namespace flag
//     above the low byte (cloneNamespaceFlags: the low byte is the exit
//     signal, where CLONE_NEWTIME would be, and clone cannot create a time
//     namespace). fork, vfork and thread creation do not set any;
// 10. clone3 fails with ENOSYS: its flags are in memory, which a seccomp
//     filter cannot read, and on ENOSYS glibc (posix_spawn, pthread_create)
//     falls back to clone(2), which check 9 sees (Docker and Flatpak do
//     the same). Go's syscall package uses clone(2) except with
//     SysProcAttr.UseCgroupFD or a CLONE_NEWTIME clone flag, where it
//     uses clone3 only and gets ENOSYS;
// 11. when Unix sockets are allowed by path, connect goes to the init's
//     Unix socket gate (SECCOMP_RET_USER_NOTIF; see unixgate_linux.go),
//     and with the create gate too, so does bind (a socket bound at a
//     path is a name created: the create gate decides and makes it);
// 12. with the create gate (creategate_linux.go), what creates a name goes
//     to the init, which decides and performs it: open and openat with
//     O_CREAT in their flags (a register: opens without it stay in the
//     kernel), creat, mkdir, mkdirat, mknod, mknodat, rename, renameat,
//     renameat2, link, linkat, symlink and symlinkat. openat2 fails with
//     ENOSYS: its flags are in memory, and callers (glibc never uses it)
//     fall back to openat, which this check sees (as clone3 in check 10).
//     With the open gate's seccomp route (OpenRoute, which needs the
//     create gate) every open and openat goes to the init but those with
//     O_PATH (a register; the kernel ignores O_CREAT with it, and its
//     descriptor reads nothing: reopening it through /proc/self/fd is an
//     open the init decides); the init makes it and decides the file it
//     opened;
// 13. everything else is allowed.

// Classic BPF opcodes used by the filter.
const (
	bpfLD   = 0x00
	bpfW    = 0x00
	bpfABS  = 0x20
	bpfALU  = 0x04
	bpfAND  = 0x50
	bpfJMP  = 0x05
	bpfJA   = 0x00
	bpfJEQ  = 0x10
	bpfJGE  = 0x30
	bpfJSET = 0x40
	bpfK    = 0x00
	bpfRET  = 0x06
)

// Seccomp return values and errno values (Linux ABI, the same on every
// architecture we support).
const (
	seccompRetKillProcess = 0x80000000
	seccompRetErrno       = 0x00050000
	seccompRetAllow       = 0x7fff0000
	seccompRetUserNotif   = 0x7fc00000
	errnoEPERM            = 1
	errnoENOSYS           = 38
)

// Socket ABI constants (Linux, architecture independent).
const (
	afUnix         = 1
	afInet         = 2
	afInet6        = 10
	afNetlink      = 16
	sockStream     = 1
	sockSeqpacket  = 5
	sockTypeMask   = 0xf
	netlinkRoute   = 0
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541C
)

// Virtual-console keyboard ioctls that change what keys type (KDSKBENT,
// KDSKBSENT, KDSETKEYCODE, KDSKBDIACR, KDSKBDIACRUC). The owner of a VT
// (a command run from a Linux console has it as its controlling terminal)
// needs no capability for some of them, and the keymap is global and
// outlives the sandbox: a key could be made to type a command, or to
// reboot.
var vtKeymapIoctls = []uint32{0x4B47, 0x4B49, 0x4B4D, 0x4B4B, 0x4BFB}

// Namespace flags of clone, unshare and clone3 (Linux, architecture
// independent).
const (
	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	namespaceFlags = cloneNewTime | cloneNewNS | cloneNewCgroup | cloneNewUTS |
		cloneNewIPC | cloneNewUser | cloneNewPID | cloneNewNet
	// cloneNamespaceFlags leaves out the low byte (CSIGNAL), where clone
	// takes the child's exit signal: bit 0x80 there is part of the signal
	// number, not CLONE_NEWTIME (clone cannot create a time namespace).
	cloneNamespaceFlags = namespaceFlags &^ 0xff
)

// seccompArch is what the filter needs to know about one architecture.
type seccompArch struct {
	Name        string
	AuditArch   uint32
	X32Bit      uint32 // non-zero: syscall numbers with this bit set are another ABI
	Socket      uint32
	Socketpair  uint32
	Ioctl       uint32
	Connect     uint32
	Bind        uint32
	AddKey      uint32 // add_key; request_key and keyctl follow
	IoUringBase uint32 // io_uring_setup; enter and register follow
	Mount       uint32
	Umount2     uint32
	PivotRoot   uint32
	Setns       uint32
	Unshare     uint32
	Clone       uint32
	// The numbers from 424 on are the same on every architecture.
	OpenTree     uint32 // open_tree; move_mount, fsopen, fsconfig, fsmount and fspick follow
	Clone3       uint32
	MountSetattr uint32
	OpenTreeAttr uint32
	// The create gate's syscalls (check 12); 0: not on this architecture.
	Open, Creat, Openat, Openat2, Mkdir, Mkdirat, Mknod, Mknodat  uint32
	Rename, Renameat, Renameat2, Link, Linkat, Symlink, Symlinkat uint32
}

// oCreat is O_CREAT, oPath O_PATH (the same on amd64 and arm64).
const (
	oCreat = 0o100
	oPath  = 0o10000000
)

// createSyscalls are the syscalls of check 12 that always go to the gate
// (open and openat only with O_CREAT).
func (a seccompArch) createSyscalls() []uint32 {
	var nrs []uint32
	for _, nr := range []uint32{a.Creat, a.Mkdir, a.Mkdirat, a.Mknod, a.Mknodat, a.Rename, a.Renameat, a.Renameat2, a.Link, a.Linkat, a.Symlink, a.Symlinkat} {
		if nr != 0 {
			nrs = append(nrs, nr)
		}
	}
	return nrs
}

// mountSyscalls are the syscalls of check 7.
func (a seccompArch) mountSyscalls() []uint32 {
	nrs := []uint32{a.Mount, a.Umount2, a.PivotRoot, a.Setns, a.MountSetattr, a.OpenTreeAttr}
	for i := uint32(0); i < 6; i++ {
		nrs = append(nrs, a.OpenTree+i)
	}
	return nrs
}

// seccompArches are the supported architectures, by GOARCH.
var seccompArches = map[string]seccompArch{
	"amd64": {Name: "amd64", AuditArch: 0xc000003e, X32Bit: 0x40000000, Socket: 41, Socketpair: 53, Ioctl: 16, Connect: 42, Bind: 49, AddKey: 248, IoUringBase: 425,
		Mount: 165, Umount2: 166, PivotRoot: 155, Setns: 308, Unshare: 272, Clone: 56,
		OpenTree: 428, Clone3: 435, MountSetattr: 442, OpenTreeAttr: 467,
		Open: 2, Creat: 85, Openat: 257, Openat2: 437, Mkdir: 83, Mkdirat: 258, Mknod: 133, Mknodat: 259,
		Rename: 82, Renameat: 264, Renameat2: 316, Link: 86, Linkat: 265, Symlink: 88, Symlinkat: 266},
	"arm64": {Name: "arm64", AuditArch: 0xc00000b7, Socket: 198, Socketpair: 199, Ioctl: 29, Connect: 203, Bind: 200, AddKey: 217, IoUringBase: 425,
		Mount: 40, Umount2: 39, PivotRoot: 41, Setns: 268, Unshare: 97, Clone: 220,
		OpenTree: 428, Clone3: 435, MountSetattr: 442, OpenTreeAttr: 467,
		Openat: 56, Openat2: 437, Mkdirat: 34, Mknodat: 33, Renameat: 38, Renameat2: 276, Linkat: 37, Symlinkat: 36},
}

// sockFilter is one classic BPF instruction.
type sockFilter struct {
	Code uint16
	Jt   uint8
	Jf   uint8
	K    uint32
}

// seccomp_data offsets.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits of args[i] at 16+8*i (little endian)
)

func offArg(i int) uint32 { return uint32(offArg0 + 8*i) }

// asm is a tiny assembler with symbolic jump targets.
type asm struct {
	ins    []sockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string
}

func (a *asm) label(name string) { a.labels[name] = len(a.ins) }
func (a *asm) ld(off uint32)     { a.ins = append(a.ins, sockFilter{Code: bpfLD | bpfW | bpfABS, K: off}) }
func (a *asm) and(k uint32)      { a.ins = append(a.ins, sockFilter{Code: bpfALU | bpfAND | bpfK, K: k}) }
func (a *asm) ret(k uint32)      { a.ins = append(a.ins, sockFilter{Code: bpfRET | bpfK, K: k}) }

// jeq jumps to jt when A == k and to jf otherwise ("" means the next
// instruction).
func (a *asm) jeq(k uint32, jt, jf string) { a.jump(bpfJEQ, k, jt, jf) }
func (a *asm) jge(k uint32, jt, jf string) { a.jump(bpfJGE, k, jt, jf) }

// jset jumps to jt when A&k != 0 and to jf otherwise.
func (a *asm) jset(k uint32, jt, jf string) { a.jump(bpfJSET, k, jt, jf) }

func (a *asm) jump(op uint16, k uint32, jt, jf string) {
	a.fixups = append(a.fixups, fixup{at: len(a.ins), jt: jt, jf: jf})
	a.ins = append(a.ins, sockFilter{Code: bpfJMP | op | bpfK, K: k})
}

func (a *asm) assemble() ([]sockFilter, error) {
	for _, f := range a.fixups {
		for _, t := range []struct {
			name string
			dst  *uint8
		}{{f.jt, &a.ins[f.at].Jt}, {f.jf, &a.ins[f.at].Jf}} {
			if t.name == "" {
				continue
			}
			to, ok := a.labels[t.name]
			if !ok {
				return nil, fmt.Errorf("seccomp program: undefined label %q", t.name)
			}
			d := to - (f.at + 1)
			if d < 0 || d > 255 {
				return nil, fmt.Errorf("seccomp program: jump to %q out of range", t.name)
			}
			*t.dst = uint8(d)
		}
	}
	return a.ins, nil
}

// seccompOptions are the choices the filter depends on.
type seccompOptions struct {
	// AllowUnix lets the command create AF_UNIX stream and seqpacket
	// sockets and sends every connect to the init's Unix socket gate
	// (needed only when host sockets are allowed by path; see
	// unixgate_linux.go).
	AllowUnix bool
	// CreateGate sends what creates a name to the init's create gate
	// (check 12; see creategate_linux.go).
	CreateGate bool
	// OpenRoute sends every open and openat to the init, not only those
	// with O_CREAT (check 12; the open gate's seccomp route, see
	// creategate_linux.go). Only with CreateGate.
	OpenRoute bool
}

// buildSeccompProgram returns the filter for arch (see the list of checks at
// the top of this file).
func buildSeccompProgram(arch seccompArch, o seccompOptions) ([]sockFilter, error) {
	a := &asm{labels: map[string]int{}}
	deny := seccompRetErrno | errnoEPERM

	// 1. architecture and ABI.
	a.ld(offArch)
	a.jeq(arch.AuditArch, "", "kill")
	a.ld(offNr)
	if arch.X32Bit != 0 {
		a.jge(arch.X32Bit, "kill", "")
	}
	a.jeq(arch.Socket, "socket", "")
	a.jeq(arch.Socketpair, "socketpair", "")
	a.jeq(arch.Ioctl, "ioctl", "")
	a.jeq(arch.AddKey, "deny", "")
	a.jeq(arch.AddKey+1, "deny", "")
	a.jeq(arch.AddKey+2, "deny", "")
	for _, nr := range arch.mountSyscalls() {
		a.jeq(nr, "deny", "")
	}
	a.jeq(arch.Unshare, "unshare", "")
	a.jeq(arch.Clone, "clone", "")
	a.jeq(arch.Clone3, "enosys", "")
	if o.AllowUnix {
		a.jeq(arch.Connect, "notify", "")
		if o.CreateGate {
			a.jeq(arch.Bind, "notify", "")
		}
	}
	if o.OpenRoute && !o.CreateGate {
		return nil, fmt.Errorf("seccomp program: the open route needs the create gate")
	}
	if o.CreateGate {
		if arch.Open != 0 {
			a.jeq(arch.Open, "open", "")
		}
		a.jeq(arch.Openat, "openat", "")
		a.jeq(arch.Openat2, "enosys", "")
		for _, nr := range arch.createSyscalls() {
			a.jeq(nr, "notify", "")
		}
	}
	a.jge(arch.IoUringBase, "", "allow")
	a.jge(arch.IoUringBase+3, "allow", "deny")

	// 2. socket(family, type, protocol).
	a.label("socket")
	a.ld(offArg(0))
	a.jeq(afInet, "allow", "")
	a.jeq(afInet6, "allow", "")
	a.jeq(afNetlink, "netlink", "")
	if o.AllowUnix {
		a.jeq(afUnix, "unixtype", "deny")
	} else {
		a.jeq(afUnix, "deny", "deny")
	}
	a.label("netlink")
	a.ld(offArg(2))
	a.jeq(netlinkRoute, "allow", "deny")

	// 3. socketpair(AF_UNIX, type, ...).
	a.label("socketpair")
	a.ld(offArg(0))
	a.jeq(afUnix, "unixtype", "deny")
	a.label("unixtype")
	a.ld(offArg(1))
	a.and(sockTypeMask)
	a.jeq(sockStream, "allow", "")
	a.jeq(sockSeqpacket, "allow", "deny")

	// 5. ioctl(fd, request).
	a.label("ioctl")
	a.ld(offArg(1))
	a.jeq(ioctlTIOCSTI, "deny", "")
	for _, req := range vtKeymapIoctls {
		a.jeq(req, "deny", "")
	}
	a.jeq(ioctlTIOCLINUX, "deny", "allow")

	// 8. unshare(flags).
	a.label("unshare")
	a.ld(offArg(0))
	a.jset(namespaceFlags, "deny", "allow")

	// 9. clone(flags, ...): flags is the first argument on amd64 and arm64
	// (not on s390x).
	a.label("clone")
	a.ld(offArg(0))
	a.jset(cloneNamespaceFlags, "deny", "allow")

	if o.CreateGate && !o.OpenRoute {
		// 12. open(path, flags) and openat(dirfd, path, flags), with
		// O_CREAT and without O_PATH (the kernel ignores O_CREAT with
		// O_PATH and creates nothing, and SECCOMP_IOCTL_NOTIF_ADDFD
		// cannot install an O_PATH descriptor: such opens failed with
		// EBADF).
		if arch.Open != 0 {
			a.label("open")
			a.ld(offArg(1))
			a.jset(oCreat, "", "allow")
			a.jset(oPath, "allow", "notify")
		}
		a.label("openat")
		a.ld(offArg(2))
		a.jset(oCreat, "", "allow")
		a.jset(oPath, "allow", "notify")
	}
	if o.OpenRoute {
		// 12, the open route: every open and openat but O_PATH ones
		// (whose descriptor reads nothing, and which the kernel never
		// creates with: SECCOMP_IOCTL_NOTIF_ADDFD cannot install one).
		if arch.Open != 0 {
			a.label("open")
			a.ld(offArg(1))
			a.jset(oPath, "allow", "notify")
		}
		a.label("openat")
		a.ld(offArg(2))
		a.jset(oPath, "allow", "notify")
	}

	a.label("allow")
	a.ret(seccompRetAllow)
	a.label("deny")
	a.ret(uint32(deny))
	a.label("kill")
	a.ret(seccompRetKillProcess)
	// 10. clone3.
	a.label("enosys")
	a.ret(seccompRetErrno | errnoENOSYS)
	if o.AllowUnix || o.CreateGate {
		a.label("notify")
		a.ret(seccompRetUserNotif)
	}
	return a.assemble()
}
