//go:build linux

package procjail

import (
	"os"
	"testing"
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
