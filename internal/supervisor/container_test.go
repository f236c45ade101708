package supervisor

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStickyAgainst(t *testing.T) {
	dir := t.TempDir()
	sticky, plain := filepath.Join(dir, "sticky"), filepath.Join(dir, "plain")
	for _, d := range []string{sticky, plain} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{sticky, plain} {
		if err := os.Mkdir(filepath.Join(d, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	me := uint32(os.Getuid())
	for _, c := range []struct {
		path string
		uid  uint32
		want bool
	}{
		{filepath.Join(sticky, "x"), me + 1, true}, // another's, in another's sticky directory
		{filepath.Join(sticky, "x"), me, false},    // its own
		{filepath.Join(plain, "x"), me + 1, false}, // not sticky
		{filepath.Join(sticky, "gone"), me + 1, false},
	} {
		if got := stickyAgainst(c.path, c.uid); got != c.want {
			t.Errorf("stickyAgainst(%s, %d) = %v, want %v", c.path, c.uid, got, c.want)
		}
	}
}

func TestParseAgentID(t *testing.T) {
	for v, want := range map[string][3]uint32{"1001": {1001, 0, 0}, "1001:50": {1001, 50, 1}} {
		u, g, hasGID, err := ParseAgentID(v)
		if err != nil || u != want[0] || g != want[1] || hasGID != (want[2] == 1) {
			t.Errorf("ParseAgentID(%q) = %d, %d, %v, %v", v, u, g, hasGID, err)
		}
	}
	for _, bad := range []string{"", "0", "0:5", "1001:0", "x", "1001:", "1001:x", "-1", "4294967295", "99999999999"} {
		if _, _, _, err := ParseAgentID(bad); err == nil {
			t.Errorf("ParseAgentID(%q) accepted", bad)
		}
	}
}

func TestOpenBehindOwn(t *testing.T) {
	dir, err := os.MkdirTemp("", "behind-own-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	const uid, gid = 1_700_000_002, 1_700_000_002
	own := filepath.Join(dir, "own")
	os.Mkdir(own, 0o700) // shut now, but the uid's: it can open it
	os.Chown(own, uid, gid)
	public, private := filepath.Join(own, "public"), filepath.Join(own, "private")
	os.WriteFile(public, nil, 0o644)
	os.WriteFile(private, nil, 0o600)
	elsewhere := filepath.Join(dir, "elsewhere")
	os.WriteFile(elsewhere, nil, 0o644)
	for _, c := range []struct {
		path string
		want bool
	}{{public, true}, {private, false}, {elsewhere, false}} {
		if got := openBehindOwn(c.path, uid, gid); got != c.want {
			t.Errorf("openBehindOwn(%s) = %v, want %v", c.path, got, c.want)
		}
	}
	if !ownedBy(own, uid) || ownedBy(public, uid) {
		t.Errorf("ownedBy: own %v, public %v", ownedBy(own, uid), ownedBy(public, uid))
	}
}
