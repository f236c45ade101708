//go:build linux

package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// The filesystem tests: sandboxd run confines the filesystem (the host
// read-only, the workspace and --write roots writable, private /tmp,
// /var/tmp and /dev/shm, home in a discarded overlay, protected paths,
// files.deny masks, files.allowOnly). Every case runs as root and as uid
// 65534, each in its own throwaway HOME and workspace, and every outcome
// is checked on the host after sandboxd has exited, never only by what
// the sandbox says. They need no network: sandboxd runs in the test's own
// network namespace and nothing is allowed out.

// fsBox is one throwaway HOME and workspace, owned by uid.
type fsBox struct {
	uid  int
	base string // sharedDir: home, the workspace (unless inside home), the policy directory
	home string
	ws   string
	own  []string // more trees chowned to uid before every run
}

// newFSBox makes a HOME and a workspace: base/home/proj when wsInHome (the
// common layout: a project inside the home directory), base/ws otherwise.
func newFSBox(t *testing.T, uid int, wsInHome bool) *fsBox {
	t.Helper()
	testenv.NeedRoot(t)
	base := sharedDir(t)
	b := &fsBox{uid: uid, base: base, home: filepath.Join(base, "home"), ws: filepath.Join(base, "ws")}
	if wsInHome {
		b.ws = filepath.Join(b.home, "proj")
	}
	for _, d := range []string{b.home, b.ws} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// write creates a file (and its parents) under the box.
func (b *fsBox) write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// chown gives the box's trees to its uid (the fixtures are made as root).
func (b *fsBox) chown(t *testing.T) {
	t.Helper()
	if b.uid == 0 {
		return
	}
	for _, root := range append([]string{b.home, b.ws}, b.own...) {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, b.uid, b.uid)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// asUser is argv run as the box's uid (setpriv), or as root.
func (b *fsBox) asUser(argv ...string) []string {
	if b.uid == 0 {
		return argv
	}
	return append([]string{"setpriv", fmt.Sprintf("--reuid=%d", b.uid), fmt.Sprintf("--regid=%d", b.uid), "--clear-groups", "--"}, argv...)
}

// env is the environment sandboxd (and so the command) gets.
func (b *fsBox) env(extra ...string) []string {
	path := "/usr/local/bin:/usr/bin:/bin"
	if goBin, err := exec.LookPath("go"); err == nil {
		path = filepath.Dir(goBin) + ":" + path
	}
	return append([]string{"PATH=" + path, "HOME=" + b.home, "LANG=C", "LC_ALL=C"}, extra...)
}

type fsRun struct {
	flags   []string // extra sandboxd run flags
	env     []string // extra environment
	timeout time.Duration
	argv    []string
}

// run runs sandboxd run --cwd WORKSPACE [flags] -- argv as the box's uid,
// in the test's own network namespace (nothing is allowed out), bounded by
// a timeout.
func (b *fsBox) run(t *testing.T, o fsRun) runResult {
	t.Helper()
	b.chown(t)
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	audit := filepath.Join(b.base, fmt.Sprintf("audit-%d.jsonl", rand.Int64()))
	args := append([]string{sandboxdBin, "run", "--audit", audit, "--cwd", b.ws}, o.flags...)
	args = append(append(args, "--"), o.argv...)
	argv := b.asUser(args...)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = b.ws
	cmd.Env = b.env(o.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sandboxd did not finish within %v\nstdout %s\nstderr %s", o.timeout, out.String(), errb.String())
	}
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("sandboxd: %v", err)
	}
	a, _ := os.ReadFile(audit)
	return runResult{code: code, stdout: out.String(), stderr: errb.String(), audit: string(a)}
}

func (r runResult) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s\n--- stderr\n%s\n--- audit\n%s", r.code, r.stdout, r.stderr, r.audit)
}

// policy writes a policy file in a directory of its own (sandboxd makes
// that directory read-only inside, and refuses one holding the workspace)
// whose session bound is bound.
func (b *fsBox) policy(t *testing.T, bound string) string {
	t.Helper()
	dir := filepath.Join(b.base, "policy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "policy.yaml")
	doc := "version: 1\nharness: claude-code\nbags: {}\ntools: []\ntraits: {}\n" +
		"bounds:\n  fs: " + bound + "\nidentity: {name: dev}\nsession: {bounds: [fs]}\n"
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// probe copies the compiled probe (testdata/fs/probe.c) into the box's
// home, where the sandbox can always run it (the shared directory it is
// built in may be under the host's /tmp, which is not visible inside).
func (b *fsBox) probe(t *testing.T) string {
	t.Helper()
	src := buildProbe(t)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(b.home, ".local", "bin", "probe")
	b.write(t, dst, string(data), 0o755)
	return dst
}

var probeOnce struct {
	sync.Once
	path string
	err  error
}

func buildProbe(t *testing.T) string {
	t.Helper()
	testenv.NeedCommand(t, "gcc")
	probeOnce.Do(func() {
		src, _ := filepath.Abs("testdata/fs/probe.c")
		probeOnce.path = filepath.Join(shareRoot, "probe")
		out, err := exec.Command("gcc", "-O1", "-Wall", "-o", probeOnce.path, src).CombinedOutput()
		if err != nil {
			probeOnce.err = fmt.Errorf("gcc: %v\n%s", err, out)
		}
	})
	if probeOnce.err != nil {
		t.Fatal(probeOnce.err)
	}
	return probeOnce.path
}

// treeState records every entry below root (kind, mode, size, mtime,
// content hash or link target), leaving out the directories in skip.
func treeState(t *testing.T, root string, skip ...string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			m[p] = "error " + err.Error()
			return nil
		}
		if d.IsDir() {
			for _, s := range skip {
				if p == s {
					return fs.SkipDir
				}
			}
		}
		fi, err := os.Lstat(p)
		if err != nil {
			m[p] = "error " + err.Error()
			return nil
		}
		v := fmt.Sprintf("%v size=%d mtime=%d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				v += " unreadable " + err.Error()
			} else {
				v += fmt.Sprintf(" sha256=%x", sha256.Sum256(data))
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// stateDiff lists what changed between two treeStates.
func stateDiff(before, after map[string]string) []string {
	var d []string
	for p, v := range before {
		if w, ok := after[p]; !ok {
			d = append(d, "removed "+p+" ("+v+")")
		} else if w != v {
			d = append(d, "changed "+p+": "+v+" => "+w)
		}
	}
	for p, w := range after {
		if _, ok := before[p]; !ok {
			d = append(d, "appeared "+p+" ("+w+")")
		}
	}
	sort.Strings(d)
	return d
}

func randHex() string { return fmt.Sprintf("%016x", rand.Uint64()) }

// mustNotExist fails the test for each path that exists on the host (and
// removes it: it must not outlive the test).
func mustNotExist(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil {
			data, _ := os.ReadFile(p)
			t.Errorf("%s exists on the host after the sandbox (mode %v, content %q)", p, fi.Mode(), data)
			os.RemoveAll(p)
		}
	}
}

// hostGit runs git on the host in a workspace the sandbox's user may own.
func hostGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestFSPersistenceRefused: a shell, python3 and a compiled C program try
// to plant code that would run later outside the sandbox: home's start-up
// files, an ssh key, a systemd user unit, a cron job, a program on the
// host's PATH, a git hook and the repository's config. On the host, after
// sandboxd exits, nothing changed and nothing appeared. Two homes: one
// where the start-up files exist (the sandbox must refuse every write)
// and a fresh one (writes may succeed inside the discarded home overlay,
// but nothing may reach the host).
func TestFSPersistenceRefused(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	testenv.NeedCommand(t, "git")
	buildProbe(t)
	const shellWrite = `for f; do mkdir -p "$(dirname "$f")" 2>/dev/null; if (printf 'pwned\n' >> "$f") 2>/dev/null; then echo "WROTE $f"; else echo "refused $f"; fi; done`
	const pyWrite = `import os, sys
for p in sys.argv[1:]:
    try:
        os.makedirs(os.path.dirname(p), exist_ok=True)
    except OSError:
        pass
    try:
        with open(p, "a") as f:
            f.write("pwned\n")
        print("WROTE", p)
    except OSError as e:
        print("refused", p, "errno=%d" % e.errno)
`
	variants := []struct {
		name     string
		existing bool // home's start-up files exist before the run
		wsInHome bool
	}{
		{"existing start-up files, workspace in home", true, true},
		{"fresh home, workspace beside home", false, false},
	}
	for _, u := range users {
		for _, v := range variants {
			for _, prog := range []string{"sh", "python3", "c"} {
				t.Run(u.name+"/"+v.name+"/"+prog, func(t *testing.T) {
					b := newFSBox(t, u.uid, v.wsInHome)
					probe := b.probe(t)
					hostGit(t, b.ws, "init", "-q")
					if v.existing {
						b.write(t, filepath.Join(b.home, ".bashrc"), "# bashrc\n", 0o644)
						b.write(t, filepath.Join(b.home, ".profile"), "# profile\n", 0o644)
						b.write(t, filepath.Join(b.home, ".ssh", "authorized_keys"), "ssh-ed25519 AAAA test\n", 0o600)
						os.Chmod(filepath.Join(b.home, ".ssh"), 0o700)
						if err := os.MkdirAll(filepath.Join(b.home, ".config", "systemd", "user"), 0o755); err != nil {
							t.Fatal(err)
						}
					}
					name := "barry-fs-" + randHex()
					homeTargets := []string{
						filepath.Join(b.home, ".bashrc"), filepath.Join(b.home, ".profile"),
						filepath.Join(b.home, ".ssh", "authorized_keys"), filepath.Join(b.home, ".config", "systemd", "user", "x.service"),
					}
					hostTargets := []string{
						filepath.Join("/etc/cron.d", name), filepath.Join("/usr/local/bin", name),
						filepath.Join(b.ws, ".git", "hooks", "pre-commit"), filepath.Join(b.ws, ".git", "config"),
					}
					targets := append(append([]string{}, homeTargets...), hostTargets...)
					t.Cleanup(func() {
						for _, p := range hostTargets[:2] {
							os.Remove(p)
						}
					})
					// What exists on the host before.
					for _, d := range []string{"/etc/cron.d", "/usr/local/bin"} {
						if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
							t.Fatalf("the host has no %s to try (%v)", d, err)
						}
					}
					before := treeState(t, b.home)
					wsBefore := treeState(t, b.ws)

					var argv []string
					switch prog {
					case "sh":
						argv = append([]string{"sh", "-c", shellWrite, "sh"}, targets...)
					case "python3":
						argv = append([]string{"python3", "-c", pyWrite}, targets...)
					case "c":
						argv = append([]string{probe, "write"}, targets...)
					}
					r := b.run(t, fsRun{argv: argv})

					// The host: nothing changed, nothing appeared.
					for _, d := range stateDiff(before, treeState(t, b.home)) {
						t.Errorf("home on the host: %s", d)
					}
					for _, d := range stateDiff(wsBefore, treeState(t, b.ws)) {
						t.Errorf("workspace on the host: %s", d)
					}
					mustNotExist(t, hostTargets[0], hostTargets[1], hostTargets[2])
					if !v.existing {
						mustNotExist(t, homeTargets...)
					}

					// The sandbox: the command ran and tried every path;
					// the host paths (and, where they exist, home's
					// start-up files) were refused.
					if r.code != 0 || strings.Count(r.stdout, "WROTE ")+strings.Count(r.stdout, "refused ") != len(targets) {
						t.Fatalf("the command did not try every path\n%s", r)
					}
					mustRefuse := hostTargets
					if v.existing {
						mustRefuse = targets
					}
					for _, p := range mustRefuse {
						if strings.Contains(r.stdout, "WROTE "+p+"\n") {
							t.Errorf("the sandbox wrote %s", p)
						}
					}
					if strings.Contains(r.stderr, "was created during the session") {
						t.Errorf("sandboxd reports a protected path created on the host")
					}
					if t.Failed() {
						t.Logf("%s", r)
					}
				})
			}
		}
	}
}

// TestFSPrivateTmp: /tmp, /var/tmp and /dev/shm are the sandbox's own: a
// file the host made there before is not visible inside, a file the
// command writes there is not on the host afterwards, nor in the next
// sandbox.
func TestFSPrivateTmp(t *testing.T) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			id := randHex()
			dirs := []string{"/tmp", "/var/tmp", "/dev/shm"}
			var hostFiles, innerFiles []string
			for _, d := range dirs {
				h := filepath.Join(d, "barry-fs-host-"+id)
				if err := os.WriteFile(h, []byte("HOSTTMP-"+id+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.Remove(h) })
				hostFiles = append(hostFiles, h)
				in := filepath.Join(d, "barry-fs-in-"+id)
				t.Cleanup(func() { os.Remove(in) })
				innerFiles = append(innerFiles, in)
			}
			// Outside, the same user can read the host's files.
			for _, h := range hostFiles {
				argv := b.asUser("cat", h)
				out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
				if err != nil || !strings.Contains(string(out), "HOSTTMP-"+id) {
					t.Fatalf("outside the sandbox uid %d cannot read %s (%v): %s", u.uid, h, err, out)
				}
			}
			script := `id=$1
for d in /tmp /var/tmp /dev/shm; do
  if [ -e "$d/barry-fs-host-$id" ]; then echo "VISIBLE $d"; cat "$d/barry-fs-host-$id"; else echo "absent $d"; fi
  if echo "INNER-$id" > "$d/barry-fs-in-$id" && [ "$(cat "$d/barry-fs-in-$id")" = "INNER-$id" ]; then echo "wrote $d"; fi
done`
			r := b.run(t, fsRun{argv: []string{"sh", "-c", script, "sh", id}})
			for _, d := range dirs {
				if !strings.Contains(r.stdout, "absent "+d+"\n") || !strings.Contains(r.stdout, "wrote "+d+"\n") {
					t.Errorf("%s: the host's file was visible, or the sandbox could not write its own", d)
				}
			}
			if strings.Contains(r.stdout, "HOSTTMP-") {
				t.Errorf("the sandbox read a host tmp file")
			}
			mustNotExist(t, innerFiles...)
			// The next sandbox does not see them either.
			r2 := b.run(t, fsRun{argv: []string{"sh", "-c", `for f; do [ -e "$f" ] && echo "LEFT $f"; done; echo checked`, "sh", innerFiles[0], innerFiles[1], innerFiles[2]}})
			if strings.Contains(r2.stdout, "LEFT") || !strings.Contains(r2.stdout, "checked") {
				t.Errorf("a later sandbox saw an earlier one's tmp files:\n%s", r2)
			}
			if r.code != 0 || t.Failed() {
				t.Fatalf("%s", r)
			}
		})
	}
}

// TestFSHomeOverlay: home is writable inside (caches, a changed and a
// deleted file), the changes are visible for the session, and none of
// them reaches the host, nor the next sandbox.
func TestFSHomeOverlay(t *testing.T) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			b.write(t, filepath.Join(b.home, "notes.txt"), "orig\n", 0o644)
			b.write(t, filepath.Join(b.home, "delete-me"), "keep me\n", 0o644)
			b.write(t, filepath.Join(b.home, ".cache", "existing", "f"), "cached\n", 0o644)
			before := treeState(t, b.home)
			script := `set -e
mkdir -p ~/.cache/x && echo > ~/.cache/x/f && echo cache-ok
mkdir -p ~/.npm/_cacache/tmp && echo npm > ~/.npm/_cacache/tmp/y && echo npm-ok
mkdir -p ~/go/pkg/mod/example.com && echo mod > ~/go/pkg/mod/example.com/z && echo gopath-ok
echo new > ~/.cache/existing/g && echo changed > ~/.cache/existing/f && echo existing-ok
echo changed >> ~/notes.txt && echo "notes: $(cat ~/notes.txt | tr '\n' ' ')"
rm ~/delete-me && echo deleted
mv ~/.cache/existing ~/.cache/renamed && echo renamed
test -f ~/.cache/x/f && test -f ~/.npm/_cacache/tmp/y && ! test -e ~/delete-me && echo session-sees-changes`
			r := b.run(t, fsRun{argv: []string{"sh", "-c", script}})
			for _, want := range []string{"cache-ok\n", "npm-ok\n", "gopath-ok\n", "existing-ok\n", "notes: orig changed \n", "deleted\n", "renamed\n", "session-sees-changes\n"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("inside: missing %q", want)
				}
			}
			for _, d := range stateDiff(before, treeState(t, b.home)) {
				t.Errorf("home on the host: %s", d)
			}
			r2 := b.run(t, fsRun{argv: []string{"sh", "-c", `for f in ~/.cache/x ~/.npm ~/go ~/.cache/renamed ~/.cache/existing/g; do [ -e "$f" ] && echo "LEFT $f"; done; cat ~/notes.txt ~/delete-me`}})
			if strings.Contains(r2.stdout, "LEFT") || r2.stdout != "orig\nkeep me\n" {
				t.Errorf("a later sandbox saw an earlier one's home changes:\n%s", r2)
			}
			if r.code != 0 || t.Failed() {
				t.Fatalf("%s", r)
			}
		})
	}
}

// TestFSDenySecrets: paths matched by files.deny (~/.ssh, a directory;
// **/.env in the workspace and below; *.pem; a literal absolute path) are
// unreadable inside by every route tried: directly, symlinks and hard
// links made inside, ".." paths, /proc/self/root, /proc/$$/cwd,
// /proc/1/root, every process's root, cwd and fds, renaming the mask or
// its parent, mount --bind, umount, unshare, mknod of the disk, chmod on
// the mask, copies, python3, and a C program (plain reads, unshare +
// umount2, open_by_handle_at with a handle taken on the host). The
// secrets never appear in anything the sandbox printed; on the host they
// are intact.
func TestFSDenySecrets(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	buildProbe(t)
	const pyRead = `import os, sys
for p in sys.argv[1:]:
    try:
        with open(p) as f:
            print("READ", p, f.read())
    except OSError as e:
        print("refused read", p, e.errno)
    try:
        fd = os.open(p, os.O_PATH)
        try:
            with open("/proc/self/fd/%d" % fd) as f:
                print("READ O_PATH", p, f.read())
        except OSError as e:
            print("refused O_PATH reopen", p, e.errno)
        os.close(fd)
    except OSError as e:
        print("refused O_PATH", p, e.errno)
try:
    print("LISTED-ssh", os.listdir(os.environ["S_SSH"]))
except OSError as e:
    print("refused listdir", e.errno)
`
	const script = `exec 2>&1
cd "$WS"
echo "== direct"
cat "$S_KEY"; cat .env; cat sub/.env; cat "$S_LIT"; cat "$S_PEM"
ls -la "$S_SSH" && echo "LISTED-ssh"
echo "== control"
cat public.txt
echo "== symlinks"
ln -s "$S_KEY" l-key; ln -s "$WS/.env" l-env; ln -s "$S_SSH" l-ssh; ln -s "$S_LIT" l-lit; ln -s "$S_PEM" l-pem; ln -s public.txt l-pub
cat l-key; cat l-env; cat l-ssh/id_rsa; cat l-lit; cat l-pem; cat l-pub
echo "== hard links"
ln "$S_KEY" h-key; ln .env h-env; ln "$S_LIT" h-lit; ln "$S_PEM" h-pem
cat h-key; cat h-env; cat h-lit; cat h-pem
echo "== dot-dot"
cat ./sub/../.env; cat sub/../sub/.env; cat "$S_SSH/../.ssh/id_rsa"; cat certs/../certs/key.pem; cat "$WS/sub/../.env"
echo "== /proc/self/root"
cat "/proc/self/root$WS/.env"; cat "/proc/self/root$S_KEY"; cat "/proc/self/root$S_LIT"
echo "== /proc/PID/cwd"
cat "/proc/$$/cwd/.env"; cat "/proc/$$/cwd/sub/.env"; cat /proc/self/cwd/.env
echo "== /proc/1"
cat "/proc/1/root$WS/.env"; cat "/proc/1/root$S_KEY"; cat /proc/1/cwd/.env
echo "== every process's root, cwd and fds"
for d in /proc/[0-9]*/root; do cat "$d$WS/.env" "$d$S_KEY" "$d$S_LIT" "$d$S_PEM"; done 2>/dev/null
for d in /proc/[0-9]*/cwd /proc/[0-9]*/fd/*; do cat "$d/.env" "$d/sub/.env" "$d/.ssh/id_rsa" "$d/certs/key.pem"; done 2>/dev/null
echo "== mount"
mkdir -p m1 m2
mount --bind "$WS" m1 && echo ESCAPED-mount-ws; cat m1/.env
mount --bind "$HOME" m2 && echo ESCAPED-mount-home; cat m2/.ssh/id_rsa
umount "$WS/.env" && echo ESCAPED-umount-env; cat .env
umount -l "$S_SSH" && echo ESCAPED-umount-ssh; cat "$S_KEY"
echo "== unshare"
unshare -rm sh -c 'echo UNSHARED; umount -l "$1/.env" && echo UMOUNTED; umount -l "$2" && echo UMOUNTED; cat "$1/.env" "$2/id_rsa"; mount --bind "$1" /mnt && echo UMOUNTED-bind && cat /mnt/.env' sh "$WS" "$S_SSH"
unshare -Ur sh -c 'echo UNSHARED-user'
echo "== mknod"
mknod blk b "$DEVMAJ" "$DEVMIN" && echo ESCAPED-mknod-block; rm -f blk
echo "== chmod"
chmod 644 .env; chmod 644 "$S_LIT"; chmod 755 "$S_SSH"; chmod 644 "$S_KEY"; chmod 644 "$S_PEM"
cat .env; cat "$S_LIT"; cat "$S_KEY"; cat "$S_PEM"
echo "== copies"
cp .env copied-env; cat copied-env; tar cf - .env | tar xOf -; dd if=.env status=none; head -c 100 "$S_KEY"; base64 .env; od -c "$S_LIT"
echo "== python"
python3 -c "$PYREAD" "$S_KEY" .env sub/.env "$S_LIT" "$S_PEM" public.txt
echo "== c"
"$PROBE" read "$S_KEY" .env sub/.env "$S_LIT" "$S_PEM" public.txt
"$PROBE" unshare-read "$WS/.env" "$S_SSH" "$S_KEY"
"$PROBE" byhandle "$WS" $H_ENV
"$PROBE" byhandle "$WS" $H_KEY
"$PROBE" byhandle "$WS" $H_PUB
echo "== rename"
mv .env env-renamed && echo renamed-mask; rm -f .env && echo removed-mask
mv sub moved && echo renamed-parent; cat moved/.env
mv "$S_SSH" "$HOME/ssh-renamed" && echo renamed-ssh; cat "$HOME/ssh-renamed/id_rsa"
echo DONE
`
	for _, u := range users {
		for _, layout := range []struct {
			name     string
			wsInHome bool
		}{{"workspace in home", true}, {"workspace beside home", false}} {
			t.Run(u.name+"/"+layout.name, func(t *testing.T) {
				b := newFSBox(t, u.uid, layout.wsInHome)
				probe := b.probe(t)
				id := randHex()
				secrets := map[string]string{
					filepath.Join(b.home, ".ssh", "id_rsa"):      "S3CR3T-ssh-" + id,
					filepath.Join(b.ws, ".env"):                  "S3CR3T-env-" + id,
					filepath.Join(b.ws, "sub", ".env"):           "S3CR3T-subenv-" + id,
					filepath.Join(b.home, ".aws", "credentials"): "S3CR3T-literal-" + id,
					filepath.Join(b.ws, "certs", "key.pem"):      "S3CR3T-pem-" + id,
				}
				for p, s := range secrets {
					b.write(t, p, s+"\n", 0o600)
				}
				os.Chmod(filepath.Join(b.home, ".ssh"), 0o700)
				public := "PUBLIC-" + id
				b.write(t, filepath.Join(b.ws, "public.txt"), public+"\n", 0o644)
				pol := b.policy(t, fmt.Sprintf(`{files: {deny: ["~/.ssh", "**/.env", "*.pem", %q]}}`, filepath.Join(b.home, ".aws", "credentials")))
				b.chown(t)

				// Outside the sandbox the same user reads every secret: the
				// sandbox is what stops it.
				for p, s := range secrets {
					argv := b.asUser("cat", p)
					out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
					if err != nil || !strings.Contains(string(out), s) {
						t.Fatalf("outside the sandbox uid %d cannot read %s (%v): %s", u.uid, p, err, out)
					}
				}
				handle := func(p string) string {
					out, err := exec.Command(buildProbe(t), "handle", p).CombinedOutput()
					if err != nil {
						t.Fatalf("name_to_handle_at %s: %v %s", p, err, out)
					}
					return strings.TrimSpace(string(out))
				}
				var st unix.Stat_t
				if err := unix.Stat(b.ws, &st); err != nil {
					t.Fatal(err)
				}
				homeBefore := treeState(t, b.home, b.ws)
				env := []string{
					"WS=" + b.ws, "S_SSH=" + filepath.Join(b.home, ".ssh"), "S_KEY=" + filepath.Join(b.home, ".ssh", "id_rsa"),
					"S_LIT=" + filepath.Join(b.home, ".aws", "credentials"), "S_PEM=" + filepath.Join(b.ws, "certs", "key.pem"),
					"PROBE=" + probe, "PYREAD=" + pyRead,
					"H_ENV=" + handle(filepath.Join(b.ws, ".env")), "H_KEY=" + handle(filepath.Join(b.home, ".ssh", "id_rsa")),
					"H_PUB=" + handle(filepath.Join(b.ws, "public.txt")),
					"DEVMAJ=" + strconv.Itoa(int(unix.Major(st.Dev))), "DEVMIN=" + strconv.Itoa(int(unix.Minor(st.Dev))),
				}
				r := b.run(t, fsRun{flags: []string{"--policy", pol}, env: env, argv: []string{"sh", "-c", script}})
				all := r.stdout + r.stderr + r.audit

				for p, s := range secrets {
					if strings.Contains(all, s) {
						t.Errorf("the sandbox read %s (%s)", p, s)
					}
				}
				for _, bad := range []string{"ESCAPED-", "UMOUNTED", "LISTED-ssh", "UNSHARED", "renamed-mask", "removed-mask", "renamed-ssh"} {
					if strings.Contains(r.stdout, bad) {
						t.Errorf("inside: %q", bad)
					}
				}
				// The routes worked for a file that is not denied (so each
				// secret was refused by the sandbox, not by a broken probe):
				// cat, the symlink, python3 (open and O_PATH), the C reader
				// and, as root only, nothing else (open_by_handle_at needs
				// CAP_DAC_READ_SEARCH, which neither user has inside).
				if n := strings.Count(r.stdout, public); n < 5 {
					t.Errorf("the control file was read %d times, want at least 5 (cat, symlink, python3 twice, C)", n)
				}
				for _, want := range []string{
					"refused read " + filepath.Join(b.home, ".ssh", "id_rsa") + " errno=13\n",
					"refused read .env errno=13\n", "refused read sub/.env errno=13\n",
					"refused read " + filepath.Join(b.home, ".aws", "credentials") + " errno=13\n",
					"refused read " + filepath.Join(b.ws, "certs", "key.pem") + " errno=13\n",
					"READ public.txt: " + public + "\n",
					"refused byhandle errno=1\n",
					"DONE\n",
				} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("inside: missing %q", want)
					}
				}

				// The host: the secrets are intact where they were (the
				// workspace subdirectory may have been renamed: that is a
				// write the workspace allows), and nothing the sandbox made
				// links to them.
				if _, err := os.Stat(filepath.Join(b.ws, "moved")); err == nil {
					secrets[filepath.Join(b.ws, "moved", ".env")] = secrets[filepath.Join(b.ws, "sub", ".env")]
					delete(secrets, filepath.Join(b.ws, "sub", ".env"))
					if !strings.Contains(r.stdout, "renamed-parent") {
						t.Errorf("the workspace's sub was renamed on the host but the sandbox did not say so")
					}
				} else {
					t.Logf("renaming the parent of a masked file was refused inside")
				}
				for p, s := range secrets {
					fi, err := os.Lstat(p)
					data, _ := os.ReadFile(p)
					if err != nil || fi.Mode() != 0o600 || string(data) != s+"\n" {
						t.Errorf("host %s changed: %v %v %q", p, err, fi.Mode(), data)
					}
				}
				if fi, err := os.Stat(filepath.Join(b.home, ".ssh")); err != nil || fi.Mode().Perm() != 0o700 {
					t.Errorf("host ~/.ssh changed: %v %v", err, fi.Mode())
				}
				for _, h := range []string{"h-key", "h-env", "h-lit", "h-pem", "copied-env", "env-renamed"} {
					p := filepath.Join(b.ws, h)
					if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "S3CR3T") {
						t.Errorf("host %s holds a secret: %q", p, data)
					}
					var hs unix.Stat_t
					if unix.Lstat(p, &hs) == nil && hs.Nlink > 1 {
						t.Errorf("host %s is a hard link (%d links)", p, hs.Nlink)
					}
				}
				for _, d := range stateDiff(homeBefore, treeState(t, b.home, b.ws)) {
					t.Errorf("home on the host: %s", d)
				}
				if t.Failed() {
					t.Logf("%s", r)
				}
			})
		}
	}
}

// TestFSHostProcessEnviron: a host process (same uid as the sandbox, so
// only the sandbox stands between them) with a secret in its environment
// is out of reach: its PID does not exist in the sandbox's PID namespace,
// /proc/PID/environ cannot be read, ptrace and strace cannot attach, and
// no environment readable inside holds the secret.
func TestFSHostProcessEnviron(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			marker := "S3CR3T-environ-" + randHex()
			argv := b.asUser("sleep", "30")
			host := exec.Command(argv[0], argv[1:]...)
			host.Env = []string{"PATH=/usr/bin:/bin", "BARRY_FS_MARKER=" + marker}
			host.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := host.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { host.Process.Kill(); host.Wait() })
			pid := host.Process.Pid
			// Outside, the same user reads the marker (once setpriv has
			// exec'd sleep).
			deadline := time.Now().Add(10 * time.Second)
			for {
				rargv := b.asUser("cat", fmt.Sprintf("/proc/%d/environ", pid))
				out, _ := exec.Command(rargv[0], rargv[1:]...).Output()
				if strings.Contains(string(out), marker) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("outside the sandbox uid %d cannot read the host process's environment: %q", u.uid, out)
				}
				time.Sleep(20 * time.Millisecond)
			}
			script := `exec 2>&1
P=$1
kill -0 "$P" && echo "VISIBLE-pid"
[ -e "/proc/$P" ] && echo "VISIBLE-proc"
cat "/proc/$P/environ"; tr '\0' '\n' < "/proc/$P/environ"
for f in /proc/[0-9]*/environ /proc/[0-9]*/task/[0-9]*/environ; do tr '\0' '\n' < "$f"; done
tr '\0' '\n' < /proc/$$/environ | grep -q '^BARRY_SANDBOX_ID=' && echo self-environ-ok
command -v strace >/dev/null && timeout 5 strace -qq -e trace=none -p "$P"
python3 -c 'import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, int(sys.argv[1]), 0, 0)
print("ptrace", r, ctypes.get_errno())' "$P"
echo DONE`
			r := b.run(t, fsRun{argv: []string{"sh", "-c", script, "sh", strconv.Itoa(pid)}})
			if strings.Contains(r.stdout+r.stderr+r.audit, marker) {
				t.Errorf("the sandbox read the host process's environment")
			}
			for _, bad := range []string{"VISIBLE-", "ptrace 0 "} {
				if strings.Contains(r.stdout, bad) {
					t.Errorf("inside: %q", bad)
				}
			}
			if !strings.Contains(r.stdout, "self-environ-ok\n") || !strings.Contains(r.stdout, "ptrace -1 3\n") || !strings.Contains(r.stdout, "DONE\n") {
				t.Errorf("inside: the probes did not run as expected (want self-environ-ok and ptrace -1 3 (ESRCH))")
			}
			if host.ProcessState != nil {
				t.Errorf("the host process died")
			}
			if t.Failed() {
				t.Logf("%s", r)
			}
		})
	}
}

// TestFSAllowOnly: with files.allowOnly ["<workspace>/src/**"] (and
// files.deny ["**/*.pem"], whose match under src stays unreadable), writes
// land only under src; other writes in the workspace and in home fail;
// the rest of home (a sibling of the workspace, with a file) is not
// readable; the system still runs (/usr/bin/env); as root, /etc/shadow is
// hidden.
func TestFSAllowOnly(t *testing.T) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, true)
			id := randHex()
			src := filepath.Join(b.ws, "src")
			b.write(t, filepath.Join(src, "existing.txt"), "existing-"+id+"\n", 0o644)
			b.write(t, filepath.Join(b.ws, "other.txt"), "other\n", 0o644)
			sibling := filepath.Join(b.home, "sibling", "file")
			b.write(t, sibling, "S3CR3T-sibling-"+id+"\n", 0o644)
			b.write(t, filepath.Join(b.home, "top-secret"), "S3CR3T-home-"+id+"\n", 0o644)
			// A files.deny match inside the allowed tree stays hidden (the
			// workspace is shown again inside its hidden parent).
			b.write(t, filepath.Join(src, "keys", "id.pem"), "S3CR3T-pem-"+id+"\n", 0o644)
			pol := b.policy(t, fmt.Sprintf(`{files: {allowOnly: [%q], deny: ["**/*.pem"]}}`, src+"/**"))
			homeBefore := treeState(t, b.home, src)
			script := `exec 2>&1
echo new > src/new.txt && echo src-write-ok
mkdir -p src/deep/er && echo deep > src/deep/er/f && echo src-deep-ok
cat src/existing.txt
for f in top.txt other.txt "$HOME/new-in-home" "$HOME/sibling/file" "$HOME/sibling/new"; do
  if (echo pwned >> "$f") 2>/dev/null; then echo "WROTE $f"; else echo "refused $f"; fi
done
mkdir newdir 2>/dev/null && echo "WROTE newdir"
cat "$HOME/sibling/file"; cat "$HOME/top-secret"; ls -la "$HOME" "$HOME/sibling"
cat src/keys/id.pem
/usr/bin/env sh -c 'echo env-ok'
if [ "$(id -u)" = 0 ]; then cat /etc/shadow >/dev/null 2>&1 && echo SHADOW-READ || echo shadow-refused; fi
echo DONE`
			if u.uid == 0 {
				if _, err := os.ReadFile("/etc/shadow"); err != nil {
					t.Fatalf("root cannot read /etc/shadow on the host: %v", err)
				}
			}
			r := b.run(t, fsRun{flags: []string{"--policy", pol}, argv: []string{"sh", "-c", script}})
			for _, want := range []string{"src-write-ok\n", "src-deep-ok\n", "existing-" + id + "\n", "env-ok\n", "DONE\n"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("inside: missing %q", want)
				}
			}
			if u.uid == 0 && !strings.Contains(r.stdout, "shadow-refused\n") {
				t.Errorf("inside: root read /etc/shadow under files.allowOnly")
			}
			for _, bad := range []string{"WROTE", "S3CR3T-"} {
				if strings.Contains(r.stdout+r.stderr, bad) {
					t.Errorf("inside: %q", bad)
				}
			}
			// The host.
			if data, err := os.ReadFile(filepath.Join(src, "new.txt")); err != nil || string(data) != "new\n" {
				t.Errorf("src/new.txt on the host: %q %v", data, err)
			}
			if data, err := os.ReadFile(filepath.Join(src, "deep", "er", "f")); err != nil || string(data) != "deep\n" {
				t.Errorf("src/deep/er/f on the host: %q %v", data, err)
			}
			mustNotExist(t, filepath.Join(b.ws, "top.txt"), filepath.Join(b.ws, "newdir"), filepath.Join(b.home, "new-in-home"), filepath.Join(b.home, "sibling", "new"))
			for _, d := range stateDiff(homeBefore, treeState(t, b.home, src)) {
				t.Errorf("home on the host: %s", d)
			}
			if r.code != 0 || t.Failed() {
				t.Fatalf("%s", r)
			}
		})
	}
}

// TestFSEverydayWork: ordinary development inside the workspace under the
// default policy (no policy file): edit files, git, a C build, a Python
// venv with a local wheel, npm with a local tarball, go build, each tool
// with its default cache (in home: the overlay). On the host afterwards
// the results are in the workspace and nothing appeared elsewhere in home.
func TestFSEverydayWork(t *testing.T) {
	type work struct {
		name    string
		need    []string
		setup   func(t *testing.T, b *fsBox) []string // returns extra env
		script  string
		want    []string // stdout must contain
		timeout time.Duration
		check   func(t *testing.T, b *fsBox, r runResult)
	}
	works := []work{
		{
			name: "files",
			setup: func(t *testing.T, b *fsBox) []string {
				b.write(t, filepath.Join(b.ws, "todelete"), "x\n", 0o644)
				b.write(t, filepath.Join(b.ws, "edit.txt"), "one\n", 0o644)
				return nil
			},
			script: `set -e
echo a > f1; echo b >> f1; mv f1 f2
mkdir -p d/e; echo c > d/e/g
rm todelete
sed -i 's/one/ONE/' edit.txt
ln -s f2 link; chmod +x f2
touch -d '2001-01-01 00:00:00' f2
echo files-ok`,
			want: []string{"files-ok\n"},
			check: func(t *testing.T, b *fsBox, r runResult) {
				for p, want := range map[string]string{"f2": "a\nb\n", "d/e/g": "c\n", "edit.txt": "ONE\n"} {
					if data, err := os.ReadFile(filepath.Join(b.ws, p)); err != nil || string(data) != want {
						t.Errorf("host %s: %q %v (want %q)", p, data, err, want)
					}
				}
				if l, err := os.Readlink(filepath.Join(b.ws, "link")); err != nil || l != "f2" {
					t.Errorf("host link: %q %v", l, err)
				}
				if fi, err := os.Stat(filepath.Join(b.ws, "f2")); err != nil || fi.Mode()&0o100 == 0 || fi.ModTime().Year() != 2001 {
					t.Errorf("host f2 mode/mtime: %v %v", fi, err)
				}
				mustNotExist(t, filepath.Join(b.ws, "f1"), filepath.Join(b.ws, "todelete"))
			},
		},
		{
			name: "git new repository",
			need: []string{"git"},
			script: `set -e
git init -q .
echo hi > a.txt
git add a.txt
git -c user.name=t -c user.email=t@t commit -qm first
git log --format=%s`,
			want: []string{"first\n"},
			check: func(t *testing.T, b *fsBox, r runResult) {
				if got := hostGit(t, b.ws, "log", "--format=%s"); got != "first\n" {
					t.Errorf("host git log: %q", got)
				}
				// .git/config and .git/hooks did not exist at start, so they
				// could not be protected: sandboxd says so at exit.
				if !strings.Contains(r.stderr, filepath.Join(b.ws, ".git", "config")+" was created during the session") {
					t.Errorf("sandboxd did not report the .git/config the session created")
				}
			},
		},
		{
			name: "git existing repository",
			need: []string{"git"},
			setup: func(t *testing.T, b *fsBox) []string {
				hostGit(t, b.ws, "init", "-q")
				b.write(t, filepath.Join(b.ws, "a.txt"), "hi\n", 0o644)
				hostGit(t, b.ws, "add", "a.txt")
				hostGit(t, b.ws, "commit", "-qm", "host commit")
				return nil
			},
			script: `set -e
echo more >> a.txt
git -c user.name=t -c user.email=t@t commit -qam second
git checkout -qb topic
echo b > b.txt; git add b.txt
GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t git commit -qm third
git log --format=%s | tr '\n' ' '; echo`,
			want: []string{"third second host commit \n"},
			check: func(t *testing.T, b *fsBox, r runResult) {
				if got := hostGit(t, b.ws, "log", "--format=%s", "topic"); got != "third\nsecond\nhost commit\n" {
					t.Errorf("host git log: %q", got)
				}
				if strings.Contains(r.stderr, "was created during the session") {
					t.Errorf("sandboxd reports a protected path created")
				}
			},
		},
		{
			name: "C build",
			need: []string{"cc"},
			setup: func(t *testing.T, b *fsBox) []string {
				b.write(t, filepath.Join(b.ws, "hello.c"), "#include <stdio.h>\nint main(void) { puts(\"hello from c\"); return 0; }\n", 0o644)
				return nil
			},
			script: `set -e
mkdir -p build
cc -o build/hello hello.c
./build/hello`,
			want: []string{"hello from c\n"},
			check: func(t *testing.T, b *fsBox, r runResult) {
				out, err := exec.Command(filepath.Join(b.ws, "build", "hello")).CombinedOutput()
				if err != nil || string(out) != "hello from c\n" {
					t.Errorf("host build/hello: %q %v", out, err)
				}
			},
		},
		{
			name: "python venv and pip install of a local wheel",
			need: []string{"python3"},
			setup: func(t *testing.T, b *fsBox) []string {
				needVenv(t, b)
				return []string{"WHEEL=" + writeWheel(t, filepath.Join(b.home, "dist"))}
			},
			script: `set -e
python3 -m venv .venv
.venv/bin/pip cache dir
.venv/bin/pip install --no-index -q "$WHEEL"
.venv/bin/python -c 'import barry_fs_probe; print(barry_fs_probe.hello())'`,
			want:    []string{"hello from the wheel\n"},
			timeout: 180 * time.Second,
			check: func(t *testing.T, b *fsBox, r runResult) {
				if !strings.Contains(r.stdout, filepath.Join(b.home, ".cache", "pip")+"\n") {
					t.Errorf("pip's cache is not the default ~/.cache/pip")
				}
				out, err := exec.Command(filepath.Join(b.ws, ".venv", "bin", "python"), "-c", "import barry_fs_probe; print(barry_fs_probe.hello())").CombinedOutput()
				if err != nil || string(out) != "hello from the wheel\n" {
					t.Errorf("host .venv: %q %v", out, err)
				}
			},
		},
		{
			name: "npm install of a local tarball",
			need: []string{"npm", "node"},
			setup: func(t *testing.T, b *fsBox) []string {
				return []string{"TARBALL=" + writeNpmTarball(t, filepath.Join(b.home, "pkgs"))}
			},
			script: `set -e
npm config get cache
npm install --offline --no-audit --no-fund "$TARBALL"
node -e 'console.log(require("barry-fs-pkg").hello())'
test -n "$(ls -A ~/.npm/_cacache)" && echo npm-cache-used`,
			want:    []string{"hello from the tarball\n", "npm-cache-used\n"},
			timeout: 120 * time.Second,
			check: func(t *testing.T, b *fsBox, r runResult) {
				if !strings.Contains(r.stdout, filepath.Join(b.home, ".npm")+"\n") {
					t.Errorf("npm's cache is not the default ~/.npm")
				}
				for _, p := range []string{"node_modules/barry-fs-pkg/package.json", "package.json", "package-lock.json"} {
					if _, err := os.Stat(filepath.Join(b.ws, p)); err != nil {
						t.Errorf("host %s: %v", p, err)
					}
				}
				cmd := exec.Command("node", "-e", `console.log(require("barry-fs-pkg").hello())`)
				cmd.Dir = b.ws
				if out, err := cmd.CombinedOutput(); err != nil || string(out) != "hello from the tarball\n" {
					t.Errorf("host node: %q %v", out, err)
				}
			},
		},
		{
			name: "go build",
			need: []string{"go"},
			setup: func(t *testing.T, b *fsBox) []string {
				b.write(t, filepath.Join(b.ws, "go.mod"), "module example.com/hello\n\ngo 1.21\n", 0o644)
				b.write(t, filepath.Join(b.ws, "main.go"), "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from go\") }\n", 0o644)
				return []string{"GOFLAGS=-mod=mod", "GOPROXY=off"}
			},
			script: `set -e
go env GOCACHE
go build -o build/hello .
./build/hello
test -n "$(ls -A ~/.cache/go-build)" && echo go-cache-used`,
			want:    []string{"hello from go\n", "go-cache-used\n"},
			timeout: 300 * time.Second,
			check: func(t *testing.T, b *fsBox, r runResult) {
				if !strings.Contains(r.stdout, filepath.Join(b.home, ".cache", "go-build")+"\n") {
					t.Errorf("go's cache is not the default ~/.cache/go-build")
				}
				out, err := exec.Command(filepath.Join(b.ws, "build", "hello")).CombinedOutput()
				if err != nil || string(out) != "hello from go\n" {
					t.Errorf("host build/hello: %q %v", out, err)
				}
			},
		},
	}
	for _, u := range users {
		for _, w := range works {
			t.Run(u.name+"/"+w.name, func(t *testing.T) {
				for _, c := range w.need {
					testenv.NeedCommand(t, c)
				}
				b := newFSBox(t, u.uid, true)
				var env []string
				if w.setup != nil {
					env = w.setup(t, b)
				}
				homeBefore := treeState(t, b.home, b.ws)
				r := b.run(t, fsRun{env: env, argv: []string{"sh", "-c", w.script}, timeout: w.timeout})
				for _, want := range w.want {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("inside: missing %q", want)
					}
				}
				if r.code != 0 {
					t.Errorf("exit %d", r.code)
				}
				if w.check != nil {
					w.check(t, b, r)
				}
				for _, d := range stateDiff(homeBefore, treeState(t, b.home, b.ws)) {
					t.Errorf("home on the host: %s", d)
				}
				if t.Failed() {
					t.Logf("%s", r)
				}
			})
		}
	}
}

// needVenv checks that python3 -m venv gives a venv with pip, which needs
// ensurepip (Debian: the python3-venv package; .ci/run does not install it).
func needVenv(t *testing.T, b *fsBox) {
	t.Helper()
	cmd := exec.Command("/usr/bin/env", "python3", "-c", "import ensurepip, venv")
	cmd.Env = b.env() // the sandbox's PATH, so the same python3
	if out, err := cmd.CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("python3 -m venv cannot install pip (ensurepip is missing: on Debian install python3-venv): %v %s", err, out))
	}
}

// writeWheel builds a minimal pure-Python wheel (barry_fs_probe 1.0) in
// dir, by hand (no pip or network on the host), and returns its path.
func writeWheel(t *testing.T, dir string) string {
	t.Helper()
	files := []struct{ name, body string }{
		{"barry_fs_probe/__init__.py", "def hello():\n    return \"hello from the wheel\"\n"},
		{"barry_fs_probe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: barry-fs-probe\nVersion: 1.0\n"},
		{"barry_fs_probe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: barry-integration\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f.body))
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("barry_fs_probe-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("barry_fs_probe-1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "barry_fs_probe-1.0-py3-none-any.whl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeNpmTarball builds the tarball npm pack would make of a tiny package
// (barry-fs-pkg 1.0.0) in dir and returns its path.
func writeNpmTarball(t *testing.T, dir string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name": "barry-fs-pkg", "version": "1.0.0", "main": "index.js", "license": "MIT"}` + "\n"},
		{"package/index.js", "exports.hello = () => \"hello from the tarball\";\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg, ModTime: time.Unix(499162500, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "barry-fs-pkg-1.0.0.tgz")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
