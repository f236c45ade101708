//go:build linux

package procjail

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{
		`/sys`:             "/sys",
		`/a\040b`:          "/a b",
		`/tab\011x\134y`:   "/tab\tx\\y",
		`/short\04`:        `/short\04`,
		`/not\999octal`:    `/not\999octal`,
		`/trailing\`:       `/trailing\`,
		`/nl\012end\043#x`: "/nl\nend##x",
	} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMountTreeRoot: the tree at / holds every mount this process sees
// (all are below it), parents before children.
func TestMountTreeRoot(t *testing.T) {
	tree, err := mountTree("/")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for i, m := range tree {
		if i > 0 && !seen[m.parent] {
			t.Fatalf("mount %d (%s) listed before its parent %d", m.id, m.point, m.parent)
		}
		seen[m.id] = true
	}
	if _, err := os.Stat("/proc"); err == nil && len(tree) < 2 {
		t.Fatalf("only %d mounts under /: %v", len(tree), tree)
	}
	if _, err := mountTree("/no/such/mount/point"); err == nil {
		t.Fatal("a path that is no mount point gave a tree")
	}
}

// TestPinSocket: a forward target is reached through the socket Start
// checked, whatever later happens to its path; a path that names another
// socket or a symlink by the time the init opens it is refused.
func TestPinSocket(t *testing.T) {
	dir := t.TempDir()
	listen := func(name string) (string, net.Listener) {
		p := filepath.Join(dir, name)
		ln, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return p, ln
	}
	target, ln := listen("proxy.sock")
	other, _ := listen("other.sock")
	id, err := checkSocket(target)
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := pinSocket(target, id)
	if err != nil {
		t.Fatal(err)
	}
	// Replace the path with a symlink to another socket: the pinned name
	// still reaches the original listener.
	os.Remove(target)
	if err := os.Symlink(other, target); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", pinned)
	if err != nil {
		t.Fatalf("pinned name after the swap: %v", err)
	}
	c.Close()
	ln.(*net.UnixListener).SetDeadline(time.Now().Add(5 * time.Second))
	if a, err := ln.Accept(); err != nil {
		t.Fatalf("the original listener saw nothing: %v", err)
	} else {
		a.Close()
	}
	// Swapped before the init opened it: a symlink, or another socket.
	if _, err := pinSocket(target, id); err == nil {
		t.Fatal("a symlink in place of the checked socket was accepted")
	}
	if _, err := pinSocket(other, id); err == nil {
		t.Fatal("another socket in place of the checked one was accepted")
	}
}

// TestCheckDevNode: a host node is bound into the private /dev only when it
// is the character device it must be (not another device, not a file).
func TestCheckDevNode(t *testing.T) {
	null := devNode{"null", 1, 3}
	f := filepath.Join(t.TempDir(), "null")
	if err := os.WriteFile(f, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	for path, ok := range map[string]bool{"/dev/null": true, "/dev/zero": false, f: false} {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = checkDevNode(fd, null)
		unix.Close(fd)
		if (err == nil) != ok {
			t.Errorf("%s as /dev/null: %v", path, err)
		}
	}
}
