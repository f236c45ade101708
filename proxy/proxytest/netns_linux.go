package proxytest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// Netns is a network namespace the test created, with loopback up and, when
// addresses are given, a dummy interface (or, without the dummy driver, lo)
// holding them. It is deleted when the test ends.
type Netns struct {
	Name string
	path string
}

// netnsSeq keeps the names of one test binary's namespaces apart.
var netnsSeq atomic.Int64

// The namespaces' names: netnsPrefix, the creating process's pid, a
// sequence number and a nonce, under netnsDir (where ip netns add puts
// them).
const (
	netnsPrefix = "barrytest-"
	netnsDir    = "/var/run/netns"
)

// NewNetns creates the namespace (needs root and iproute2; skips or, under
// BARRY_REQUIRE_PRIVILEGED=1, fails otherwise). addrs are CIDRs such as
// "203.0.113.10/24"; without any the namespace has only lo.
func NewNetns(t testing.TB, addrs ...string) *Netns {
	t.Helper()
	testenv.NeedRoot(t)
	ip := testenv.NeedCommand(t, "ip")
	// The namespaces of earlier test processes killed before their
	// cleanups ran.
	for _, stale := range testenv.LeftBehind(netnsDir, netnsPrefix) {
		exec.Command(ip, "netns", "delete", stale).Run()
	}
	name := fmt.Sprintf("%s%d-%d-%d", netnsPrefix, os.Getpid(), netnsSeq.Add(1), time.Now().UnixNano()%1e6)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command(ip, "netns", "add", name).CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("cannot create a network namespace: %v: %s", err, out))
	}
	t.Cleanup(func() { exec.Command(ip, "netns", "delete", name).Run() })
	run("-n", name, "link", "set", "lo", "up")
	n := &Netns{Name: name, path: filepath.Join(netnsDir, name)}
	if len(addrs) == 0 {
		return n
	}
	dev := "d0"
	if out, err := exec.Command(ip, "-n", name, "link", "add", "d0", "type", "dummy").CombinedOutput(); err != nil {
		// Kernels without the dummy driver (containers that cannot load
		// modules): the namespace's own loopback device holds the addresses;
		// they are just as unreachable from outside.
		t.Logf("no dummy interface (%s), using the namespace's lo", strings.TrimSpace(string(out)))
		dev = "lo"
	}
	for _, a := range addrs {
		run("-n", name, "addr", "add", a, "dev", dev)
	}
	if dev != "lo" {
		run("-n", name, "link", "set", dev, "up")
	}
	return n
}

// AttachNetns names the network namespace of process pid (a container's,
// which the test made) like NewNetns's, so that "ip -n NAME" and Listen work
// in it (ip netns attach; needs root). When the test ends the name is
// removed; the namespace itself lives on as long as the process holds it.
func AttachNetns(t testing.TB, pid int) *Netns {
	t.Helper()
	testenv.NeedRoot(t)
	ip := testenv.NeedCommand(t, "ip")
	for _, stale := range testenv.LeftBehind(netnsDir, netnsPrefix) {
		exec.Command(ip, "netns", "delete", stale).Run()
	}
	name := fmt.Sprintf("%s%d-%d-%d", netnsPrefix, os.Getpid(), netnsSeq.Add(1), time.Now().UnixNano()%1e6)
	if out, err := exec.Command(ip, "netns", "attach", name, fmt.Sprint(pid)).CombinedOutput(); err != nil {
		t.Fatalf("ip netns attach %s %d: %v: %s", name, pid, err, out)
	}
	t.Cleanup(func() { exec.Command(ip, "netns", "delete", name).Run() })
	return &Netns{Name: name, path: filepath.Join(netnsDir, name)}
}

// Do runs f on an OS thread that is inside the namespace; sockets f creates
// stay in the namespace.
func (n *Netns) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is not unlocked: if switching back fails, it dies
		// with the goroutine instead of serving others in the wrong netns.
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := os.Open(n.path)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns: %w", err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns back: %w", err)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Listen opens a listener inside the namespace.
func (n *Netns) Listen(t testing.TB, network, addr string) net.Listener {
	t.Helper()
	return mustInside(t, n, func() (net.Listener, error) { return net.Listen(network, addr) })
}

// ListenPacket opens a packet socket (UDP) inside the namespace.
func (n *Netns) ListenPacket(t testing.TB, network, addr string) net.PacketConn {
	t.Helper()
	return mustInside(t, n, func() (net.PacketConn, error) { return net.ListenPacket(network, addr) })
}

// Dial dials from inside the namespace (a proxy.Config.Dial).
func (n *Netns) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return inside(n, func() (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
}

// inside runs f in the namespace (Do) and returns what it made.
func inside[T any](n *Netns, f func() (T, error)) (T, error) {
	var v T
	err := n.Do(func() (err error) { v, err = f(); return err })
	return v, err
}

// mustInside is inside, failing the test on an error.
func mustInside[T any](t testing.TB, n *Netns, f func() (T, error)) T {
	t.Helper()
	v, err := inside(n, f)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
