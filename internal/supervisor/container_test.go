package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
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

// TestUnchangeableBy: a harness's settings file holds against a uid in
// container mode only when the uid can neither write it nor rename,
// remove or create a name on its way: not in a workspace of the uid's,
// in a root-owned sticky one; not in a directory it may write; not when
// it or a directory on its way is its own, or a symlink.
func TestUnchangeableBy(t *testing.T) {
	testenv.NeedRoot(t)
	const uid, gid = 1_700_000_003, 1_700_000_003
	base, err := os.MkdirTemp("", "unchangeable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(rel string, mode os.FileMode, owner, group int) string {
		t.Helper()
		p := filepath.Join(base, rel)
		var err error
		if mode.IsDir() {
			err = os.Mkdir(p, 0)
		} else {
			err = os.WriteFile(p, []byte("{}\n"), 0)
		}
		if err == nil {
			err = os.Chown(p, owner, group)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	dir := os.ModeDir
	mk("ws", dir|0o755, uid, gid)
	mk("ws/.claude", dir|0o755, 0, 0)
	mk("ws/.claude/settings.json", 0o644, 0, 0)
	mk("sws", dir|os.ModeSticky|0o775, 0, gid)
	mk("sws/.claude", dir|0o755, 0, 0)
	mk("sws/.claude/settings.json", 0o644, 0, 0)
	mk("sws/.claude/own.json", 0o644, uid, gid)
	mk("sws/open", dir|0o777, 0, 0)
	mk("sws/open/settings.json", 0o644, 0, 0)
	mk("sws/mine", dir|0o755, uid, gid)
	mk("sws/mine/settings.json", 0o644, 0, 0)
	mk("root", dir|0o755, 0, 0)
	mk("root/settings.json", 0o644, 0, 0)
	mk("root/everyone.json", 0o666, 0, 0)
	if err := os.Symlink("settings.json", filepath.Join(base, "root/link.json")); err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]bool{
		"ws/.claude/settings.json":        false, // the uid's workspace: .claude can be renamed away
		"ws/.claude/settings.local.json":  false,
		"sws/.claude/settings.json":       true, // root's, in root's .claude, in a sticky workspace
		"sws/.claude/settings.local.json": true, // missing, and .claude is not the uid's to write
		"sws/.claude/own.json":            false,
		"sws/open/settings.json":          false, // its directory is writable
		"sws/mine/settings.json":          false, // its directory is the uid's
		"sws/new/settings.json":           false, // sws is writable by the uid's group: it can make new/
		"root/settings.json":              true,
		"root/everyone.json":              false,
		"root/link.json":                  false,
		"relative.json":                   false,
	} {
		p := filepath.Join(base, rel)
		if rel == "relative.json" {
			p = rel
		}
		if got := unchangeableBy(p, uid, gid); got != want {
			t.Errorf("unchangeableBy(%s) = %v, want %v", rel, got, want)
		}
	}
}
