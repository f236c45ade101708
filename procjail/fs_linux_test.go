//go:build linux

package procjail

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// fsTree makes a throwaway host tree: a home with start-up files and a
// secret, a workspace with a .git and a secret, and a sibling.
func fsTree(t *testing.T) (home, ws, sibling string) { return fsTreeIn(t, "") }

// fsTreeIn is fsTree under dir ("": the temporary directory).
func fsTreeIn(t *testing.T, dir string) (home, ws, sibling string) {
	t.Helper()
	base, err := os.MkdirTemp(dir, "procjail-fs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	home = filepath.Join(base, "home")
	ws = filepath.Join(home, "ws")
	sibling = filepath.Join(base, "other")
	for _, d := range []string{home, ws, sibling, filepath.Join(home, ".ssh"), filepath.Join(ws, ".git", "hooks"), filepath.Join(home, ".cache")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, c := range map[string]string{
		filepath.Join(home, ".bashrc"):        "rc\n",
		filepath.Join(home, ".ssh", "id_rsa"): "KEY\n",
		filepath.Join(ws, ".env"):             "TOKEN=1\n",
		filepath.Join(ws, "main.c"):           "int main(){}\n",
		filepath.Join(ws, ".git", "config"):   "[core]\n",
		filepath.Join(sibling, "notes"):       "n\n",
	} {
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home, ws, sibling
}

func TestFileSystemLayer(t *testing.T) {
	home, ws, sibling := fsTree(t)
	hostTmp, err := os.MkdirTemp("", "procjail-hosttmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(hostTmp)
	spec := sh(strings.Join([]string{
		// The workspace is writable, on the host.
		`echo new > ws-file && mkdir build && echo o > build/out && mv ws-file ws-moved && rm ws-moved && echo ok-ws`,
		// The host is read-only: home's start-up files, the sibling, /etc.
		`(echo x >> "$HOME/.bashrc") 2>/dev/null && echo BASHRC-WRITTEN`,
		`(echo x > "$SIBLING/planted") 2>/dev/null && echo SIBLING-WRITTEN`,
		`(echo x > /etc/planted) 2>/dev/null && echo ETC-WRITTEN`,
		// Protected inside the workspace.
		`(echo x > .git/hooks/pre-commit) 2>/dev/null && echo HOOK-WRITTEN`,
		`(echo x >> .git/config) 2>/dev/null && echo GITCONFIG-WRITTEN`,
		// Hidden.
		`cat "$HOME/.ssh/id_rsa" 2>/dev/null && echo SSH-READ`,
		`ls -A "$HOME/.ssh" 2>/dev/null | grep . && echo SSH-LISTED`,
		`cat .env 2>/dev/null && echo ENV-READ`,
		`ln -s "$HOME/.ssh/id_rsa" link 2>/dev/null; cat link 2>/dev/null && echo LINK-READ; rm -f link`,
		`cat /proc/self/root"$HOME"/.ssh/id_rsa 2>/dev/null && echo PROCROOT-READ`,
		// Caches under home work and vanish.
		`mkdir -p "$HOME/.cache/tool" && echo c > "$HOME/.cache/tool/x" && cat "$HOME/.cache/tool/x"`,
		// A private /tmp.
		`ls -A "$(dirname "$HOSTTMP")" | grep -c "$(basename "$HOSTTMP")"; echo t > /tmp/mine && echo ok-tmp`,
	}, "\n"))
	spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "SIBLING=" + sibling, "HOSTTMP=" + hostTmp}
	spec.Dir = ws
	spec.FileSystem = FileSystem{
		Confine:     true,
		WriteRoots:  []string{ws},
		Protected:   []string{filepath.Join(ws, ".git", "hooks"), filepath.Join(ws, ".git", "config"), filepath.Join(home, ".bashrc")},
		Hidden:      []string{filepath.Join(home, ".ssh"), filepath.Join(ws, ".env")},
		HomeOverlay: home,
	}
	code, out, stderr := run(t, spec)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, out, stderr)
	}
	for _, bad := range []string{"WRITTEN", "-READ", "LISTED", "KEY", "TOKEN"} {
		if strings.Contains(out, bad) {
			t.Errorf("output has %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"ok-ws", "\nc\n", "\n0\nok-tmp"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, stderr)
		}
	}
	// On the host: the workspace's writes landed, nothing else did.
	if b, err := os.ReadFile(filepath.Join(ws, "build", "out")); err != nil || string(b) != "o\n" {
		t.Errorf("build/out on the host: %q %v", b, err)
	}
	for _, p := range []string{filepath.Join(sibling, "planted"), "/etc/planted", filepath.Join(ws, ".git", "hooks", "pre-commit"), filepath.Join(home, ".cache", "tool"), "/tmp/mine"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s exists on the host", p)
			os.RemoveAll(p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "rc\n" {
		t.Errorf(".bashrc on the host: %q", b)
	}
}

// TestLandlockAloneHoldsWrites leaves the mount layer out: Landlock by
// itself refuses every write outside the write roots (the host is
// writable to this uid there), and allows them inside.
func TestLandlockAloneHoldsWrites(t *testing.T) {
	if LandlockABI() == 0 {
		testenv.SkipOrFail(t, "no Landlock in this kernel")
	}
	// Not under /tmp, /var/tmp or /dev/shm, which Landlock lets the command
	// write (the mount layer makes them private; left out here, they are
	// the host's): the first writable place outside them.
	base := ""
	wd, _ := os.Getwd()
	home0, _ := os.UserHomeDir()
	for _, d := range []string{"/run", home0, wd} {
		if d == "" || underAny(d, privateTmpDirs) || strings.HasPrefix(d, "/dev/shm") {
			continue
		}
		if f, err := os.MkdirTemp(d, "landlock-probe-"); err == nil {
			os.Remove(f)
			base = d
			break
		}
	}
	if base == "" {
		testenv.SkipOrFail(t, "no writable directory outside /tmp, /var/tmp and /dev/shm")
	}
	home, ws, sibling := fsTreeIn(t, base)
	spec := sh(`echo w > in-root && echo ok-root
(echo x >> "$HOME/.bashrc") 2>/dev/null && echo BASHRC-WRITTEN
(echo x > "$SIBLING/planted") 2>/dev/null && echo SIBLING-WRITTEN
(mkdir "$SIBLING/d") 2>/dev/null && echo SIBLING-MKDIR
(mv "$SIBLING/notes" in-root-moved) 2>/dev/null && echo MOVED-OUT
(ln "$SIBLING/notes" hard) 2>/dev/null && echo LINKED
kill -0 1 2>/dev/null && echo SIGNALLED-INIT
echo done`)
	spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "SIBLING=" + sibling}
	spec.Dir = ws
	spec.FileSystem = FileSystem{Confine: true, WriteRoots: []string{ws}}
	spec.skipMountLayer = true
	code, out, stderr := run(t, spec)
	if code != 0 || !strings.Contains(out, "ok-root\n") || !strings.HasSuffix(out, "done\n") {
		t.Fatalf("exit %d: %q %s", code, out, stderr)
	}
	for _, bad := range []string{"WRITTEN", "MKDIR", "MOVED", "LINKED", "SIGNALLED"} {
		if strings.Contains(out, bad) {
			t.Errorf("Landlock alone let %s through:\n%s", bad, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "rc\n" {
		t.Errorf(".bashrc on the host: %q", b)
	}
	if _, err := os.Stat(filepath.Join(ws, "in-root")); err != nil {
		t.Errorf("the write root's write did not land: %v", err)
	}
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}

// TestPlaceholders: a protected settings file that does not exist in the
// home is made ("{}") in the discarded home layer and bound read-only:
// inside it reads "{}" and can be neither written, replaced nor removed,
// while the rest of the home overlay stays writable; the host never gets
// it. A placeholder outside the overlay, or in a write root, refuses the
// start.
func TestPlaceholders(t *testing.T) {
	home, ws, _ := fsTree(t)
	settings := filepath.Join(home, ".claude", "settings.json")
	spec := sh(`cat "$F"
(echo '{"hooks": 1}' > "$F") 2>/dev/null && echo WRITTEN
(rm -f "$F") 2>/dev/null && echo REMOVED
(mv "$HOME/.claude" "$HOME/.claude.old") 2>/dev/null && echo MOVED
echo x > "$HOME/.claude/other" && echo ok-overlay`)
	spec.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "F=" + settings}
	spec.Dir = ws
	spec.FileSystem = FileSystem{Confine: true, WriteRoots: []string{ws}, HomeOverlay: home,
		Protected: []string{settings}, Placeholders: []string{settings}}
	code, out, stderr := run(t, spec)
	if code != 0 || !strings.HasPrefix(out, "{}\n") || !strings.Contains(out, "ok-overlay") {
		t.Fatalf("exit %d: %q %s", code, out, stderr)
	}
	for _, bad := range []string{"WRITTEN", "REMOVED", "MOVED"} {
		if strings.Contains(out, bad) {
			t.Errorf("the placeholder was %s inside:\n%s", bad, out)
		}
	}
	if _, err := os.Lstat(filepath.Join(home, ".claude")); err == nil {
		t.Errorf("the placeholder's directory reached the host")
	}
	for name, fs := range map[string]FileSystem{
		"outside the overlay": {Confine: true, WriteRoots: []string{ws}, HomeOverlay: home,
			Protected: []string{"/etc/none.json"}, Placeholders: []string{"/etc/none.json"}},
		"in a write root": {Confine: true, WriteRoots: []string{ws}, HomeOverlay: home,
			Protected: []string{filepath.Join(ws, "s.json")}, Placeholders: []string{filepath.Join(ws, "s.json")}},
		"not protected": {Confine: true, WriteRoots: []string{ws}, HomeOverlay: home, Placeholders: []string{settings}},
	} {
		spec := sh(`echo RAN`)
		spec.Env = []string{"PATH=/usr/bin:/bin"}
		spec.Dir = ws
		spec.FileSystem = fs
		null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		spec.Stdout, spec.Stderr = null, null
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		sb, err := Start(ctx, spec)
		cancel()
		if err == nil {
			sb.Wait()
		}
		if err == nil || !strings.Contains(err.Error(), "placeholder") {
			t.Errorf("%s: %v: want the start refused naming the placeholder", name, err)
		}
	}
}

// TestHostShown: where the pre-mark takes the sandbox to show the host's
// file at the same path, from the plan alone (the deepest entry decides,
// not shown wins a tie, none is the read-only host).
func TestHostShown(t *testing.T) {
	fs := FileSystem{
		Confine:     true,
		WriteRoots:  []string{"/home/u/ws", "/tmp/ws", "/both"},
		Hidden:      []string{"/home/u", "/home/u/ws/.env", "/home/u/ws/secrets", "/both"},
		Revealed:    []string{"/home/u/ws/secrets/pub"},
		Protected:   []string{"/home/u/ws/.git/config"},
		Pinned:      []string{"/home/u/ws/.git"},
		HomeOverlay: "/home/v",
	}
	h := newHostShown(&fs)
	seen := map[string]bool{}
	for _, c := range []struct {
		path  string
		shown bool
	}{
		{"/home/u/ws", true},               // a write root under a hidden home
		{"/home/u/ws/src/a.go", true},      // below it
		{"/home/u/ws/.git/config", true},   // protected, pinned: binds over themselves
		{"/home/u/ws/.env", false},         // a hidden file
		{"/home/u/ws/secrets/k", false},    // below a hidden directory
		{"/home/u/ws/secrets/pub/x", true}, // revealed below it
		{"/home/u/other", false},           // the hidden home outside the write root
		{"/home/v/ws/a", false},            // the home overlay
		{"/tmp/x", false},                  // the private /tmp
		{"/tmp/ws/x", true},                // a write root over it
		{"/var/tmp/x", false},              // the private /var/tmp
		{"/both/x", false},                 // write root and hidden: hidden wins
		{"/proc/self/environ", false},      // the sandbox's own
		{"/dev/shm/x", false},              // likewise
		{"/etc/resolv.conf", false},        // the generated one
		{"/etc/hosts", false},              // the generated one (the host's and the hostname)
		{"/etc/passwd", true},              // the read-only host
		{"/srv/data/f", true},              // likewise
	} {
		if seen[c.path] {
			t.Fatalf("duplicate row %s", c.path)
		}
		seen[c.path] = true
		if got := h.at(c.path); got != c.shown {
			t.Errorf("at(%s) = %v; want %v", c.path, got, c.shown)
		}
	}
	// Walking down from a shown root, child gives the same answers.
	if h.child("/home/u/ws/.env") || h.child("/home/u/ws/secrets") || !h.child("/home/u/ws/src") {
		t.Error("child disagrees with at below /home/u/ws")
	}
}
