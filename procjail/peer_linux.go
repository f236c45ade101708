//go:build linux

package procjail

import (
	"bufio"
	"bytes"
	"encoding/json"
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

// peerOf returns the process inside the sandbox whose TCP socket has the
// local address client (the remote end of a connection to the init), and
// its argv (bounded); pid 0 when none is found (it may have exited).
func peerOf(proto string, client netip.AddrPort) (int, []string) {
	inode := socketInode(proto, client)
	if inode == "" {
		return 0, nil
	}
	want := "socket:[" + inode + "]"
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
// whose local address is a, in /proc/net/PROTO or PROTO6.
func socketInode(proto string, a netip.AddrPort) string {
	file, local := "/proc/net/"+proto, ""
	ip := a.Addr().Unmap()
	if ip.Is4() {
		b := ip.As4()
		local = fmt.Sprintf("%02X%02X%02X%02X:%04X", b[3], b[2], b[1], b[0], a.Port())
	} else {
		file = "/proc/net/" + proto + "6"
		b := ip.As16()
		var w strings.Builder
		for i := 0; i < 16; i += 4 {
			fmt.Fprintf(&w, "%02X%02X%02X%02X", b[i+3], b[i+2], b[i+1], b[i])
		}
		local = fmt.Sprintf("%s:%04X", w.String(), a.Port())
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
		if len(fields) > 9 && fields[1] == local {
			return fields[9]
		}
	}
	return ""
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
// whose client end is client (pid=0 when none is found), or "" for an
// address that is not one.
func peerLine(client net.Addr) string {
	ap, err := netip.ParseAddrPort(client.String())
	if err != nil {
		return ""
	}
	return PeerHeader + ": " + peerValue(peerOf("tcp", ap)) + "\r\n"
}

// peerFrame is the frame naming the process behind client (its socket of
// proto; pid=0 when none is found), or nil for an address that is not one.
func peerFrame(proto string, client net.Addr) []byte {
	ap, err := netip.ParseAddrPort(client.String())
	if err != nil {
		return nil
	}
	body := PeerFrame + peerValue(peerOf(proto, ap))
	if len(body) > 0xffff {
		return nil
	}
	return append([]byte{byte(len(body) >> 8), byte(len(body))}, body...)
}
