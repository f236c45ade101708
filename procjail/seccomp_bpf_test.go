package procjail

import (
	"encoding/binary"
	"fmt"
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
	allow = seccompRetAllow
	eperm = seccompRetErrno | errnoEPERM
	kill  = seccompRetKillProcess
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
	const cloexec, nonblock = 0x80000, 0x800
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
		{name: "syscall after io_uring", nr: uring(3), want: allow},
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
		for _, allowUnix := range []bool{false, true} {
			prog, err := buildSeccompProgram(arch, seccompOptions{AllowUnix: allowUnix})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range table {
				if c.allowUnix && !allowUnix {
					continue
				}
				name := fmt.Sprintf("%s/unix=%v/%s", arch.Name, allowUnix, c.name)
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
