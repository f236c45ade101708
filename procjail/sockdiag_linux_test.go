//go:build linux

package procjail

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestTCPInode: the kernel's look-up names the inode of the connection with
// the given local and remote addresses (the one /proc/self/fd links to),
// not a listener on the same port; an unknown pair is errNoSocket.
func TestTCPInode(t *testing.T) {
	for _, network := range []string{"tcp4", "tcp6"} {
		t.Run(network, func(t *testing.T) {
			host := "127.0.0.1:0"
			if network == "tcp6" {
				host = "[::1]:0"
			}
			ln, err := net.Listen(network, host)
			if err != nil {
				testenv.SkipOrFail(t, "no "+network+" loopback: "+err.Error())
			}
			defer ln.Close()
			c, err := net.Dial(network, ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			local, remote := addrPort(c.LocalAddr()), addrPort(c.RemoteAddr())
			got, err := tcpInode(local, remote)
			if err != nil {
				t.Fatal(err)
			}
			f, err := c.(*net.TCPConn).File()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
			if err != nil {
				t.Fatal(err)
			}
			if link != "socket:["+got+"]" {
				t.Errorf("tcpInode = %s, the connection is %s", got, link)
			}
			if _, err := tcpInode(local, netip.AddrPortFrom(remote.Addr(), 1)); !errors.Is(err, errNoSocket) {
				t.Errorf("an unknown pair: %v, want errNoSocket", err)
			}
		})
	}
}
