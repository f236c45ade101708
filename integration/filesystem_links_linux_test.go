//go:build linux

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/audit"
)

// TestFSHardLinks: files.deny hides a file, not only a path. Hard links
// made on the host before the run, in the workspace (beside it, in a
// subdirectory) to a key in a denied ~/.ssh and to the workspace's .env,
// are hidden like the files they name, and the start line lists them as
// hidden; a name outside what the plan searches (here beside home) is
// reported in the start line's not_covered with the counts. A hard link
// made inside to a hidden file cannot be made: the hidden name is a mask,
// a mount of its own (EXDEV; a masked directory's names are EACCES), and
// nothing on the host ends up a name of the secret. Checked on the host.
func TestFSHardLinks(t *testing.T) {
	const script = `exec 2>&1
cd "$WS"
echo "== links made before the run"
cat notes/key-copy; cat env-link; cat deep/a/b/env2
"$PROBE" read notes/key-copy env-link deep/a/b/env2 public.txt
echo "== links made inside"
ln "$S_KEY" new-key && echo LINKED-key
ln .env new-env && echo LINKED-env
ln env-link new-envlink && echo LINKED-envlink
ln -L /proc/self/root"$WS/.env" new-proc && echo LINKED-proc
cat new-key new-env new-envlink new-proc
echo "== a name outside the workspace (not searched: reported, readable)"
grep -q S3CR3T-key "$OUTSIDE" && echo OUTSIDE-READABLE
echo "== control"
cat public.txt
ln public.txt public-link && echo LINKED-public
echo DONE
`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, true)
			probe := b.probe(t)
			id := randHex()
			key := filepath.Join(b.home, ".ssh", "id_ed25519")
			env := filepath.Join(b.ws, ".env")
			secrets := map[string]string{key: "S3CR3T-key-" + id, env: "S3CR3T-env-" + id}
			for p, s := range secrets {
				b.write(t, p, s+"\n", 0o600)
			}
			os.Chmod(filepath.Join(b.home, ".ssh"), 0o700)
			public := "PUBLIC-" + id
			b.write(t, filepath.Join(b.ws, "public.txt"), public+"\n", 0o644)
			links := map[string]string{
				filepath.Join(b.ws, "notes", "key-copy"):      key,
				filepath.Join(b.ws, "env-link"):               env,
				filepath.Join(b.ws, "deep", "a", "b", "env2"): env,
				// Beside home, on the same filesystem: not searched.
				filepath.Join(b.base, "outside", "key-outside"): key,
			}
			for l, target := range links {
				if err := os.MkdirAll(filepath.Dir(l), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Link(target, l); err != nil {
					t.Fatal(err)
				}
			}
			outside := filepath.Join(b.base, "outside", "key-outside")
			delete(links, outside)
			pol := b.policy(t, `{files: {deny: ["~/.ssh", "**/.env"]}}`)
			b.chown(t)
			ino := func(p string) (uint64, uint64) {
				var st unix.Stat_t
				if err := unix.Lstat(p, &st); err != nil {
					return 0, 0
				}
				return st.Ino, uint64(st.Nlink)
			}
			keyIno, keyLinks := ino(key)
			envIno, envLinks := ino(env)
			// Outside the sandbox the same user reads the links.
			for l := range links {
				argv := b.asUser("cat", l)
				if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil || !strings.Contains(string(out), "S3CR3T-") {
					t.Fatalf("outside the sandbox uid %d cannot read %s (%v): %s", u.uid, l, err, out)
				}
			}

			r := b.run(t, fsRun{flags: []string{"--policy", pol}, env: []string{"WS=" + b.ws, "S_KEY=" + key, "PROBE=" + probe, "OUTSIDE=" + outside}, argv: []string{"sh", "-c", script}})
			for p, s := range secrets {
				if strings.Contains(r.stdout+r.stderr, s) {
					t.Errorf("the sandbox read %s (%s) through another name", p, s)
				}
			}
			for _, bad := range []string{"LINKED-key", "LINKED-env\n", "LINKED-envlink", "LINKED-proc"} {
				if strings.Contains(r.stdout, bad) {
					t.Errorf("inside: %q", bad)
				}
			}
			for _, want := range []string{
				"refused read notes/key-copy errno=13\n", "refused read env-link errno=13\n", "refused read deep/a/b/env2 errno=13\n",
				"READ public.txt: " + public + "\n", "LINKED-public", "OUTSIDE-READABLE", "DONE\n",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("inside: missing %q", want)
				}
			}
			// What ln said inside, for docs/limits.md.
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, "ln: ") {
					t.Logf("inside: %s", l)
				}
			}

			// The start line: the links hidden, the name outside reported.
			var start map[string]any
			for _, m := range parseAudit(t, r.audit) {
				if m["msg"] == audit.MsgSessionStart {
					start = m
				}
			}
			if start == nil {
				t.Fatalf("no session start line\n%s", r)
			}
			hidden := fmt.Sprint(start[audit.AttrHidden])
			for l := range links {
				if !strings.Contains(hidden, l) {
					t.Errorf("start line: %s not hidden: %s", l, hidden)
				}
			}
			if strings.Contains(hidden, outside) {
				t.Errorf("start line: %s hidden (not searched): %s", outside, hidden)
			}
			want := fmt.Sprintf(`files.deny "~/.ssh": %s has 3 names (hard links) and 2 of them were found in the hidden paths, the workspace and the write roots; the other 1, elsewhere, are not hidden by the kernel`, key)
			if nc := fmt.Sprint(start[audit.AttrNotCovered]); !strings.Contains(nc, want) || strings.Contains(nc, env+" has") {
				t.Errorf("start line: not_covered %s\nwant %q (and nothing on .env, every name of which is hidden)", nc, want)
			}

			// The host: the secrets and their names are intact, and
			// nothing the sandbox made is another name of them.
			for p, s := range secrets {
				if data, err := os.ReadFile(p); err != nil || string(data) != s+"\n" {
					t.Errorf("host %s changed: %v %q", p, err, data)
				}
			}
			if i, n := ino(key); i != keyIno || n != keyLinks {
				t.Errorf("host key: inode %d links %d, want %d %d", i, n, keyIno, keyLinks)
			}
			if i, n := ino(env); i != envIno || n != envLinks {
				t.Errorf("host .env: inode %d links %d, want %d %d", i, n, envIno, envLinks)
			}
			for l, target := range links {
				if i, _ := ino(l); i != map[string]uint64{key: keyIno, env: envIno}[target] {
					t.Errorf("host %s is no longer a name of %s", l, target)
				}
			}
			for _, n := range []string{"new-key", "new-env", "new-envlink", "new-proc"} {
				p := filepath.Join(b.ws, n)
				if i, _ := ino(p); i != 0 && (i == keyIno || i == envIno) {
					t.Errorf("host %s is a name of a secret", p)
				}
				if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), "S3CR3T") {
					t.Errorf("host %s holds a secret", p)
				}
			}
			if i, n := ino(filepath.Join(b.ws, "public-link")); i == 0 || n != 2 {
				t.Errorf("host public-link: inode %d links %d, want a second name of public.txt", i, n)
			}

			// sandboxd explain --path names the file a link is a name of.
			argv := b.asUser(sandboxdBin, "explain", "--policy", pol, "--cwd", b.ws, "--path", filepath.Join(b.ws, "env-link"))
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = b.env()
			out, _ := cmd.CombinedOutput()
			if want := filepath.Join(b.ws, "env-link") + " is another name (hard link) of " + env + `, which files.deny "**/.env" hides`; !strings.Contains(string(out), want) {
				t.Errorf("sandboxd explain --path: %s\nwant %q", out, want)
			}
			if t.Failed() {
				t.Logf("%s", r)
			}
		})
	}
}
