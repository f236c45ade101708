//go:build unix

package policy

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// TestDecideOpen: the open gate's decider refuses a path files.deny
// matches (a match that appeared after the start) and, by identity, any
// name of a regular file hidden at start (a host hard link); everything
// else is allowed. Each row's reason is exact.
func TestDecideOpen(t *testing.T) {
	dir := t.TempDir()
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for p, content := range map[string]string{
		ws + "/.env": "S", ws + "/secrets/a.key": "K", ws + "/main.go": "package main",
		home + "/.ssh/id_x": "ID", home + "/notes": "n",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home,
		Files: &FileRules{Deny: []string{"**/.env", "secrets/*.key", "~/.ssh/**"}}})
	if err != nil {
		t.Fatal(err)
	}
	ws, home = Canonicalize(ws, "/"), Canonicalize(home, "/")
	id := func(p string) FileID {
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	}
	g := plan.OpenGuard()
	// The init's form of the guard (the open route): the same decisions,
	// row by row.
	spec, err := json.Marshal(plan.OpenGuardSpec())
	if err != nil {
		t.Fatal(err)
	}
	initDecide, err := OpenDeciderFor(spec)
	if err != nil {
		t.Fatal(err)
	}
	other := FileID{Dev: 1, Ino: 1}
	for _, c := range []struct {
		path   string
		id     FileID
		rule   string // "" allowed
		reason string
	}{
		{ws + "/late/.env", other, "files.deny:**/.env", "opening a file files.deny hides: " + ws + "/late/.env matches files.deny \"**/.env\""},
		{ws + "/config/.env", other, "files.deny:**/.env", "opening a file files.deny hides: " + ws + "/config/.env matches files.deny \"**/.env\""},
		{ws + "/secrets/b.key", other, "files.deny:secrets/*.key", "opening a file files.deny hides: " + ws + "/secrets/b.key matches files.deny \"secrets/*.key\""},
		{home + "/.ssh/id_new", other, "files.deny:~/.ssh/**", "opening a file files.deny hides: " + home + "/.ssh/id_new matches files.deny \"~/.ssh/**\""},
		{ws + "/alias", id(ws + "/.env"), "files.deny:**/.env", "opening a file files.deny hides: " + ws + "/alias is another name (hard link) of " + ws + "/.env, which was hidden at start"},
		{home + "/alias", id(home + "/.ssh/id_x"), "files.deny:~/.ssh/**", "opening a file files.deny hides: " + home + "/alias is another name (hard link) of " + home + "/.ssh/id_x, which was hidden at start"},
		{ws + "/.env", id(ws + "/.env"), "files.deny:**/.env", "opening a file files.deny hides: " + ws + "/.env was hidden at start"},
		{ws + "/main.go", id(ws + "/main.go"), "", "readable in the sandbox: " + ws + "/main.go"},
		{ws + "/.envrc", other, "", "readable in the sandbox: " + ws + "/.envrc"},
		{ws + "/secrets/a.key.txt", other, "", "readable in the sandbox: " + ws + "/secrets/a.key.txt"},
		{ws + "/late/../late/x", other, "", "readable in the sandbox: " + ws + "/late/x"},
		{home + "/notes", id(home + "/notes"), "", "readable in the sandbox: " + home + "/notes"},
	} {
		d := g.DecideOpen(c.path, c.id)
		if d.Allowed() != (c.rule == "") || d.Rule != c.rule || d.Reason != c.reason {
			t.Errorf("DecideOpen(%s) = %v %q %q; want rule %q reason %q", c.path, d.Verdict, d.Rule, d.Reason, c.rule, c.reason)
		}
		if refused, rule, reason := initDecide(c.path, c.id.Dev, c.id.Ino, true); refused != (c.rule != "") || refused && rule != c.rule || reason != c.reason {
			t.Errorf("OpenDeciderFor(%s) = %v %q %q; want rule %q reason %q", c.path, refused, rule, reason, c.rule, c.reason)
		}
	}
	// A device that could not be matched with the host's: the inode
	// number of a hidden file is refused, whatever the device; another
	// is decided by its path.
	for _, c := range []struct {
		path   string
		ino    uint64
		rule   string
		reason string
	}{
		{home + "/keyalias", id(home + "/.ssh/id_x").Ino, "files.deny:~/.ssh/**", "opening a file files.deny hides: " + home + "/keyalias has the inode number of " + home + "/.ssh/id_x, which was hidden at start, on a device that could not be matched with the host's: it may be another name (hard link) of it"},
		{home + "/.cache/x/.env", 1, "files.deny:**/.env", "opening a file files.deny hides: " + home + "/.cache/x/.env matches files.deny \"**/.env\""},
		{home + "/.cache/x/y", 1, "", "readable in the sandbox: " + home + "/.cache/x/y"},
	} {
		d := g.DecideOpenUnknownDevice(c.path, c.ino)
		if d.Allowed() != (c.rule == "") || d.Rule != c.rule || d.Reason != c.reason {
			t.Errorf("DecideOpenUnknownDevice(%s) = %v %q %q; want rule %q reason %q", c.path, d.Verdict, d.Rule, d.Reason, c.rule, c.reason)
		}
		if refused, rule, reason := initDecide(c.path, 99, c.ino, false); refused != (c.rule != "") || refused && rule != c.rule || reason != c.reason {
			t.Errorf("OpenDeciderFor(%s, unknown device) = %v %q %q; want rule %q reason %q", c.path, refused, rule, reason, c.rule, c.reason)
		}
	}
	if _, err := OpenDeciderFor([]byte("{")); err == nil || !strings.Contains(err.Error(), "open guard") {
		t.Errorf("OpenDeciderFor of a bad spec: %v", err)
	}
	// The open gate may decide on more than one goroutine (go test -race).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				if g.DecideOpen(ws+"/a/.env", other).Allowed() || !g.DecideOpen(ws+"/a/b", other).Allowed() {
					t.Error("concurrent DecideOpen decided otherwise")
				}
			}
		})
	}
	wg.Wait()
	if got, want := strings.Join(plan.OpenGateRoots(), " "), home+" "+ws; got != want {
		t.Errorf("OpenGateRoots = %s; want %s", got, want)
	}
	// Explain of a match that did not exist at start, before and after
	// the open gate is on; the start line's entries say the same.
	if d := plan.Explain(ws+"/late/.env", false); !d.Allowed() || !strings.Contains(d.Reason, "if the host creates it later it is readable") {
		t.Errorf("Explain without the gate = %v %q", d.Verdict, d.Reason)
	}
	plan.GateOpens()
	if d := plan.Explain(ws+"/late/.env", false); d.Allowed() || !strings.Contains(d.Reason, "refused at open time (the open gate)") {
		t.Errorf("Explain with the gate = %v %q", d.Verdict, d.Reason)
	}
	for _, n := range plan.NotCovered {
		if strings.Contains(n, "created later") && !strings.Contains(n, "refused at open time") {
			t.Errorf("not_covered entry with the gate on still says later files are readable: %s", n)
		}
	}
}

// TestOpenGateRootsNone: no files.deny and nothing hidden: no gate.
func TestOpenGateRootsNone(t *testing.T) {
	plan, err := PlanFilesystem(context.Background(), FSInput{Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r := plan.OpenGateRoots(); r != nil {
		t.Errorf("OpenGateRoots = %v; want none", r)
	}
}

// BenchmarkDecideOpen: the decision's own share of a decided open (the
// open gate's per-event cost is measured in docs/benchmarks.md).
func BenchmarkDecideOpen(b *testing.B) {
	dir := b.TempDir()
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for _, d := range []string{ws + "/pkg", home + "/.ssh"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	plan, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home,
		Files: &FileRules{Deny: []string{"**/.env", "secrets/*.key", "~/.ssh/**"}}})
	if err != nil {
		b.Fatal(err)
	}
	g := plan.OpenGuard()
	p := Canonicalize(ws, "/") + "/pkg/f1.go"
	b.ResetTimer()
	for b.Loop() {
		if d := g.DecideOpen(p, FileID{Dev: 1, Ino: 2}); !d.Allowed() {
			b.Fatal(d.Reason)
		}
	}
}

// TestDecideOpenPatternDirReplaced: a pattern whose directory was a
// symlink at start holds both where it pointed (resolved once, at start)
// and as written, after the command replaced the symlink with a directory
// of its own (a bypass review read a key the host wrote there).
func TestDecideOpenPatternDirReplaced(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	plan, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: filepath.Join(dir, "home"),
		Files: &FileRules{Deny: []string{"keys/*.key"}}})
	if err != nil {
		t.Fatal(err)
	}
	g := plan.OpenGuard()
	// The command replaces the symlink.
	if err := os.Remove(filepath.Join(ws, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	ws = Canonicalize(ws, "/")
	other := FileID{Dev: 1, Ino: 1}
	for p, refused := range map[string]bool{ws + "/keys/id.key": true, ws + "/real/id.key": true, ws + "/keys/id.txt": false, ws + "/other/id.key": false} {
		if d := g.DecideOpen(p, other); d.Allowed() == refused || refused && d.Rule != "files.deny:keys/*.key" {
			t.Errorf("DecideOpen(%s) = %v %q; want refused %v", p, d.Verdict, d.Rule, refused)
		}
	}
}
