//go:build linux

package procjail

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// Per-process attribution: the init finds, in the sandbox's own process
// table, the process behind a connection to one of its listeners, and
// names it to the proxy in PeerHeader, which the proxy audits (pid and
// argv) and never forwards. It is a label for the audit, not a decision:
// nothing is allowed or refused by it.

const (
	// maxArgv bounds the argv a peer line carries: arguments and bytes.
	maxArgv, maxArgvBytes = 16, 512
)

// peerOf returns the process inside the sandbox whose socket of proto has
// the local address client and, for TCP, the remote address server (the
// init's end, or the address a captured client dialed), and its argv
// (bounded); pid 0 when none is found (it may have exited). The pid is the
// kernel's; the argv is what the process says of itself (it can rewrite
// it, or be started with exec -a); a socket several processes hold is the
// first one's in /proc.
func peerOf(proto string, client, server netip.AddrPort) (int, []string) {
	inode := socketInode(proto, client, server)
	if inode == "" {
		return 0, nil
	}
	want := "socket:[" + inode + "]"
	// In container mode the command's processes are another uid's,
	// whose descriptors only that uid (or CAP_SYS_PTRACE, which a
	// container's root lacks) may read.
	var pid int
	var argv []string
	asCommand(func() { pid, argv = holderOf(want) })
	return pid, argv
}

// holderOf finds the process holding the socket named want
// ("socket:[INODE]") in /proc, and its argv.
func holderOf(want string) (int, []string) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil
	}
	self := os.Getpid()
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		dir := "/proc/" + p.Name() + "/fd/"
		fds, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(dir + fd.Name()); err == nil && l == want {
				return pid, argvOf(pid)
			}
		}
	}
	return 0, nil
}

// socketInode finds the inode of the socket of proto ("tcp", "udp")
// whose local address is a, in /proc/net/PROTO or PROTO6: for TCP one
// connected to remote (a listening socket on the same port, which
// SO_REUSEPORT allows, would name another process); for UDP one connected
// to remote or not connected at all.
func socketInode(proto string, a, remote netip.AddrPort) string {
	if proto == "tcp" {
		// The kernel's own look-up; the table walk below only when it
		// cannot answer (no sock_diag in this kernel).
		switch inode, err := tcpInode(a, remote); {
		case err == nil:
			return inode
		case errors.Is(err, errNoSocket):
			return ""
		}
	}
	file := "/proc/net/" + proto
	six := !a.Addr().Unmap().Is4()
	if six {
		file += "6"
	}
	local, rem := procNetAddr(a, six), procNetAddr(remote, six)
	unconnected := procNetAddr(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), six)
	if six {
		unconnected = procNetAddr(netip.AddrPortFrom(netip.IPv6Unspecified(), 0), six)
	}
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(fields) <= 9 || fields[1] != local {
			continue
		}
		if fields[2] == rem || proto == "udp" && fields[2] == unconnected {
			return fields[9]
		}
	}
	return ""
}

// procNetAddr is a's form in /proc/net/{tcp,udp}{,6}: the address's
// 32-bit words in host (little-endian) order, then the port, in hex; an
// IPv4 address in the IPv6 tables is IPv4-mapped.
func procNetAddr(a netip.AddrPort, six bool) string {
	ip := a.Addr().Unmap()
	if !six {
		b := ip.As4()
		return fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], a.Port())
	}
	b := ip.As16()
	var w strings.Builder
	for i := 0; i < 16; i += 4 {
		fmt.Fprintf(&w, "%02X%02X%02X%02X", b[i+3], b[i+2], b[i+1], b[i])
	}
	return fmt.Sprintf("%s:%04X", w.String(), a.Port())
}

// argvOf reads a process's command line, bounded.
func argvOf(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil
	}
	var argv []string
	size := 0
	for _, a := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		if len(argv) == maxArgv || size+len(a) > maxArgvBytes {
			argv = append(argv, "…")
			break
		}
		argv = append(argv, string(a))
		size += len(a)
	}
	return argv
}

// peerValue is PeerHeader's value for pid and argv ("" when pid is 0).
// JSON escapes every control character, so the value is one header line.
// pid 0 (not found: the process may have exited) is "pid=0", so that a
// value is always the init's own and never one the client sent.
func peerValue(pid int, argv []string) string {
	if pid == 0 {
		return "pid=0 argv=[]"
	}
	j, _ := json.Marshal(argv)
	return "pid=" + strconv.Itoa(pid) + " argv=" + string(j)
}

// peerLine is the header line naming the process behind the connection
// whose client end is client and whose other end, as the client sees it,
// is server (pid=0 when none is found), or "" for an address that is not
// one.
func peerLine(client net.Addr, server netip.AddrPort) string {
	ap, err := netip.ParseAddrPort(client.String())
	if err != nil {
		return ""
	}
	return PeerHeader + ": " + peerValue(peerOf("tcp", ap, server)) + "\r\n"
}

// addrPort is a's address and port (the zero AddrPort for another kind).
func addrPort(a net.Addr) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(a.String())
	return ap
}

// peerFrame is the frame naming the process behind client (its socket of
// proto, to server; pid=0 when none is found), or nil for an address that
// is not one.
func peerFrame(proto string, client net.Addr, server netip.AddrPort) []byte {
	ap, err := netip.ParseAddrPort(client.String())
	if err != nil {
		return nil
	}
	body := PeerFrame + peerValue(peerOf(proto, ap, server))
	if len(body) > 0xffff {
		return nil
	}
	return append([]byte{byte(len(body) >> 8), byte(len(body))}, body...)
}
