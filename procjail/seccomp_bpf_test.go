package procjail

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// runBPF interprets the subset of classic BPF the filter uses.
func runBPF(t *testing.T, prog []sockFilter, data []byte) uint32 {
	t.Helper()
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case bpfLD | bpfW | bpfABS:
			acc = binary.LittleEndian.Uint32(data[in.K:])
		case bpfALU | bpfAND | bpfK:
			acc &= in.K
		case bpfJMP | bpfJEQ | bpfK:
			if acc == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfJMP | bpfJGE | bpfK:
			if acc >= in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfJMP | bpfJSET | bpfK:
			if acc&in.K != 0 {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case bpfRET | bpfK:
			return in.K
		default:
			t.Fatalf("unknown opcode %#x at %d", in.Code, pc)
		}
	}
	t.Fatalf("program fell off the end")
	return 0
}

func seccompData(auditArch, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], nr)
	binary.LittleEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

const (
	allow  = seccompRetAllow
	eperm  = seccompRetErrno | errnoEPERM
	enosys = seccompRetErrno | errnoENOSYS
	kill   = seccompRetKillProcess
)

// TestSeccompProgram is the filter's specification, run for every
// supported architecture.
func TestSeccompProgram(t *testing.T) {
	type call struct {
		name      string
		allowUnix bool
		foreign   bool // another audit arch
		nr        func(seccompArch) uint32
		args      []uint64
		want      uint32
	}
	sock := func(a seccompArch) uint32 { return a.Socket }
	pair := func(a seccompArch) uint32 { return a.Socketpair }
	ioctl := func(a seccompArch) uint32 { return a.Ioctl }
	nr := func(n uint32) func(seccompArch) uint32 { return func(seccompArch) uint32 { return n } }
	uring := func(off uint32) func(seccompArch) uint32 {
		return func(a seccompArch) uint32 { return a.IoUringBase + off }
	}
	// perArch is a syscall number from the kernel's tables
	// (arch/x86/entry/syscalls/syscall_64.tbl, and
	// include/uapi/asm-generic/unistd.h for arm64), written out here
	// rather than read from seccompArches so that a wrong number there
	// fails.
	perArch := func(amd64, arm64 uint32) func(seccompArch) uint32 {
		return func(a seccompArch) uint32 {
			switch a.Name {
			case "amd64":
				return amd64
			case "arm64":
				return arm64
			}
			panic("no syscall number for " + a.Name)
		}
	}
	unshare, clone, clone3 := perArch(272, 97), perArch(56, 220), perArch(435, 435)
	const cloexec, nonblock = 0x80000, 0x800
	const (
		sigchld       = 0x11
		cloneVM       = 0x100
		cloneFS       = 0x200
		cloneFiles    = 0x400
		cloneSighand  = 0x800
		clonePidfd    = 0x1000
		cloneVfork    = 0x4000
		cloneThread   = 0x10000
		cloneSysvsem  = 0x40000
		cloneSettls   = 0x80000
		cloneParentST = 0x100000
		cloneChildCT  = 0x200000
		// What Go's runtime and glibc's pthread_create pass for a thread.
		threadFlags = cloneVM | cloneFS | cloneFiles | cloneSighand | cloneThread | cloneSysvsem | cloneSettls | cloneParentST | cloneChildCT
	)
	table := []call{
		{name: "socket inet stream", nr: sock, args: []uint64{afInet, sockStream, 0}, want: allow},
		{name: "socket inet6 dgram", nr: sock, args: []uint64{afInet6, 2, 0}, want: allow},
		{name: "socket inet with garbage upper bits", nr: sock, args: []uint64{0xdead_0000_0000 | afInet, 1, 0}, want: allow},
		{name: "socket unix stream refused", nr: sock, args: []uint64{afUnix, sockStream, 0}, want: eperm},
		{name: "socket unix dgram refused", nr: sock, args: []uint64{afUnix, 2, 0}, want: eperm},
		{name: "socket unix stream allowed by path mode", allowUnix: true, nr: sock, args: []uint64{afUnix, sockStream | cloexec, 0}, want: allow},
		{name: "socket unix seqpacket allowed by path mode", allowUnix: true, nr: sock, args: []uint64{afUnix, sockSeqpacket | nonblock, 0}, want: allow},
		{name: "socket unix dgram refused in path mode", allowUnix: true, nr: sock, args: []uint64{afUnix, 2, 0}, want: eperm},
		{name: "socket netlink route", nr: sock, args: []uint64{afNetlink, 3, netlinkRoute}, want: allow},
		{name: "socket netlink audit refused", nr: sock, args: []uint64{afNetlink, 3, 9}, want: eperm},
		{name: "socket packet refused", nr: sock, args: []uint64{17, 3, 0}, want: eperm},
		{name: "socket vsock refused", nr: sock, args: []uint64{40, 1, 0}, want: eperm},
		{name: "socket bluetooth refused", nr: sock, args: []uint64{31, 1, 0}, want: eperm},
		{name: "socketpair unix stream", nr: pair, args: []uint64{afUnix, sockStream | cloexec, 0}, want: allow},
		{name: "socketpair unix seqpacket", nr: pair, args: []uint64{afUnix, sockSeqpacket, 0}, want: allow},
		{name: "socketpair unix dgram refused", nr: pair, args: []uint64{afUnix, 2, 0}, want: eperm},
		{name: "socketpair inet refused", nr: pair, args: []uint64{afInet, sockStream, 0}, want: eperm},
		{name: "io_uring_setup", nr: uring(0), want: eperm},
		{name: "io_uring_enter", nr: uring(1), want: eperm},
		{name: "io_uring_register", nr: uring(2), want: eperm},
		{name: "open_tree after io_uring", nr: uring(3), want: eperm},
		{name: "mount", nr: perArch(165, 40), args: []uint64{0, 0, 0, 0, 0}, want: eperm},
		{name: "umount2", nr: perArch(166, 39), args: []uint64{0, 2}, want: eperm},
		{name: "pivot_root", nr: perArch(155, 41), want: eperm},
		{name: "setns", nr: perArch(308, 268), args: []uint64{3, cloneNewUser}, want: eperm},
		{name: "setns any type", nr: perArch(308, 268), args: []uint64{3, 0}, want: eperm},
		{name: "open_tree", nr: perArch(428, 428), want: eperm},
		{name: "move_mount", nr: perArch(429, 429), want: eperm},
		{name: "fsopen", nr: perArch(430, 430), want: eperm},
		{name: "fsconfig", nr: perArch(431, 431), want: eperm},
		{name: "fsmount", nr: perArch(432, 432), want: eperm},
		{name: "fspick", nr: perArch(433, 433), want: eperm},
		{name: "mount_setattr", nr: perArch(442, 442), want: eperm},
		{name: "open_tree_attr", nr: perArch(467, 467), want: eperm},
		{name: "pidfd_open (after fspick)", nr: perArch(434, 434), want: allow},
		{name: "close_range (after clone3)", nr: perArch(436, 436), want: allow},
		{name: "quotactl_fd (after mount_setattr)", nr: perArch(443, 443), want: allow},
		{name: "chroot", nr: perArch(161, 51), want: allow},
		{name: "fork (amd64), clone (arm64)", nr: perArch(57, 220), args: []uint64{sigchld}, want: allow},
		{name: "vfork (amd64), clone (arm64)", nr: perArch(58, 220), args: []uint64{cloneVM | cloneVfork | sigchld}, want: allow},
		{name: "unshare CLONE_FILES", nr: unshare, args: []uint64{cloneFiles}, want: allow},
		{name: "unshare CLONE_FS|CLONE_FILES|CLONE_SYSVSEM", nr: unshare, args: []uint64{cloneFS | cloneFiles | cloneSysvsem}, want: allow},
		{name: "unshare nothing", nr: unshare, args: []uint64{0}, want: allow},
		{name: "unshare CLONE_NEWUSER|CLONE_NEWNS", nr: unshare, args: []uint64{cloneNewUser | cloneNewNS}, want: eperm},
		{name: "unshare CLONE_NEWUSER", nr: unshare, args: []uint64{cloneNewUser}, want: eperm},
		{name: "unshare CLONE_NEWNS", nr: unshare, args: []uint64{cloneNewNS}, want: eperm},
		{name: "unshare CLONE_NEWCGROUP", nr: unshare, args: []uint64{cloneNewCgroup}, want: eperm},
		{name: "unshare CLONE_NEWUTS", nr: unshare, args: []uint64{cloneNewUTS}, want: eperm},
		{name: "unshare CLONE_NEWIPC", nr: unshare, args: []uint64{cloneNewIPC}, want: eperm},
		{name: "unshare CLONE_NEWPID", nr: unshare, args: []uint64{cloneNewPID}, want: eperm},
		{name: "unshare CLONE_NEWNET", nr: unshare, args: []uint64{cloneNewNet}, want: eperm},
		{name: "unshare CLONE_NEWTIME", nr: unshare, args: []uint64{cloneNewTime}, want: eperm},
		{name: "unshare CLONE_FILES|CLONE_NEWNET", nr: unshare, args: []uint64{cloneFiles | cloneNewNet}, want: eperm},
		{name: "clone SIGCHLD (fork)", nr: clone, args: []uint64{sigchld}, want: allow},
		{name: "clone CLONE_VM|CLONE_VFORK|SIGCHLD (Go's os/exec, posix_spawn)", nr: clone, args: []uint64{cloneVM | cloneVfork | sigchld}, want: allow},
		{name: "clone with CLONE_PIDFD", nr: clone, args: []uint64{cloneVM | cloneVfork | clonePidfd | sigchld}, want: allow},
		{name: "clone thread", nr: clone, args: []uint64{threadFlags}, want: allow},
		{name: "clone exit signal with bit 0x80", nr: clone, args: []uint64{cloneNewTime | 0x1}, want: allow},
		{name: "clone CLONE_NEWUSER", nr: clone, args: []uint64{cloneNewUser | sigchld}, want: eperm},
		{name: "clone CLONE_NEWNS", nr: clone, args: []uint64{cloneNewNS | sigchld}, want: eperm},
		{name: "clone CLONE_NEWCGROUP", nr: clone, args: []uint64{cloneNewCgroup | sigchld}, want: eperm},
		{name: "clone CLONE_NEWUTS", nr: clone, args: []uint64{cloneNewUTS | sigchld}, want: eperm},
		{name: "clone CLONE_NEWIPC", nr: clone, args: []uint64{cloneNewIPC | sigchld}, want: eperm},
		{name: "clone CLONE_NEWPID", nr: clone, args: []uint64{cloneNewPID | sigchld}, want: eperm},
		{name: "clone CLONE_NEWNET", nr: clone, args: []uint64{cloneNewNet | sigchld}, want: eperm},
		{name: "clone vfork with CLONE_NEWUSER|CLONE_NEWNET", nr: clone, args: []uint64{cloneVM | cloneVfork | cloneNewUser | cloneNewNet | sigchld}, want: eperm},
		{name: "clone3", nr: clone3, args: []uint64{0x1000, 88}, want: enosys},
		{name: "clone3 no arguments", nr: clone3, want: enosys},
		{name: "ioctl TIOCSTI", nr: ioctl, args: []uint64{0, ioctlTIOCSTI}, want: eperm},
		{name: "ioctl TIOCLINUX", nr: ioctl, args: []uint64{0, ioctlTIOCLINUX}, want: eperm},
		{name: "ioctl KDSKBENT", nr: ioctl, args: []uint64{0, 0x4B47}, want: eperm},
		{name: "ioctl KDSKBSENT", nr: ioctl, args: []uint64{0, 0x4B49}, want: eperm},
		{name: "ioctl KDSETKEYCODE", nr: ioctl, args: []uint64{0, 0x4B4D}, want: eperm},
		{name: "ioctl KDSKBDIACR", nr: ioctl, args: []uint64{0, 0x4B4B}, want: eperm},
		{name: "ioctl KDSKBDIACRUC", nr: ioctl, args: []uint64{0, 0x4BFB}, want: eperm},
		{name: "ioctl KDGKBENT (read)", nr: ioctl, args: []uint64{0, 0x4B46}, want: allow},
		{name: "ioctl TIOCGWINSZ", nr: ioctl, args: []uint64{0, 0x5413}, want: allow},
		{name: "read", nr: nr(0), want: allow},
		{name: "add_key", nr: func(a seccompArch) uint32 { return a.AddKey }, want: eperm},
		{name: "request_key", nr: func(a seccompArch) uint32 { return a.AddKey + 1 }, want: eperm},
		{name: "keyctl", nr: func(a seccompArch) uint32 { return a.AddKey + 2 }, want: eperm},
		{name: "syscall after keyctl", nr: func(a seccompArch) uint32 { return a.AddKey + 3 }, want: allow},
		{name: "connect", nr: func(a seccompArch) uint32 { return a.Connect }, args: []uint64{3, 0, 110}, want: allow},
		{name: "connect goes to the gate in path mode", allowUnix: true, nr: func(a seccompArch) uint32 { return a.Connect }, args: []uint64{3, 0, 110}, want: seccompRetUserNotif},
		{name: "foreign arch", foreign: true, nr: nr(0), want: kill},
	}
	seen := map[string]bool{}
	for _, c := range table {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
	}
	for _, arch := range seccompArches {
		for _, o := range []seccompOptions{{}, {AllowUnix: true}, {CreateGate: true}, {AllowUnix: true, CreateGate: true}} {
			allowUnix := o.AllowUnix
			prog, err := buildSeccompProgram(arch, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range table {
				if c.allowUnix && !allowUnix {
					continue
				}
				name := fmt.Sprintf("%s/%+v/%s", arch.Name, o, c.name)
				want := c.want
				if !c.allowUnix && allowUnix && c.nr(arch) == arch.Socket && len(c.args) > 0 && c.args[0] == afUnix && c.args[1]&sockTypeMask == sockStream {
					want = allow
				}
				if !c.allowUnix && allowUnix && c.nr(arch) == arch.Connect {
					want = seccompRetUserNotif
				}
				aa := arch.AuditArch
				if c.foreign {
					aa = 0x40000003 // i386
				}
				if got := runBPF(t, prog, seccompData(aa, c.nr(arch), c.args...)); got != want {
					t.Errorf("%s: got %#x, want %#x", name, got, want)
				}
			}
		}
	}
	amd := seccompArches["amd64"]
	prog, _ := buildSeccompProgram(amd, seccompOptions{})
	if got := runBPF(t, prog, seccompData(amd.AuditArch, amd.X32Bit|41, afInet, 1, 0)); got != kill {
		t.Errorf("x32 socket: got %#x, want kill", got)
	}
}

// TestSeccompCreateGate: with the create gate, what creates a name goes to
// the init (SECCOMP_RET_USER_NOTIF), opens without O_CREAT stay in the
// kernel, openat2 gets ENOSYS; without it, all of them are allowed.
func TestSeccompCreateGate(t *testing.T) {
	const (
		oRdonly   = 0
		oWronly   = 1
		oRdwr     = 2
		oTrunc    = 0o1000
		oAppend   = 0o2000
		oExcl     = 0o200
		oTmpfile  = 0o20200000
		oNofollow = 0o400000
		cloexec   = 0o2000000
		atFDCWD   = 0xffffff9c
	)
	notify := uint32(seccompRetUserNotif)
	type call struct {
		name   string
		amd64  uint32 // syscall number, from arch/x86/entry/syscalls/syscall_64.tbl
		arm64  uint32 // from include/uapi/asm-generic/unistd.h; 0: none
		args   []uint64
		want   uint32
		wantNo uint32 // without the gate
	}
	table := []call{
		{"openat read", 257, 56, []uint64{atFDCWD, 0, oRdonly | cloexec}, allow, allow},
		{"openat write", 257, 56, []uint64{atFDCWD, 0, oWronly | oTrunc}, allow, allow},
		{"openat rdwr append", 257, 56, []uint64{3, 0, oRdwr | oAppend}, allow, allow},
		{"openat O_TMPFILE (no name until linkat)", 257, 56, []uint64{3, 0, oTmpfile | oRdwr}, allow, allow},
		{"openat O_CREAT", 257, 56, []uint64{atFDCWD, 0, oWronly | oCreat | oTrunc}, notify, allow},
		{"openat O_CREAT|O_EXCL", 257, 56, []uint64{3, 0, oRdwr | oCreat | oExcl | cloexec}, notify, allow},
		{"openat O_CREAT with garbage upper bits", 257, 56, []uint64{3, 0, 0xffff_0000_0000_0000 | oCreat}, notify, allow},
		{"openat garbage upper bits without O_CREAT", 257, 56, []uint64{3, 0, 0x0000_0040_0000_0000}, allow, allow},
		{"open read", 2, 0, []uint64{0, oRdonly}, allow, allow},
		{"open O_CREAT", 2, 0, []uint64{0, oWronly | oCreat}, notify, allow},
		{"openat O_PATH|O_CREAT (the kernel creates nothing)", 257, 56, []uint64{3, 0, oPath | oCreat}, allow, allow},
		{"open O_PATH|O_CREAT", 2, 0, []uint64{0, oPath | oCreat | oExcl}, allow, allow},
		{"creat", 85, 0, []uint64{0, 0o644}, notify, allow},
		{"openat2", 437, 437, []uint64{atFDCWD, 0, 0, 24}, enosys, allow},
		{"mkdir", 83, 0, nil, notify, allow},
		{"mkdirat", 258, 34, nil, notify, allow},
		{"mknod", 133, 0, nil, notify, allow},
		{"mknodat", 259, 33, nil, notify, allow},
		{"rename", 82, 0, nil, notify, allow},
		{"renameat", 264, 38, nil, notify, allow},
		{"renameat2", 316, 276, nil, notify, allow},
		{"link", 86, 0, nil, notify, allow},
		{"linkat", 265, 37, nil, notify, allow},
		{"symlink", 88, 0, nil, notify, allow},
		{"symlinkat", 266, 36, nil, notify, allow},
		{"unlinkat", 263, 35, nil, allow, allow},
		{"fchmodat", 268, 53, nil, allow, allow},
		{"read", 0, 63, nil, allow, allow},
	}
	// bind goes to the create gate only when Unix sockets may be made
	// (AllowUnix): a path bind creates a name.
	for _, arch := range seccompArches {
		for _, o := range []seccompOptions{{}, {CreateGate: true}, {AllowUnix: true}, {AllowUnix: true, CreateGate: true}} {
			prog, err := buildSeccompProgram(arch, o)
			if err != nil {
				t.Fatal(err)
			}
			want := uint32(allow)
			if o.AllowUnix && o.CreateGate {
				want = notify
			}
			if got := runBPF(t, prog, seccompData(arch.AuditArch, arch.Bind, 3, 0, 110)); got != want {
				t.Errorf("%s/%+v/bind: got %#x, want %#x", arch.Name, o, got, want)
			}
		}
	}
	if seccompArches["amd64"].Bind != 49 || seccompArches["arm64"].Bind != 200 {
		t.Errorf("bind's numbers: %d, %d", seccompArches["amd64"].Bind, seccompArches["arm64"].Bind)
	}
	for _, arch := range seccompArches {
		for _, gate := range []bool{false, true} {
			prog, err := buildSeccompProgram(arch, seccompOptions{CreateGate: gate})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range table {
				nr := c.amd64
				if arch.Name == "arm64" {
					if c.arm64 == 0 {
						continue
					}
					nr = c.arm64
				}
				want := c.wantNo
				if gate {
					want = c.want
				}
				if got := runBPF(t, prog, seccompData(arch.AuditArch, nr, c.args...)); got != want {
					t.Errorf("%s/gate=%v/%s: got %#x, want %#x", arch.Name, gate, c.name, got, want)
				}
			}
		}
	} // The open route: every open and openat goes to the init, whatever
	// its flags; openat2 still gets ENOSYS; every other row, and
	// open_by_handle_at and io_uring (io_uring_setup), are as with the
	// create gate alone (the kernel refuses open_by_handle_at without
	// CAP_DAC_READ_SEARCH, which the command never has; the filter
	// refuses io_uring).
	byHandle := call{"open_by_handle_at", 304, 265, []uint64{3, 0, oRdonly}, allow, allow}
	oPathRows := []call{{"openat O_PATH", 257, 56, []uint64{3, 0, oPath | oNofollow}, allow, allow},
		{"openat O_PATH|O_CREAT", 257, 56, []uint64{3, 0, oPath | oCreat}, allow, allow}}
	uring := call{"io_uring_setup", 425, 425, []uint64{8, 0}, eperm, eperm}
	for _, arch := range seccompArches {
		prog, err := buildSeccompProgram(arch, seccompOptions{CreateGate: true, OpenRoute: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range append(append(table, byHandle, uring), oPathRows...) {
			nr := c.amd64
			if arch.Name == "arm64" {
				if c.arm64 == 0 {
					continue
				}
				nr = c.arm64
			}
			want := c.want
			if nr == arch.Open || nr == arch.Openat {
				want = notify
			}
			if strings.Contains(c.name, "O_PATH") {
				want = allow
			}
			if got := runBPF(t, prog, seccompData(arch.AuditArch, nr, c.args...)); got != want {
				t.Errorf("%s/open route/%s: got %#x, want %#x", arch.Name, c.name, got, want)
			}
		}
	}
	if _, err := buildSeccompProgram(seccompArches["amd64"], seccompOptions{OpenRoute: true}); err == nil {
		t.Error("an open route without the create gate was built")
	}
}
