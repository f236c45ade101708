package procjail

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestOpenGate: with Spec.OpenGate, an open inside the sandbox of a file
// on a marked mount is decided outside: the decider's refusal is EPERM
// for the command (cat), reported with the path as the host names it,
// the pid inside and the process's name; what it allows is read, the
// second time without asking again (the ignore mark).
func TestOpenGate(t *testing.T) {
	testenv.NeedRoot(t)
	if err := OpenGateAvailable(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deny.txt"), []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	var refusals []OpenRefusal
	gate, err := NewOpenGate(OpenGateOptions{
		Roots: []string{dir},
		Decide: func(path string, id FileID, _ bool) (bool, string, string) {
			mu.Lock()
			defer mu.Unlock()
			asked[path]++
			if strings.HasPrefix(filepath.Base(path), "deny") {
				return true, "test", "a deny name"
			}
			return false, "", ""
		},
		Refused: func(r OpenRefusal) {
			mu.Lock()
			defer mu.Unlock()
			refusals = append(refusals, r)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	spec := sh("cat " + dir + "/deny.txt; echo rc=$?; cat " + dir + "/ok.txt " + dir + "/ok.txt")
	spec.OpenGate = gate
	code, out, stderr := run(t, spec)
	gate.Close()
	if code != 0 || strings.Contains(out, "SECRET") || !strings.Contains(stderr, "Operation not permitted") || !strings.Contains(out, "rc=1\nfine\nfine\n") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want deny.txt refused with EPERM, ok.txt read twice", code, out, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refusals) != 1 || refusals[0].Path != dir+"/deny.txt" || refusals[0].Comm != "cat" || refusals[0].Pid <= 1 || refusals[0].Rule != "test" {
		t.Errorf("refusals %+v; want one, of %s/deny.txt by cat with its pid inside", refusals, dir)
	}
	if n := asked[dir+"/ok.txt"]; n != 1 {
		t.Errorf("ok.txt decided %d times; want once (the second open is the ignore mark's)", n)
	}
}

// TestOpenGateMarkFails: a gate that cannot mark the sandbox's mounts
// refuses the start at step "open gate": the command never runs.
func TestOpenGateMarkFails(t *testing.T) {
	testenv.NeedRoot(t)
	if err := OpenGateAvailable(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	dir := t.TempDir()
	gate, err := NewOpenGate(OpenGateOptions{Roots: []string{dir}, Decide: func(string, FileID, bool) (bool, string, string) { return false, "", "" }})
	if err != nil {
		t.Fatal(err)
	}
	gate.Close() // its group is closed: every mark fails (EBADF)
	spec := sh("touch " + dir + "/ran")
	spec.OpenGate = gate
	_, err = Start(context.Background(), spec)
	var se *SetupError
	if !errors.As(err, &se) || se.Step != "open gate" {
		t.Fatalf("got %v; want a SetupError at step open gate", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("the command ran")
	}
}

// TestOpenGatePreMark: the files under OpenGateOptions.PreMark at start
// are decided by the walk before their first open: an allowed one
// (ok.txt) is then read inside without an event (decided once, by the
// walk); what the decider refuses, by name (deny.txt) or by identity (a
// hard link, made before the start, to a file it refuses by identity), is
// never marked, and its open is still refused; nor is a file the plan
// hides (masked.txt, a Hidden file; inner.txt, in a Hidden directory)
// even when the decider would allow it: a host hard link made to it after
// the walk is decided at its open. The walk starts with Start, before the
// sandbox's mounts exist: what is hidden comes from the plan.
func TestOpenGatePreMark(t *testing.T) {
	testenv.NeedRoot(t)
	if err := OpenGateAvailable(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "masked.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"deny.txt": "SECRET\n", "ok.txt": "fine\n", "hidden": "SECRET\n", "masked.txt": "MASKED\n", "masked.d/inner.txt": "INNER\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "hidden"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	var hidden unix.Stat_t
	if err := unix.Stat(filepath.Join(dir, "hidden"), &hidden); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := map[string]int{}
	gate, err := NewOpenGate(OpenGateOptions{
		Roots:   []string{dir},
		PreMark: []string{dir},
		Decide: func(path string, id FileID, _ bool) (bool, string, string) {
			mu.Lock()
			defer mu.Unlock()
			asked[path]++
			if id == (FileID{Dev: hidden.Dev, Ino: hidden.Ino}) {
				return true, "test", "hidden at start"
			}
			if strings.HasPrefix(filepath.Base(path), "deny") {
				return true, "test", "a deny name"
			}
			return false, "", ""
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	// The command waits (stat, no open) for the test to see the walk
	// done.
	go func() {
		select {
		case <-gate.PreMarkDone():
		case <-time.After(30 * time.Second):
		}
		os.Link(filepath.Join(dir, "masked.txt"), filepath.Join(dir, "late"))
		os.Link(filepath.Join(dir, "masked.d", "inner.txt"), filepath.Join(dir, "late2"))
		os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
	}()
	spec := sh("while [ ! -e " + dir + "/go ]; do sleep 0.01; done; cat " + dir + "/ok.txt; cat " + dir + "/alias; echo rc=$?; cat " + dir + "/deny.txt; echo rc=$?; cat " + dir + "/late " + dir + "/late2")
	spec.FileSystem = FileSystem{Confine: true, WriteRoots: []string{dir}, Hidden: []string{filepath.Join(dir, "masked.txt"), filepath.Join(dir, "masked.d")}}
	spec.Dir = dir // the package directory may be under /tmp, which is the sandbox's own
	spec.OpenGate = gate
	code, out, stderr := run(t, spec)
	gate.Close()
	if code != 0 || strings.Contains(out, "SECRET") || out != "fine\nrc=1\nrc=1\nMASKED\nINNER\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want ok.txt read, alias and deny.txt refused, late and late2 read", code, out, stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := asked[dir+"/ok.txt"]; n != 1 {
		t.Errorf("ok.txt decided %d times; want once, by the walk (its open inside is the pre-mark's)", n)
	}
	if n := asked[dir+"/alias"]; n != 2 {
		t.Errorf("alias decided %d times; want twice (the walk, the open: never marked)", n)
	}
	if n := asked[dir+"/late"]; n != 1 {
		t.Errorf("late (a host link to the masked file) decided %d times; want once, at its open (the masked file never marked)", n)
	}
	if n := asked[dir+"/late2"]; n != 1 {
		t.Errorf("late2 (a host link to a file in the masked directory) decided %d times; want once, at its open (never marked)", n)
	}
	if n := gate.PreMarks(); n != 1 {
		t.Errorf("%d files pre-marked; want 1 (ok.txt)", n)
	}
}

// TestOpenGateFails: a failure of the loop that reads the events (a read
// error, an event of another version), injected under it, ends the
// session: the events it read are denied (cat gets EPERM, never the
// content), the sandbox is killed (the command's sleep does not run out)
// and Wait reports status 125 with the reason; one before the command
// started fails the start at step "open gate". Nothing hangs.
func TestOpenGateFails(t *testing.T) {
	testenv.NeedRoot(t)
	if err := OpenGateAvailable(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	for _, c := range []struct {
		name   string
		inject func(buf []byte, n int, err error) (int, error)
		want   string
		setup  bool // fails during Start (the init's exec of the command is an event: /tmp is on /)
	}{
		{"read", func(buf []byte, n int, err error) (int, error) { return n, unix.EIO }, "open gate: read: input/output error", false},
		{"version", func(buf []byte, n int, err error) (int, error) {
			if n > 4 {
				buf[4] = 99 // fanotify_event_metadata.vers
			}
			return n, err
		}, "open gate: event version 99, want 3", false},
		{"setup", func(buf []byte, n int, err error) (int, error) { return n, unix.EIO }, "open gate: read: input/output error", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "ok.txt"), []byte("fine\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			gate, err := NewOpenGate(OpenGateOptions{Roots: []string{dir}, Decide: func(string, FileID, bool) (bool, string, string) { return false, "", "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer gate.Close()
			var armed atomic.Bool
			armed.Store(c.setup)
			gate.inject = func(buf []byte, n int, err error) (int, error) {
				if !armed.Load() {
					return n, err
				}
				return c.inject(buf, n, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			outR, outW, _ := os.Pipe()
			spec := sh("while [ ! -e " + dir + "/go ]; do sleep 0.01; done; cat " + dir + "/ok.txt; echo rc=$?; sleep 30; echo SLEPT")
			spec.Stdout, spec.Stderr = outW, outW
			spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
			spec.OpenGate = gate
			t0 := time.Now()
			sb, err := Start(ctx, spec)
			outW.Close()
			if c.setup {
				var se *SetupError
				if !errors.As(err, &se) || se.Step != "open gate" || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Start: %v; want a SetupError at step open gate with %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			armed.Store(true)
			if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			done := make(chan struct{})
			go func() {
				b := make([]byte, 4096)
				for {
					n, err := outR.Read(b)
					out.Write(b[:n])
					if err != nil {
						close(done)
						return
					}
				}
			}()
			code, err := sb.Wait()
			<-done
			if code != 125 || err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "the sandbox was killed") {
				t.Errorf("Wait: %d, %v; want 125 and %q", code, err, c.want)
			}
			if took := time.Since(t0); took > 20*time.Second || strings.Contains(out.String(), "SLEPT") || strings.Contains(out.String(), "fine") {
				t.Errorf("after %v the command wrote %q; want cat refused and the sandbox killed before its sleep ends", took, out.String())
			}
			if gate.Err() == nil {
				t.Error("gate.Err() is nil")
			}
		})
	}
}

// TestOpenGateMarkAllowed: an allowed file's ignore mark stays when the
// file is as it was decided, and is removed again when it was modified
// since (a mark added after the modification would outlive it: the
// answer, and the pre-mark, mark after deciding).
func TestOpenGateMarkAllowed(t *testing.T) {
	testenv.NeedRoot(t)
	if err := OpenGateAvailable(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	gate, err := NewOpenGate(OpenGateOptions{Roots: []string{"/"}, Decide: func(string, FileID, bool) (bool, string, string) { return false, "", "" }})
	if err != nil {
		t.Fatal(err)
	}
	defer gate.Close()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("plain\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := int(f.Fd())
	var decided unix.Stat_t
	if err := unix.Fstat(fd, &decided); err != nil {
		t.Fatal(err)
	}
	marked := func() bool {
		// Removing the mark succeeds only when there is one.
		return unix.FanotifyMark(gate.fd, unix.FAN_MARK_REMOVE|unix.FAN_MARK_IGNORE, openGateMask, fd, "") == nil
	}
	if !gate.markAllowed(fd, decided) || !marked() {
		t.Fatal("an unchanged file: no mark")
	}
	time.Sleep(10 * time.Millisecond) // a coarse clock would give the write the same mtime
	if err := os.WriteFile(p, []byte("SECRET\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if gate.markAllowed(fd, decided) || marked() {
		t.Error("a file modified since its decision kept its mark")
	}
}

// TestOpenGatePreMarkCheck: once the sandbox exists, checkPreMark keeps
// the walk's marks only when the sandbox shows the walked root as the
// host's directory and has no mount below it that is neither the plan's
// nor the host's; otherwise every inode mark of the group is flushed (the
// walked file's ignore mark is gone: removing it fails with ENOENT). The
// sandbox's view is faked by its root ("" is the host's) and mount list.
func TestOpenGatePreMarkCheck(t *testing.T) {
	testenv.NeedRoot(t)
	if err := OpenGateAvailable(); err != nil {
		testenv.SkipOrFail(t, err.Error())
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(file, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	for _, c := range []struct {
		name   string
		root   string
		mounts []string
		hidden []string
		kept   bool
	}{
		{"same view", "", nil, nil, true},
		{"the root another inode inside", "/nonexistent", nil, nil, false},
		{"an inherited mount the host no longer has", "", []string{sub}, nil, false},
		{"a mount of the plan's", "", []string{sub}, []string{sub}, true},
		{"the root's own mount", "", []string{dir}, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			gate, err := NewOpenGate(OpenGateOptions{Roots: []string{dir}, PreMark: []string{dir},
				Decide: func(string, FileID, bool) (bool, string, string) { return false, "", "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer gate.Close()
			gate.startPreMark(FileSystem{Confine: true, WriteRoots: []string{dir}, Hidden: c.hidden})
			<-gate.PreMarkDone()
			if n := gate.PreMarks(); n != 1 {
				t.Fatalf("%d files pre-marked; want 1 (a.txt)", n)
			}
			if got := gate.checkPreMark(c.root, c.mounts); got != c.kept {
				t.Errorf("checkPreMark = %v; want %v", got, c.kept)
			}
			fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			err = unix.FanotifyMark(gate.fd, unix.FAN_MARK_REMOVE|unix.FAN_MARK_IGNORE, openGateMask, fd, "")
			if c.kept && err != nil {
				t.Errorf("a.txt's mark: %v; want it kept", err)
			}
			if !c.kept && !errors.Is(err, unix.ENOENT) {
				t.Errorf("removing a.txt's mark: %v; want ENOENT (flushed)", err)
			}
		})
	}
}
