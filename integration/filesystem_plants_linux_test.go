//go:build linux

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		}, script: sh(`mv old/.vscode .vscode`), path: ".vscode/tasks.json", comm: "mv", rule: "filesystem.protected:.vscode/tasks.json"},
		{name: "files.deny .env", policy: "deny", script: sh(`echo KEY=1 > .env`), path: ".env", comm: "sh", rule: "files.deny:**/.env"},
		{name: "files.deny nested .env by python", policy: "deny", script: `mkdir -p config && ` + py(`config/.env`), path: "config/.env", comm: "python3", rule: "files.deny:**/.env"},
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
				case "allow":
					flags = []string{"--policy", plantsPolicy(t, b, "filesystem:\n  allowEdit: [.vscode/settings.json]\n")}
				}
				script := c.script + "\necho beside > beside.txt && echo beside-ok"
				r := b.run(t, fsRun{flags: flags, env: []string{"GIT_CONFIG_NOSYSTEM=1"}, argv: []string{"sh", "-c", script}})
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
				mustNotExist(t, target)
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
