//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// pyCreate creates argv[1] with os.open(O_CREAT) and prints CREATED, or
// REFUSED with the errno.
const pyCreate = `import os, sys
try:
    os.close(os.open(sys.argv[1], os.O_CREAT | os.O_WRONLY, 0o644))
    print("CREATED")
except OSError as e:
    print("REFUSED errno=%d" % e.errno)
`

// TestFSPlantsRefused: creating a protected name (a plant: it runs or
// loads outside the session later) or a name files.deny matches, in the
// workspace, fails inside at the time with EACCES, by every way of making
// a name (a redirection, mkdir then create, mv, ln -s, ln, cp into a
// .git/hooks that git init made inside, os.open with O_CREAT through "..",
// a symlinked directory, /proc/self/cwd and /proc/self/root, the rename
// of a directory that holds one), as root and as 65534. On the host the
// name does not exist afterwards and one audit line names the path and
// the process; the file the same script creates beside it does exist (the
// gate refuses by name, not everything). A name filesystem.allowEdit
// lists is created.
func TestFSPlantsRefused(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	testenv.NeedCommand(t, "git")
	type plant struct {
		name   string
		setup  func(t *testing.T, b *fsBox)
		script string // run in the workspace; prints CREATED or REFUSED
		path   string // the refused name, relative to the workspace
		comm   string // the process the audit line names
		rule   string
		policy string // "deny": files.deny **/.env; "allow": allowEdit .vscode/settings.json
		allow  bool   // the name is created
		keep   string // the name existed with this content and keeps it
		dir    bool   // the name is a directory that stays where it was
		absent string // a name that must not exist afterwards (besides path)
		// during runs on the host while the sandbox runs (a file that
		// appears after the start is not masked).
		during func(t *testing.T, b *fsBox)
		unix   bool              // --allow-unix-socket (a host socket of the box's): AF_UNIX sockets may be made
		also   map[string]string // more host files (relative) and the content each must have afterwards
	}
	sh := func(action string) string {
		return `if ( ` + action + ` ) 2>err.txt; then echo CREATED; else echo "REFUSED $(cat err.txt)"; fi; rm -f err.txt`
	}
	py := func(path string) string { return `python3 -c '` + pyCreate + `' ` + path }
	plants := []plant{
		{name: "redirect", script: sh(`echo 'export X=1' > .envrc`), path: ".envrc", comm: "sh", rule: "filesystem.protected:.envrc"},
		{name: "mkdir and create", script: sh(`mkdir -p .vscode && echo '{}' > .vscode/tasks.json`), path: ".vscode/tasks.json", comm: "sh", rule: "filesystem.protected:.vscode/tasks.json"},
		{name: "mv", script: `echo x > x; ` + sh(`mv x .envrc`), path: ".envrc", comm: "mv", rule: "filesystem.protected:.envrc"},
		{name: "symlink", script: sh(`ln -s x .envrc`), path: ".envrc", comm: "ln", rule: "filesystem.protected:.envrc"},
		{name: "hard link", script: `echo x > x; ` + sh(`ln x .envrc`), path: ".envrc", comm: "ln", rule: "filesystem.protected:.envrc"},
		{name: "git hook after git init", script: `git init -q . && test -f .git/hooks/pre-commit.sample && echo git-init-ok; ` + sh(`cp .git/hooks/pre-commit.sample .git/hooks/pre-commit`),
			path: ".git/hooks/pre-commit", comm: "cp", rule: "filesystem.protected:.git/hooks"},
		{name: "python dotdot", script: `mkdir -p sub/deeper && (cd sub/deeper && ` + py(`../../.envrc`) + `)`, path: ".envrc", comm: "python3", rule: "filesystem.protected:.envrc"},
		{name: "python symlinked directory", script: `mkdir -p real && ln -s real link && ` + py(`link/.envrc`), path: "real/.envrc", comm: "python3", rule: "filesystem.protected:.envrc"},
		{name: "python /proc/self/cwd", script: py(`/proc/self/cwd/.envrc`), path: ".envrc", comm: "python3", rule: "filesystem.protected:.envrc"},
		{name: "python /proc/self/root", script: py(`/proc/self/root/"$PWD"/.envrc`), path: ".envrc", comm: "python3", rule: "filesystem.protected:.envrc"},
		{name: "rename a directory holding one", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "old", ".vscode", "tasks.json"), `{"tasks":[]}`, 0o644)
		}, script: sh(`mv old new`), path: "new/.vscode/tasks.json", comm: "mv", rule: "filesystem.protected:.vscode/tasks.json"},
		// A protected name's directory as a symlink, a renamed directory
		// or symlink, or a hard link (to a symlink): what it holds would
		// come under the name without being created there.
		{name: "symlink as .vscode", script: `mkdir real && echo '{}' > real/tasks.json && ` + sh(`ln -s real .vscode`),
			path: ".vscode", comm: "ln", rule: "filesystem.protected:.vscode/settings.json"},
		{name: "mv a directory to .vscode", script: `mkdir x && echo '{}' > x/tasks.json && ` + sh(`mv x .vscode`),
			path: ".vscode", comm: "mv", rule: "filesystem.protected:.vscode/settings.json"},
		{name: "mv a symlink to .vscode", script: `mkdir real && ln -s real x && ` + sh(`mv x .vscode`),
			path: ".vscode", comm: "mv", rule: "filesystem.protected:.vscode/settings.json"},
		{name: "nested symlink as .claude", script: `mkdir -p sub c/commands && ` + sh(`ln -s ../c sub/.claude`),
			path: "sub/.claude", comm: "ln", rule: "filesystem.protected:.claude/settings.json"},
		{name: "hard link to a symlink as .github", script: `ln -s gh y && ` + sh(`ln -P y .github`),
			path: ".github", comm: "ln", rule: "filesystem.protected:.github/hooks"},
		{name: "symlink as .git/hooks", script: `git init -q --template= . && mkdir h && ` + sh(`ln -s ../h .git/hooks`),
			path: ".git/hooks", comm: "ln", rule: "filesystem.protected:.git/hooks"},
		// ASCII case variants (a host reading the workspace without
		// regard to case).
		{name: "symlink as .VSCODE", script: `mkdir real && echo '{}' > real/tasks.json && ` + sh(`ln -s real .VSCODE`),
			path: ".VSCODE", comm: "ln", rule: "filesystem.protected:.vscode/settings.json"},
		{name: "create .EnvRC", script: sh(`echo x > .EnvRC`), path: ".EnvRC", comm: "sh", rule: "filesystem.protected:.envrc"},
		{name: "python rename into .cursor", script: `mkdir x && python3 -c 'import os
try:
    os.rename("x", ".cursor"); print("CREATED")
except OSError as e:
    print("REFUSED errno=%d" % e.errno)'`, path: ".cursor", comm: "python3", rule: "filesystem.protected:.cursor/hooks.json"},
		{name: "rename a directory holding a .vscode symlink", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "real", "tasks.json"), `{"tasks":[]}`, 0o644)
			if err := os.MkdirAll(filepath.Join(b.ws, "old"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../real", filepath.Join(b.ws, "old", ".vscode")); err != nil {
				t.Fatal(err)
			}
		}, script: sh(`mv old new`), path: "new/.vscode", comm: "mv", rule: "filesystem.protected:.vscode/settings.json"},
		{name: "rename a repository (a nested .git directory)", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "repo", ".git", "HEAD"), "{}\n", 0o644)
		}, script: sh(`mv repo repo.old`), path: "repo.old/.git/HEAD", allow: true},
		// Atomic saves: over an existing nested protected file, as writing
		// it in place; over a missing one refused; over a top-level one
		// (a read-only bind) refused as before.
		{name: "sed -i an existing nested .envrc", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".envrc"), "old\n", 0o644)
		}, script: sh(`sed -i 's/old/{}/' sub/.envrc`), path: "sub/.envrc", allow: true},
		{name: "os.replace over an existing nested settings.json", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "settings.json"), "old\n", 0o644)
		}, script: `python3 -c 'import os
open("sub/.vscode/tmp", "w").write("{}\n"); os.replace("sub/.vscode/tmp", "sub/.vscode/settings.json"); print("CREATED")'`, path: "sub/.vscode/settings.json", allow: true},
		// (The second name is the host's: a hard link from a protected
		// name is refused inside.)
		{name: "rename a hard link over its other name, a nested .envrc", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".envrc"), "{}\n", 0o644)
			if err := os.Link(filepath.Join(b.ws, "sub", ".envrc"), filepath.Join(b.ws, "sub", "other")); err != nil {
				t.Fatal(err)
			}
		}, script: sh(`python3 -c 'import os; os.rename("sub/other", "sub/.envrc")' && test -e sub/other`), path: "sub/.envrc", allow: true},
		{name: "mv over a missing nested .envrc", script: `mkdir sub && echo x > x && ` + sh(`mv x sub/.envrc`),
			path: "sub/.envrc", comm: "mv", rule: "filesystem.protected:.envrc"},
		{name: "sed -i the top .envrc", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, ".envrc"), "old\n", 0o644)
		}, script: sh(`sed -i 's/old/new/' .envrc`), path: ".envrc", keep: "old\n", comm: "sed", rule: "filesystem.protected:.envrc"},
		// A protected name that existed at start below the top is
		// writable in place, so re-creating it (unlink then create, as git
		// checkout, tar x and backup-by-renaming editors do) is allowed at
		// that exact path; its other-branch content lands on the host. A
		// new nested name stays refused, and so does renaming an existing
		// nested .vscode back into place (the ancestor rule).
		{name: "git checkout another branch in a nested repo", setup: nestedRepo,
			script: sh(`cd sub && git checkout -q other && test -f .envrc && test -f .vscode/settings.json`),
			path:   "sub/.envrc", allow: true, also: map[string]string{"sub/.vscode/settings.json": "{}\n"}},
		{name: "tar x over existing nested protected files", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".envrc"), "old\n", 0o644)
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "settings.json"), "old\n", 0o644)
			src := filepath.Join(b.base, "tsrc")
			b.write(t, filepath.Join(src, "sub", ".envrc"), "{}\n", 0o644)
			b.write(t, filepath.Join(src, "sub", ".vscode", "settings.json"), "{}\n", 0o644)
			hostRun(t, "tar", "cf", filepath.Join(b.ws, "t.tar"), "-C", src, "sub")
		}, script: sh(`tar xf t.tar`), path: "sub/.envrc", allow: true, also: map[string]string{"sub/.vscode/settings.json": "{}\n"}},
		{name: "mv away then create a nested settings.json", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "settings.json"), "old\n", 0o644)
		}, script: sh(`mv sub/.vscode/settings.json sub/.vscode/settings.json.bak && echo '{}' > sub/.vscode/settings.json`),
			path: "sub/.vscode/settings.json", allow: true, also: map[string]string{"sub/.vscode/settings.json.bak": "old\n"}},
		{name: "a new nested name beside an existing one", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".envrc"), "old\n", 0o644)
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "settings.json"), "old\n", 0o644)
		}, script: sh(`mkdir other && echo x > other/.envrc`), path: "other/.envrc", comm: "sh", rule: "filesystem.protected:.envrc"},
		{name: "a new nested tasks.json beside an existing settings.json", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "settings.json"), "old\n", 0o644)
		}, script: sh(`echo '{}' > sub/.vscode/tasks.json`), path: "sub/.vscode/tasks.json", comm: "sh", rule: "filesystem.protected:.vscode/tasks.json"},
		{name: "an existing nested .vscode renamed away and back", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "settings.json"), "old\n", 0o644)
		}, script: `mv sub/.vscode sub/.vscode.o && ` + sh(`mv sub/.vscode.o sub/.vscode`),
			path: "sub/.vscode", comm: "mv", rule: "filesystem.protected:.vscode/settings.json", also: map[string]string{"sub/.vscode.o/settings.json": "old\n"}},
		{name: "files.deny .env", policy: "deny", script: sh(`echo KEY=1 > .env`), path: ".env", comm: "sh", rule: "files.deny:**/.env"},
		{name: "files.deny nested .env by python", policy: "deny", script: `mkdir -p config && ` + py(`config/.env`), path: "config/.env", comm: "python3", rule: "files.deny:**/.env"},
		// A directory files.deny needs, made by a symlink after its
		// files (the other order is refused by name).
		{name: "files.deny directory as a symlink", policy: "denykey", script: `mkdir real && echo x > real/a.key && ` + sh(`ln -s real secrets`),
			path: "secrets", comm: "ln", rule: "files.deny:secrets/*.key"},
		{name: "files.deny directory by mv", policy: "denykey", script: `mkdir real && echo x > real/a.key && ` + sh(`mv real secrets`),
			path: "secrets", comm: "mv", rule: "files.deny:secrets/*.key"},
		// A hard link whose source is a protected name or a denied file
		// (one the host made after the start: not masked).
		{name: "hard link from a nested .envrc", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, "sub", ".envrc"), "x\n", 0o644)
		}, script: sh(`ln sub/.envrc alias`), path: "sub/.envrc", keep: "x\n", absent: "alias", comm: "ln", rule: "filesystem.protected:.envrc"},
		{name: "hard link from a late .env", policy: "deny", during: lateFile("late/.env"),
			script: `mkdir late && touch ready && ` + waitHostFile("late/.env") + sh(`ln late/.env alias`), path: "late/.env", keep: "late\n", absent: "alias", comm: "ln", rule: "files.deny:**/.env"},
		{name: "hard link from a late secrets/a.key", policy: "denykey", during: lateFile("secrets/a.key"),
			script: `mkdir secrets && touch ready && ` + waitHostFile("secrets/a.key") + sh(`ln secrets/a.key x`), path: "secrets/a.key", keep: "late\n", absent: "x", comm: "ln", rule: "files.deny:secrets/*.key"},
		// A rename's source: a denied file the host made after the start
		// (not masked) keeps its name, and so does a directory a pattern
		// needs; otherwise the file would be read under the new name.
		{name: "rename a late .env", policy: "deny", during: lateFile("late/.env"),
			script: `mkdir late && touch ready && ` + waitHostFile("late/.env") + sh(`mv late/.env late/x`), path: "late/.env", keep: "late\n", absent: "late/x", comm: "mv", rule: "files.deny:**/.env"},
		{name: "rename the directory of a late secrets/new.key", policy: "denykey", during: lateFile("secrets/new.key"),
			script: `mkdir secrets && touch ready && ` + waitHostFile("secrets/new.key") + sh(`mv secrets secrets2`), path: "secrets", dir: true, absent: "secrets2", comm: "mv", rule: "files.deny:secrets/*.key"},
		// A Unix socket bound at a path is a name created (with
		// --allow-unix-socket, when the command may make such sockets).
		{name: "bind .envrc", unix: true, script: `python3 -c '` + pyBind + `' .envrc`, path: ".envrc", comm: "python3", rule: "filesystem.protected:.envrc"},
		{name: "bind a nested .vscode/tasks.json", unix: true, script: `mkdir -p sub/.vscode && python3 -c '` + pyBind + `' sub/.vscode/tasks.json`,
			path: "sub/.vscode/tasks.json", comm: "python3", rule: "filesystem.protected:.vscode/tasks.json"},
		{name: "bind .env", unix: true, policy: "deny", script: `python3 -c '` + pyBind + `' /proc/self/cwd/.env`, path: ".env", comm: "python3", rule: "files.deny:**/.env"},
		{name: "allowEdit existing", policy: "allow", setup: func(t *testing.T, b *fsBox) {
			b.write(t, filepath.Join(b.ws, ".vscode", "settings.json"), "old\n", 0o644)
		}, script: sh(`echo '{}' > .vscode/settings.json`), path: ".vscode/settings.json", allow: true},
		{name: "allowEdit", policy: "allow", script: sh(`mkdir -p .vscode && echo '{}' > .vscode/settings.json`), path: ".vscode/settings.json", allow: true},
	}
	for _, u := range users {
		for _, c := range plants {
			t.Run(u.name+"/"+c.name, func(t *testing.T) {
				b := newFSBox(t, u.uid, false)
				if c.setup != nil {
					c.setup(t, b)
				}
				var flags []string
				switch c.policy {
				case "deny":
					flags = []string{"--policy", b.policy(t, `{files: {deny: ["**/.env"]}}`)}
				case "denykey":
					flags = []string{"--policy", b.policy(t, `{files: {deny: ["secrets/*.key"]}}`)}
				case "allow":
					flags = []string{"--policy", plantsPolicy(t, b, "filesystem:\n  allowEdit: [.vscode/settings.json]\n")}
				}
				if c.unix {
					flags = append(flags, "--allow-unix-socket", hostSocket(t, b))
				}
				script := c.script + "\necho beside > beside.txt && echo beside-ok"
				var during chan struct{}
				if c.during != nil {
					during = make(chan struct{})
					go func() { defer close(during); c.during(t, b) }()
				}
				r := b.run(t, fsRun{flags: flags, env: []string{"GIT_CONFIG_NOSYSTEM=1"}, argv: []string{"sh", "-c", script}})
				if during != nil {
					<-during
				}
				if c.absent != "" {
					mustNotExist(t, filepath.Join(b.ws, c.absent))
				}
				for name, want := range c.also {
					if data, err := os.ReadFile(filepath.Join(b.ws, name)); err != nil || string(data) != want {
						t.Errorf("host %s: %q %v, want %q", name, data, err, want)
					}
				}
				target := filepath.Join(b.ws, c.path)
				if !strings.Contains(r.stdout, "beside-ok\n") {
					t.Errorf("the script did not run to its end")
				}
				if data, err := os.ReadFile(filepath.Join(b.ws, "beside.txt")); err != nil || string(data) != "beside\n" {
					t.Errorf("host beside.txt: %q %v (a file beside the plant must be created)", data, err)
				}
				if c.name == "git hook after git init" && !strings.Contains(r.stdout, "git-init-ok\n") {
					t.Errorf("git init inside failed")
				}
				lines := createRefusedLines(t, r.audit)
				if c.allow {
					if !strings.Contains(r.stdout, "CREATED") {
						t.Errorf("inside: %s was not created", c.path)
					}
					if data, err := os.ReadFile(target); err != nil || string(data) != "{}\n" {
						t.Errorf("host %s: %q %v, want the allowed file", target, data, err)
					}
					if len(lines) != 0 {
						t.Errorf("create refused lines for an allowed name: %v", lines)
					}
					if t.Failed() {
						t.Logf("%s", r)
					}
					return
				}
				if !strings.Contains(r.stdout, "REFUSED") || strings.Contains(r.stdout, "CREATED") {
					t.Errorf("inside: not refused")
				}
				if !strings.Contains(r.stdout, "Permission denied") && !strings.Contains(r.stdout, "errno=13") {
					t.Errorf("inside: the refusal is not EACCES")
				}
				if c.dir {
					if data, err := os.ReadFile(filepath.Join(target, "new.key")); err != nil || string(data) != "late\n" {
						t.Errorf("host %s/new.key: %q %v, want it where it was", target, data, err)
					}
				} else if c.keep != "" {
					if data, err := os.ReadFile(target); err != nil || string(data) != c.keep {
						t.Errorf("host %s: %q %v, want it unchanged (%q)", target, data, err, c.keep)
					}
				} else {
					mustNotExist(t, target)
				}
				found := 0
				for _, l := range lines {
					if l["path"] == target && l["comm"] == c.comm && l["rule"] == c.rule && l["decision"] == "deny" {
						found++
					}
				}
				if found != 1 {
					t.Errorf("want one audit line naming %s, %s and %s; have %v", target, c.comm, c.rule, lines)
				}
				if t.Failed() {
					t.Logf("%s", r)
				}
			})
		}
	}
}

// nestedRepo makes, on the host, a repository at sub in the workspace
// that tracks .envrc and .vscode/settings.json, "main\n" on the checked-out
// branch and "{}\n" on the branch other.
func nestedRepo(t *testing.T, b *fsBox) {
	t.Helper()
	dir := filepath.Join(b.ws, "sub")
	git := func(args ...string) {
		hostRun(t, append([]string{"git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "--template=")
	b.write(t, filepath.Join(dir, ".envrc"), "{}\n", 0o644)
	b.write(t, filepath.Join(dir, ".vscode", "settings.json"), "{}\n", 0o644)
	git("checkout", "-q", "-b", "other")
	git("add", ".envrc", ".vscode/settings.json")
	git("commit", "-q", "-m", "other")
	git("checkout", "-q", "-b", "main")
	b.write(t, filepath.Join(dir, ".envrc"), "main\n", 0o644)
	b.write(t, filepath.Join(dir, ".vscode", "settings.json"), "main\n", 0o644)
	git("commit", "-q", "-am", "main")
}

// hostRun runs argv on the host (as root), failing the test on an error.
func hostRun(t *testing.T, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// pyBind binds an AF_UNIX stream socket at argv[1] and prints CREATED, or
// REFUSED with the errno.
const pyBind = `import socket, sys
try:
    socket.socket(socket.AF_UNIX).bind(sys.argv[1]); print("CREATED")
except OSError as e:
    print("REFUSED errno=%d" % e.errno)
`

// hostSocket listens on a Unix socket in the box's base (every uid may
// connect) for --allow-unix-socket, until the test ends.
func hostSocket(t *testing.T, b *fsBox) string {
	t.Helper()
	p := filepath.Join(b.base, "host.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(p, 0o777)
	return p
}

// lateFile returns a during function that writes name (content "late\n",
// the box's uid's) in the workspace once the script made "ready".
func lateFile(name string) func(t *testing.T, b *fsBox) {
	return func(t *testing.T, b *fsBox) {
		for i := 0; i < 400; i++ {
			if _, err := os.Lstat(filepath.Join(b.ws, "ready")); err == nil {
				p := filepath.Join(b.ws, name)
				if err := os.WriteFile(p, []byte("late\n"), 0o644); err != nil {
					t.Errorf("host %s: %v", p, err)
				}
				os.Lchown(p, b.uid, b.uid)
				return
			}
			time.Sleep(25 * time.Millisecond)
		}
		t.Errorf("the script never made ready")
	}
}

// waitHostFile is shell that waits (at most 10 s) for a file the host makes.
func waitHostFile(name string) string {
	return `i=0; while [ ! -e ` + name + ` ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; `
}

// plantsPolicy writes a policy file with an open session bound and the
// section given.
func plantsPolicy(t *testing.T, b *fsBox, section string) string {
	t.Helper()
	dir := filepath.Join(b.base, "policy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "policy.yaml")
	doc := "version: 1\nharness: claude-code\nbags: {}\ntools: []\ntraits: {}\n" +
		"bounds:\n  fs: {}\nidentity: {name: dev}\nsession: {bounds: [fs]}\n" + section
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// createRefusedLines are the audit's "create refused" lines.
func createRefusedLines(t *testing.T, audit string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(audit, "\n") {
		if !strings.Contains(line, `"create refused"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestFSCreateGateSemantics: what the create gate makes on the caller's
// behalf is what the kernel would have made for it, checked on the host:
// the owner (the box's uid), the caller's umask on files, directories and
// FIFOs, O_EXCL on an existing name (EEXIST), a new file through a
// dangling symlink (the link's target is created), O_NOFOLLOW on a
// symlink (ELOOP), /dev/stdout opened with O_CREAT as without (the
// caller's own descriptor, reopened), an O_TMPFILE given a name through
// its descriptor, a rename and a hard link of the caller's, relative to a
// directory descriptor, the init's own /proc entries refused (EACCES),
// new files opened read-write, write-only and read-only whatever their
// mode (with files.deny too, where as root the open gate is on and the
// create gate makes files without an open event: createMarked),
// and a Go program (preempted by signals while
// the gate works) making and renaming 300 files.
func TestFSCreateGateSemantics(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	const script = `import os, errno
os.umask(0o027)
fd = os.open("f", os.O_CREAT | os.O_WRONLY, 0o666); os.write(fd, b"f\n"); os.close(fd)
os.mkdir("d", 0o777)
os.mkfifo("p", 0o666)
try:
    os.open("f", os.O_CREAT | os.O_EXCL | os.O_WRONLY); print("EXCL-OPENED")
except OSError as e:
    print("excl", errno.errorcode[e.errno])
os.symlink("target", "dangling")
fd = os.open("dangling", os.O_CREAT | os.O_WRONLY, 0o600); os.write(fd, b"t\n"); os.close(fd)
try:
    os.open("dangling", os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW); print("NOFOLLOW-OPENED")
except OSError as e:
    print("nofollow", errno.errorcode[e.errno])
got = []
for flags in (os.O_WRONLY, os.O_CREAT | os.O_WRONLY):  # the kernel's answer, then the gate's
    try:
        fd = os.open("/dev/stdout", flags); os.write(fd, b"via-dev-stdout\n"); os.close(fd); got.append("opened")
    except OSError as e:
        got.append(errno.errorcode[e.errno])
print("dev-stdout", "same" if got[0] == got[1] else "differ %s" % got)
dfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY)
fd = os.open("in-d", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=dfd); os.close(fd)
os.rename("in-d", "moved", src_dir_fd=dfd, dst_dir_fd=dfd)
os.link("f", "f-link")
# the init's own: magic links, and files reached with no symlink (comm,
# which a thread of the init may write)
for p in ("/proc/1/cwd/gate-probe", "/proc/1/root/tmp/gate-probe", "/proc/1/task/1/cwd/gate-probe", "/proc/1/comm", "/proc/1/task/1/comm"):
    try:
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY)); print("INIT-OPENED", p)
    except OSError as e:
        print("init", errno.errorcode[e.errno])
# and a name relative to a cwd or a directory descriptor there (chdir and
# O_PATH opens are not gated)
here = os.getcwd()
for name, flags in (("comm", os.O_WRONLY), ("mem", os.O_RDWR)):
    try:
        os.chdir("/proc/1"); os.close(os.open(name, os.O_CREAT | flags)); print("INIT-OPENED cwd", name)
    except OSError as e:
        print("init", errno.errorcode[e.errno])
    finally:
        os.chdir(here)
pfd = os.open("/proc/1/task/1", os.O_PATH | os.O_DIRECTORY)
try:
    os.close(os.open("comm", os.O_CREAT | os.O_WRONLY, dir_fd=pfd)); print("INIT-OPENED dirfd comm")
except OSError as e:
    print("init", errno.errorcode[e.errno])
os.close(pfd)
# An unnamed file (O_TMPFILE) given a name through its descriptor
# (linkat of /proc/self/fd/N: the link's source is decided by the
# descriptor, whose name reads "/ws/#N (deleted)").
# (a dir_fd makes python call linkat with AT_SYMLINK_FOLLOW, not link)
tfd = os.open(".", os.O_TMPFILE | os.O_WRONLY, 0o640)
os.write(tfd, b"tmp\n")
try:
    wfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
    os.link("/proc/self/fd/%d" % tfd, "tmplinked", dst_dir_fd=wfd, follow_symlinks=True); print("tmpfile linked")
except OSError as e:
    print("tmpfile", errno.errorcode[e.errno])
os.close(tfd)
for name in ("f", "opath-missing"):  # O_CREAT is ignored with O_PATH: an fd of f, nothing made
    try:
        os.close(os.open(name, os.O_PATH | os.O_CREAT, 0o644)); print("opath", name, "fd")
    except OSError as e:
        print("opath", name, errno.errorcode[e.errno])
# A new file's descriptor has the access asked for, whatever its mode
# (the kernel checks no permission on a file its open made).
for name, flags, mode in (("rw", os.O_RDWR, 0o666), ("ro", os.O_RDWR, 0o444), ("wo", os.O_WRONLY, 0o200), ("rd", os.O_RDONLY, 0o644)):
    fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_TRUNC | flags, mode)
    if flags != os.O_RDONLY:
        os.write(fd, name.encode() + b"\n")
    if flags == os.O_RDWR:
        os.lseek(fd, 0, 0); print("read", name, os.read(fd, 10).decode().strip())
    os.close(fd)
print("done")
`
	for _, u := range users {
		// Without files.deny, and with it: as root the open gate is on,
		// and the create gate makes the files opens create without an
		// open event (createMarked); what it makes must be the same.
		for _, pol := range []string{"", `{files: {deny: ["**/.env"]}}`} {
			name := u.name
			if pol != "" {
				name += "/files.deny"
			}
			t.Run(name, func(t *testing.T) {
				b := newFSBox(t, u.uid, false)
				o := fsRun{argv: []string{"python3", "-c", script}}
				if pol != "" {
					o.flags = []string{"--policy", b.policy(t, pol)}
				}
				r := b.run(t, o)
				if n := strings.Count(r.stdout, "init EACCES\n"); n != 8 {
					t.Errorf("inside: the init's /proc entries: %d EACCES, want 8", n)
				}
				for _, want := range []string{"excl EEXIST\n", "nofollow ELOOP\n", "dev-stdout same\n", "tmpfile linked\n", "opath f fd\n", "opath opath-missing ENOENT\n", "read rw rw\n", "read ro ro\n", "done\n"} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("inside: missing %q", want)
					}
				}
				for p, want := range map[string]os.FileMode{"f": 0o640, "d": os.ModeDir | 0o750, "p": os.ModeNamedPipe | 0o640, "target": 0o600, "d/moved": 0o640 &^ 0o027,
					"rw": 0o640, "ro": 0o440, "wo": 0o200, "rd": 0o640} {
					fi, err := os.Lstat(filepath.Join(b.ws, p))
					if err != nil {
						t.Errorf("host %s: %v", p, err)
						continue
					}
					if fi.Mode() != want {
						t.Errorf("host %s: mode %v, want %v (the caller's umask 027)", p, fi.Mode(), want)
					}
					if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid || int(st.Gid) != u.uid {
						t.Errorf("host %s: owner %d:%d, want %d:%d", p, st.Uid, st.Gid, u.uid, u.uid)
					}
				}
				if fi, err := os.Stat(filepath.Join(b.ws, "f-link")); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 2 {
					t.Errorf("host f-link: %v %v, want a second name of f", fi, err)
				}
				for p, want := range map[string]string{"ro": "ro\n", "wo": "wo\n", "tmplinked": "tmp\n"} {
					if got, err := os.ReadFile(filepath.Join(b.ws, p)); err != nil || string(got) != want {
						t.Errorf("host %s: %q %v, want what the command wrote", p, got, err)
					}
				}
				if lines := createRefusedLines(t, r.audit); len(lines) != 0 {
					t.Errorf("refusals: %v", lines)
				}
				if t.Failed() {
					t.Logf("%s", r)
				}
			})
		}
	}
	// Opens of a FIFO with no peer block, as the caller's would, but on
	// threads outside the gate's pool, released once their caller is
	// gone: 70 of them (more than the pool's 64 workers), killed after a
	// second, leave later creations working and no thread behind; an
	// open with a peer goes through.
	for _, u := range users {
		t.Run(u.name+"/fifo", func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			script := `mkfifo f
for i in $(seq 70); do timeout 1 sh -c ": >> f" & done; wait
timeout 5 touch y && echo touch-ok
cat f > out & sleep 0.2; echo through-fifo >> f; wait; cat out
for i in $(seq 70); do timeout 1 sh -c ": > f" & done; wait
timeout 5 touch z && echo touch2-ok
echo "init-threads $(ls /proc/1/task | wc -l)"`
			r := b.run(t, fsRun{timeout: 30 * time.Second, argv: []string{"sh", "-c", script}})
			for _, want := range []string{"touch-ok\n", "through-fifo\n", "touch2-ok\n"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("inside: missing %q", want)
				}
			}
			for _, p := range []string{"y", "z"} {
				if _, err := os.Lstat(filepath.Join(b.ws, p)); err != nil {
					t.Errorf("host %s: %v", p, err)
				}
			}
			var n int
			if _, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "init-threads ")+len("init-threads "):], "%d", &n); err != nil || n > 100 {
				t.Errorf("the init's threads after 140 killed FIFO opens: %d (%v), want them ended", n, err)
			}
			if t.Failed() {
				t.Logf("%s", r)
			}
		})
	}
	// The race the review won on iteration 86: one thread creates
	// x/tasks.json while another renames x to .vscode. Every such rename
	// is refused now (a protected name's directory), whatever x holds.
	for _, u := range users {
		t.Run(u.name+"/rename race", func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			const race = `import os, threading
os.mkdir("x")
stop = False
renamed = 0
def create():
    while not stop:
        try:
            os.close(os.open("x/tasks.json", os.O_CREAT | os.O_WRONLY, 0o644)); os.unlink("x/tasks.json")
        except OSError:
            pass
th = threading.Thread(target=create); th.start()
for i in range(500):
    try:
        os.rename("x", ".vscode"); renamed += 1; os.rename(".vscode", "x")
    except OSError:
        pass
stop = True; th.join()
print("renamed", renamed)
`
			r := b.run(t, fsRun{timeout: 60 * time.Second, argv: []string{"python3", "-c", race}})
			if !strings.Contains(r.stdout, "renamed 0\n") {
				t.Errorf("inside: want every rename to .vscode refused\n%s", r)
			}
			mustNotExist(t, filepath.Join(b.ws, ".vscode"))
		})
	}
	// bind(2) with --allow-unix-socket: a path socket is made by the
	// gate (the caller's umask, owner, relative to the cwd, EADDRINUSE
	// on an existing name); abstract, autobind and AF_INET binds are as
	// the kernel's.
	for _, u := range users {
		t.Run(u.name+"/bind", func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			const script = `import socket, os, errno
os.umask(0o027)
os.mkdir("d")
s = socket.socket(socket.AF_UNIX); s.bind("d/srv.sock"); s.listen(1)
os.chdir("d"); r = socket.socket(socket.AF_UNIX); r.bind("rel.sock"); os.chdir("..")
try:
    socket.socket(socket.AF_UNIX).bind("d/srv.sock"); print("REBOUND")
except OSError as e:
    print("again", errno.errorcode[e.errno])
a = socket.socket(socket.AF_UNIX); a.bind("\0barry-gate-abstract"); a.listen(1)
c = socket.socket(socket.AF_UNIX); c.connect("\0barry-gate-abstract"); print("abstract ok")
n = socket.socket(socket.AF_UNIX); n.bind(""); print("autobind", n.getsockname()[:1] in ("\0", b"\0"))
i = socket.socket(socket.AF_INET); i.bind(("127.0.0.1", 0)); print("inet", i.getsockname()[1] > 0)
print("done")
`
			r := b.run(t, fsRun{flags: []string{"--allow-unix-socket", hostSocket(t, b)}, argv: []string{"python3", "-c", script}})
			for _, want := range []string{"again EADDRINUSE\n", "abstract ok\n", "autobind True\n", "inet True\n", "done\n"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("inside: missing %q", want)
				}
			}
			for _, p := range []string{"d/srv.sock", "d/rel.sock"} {
				fi, err := os.Lstat(filepath.Join(b.ws, p))
				if err != nil {
					t.Errorf("host %s: %v", p, err)
					continue
				}
				if want := os.ModeSocket | 0o750; fi.Mode() != want {
					t.Errorf("host %s: mode %v, want %v", p, fi.Mode(), want)
				}
				if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid {
					t.Errorf("host %s: owner %d, want %d", p, st.Uid, u.uid)
				}
			}
			if lines := createRefusedLines(t, r.audit); len(lines) != 0 {
				t.Errorf("refusals: %v", lines)
			}
			if t.Failed() {
				t.Logf("%s", r)
			}
		})
	}
	// The second hunt's atomic-save race: one loop makes s1 a regular
	// file and then a symlink to /etc/passwd (mv -T over it), another
	// saves s1 over an existing nested .vscode/tasks.json. The host polls
	// the protected name meanwhile: it must never be a symlink nor hold
	// anything but the original or a saved "r" (missing is fail-closed).
	for _, u := range users {
		t.Run(u.name+"/atomic save race", func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			const orig = "{\"tasks\":[]}\n"
			b.write(t, filepath.Join(b.ws, "sub", ".vscode", "tasks.json"), orig, 0o644)
			target := filepath.Join(b.ws, "sub", ".vscode", "tasks.json")
			stop := make(chan struct{})
			bad := make(chan string, 1)
			polled := make(chan int)
			go func() {
				n := 0
				defer func() { polled <- n }()
				for {
					select {
					case <-stop:
						return
					default:
					}
					n++
					fi, err := os.Lstat(target)
					if err != nil {
						continue
					}
					if fi.Mode()&os.ModeSymlink != 0 {
						l, _ := os.Readlink(target)
						select {
						case bad <- "a symlink to " + l:
						default:
						}
						return
					}
					if data, err := os.ReadFile(target); err == nil && string(data) != orig && string(data) != "r\n" && len(data) > 0 {
						select {
						case bad <- fmt.Sprintf("content %q", data):
						default:
						}
						return
					}
				}
			}()
			// The hunt's loops in sh, and the same two loops in Python
			// threads (no fork per step: many more tries a second).
			script := `end=$(( $(date +%s) + 8 ))
( while [ "$(date +%s)" -lt $end ]; do echo r > s1; ln -sfn /etc/passwd s1l; mv -T s1l s1; done ) 2>/dev/null &
( while [ "$(date +%s)" -lt $end ]; do mv -T s1 sub/.vscode/tasks.json; done ) 2>/dev/null &
python3 -c '` + pySaveRace + `' &
wait; echo race-done`
			r := b.run(t, fsRun{timeout: 60 * time.Second, argv: []string{"sh", "-c", script}})
			close(stop)
			n := <-polled
			if !strings.Contains(r.stdout, "race-done\n") {
				t.Errorf("inside: the loops did not finish\n%s", r)
			}
			select {
			case what := <-bad:
				t.Errorf("host %s was %s during the race (%d polls)", target, what, n)
			default:
			}
			if fi, err := os.Lstat(target); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				l, _ := os.Readlink(target)
				t.Errorf("host %s is a symlink to %s after the race", target, l)
			}
			if left, _ := filepath.Glob(filepath.Join(b.ws, ".*.save-*")); len(left) != 0 {
				t.Errorf("host: the gate's second names left behind: %v", left)
			}
			fi, err := os.Lstat(target)
			t.Logf("%d host polls; %d refusals; at the end %v %v", n, len(createRefusedLines(t, r.audit)), fi, err)
		})
	}
	// Create-and-write from many goroutines at once, each file written
	// through the descriptor the gate installed and read back, while
	// orphans end (each a SIGCHLD to the init, which any of its threads
	// may take), in fresh boxes, three times, as each user: a descriptor
	// installed wrong (read-only, another file, 0) shows as a failed
	// write or a wrong content.
	t.Run("create and write stress", func(t *testing.T) {
		bin := buildGoProgram(t, "stress", stressProgram)
		for _, u := range users {
			for round := 0; round < 3; round++ {
				b := newFSBox(t, u.uid, false)
				b.write(t, filepath.Join(b.ws, "stress"), string(bin), 0o755)
				r := b.run(t, fsRun{timeout: 120 * time.Second, argv: []string{"sh", "-c",
					`(while [ ! -e stop ]; do (/bin/true &); done) & ./stress; touch stop; wait`}})
				if !strings.Contains(r.stdout, "stress-ok 6400\n") {
					t.Errorf("%s round %d: inside\n%s", u.name, round, r)
					continue
				}
				for _, p := range []string{"d0/f0", "d31/f199", "d17/f93"} {
					if data, err := os.ReadFile(filepath.Join(b.ws, p)); err != nil || string(data) != p {
						t.Errorf("%s round %d: host %s: %q %v", u.name, round, p, data, err)
					}
				}
			}
		}
	})
	t.Run("go program", func(t *testing.T) {
		testenv.NeedCommand(t, "go")
		b := newFSBox(t, 0, false)
		b.write(t, filepath.Join(b.ws, "go.mod"), "module m\n\ngo 1.22\n", 0o644)
		b.write(t, filepath.Join(b.ws, "main.go"), `package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() { // keep the scheduler preempting (SIGURG)
			for x := 0; ; x++ {
				select {
				case <-done:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		f, err := os.CreateTemp(".", "tmp")
		if err != nil {
			fmt.Println("create:", err)
			os.Exit(1)
		}
		f.Close()
		if err := os.Rename(f.Name(), fmt.Sprintf("file%d", i)); err != nil {
			fmt.Println("rename:", err)
			os.Exit(1)
		}
		if err := os.Mkdir(fmt.Sprintf("dir%d", i), 0o755); err != nil {
			fmt.Println("mkdir:", err)
			os.Exit(1)
		}
	}
	close(done)
	fmt.Println("go-ok")
}
`, 0o644)
		r := b.run(t, fsRun{env: []string{"GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local"}, argv: []string{"sh", "-c", "go build -o prog . && ./prog"}})
		if !strings.Contains(r.stdout, "go-ok\n") {
			t.Errorf("the Go program failed\n%s", r)
		}
		for _, p := range []string{"file299", "dir299"} {
			if _, err := os.Lstat(filepath.Join(b.ws, p)); err != nil {
				t.Errorf("host %s: %v", p, err)
			}
		}
	})
}

// pySaveRace runs the atomic-save race's two loops for 8 seconds in two
// threads: p1 a regular file then a symlink to /etc/passwd, and p1 renamed
// over sub/.vscode/tasks.json.
const pySaveRace = `import os, threading, time
end = time.time() + 8
def swap():
    while time.time() < end:
        for p in ("p1", "p1l"):
            try: os.unlink(p)
            except OSError: pass
        try:
            with open("p1", "w") as f: f.write("r\n")
            os.symlink("/etc/passwd", "p1l"); os.rename("p1l", "p1")
        except OSError:
            pass
def save():
    while time.time() < end:
        try: os.rename("p1", "sub/.vscode/tasks.json")
        except OSError: pass
ts = [threading.Thread(target=swap), threading.Thread(target=save), threading.Thread(target=save)]
[t.start() for t in ts]; [t.join() for t in ts]
`

// stressProgram creates 200 files from each of 32 goroutines, writes each
// one's name through the descriptor it got, reads it back, and prints
// stress-ok and the count of files that held, or each failure.
const stressProgram = `package main

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

func main() {
	var wg sync.WaitGroup
	var good atomic.Int32
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			if err := os.Mkdir(fmt.Sprintf("d%d", g), 0o755); err != nil {
				fmt.Println("mkdir:", err)
				return
			}
			for i := 0; i < 200; i++ {
				name := fmt.Sprintf("d%d/f%d", g, i)
				f, err := os.Create(name)
				if err != nil {
					fmt.Println("create:", err)
					continue
				}
				_, err = f.WriteString(name)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					fmt.Println("write:", err)
					continue
				}
				if data, err := os.ReadFile(name); err != nil || string(data) != name {
					fmt.Printf("read back %s: %q %v\n", name, data, err)
					continue
				}
				good.Add(1)
			}
		}(g)
	}
	wg.Wait()
	fmt.Println("stress-ok", good.Load())
}
`

// TestFSNestedGitConfigReported: a nested repository's config that the
// session makes or changes and that names a program git runs (made by git
// init inside, or one that existed at start) is named at exit, on stderr
// and in the audit, with its keys, and so is one that cannot be read (a
// FIFO, which must not hang the exit); an unchanged one, a benign change
// and a benign new repository are not. As root and 65534, checked on the
// host.
func TestFSNestedGitConfigReported(t *testing.T) {
	testenv.NeedCommand(t, "git")
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			for _, d := range []string{"old", "quiet", "benign"} {
				if out, err := exec.Command("git", "init", "-q", filepath.Join(b.ws, d)).CombinedOutput(); err != nil {
					t.Fatalf("git init %s: %v %s", d, err, out)
				}
			}
			if out, err := exec.Command("git", "-C", filepath.Join(b.ws, "quiet"), "config", "core.fsmonitor", "true").CombinedOutput(); err != nil {
				t.Fatalf("git config: %v %s", err, out)
			}
			script := `git init -q nest && git -C nest config core.fsmonitor "touch /tmp/pwned" &&
git -C old config core.hooksPath ../evil &&
git -C benign config user.name someone &&
git init -q plain &&
mkdir -p sub && echo "gitdir: ../gd" > sub/.git && mkdir gd && printf '[core]\n\tsshCommand = evil\n' > gd/config &&
mkdir -p ff/.git && mkfifo ff/.git/config &&
git init -q --separate-git-dir="$PWD/gd2" sub2 && printf '#!/bin/sh\necho hook\n' > gd2/hooks/pre-commit &&
if (echo ../evil > old/.git/commondir) 2>/dev/null; then echo commondir-made; fi &&
mkdir -p plain/.git/modules/x/hooks && if (echo x > plain/.git/modules/x/hooks/pre-commit) 2>/dev/null; then echo module-hook-made; fi &&
echo script-ok`
			r := b.run(t, fsRun{env: []string{"GIT_CONFIG_NOSYSTEM=1", "HOME=" + b.home}, argv: []string{"sh", "-c", script}})
			if !strings.Contains(r.stdout, "script-ok\n") {
				t.Fatalf("inside: the script failed\n%s", r)
			}
			want := map[string]string{
				filepath.Join(b.ws, "nest", ".git", "config"): "appeared during the session and sets core.fsmonitor",
				filepath.Join(b.ws, "old", ".git", "config"):  "changed during the session and sets core.hookspath",
				filepath.Join(b.ws, "gd", "config"):           "appeared during the session and sets core.sshcommand",
				// A FIFO neither hangs the exit nor goes unnamed.
				filepath.Join(b.ws, "ff", ".git", "config"): "appeared during the session and was not checked (it is not a regular file)",
				// A hook where a .git file leads (not refused by name).
				filepath.Join(b.ws, "gd2", "hooks", "pre-commit"): "appeared during the session: a git hook",
			}
			// A commondir in a repository's own git directory and a
			// submodule git directory's hook are refused at the time.
			if strings.Contains(r.stdout, "-made") {
				t.Errorf("inside: %s", r.stdout)
			}
			for _, p := range []string{filepath.Join(b.ws, "old", ".git", "commondir"), filepath.Join(b.ws, "plain", ".git", "modules", "x", "hooks", "pre-commit")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("host: %s was made", p)
				}
			}
			var lines []string
			for _, l := range strings.Split(r.audit, "\n") {
				if strings.Contains(l, `"git config changed"`) {
					lines = append(lines, l)
				}
			}
			for p, what := range want {
				if !strings.Contains(r.stderr, "sandboxd: "+p+" "+what) {
					t.Errorf("stderr does not say %s %s", p, what)
				}
				n := 0
				for _, l := range lines {
					if strings.Contains(l, p+" "+what) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d audit lines for %s, want 1", n, p)
				}
			}
			for _, d := range []string{"quiet", "benign", "plain"} {
				if strings.Contains(r.stderr, filepath.Join(b.ws, d, ".git")) {
					t.Errorf("stderr names %s (unchanged, benign or naming no program)", d)
				}
			}
			if len(lines) != len(want) {
				t.Errorf("%d git config lines, want %d", len(lines), len(want))
			}
			if t.Failed() {
				t.Logf("%s", r)
			}
		})
	}
}

// TestFSNoCoreDumps: the kernel writes a core file itself, past the create
// gate, in the crashing process's directory and under a name core_pattern
// may take from the process: the command has no core dumps and cannot
// raise the limit.
func TestFSNoCoreDumps(t *testing.T) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			script := `mkdir -p .vscode && cd .vscode && echo "limit $(ulimit -c)" && if (ulimit -c unlimited) 2>/dev/null; then echo raised; fi; sh -c 'kill -SEGV $$'; echo done`
			r := b.run(t, fsRun{argv: []string{"sh", "-c", script}})
			if !strings.Contains(r.stdout, "limit 0\n") || strings.Contains(r.stdout, "raised") || !strings.Contains(r.stdout, "done\n") {
				t.Errorf("inside: %s", r)
			}
			ents, err := os.ReadDir(filepath.Join(b.ws, ".vscode"))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				t.Errorf("host: %s appeared in .vscode", e.Name())
			}
		})
	}
}

// TestFSHomeWriteRootPlants: with the home (or a directory in it) a write
// root, the home's protected names (policy.ProtectedInHome: shell start-up
// files, ~/.ssh, ~/.local/bin, ~/.cargo/bin, autostart entries, systemd
// user units, git's and npm's configuration) are refused when created,
// as are a symlink or a renamed directory named as one of their
// directories (~/.ssh, ~/.config/systemd), as root and as 65534; on the
// host none exists afterwards. An ordinary file in ~/.config is created.
func TestFSHomeWriteRootPlants(t *testing.T) {
	type row struct {
		name, script, path, rule string // path relative to home; rule "" allowed
	}
	create := func(rel string) string {
		return `if mkdir -p "$(dirname "$HOME/` + rel + `")" 2>err.txt && echo x 2>err.txt > "$HOME/` + rel + `"; then echo CREATED; else echo "REFUSED $(cat err.txt)"; fi`
	}
	rows := []row{
		{"authorized_keys", create(".ssh/authorized_keys"), ".ssh/authorized_keys", "filesystem.protected:~/.ssh"},
		{"bash_login", create(".bash_login"), ".bash_login", "filesystem.protected:~/.bash_login"},
		{"zlogin", create(".zlogin"), ".zlogin", "filesystem.protected:~/.zlogin"},
		{"local bin", create(".local/bin/git"), ".local/bin/git", "filesystem.protected:~/.local/bin"},
		{"cargo bin", create(".cargo/bin/cargo"), ".cargo/bin/cargo", "filesystem.protected:~/.cargo/bin"},
		{"autostart", create(".config/autostart/x.desktop"), ".config/autostart/x.desktop", "filesystem.protected:~/.config/autostart"},
		{"systemd user unit", create(".config/systemd/user/x.service"), ".config/systemd/user/x.service", "filesystem.protected:~/.config/systemd"},
		{"gitconfig", create(".gitconfig"), ".gitconfig", "filesystem.protected:~/.gitconfig"},
		{"config git", create(".config/git/config"), ".config/git/config", "filesystem.protected:~/.config/git"},
		{"npmrc", create(".npmrc"), ".npmrc", "filesystem.protected:~/.npmrc"},
		{"symlink as ~/.ssh", `mkdir -p "$HOME/k" && if ln -s k "$HOME/.ssh" 2>err.txt; then echo CREATED; else echo "REFUSED $(cat err.txt)"; fi`, ".ssh", "filesystem.protected:~/.ssh"},
		{"mv a directory to ~/.config/systemd", `mkdir -p "$HOME/u/user" && echo x > "$HOME/u/user/x.service" && if mv "$HOME/u" "$HOME/.config/systemd" 2>err.txt; then echo CREATED; else echo "REFUSED $(cat err.txt)"; fi`, ".config/systemd", "filesystem.protected:~/.config/systemd"},
		{"ordinary config file", create(".config/myapp/x"), ".config/myapp/x", ""},
	}
	for _, u := range users {
		for _, root := range []string{"~", "~/.config"} {
			for _, c := range rows {
				if root == "~/.config" && !strings.HasPrefix(c.path, ".config/") {
					continue
				}
				t.Run(u.name+"/"+root+"/"+c.name, func(t *testing.T) {
					b := newFSBox(t, u.uid, false)
					if err := os.MkdirAll(filepath.Join(b.home, ".config"), 0o755); err != nil {
						t.Fatal(err)
					}
					pol := plantsPolicy(t, b, "filesystem:\n  write: [\""+root+"\"]\n")
					r := b.run(t, fsRun{flags: []string{"--policy", pol}, argv: []string{"sh", "-c", "cd \"$HOME\" && " + c.script}})
					target := filepath.Join(b.home, c.path)
					lines := createRefusedLines(t, r.audit)
					if c.rule == "" {
						if data, err := os.ReadFile(target); !strings.Contains(r.stdout, "CREATED") || err != nil || string(data) != "x\n" {
							t.Errorf("host %s: %q %v, want it created", target, data, err)
						}
						if len(lines) != 0 {
							t.Errorf("create refused lines for an ordinary file: %v", lines)
						}
					} else {
						if !strings.Contains(r.stdout, "REFUSED") || !strings.Contains(r.stdout, "Permission denied") {
							t.Errorf("inside: not refused with EACCES")
						}
						mustNotExist(t, target)
						found := 0
						for _, l := range lines {
							if l["rule"] == c.rule && l["decision"] == "deny" {
								found++
							}
						}
						if found == 0 {
							t.Errorf("no audit line with %s: %v", c.rule, lines)
						}
					}
					if t.Failed() {
						t.Logf("%s", r)
					}
				})
			}
		}
	}
}

// renameRaceProgram, run inside: one goroutine renames the host's
// non-empty files src/sN over the name t, one after another (or, with the
// argument "append", opens t and appends a byte), while the other removes
// t and creates it again with O_CREAT|O_EXCL|O_RDWR: a file that O_EXCL
// made is empty (bad counts those that are not), and the O_EXCL open of a
// name just removed does not fail with EEXIST (eexist counts those).
const renameRaceProgram = `package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	var stop atomic.Bool
	done := make(chan struct{})
	appending := len(os.Args) > 1 && os.Args[1] == "append"
	go func() {
		defer close(done)
		for i := 0; !stop.Load() && (appending || i < 10000); i++ {
			if !appending {
				os.Rename(fmt.Sprintf("src/s%d", i), "t")
				continue
			}
			if fd, err := syscall.Open("t", syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0); err == nil {
				syscall.Write(fd, []byte("x"))
				syscall.Close(fd)
			}
		}
	}()
	deadline := time.Now().Add(3 * time.Second)
	tries, opened, bad, eexist := 0, 0, 0, 0
	for time.Now().Before(deadline) && tries < 30000 {
		tries++
		syscall.Unlink("t")
		fd, err := syscall.Open("t", syscall.O_CREAT|syscall.O_EXCL|syscall.O_RDWR|syscall.O_CLOEXEC, 0o644)
		if err == syscall.EEXIST && appending {
			eexist++
		}
		if err != nil {
			continue
		}
		opened++
		var st syscall.Stat_t
		if syscall.Fstat(fd, &st) != nil || st.Size != 0 && !appending {
			bad++
		}
		syscall.Close(fd)
	}
	stop.Store(true)
	<-done
	fmt.Printf("race tries=%d opened=%d bad=%d eexist=%d\n", tries, opened, bad, eexist)
}
`

// TestFSCreateRenameRace: a file an O_CREAT|O_EXCL open makes is the
// caller's new, empty file even while another thread renames other files
// over the same name, and such an open of a name just removed succeeds
// while another thread appends to the name. With files.deny, as root, the
// create gate makes the file with mknodat and takes it by a second lookup
// (createMarked): a review got an existing file back 95 times in 7,061
// opens when a rename could come between the two (the gate's renames now
// wait, nameMu), and 104 EEXIST in 2,161 when a file that grew meanwhile
// was not handed over.
func TestFSCreateRenameRace(t *testing.T) {
	bin := buildGoProgram(t, "race", renameRaceProgram)
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			b.write(t, filepath.Join(b.ws, "race"), string(bin), 0o755)
			b.write(t, filepath.Join(b.ws, "src", "s0"), "FULL0\n", 0o644)
			for i := 1; i < 10000; i++ {
				if err := os.WriteFile(filepath.Join(b.ws, "src", fmt.Sprintf("s%d", i)), []byte(fmt.Sprintf("FULL%d\n", i)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pol := b.policy(t, `{files: {deny: ["**/.env"]}}`)
			for _, mode := range []string{"rename", "append"} {
				r := b.run(t, fsRun{timeout: 60 * time.Second, flags: []string{"--policy", pol}, argv: []string{"./race", mode}})
				var tries, opened, bad, eexist int
				if _, err := fmt.Sscanf(r.stdout, "race tries=%d opened=%d bad=%d eexist=%d", &tries, &opened, &bad, &eexist); err != nil || opened == 0 {
					t.Fatalf("%s: inside: %v\n%s", mode, err, r)
				}
				if bad != 0 {
					t.Errorf("%s: %d of %d O_EXCL opens returned a file that was not new (%d tries)", mode, bad, opened, tries)
				}
				if eexist != 0 {
					t.Errorf("%s: %d of %d O_EXCL opens of a name just removed failed with EEXIST", mode, eexist, tries)
				}
				t.Logf("%s: %d tries, %d opened", mode, tries, opened)
			}
		})
	}
}

// buildGoProgram builds the one-file Go program source (package main, the
// standard library only) as module name, static, and returns the binary.
func buildGoProgram(t *testing.T, name, source string) []byte {
	t.Helper()
	testenv.NeedCommand(t, "go")
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+name+"\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), name)
	build := exec.Command("go", "build", "-o", prog, ".")
	build.Dir, build.Env = src, append(os.Environ(), "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}
