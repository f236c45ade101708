package policy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecideCreate(t *testing.T) {
	g := CreateGuard{Roots: []string{"/ws", "/extra"}, Cwd: "/ws", Home: "/home/u", Deny: []string{"**/.env", "secrets/*.key"}}
	allowVS := g
	allowVS.AllowEdit = []string{".vscode/settings.json"}
	existing := g
	existing.Existing = []string{"/ws/sub/.claude/commands", "/ws/sub/.claude/commands/a.md", "/ws/sub/.envrc", "/ws/sub/.vscode/settings.json"}
	existingDeny := existing
	existingDeny.Existing = []string{"/ws/sub/.claude/commands", "/ws/sub/.claude/commands/a.md", "/ws/sub/.env", "/ws/sub/.envrc", "/ws/sub/.vscode/settings.json"}
	home := g
	home.Roots = []string{"/ws", "/home/u"}
	homeAllowMCP := home
	homeAllowMCP.AllowEdit = []string{".mcp.json"}
	homeConfig := g
	homeConfig.Roots = []string{"/ws", "/home/u/.config"}
	homeSSH := g
	homeSSH.Roots = []string{"/ws", "/home/u/.ssh"}
	for _, c := range []struct {
		g    CreateGuard
		path string
		rule string // "" allowed
	}{
		{g, "/ws/a.txt", ""},
		{g, "/ws/.envrc", "filesystem.protected:.envrc"},
		{g, "/ws/sub/dir/.envrc", "filesystem.protected:.envrc"},
		{g, "/extra/.vscode/tasks.json", "filesystem.protected:.vscode/tasks.json"},
		{g, "/ws/.vscode", ""},
		{g, "/ws/.vscode/extensions.json", ""},
		{g, "/ws/.vscode/settings.json", "filesystem.protected:.vscode/settings.json"},
		{allowVS, "/ws/.vscode/settings.json", ""},
		{allowVS, "/ws/.vscode/tasks.json", "filesystem.protected:.vscode/tasks.json"},
		{g, "/ws/.claude/commands", "filesystem.protected:.claude/commands"},
		{g, "/ws/.claude/commands/x.md", "filesystem.protected:.claude/commands"},
		{g, "/ws/.claude", ""},
		{g, "/ws/.mcp.json", "filesystem.protected:.mcp.json"},
		{g, "/ws/.git/hooks", ""},
		{g, "/ws/.git/hooks/pre-commit.sample", ""},
		{g, "/ws/.git/hooks/pre-commit", "filesystem.protected:.git/hooks"},
		{g, "/ws/sub/.git/hooks/post-checkout", "filesystem.protected:.git/hooks"},
		{g, "/ws/.git/hooks/x.sample/run", "filesystem.protected:.git/hooks"},
		{g, "/ws/.git/config", ""}, // git init makes it: reported at exit
		// A submodule's git directory runs its hooks as the top level's.
		{g, "/ws/.git/modules/x/hooks/pre-commit", "filesystem.protected:.git/hooks"},
		{g, "/ws/.git/modules/a/b/modules/c/hooks/post-checkout", "filesystem.protected:.git/hooks"},
		{g, "/ws/.git/modules/x/hooks/pre-commit.sample", ""},
		{g, "/ws/.git/modules/x/config", ""},
		// commondir sends git to another directory's config and hooks:
		// only a linked worktree's is git's own.
		{g, "/ws/.git/commondir", "filesystem.protected:.git/commondir"},
		{g, "/ws/sub/.git/commondir", "filesystem.protected:.git/commondir"},
		{g, "/ws/.git/modules/x/commondir", "filesystem.protected:.git/commondir"},
		{g, "/ws/.git/worktrees/wt1/commondir", ""},
		{g, "/ws/.git/modules/x/worktrees/w/commondir", ""},
		{g, "/ws/notgit/commondir", ""},
		{g, "/ws/.gitmodules", ""},
		{g, "/ws/.env", "files.deny:**/.env"},
		{g, "/ws/config/.env", "files.deny:**/.env"},
		{g, "/ws/secrets/a.key", "files.deny:secrets/*.key"},
		{g, "/ws/.env.example", ""},
		{g, "/tmp/.envrc", ""}, // not a write root: discarded
		{g, "/home/u/.envrc", ""},
		{g, "/wsx/.envrc", ""},
		// ASCII case variants (a host that reads the workspace without
		// regard to case).
		{g, "/ws/.EnvRC", "filesystem.protected:.envrc"},
		{g, "/ws/.VSCODE/Tasks.json", "filesystem.protected:.vscode/tasks.json"},
		{g, "/ws/.Git/Hooks/pre-commit", "filesystem.protected:.git/hooks"},
		{g, "/ws/.git/hooks/pre-commit.SAMPLE", ""},
		{allowVS, "/ws/.VSCode/Settings.JSON", ""},
		// Existing at start below a root's top: the exact path is
		// created again; a sibling, a case variant or a path below it
		// is not.
		{existing, "/ws/sub/.envrc", ""},
		{existing, "/ws/sub/.vscode/settings.json", ""},
		{existing, "/ws/sub/.claude/commands", ""},
		{existing, "/ws/sub/.claude/commands/a.md", ""},
		{existing, "/ws/sub/.claude/commands/b.md", "filesystem.protected:.claude/commands"},
		{existing, "/ws/other/.envrc", "filesystem.protected:.envrc"},
		{existing, "/ws/sub/.vscode/tasks.json", "filesystem.protected:.vscode/tasks.json"},
		{existing, "/ws/sub/.ENVRC", "filesystem.protected:.envrc"},
		{existing, "/ws/sub/.envrc/x", "filesystem.protected:.envrc"},
		{existingDeny, "/ws/sub/.env", "files.deny:**/.env"},
		// The home's protected names in a write root, measured from
		// Home; a write root at or below one names it.
		{home, "/home/u/.ssh", "filesystem.protected:~/.ssh"},
		{home, "/home/u/.ssh/authorized_keys", "filesystem.protected:~/.ssh"},
		{home, "/home/u/.bash_login", "filesystem.protected:~/.bash_login"},
		{home, "/home/u/.zlogin", "filesystem.protected:~/.zlogin"},
		{home, "/home/u/.local/bin/git", "filesystem.protected:~/.local/bin"},
		{home, "/home/u/.cargo/bin/cargo", "filesystem.protected:~/.cargo/bin"},
		{home, "/home/u/.config/autostart/x.desktop", "filesystem.protected:~/.config/autostart"},
		{home, "/home/u/.config/systemd/user/x.service", "filesystem.protected:~/.config/systemd"},
		{home, "/home/u/.gitconfig", "filesystem.protected:~/.gitconfig"},
		{home, "/home/u/.config/git/config", "filesystem.protected:~/.config/git"},
		{home, "/home/u/.npmrc", "filesystem.protected:~/.npmrc"},
		{home, "/home/u/.SSH/authorized_keys", "filesystem.protected:~/.ssh"},
		{home, "/home/u/.config/myapp/x", ""},
		{home, "/home/u/.config", ""},
		{home, "/home/u/.local", ""},
		{home, "/home/u/.sshx", ""},
		{home, "/home/u/proj/.ssh/authorized_keys", ""},
		{home, "/home/u/.mcp.json", "filesystem.protected:.mcp.json"},
		{homeAllowMCP, "/home/u/.mcp.json", "filesystem.protected:~/.mcp.json"},
		{homeAllowMCP, "/ws/.mcp.json", ""},
		{homeConfig, "/home/u/.config/autostart/x.desktop", "filesystem.protected:~/.config/autostart"},
		{homeConfig, "/home/u/.config/myapp/x", ""},
		{homeConfig, "/home/u/.bashrc", ""}, // not in a write root
		{homeSSH, "/home/u/.ssh/authorized_keys", ""},
		{homeSSH, "/home/u/.ssh", ""},
		{g, "/home/u/.ssh/authorized_keys", ""}, // home is not a write root: the overlay discards it
	} {
		d := c.g.DecideCreate(c.path)
		if c.rule == "" {
			if !d.Allowed() {
				t.Errorf("%s (allow %v): refused (%s, %s), want allowed", c.path, c.g.AllowEdit, d.Rule, d.Reason)
			}
			continue
		}
		if d.Allowed() || d.Rule != c.rule {
			t.Errorf("%s (allow %v): %v %q, want refused by %q", c.path, c.g.AllowEdit, d.Verdict, d.Rule, c.rule)
		}
		if !strings.Contains(d.Reason, c.path) {
			t.Errorf("%s: reason %q does not name the path", c.path, d.Reason)
		}
	}
}

func TestValidateAllowEdit(t *testing.T) {
	for _, n := range PlantNames() {
		if err := ValidateAllowEdit(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	for _, n := range []string{"", ".git/config", ".vscode", "x", ".envrc/", "/ws/.envrc"} {
		if err := ValidateAllowEdit(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestDecodeAllowEdit(t *testing.T) {
	pf, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\nfilesystem:\n  allowEdit: [.vscode/settings.json, .envrc]\n"), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.Filesystem.AllowEdit; len(got) != 2 || got[0] != ".vscode/settings.json" {
		t.Errorf("allowEdit: %v", got)
	}
	_, err = DecodePolicyFile([]byte("version: 1\nharness: claude-code\nfilesystem:\n  allowEdit: [.envrc, .git/config]\n"), FormatYAML)
	if err == nil || !strings.Contains(err.Error(), "filesystem.allowEdit[1]") {
		t.Errorf("bad entry: %v, want an error at filesystem.allowEdit[1]", err)
	}
}

// TestExplainCreate: explain --path --for-write on a name that does not
// exist says whether the create gate refuses creating it, and by which
// rule; one that exists is the mount layer's (protected: read-only).
func TestExplainCreate(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := &FileRules{Deny: []string{"**/.env"}}
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Files: files, AllowEdit: []string{".vscode/settings.json"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, rule string
		allowed    bool
	}{
		{".envrc", "filesystem.protected:.envrc", false},
		{"sub/.claude/commands/x.md", "filesystem.protected:.claude/commands", false},
		{".vscode/settings.json", "filesystem.write:" + p.Workspace, true},
		{".git/config", "filesystem.protected:" + filepath.Join(p.Workspace, ".git/config"), true}, // git init makes it: reported at exit
		{".vscode/tasks.json", "filesystem.protected:.vscode/tasks.json", false},
		{"config/.env", "files.deny:**/.env", false},
		{".mcp.json", "filesystem.protected:" + filepath.Join(p.Workspace, ".mcp.json"), false},
		{"main.go", "filesystem.write:" + p.Workspace, true},
	} {
		d := p.Explain(filepath.Join(ws, c.path), true)
		if d.Allowed() != c.allowed || d.Rule != c.rule {
			t.Errorf("%s: %v %q (%s), want allowed=%v by %q", c.path, d.Verdict, d.Rule, d.Reason, c.allowed, c.rule)
		}
	}
	if d := p.Explain(filepath.Join(ws, "sub", ".vscode"), true); !d.Allowed() || !strings.Contains(d.Reason, "only by mkdir") {
		t.Errorf("sub/.vscode: %v %q, want allowed only by mkdir", d.Verdict, d.Reason)
	}
	if _, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, AllowEdit: []string{".git/config"}}); err == nil || !strings.Contains(err.Error(), "filesystem.allowEdit") {
		t.Errorf("allowEdit .git/config: %v, want refused", err)
	}
}

// TestDecideProtectedWriteNewNames: the hooks refuse writing the editors'
// and harnesses' auto-run files as the sandbox does, and allow those
// filesystem.allowEdit lists.
func TestDecideProtectedWriteNewNames(t *testing.T) {
	m := FileMatcher{Home: "/home/u", Cwd: "/ws"}
	allow := m
	allow.AllowEdit = []string{".vscode/settings.json"}
	for _, c := range []struct {
		m     FileMatcher
		path  string
		allow bool
	}{
		{m, "/ws/.vscode/tasks.json", false},
		{m, "/ws/.vscode/settings.json", false},
		{allow, "/ws/.vscode/settings.json", true},
		{allow, "/ws/.vscode/launch.json", false},
		{m, "/ws/sub/.envrc", false},
		{m, "/ws/.claude/commands/x.md", false},
		{m, "/ws/.vscode/extensions.json", true},
		{m, "/ws/src/main.go", true},
	} {
		if d := c.m.DecideProtectedWrite(c.path); d.Allowed() != c.allow {
			t.Errorf("%s (allowEdit %v): %v %s, want allowed=%v", c.path, c.m.AllowEdit, d.Verdict, d.Rule, c.allow)
		}
	}
}

// TestDecidePlace: a symlink, a rename or a hard link named as a
// protected name's directory (derived from PlantNames) is refused at any
// depth in a write root, mkdir of it is not; a replacement of an existing
// protected file (an atomic save) is allowed, of a files.deny match not.
func TestDecidePlace(t *testing.T) {
	g := CreateGuard{Roots: []string{"/ws"}, Cwd: "/ws", Home: "/home/u", Deny: []string{"**/.env"}}
	existing := g
	existing.Existing = []string{"/ws/sub/.claude/commands", "/ws/sub/.envrc", "/ws/sub/.vscode/settings.json"}
	home := g
	home.Roots = []string{"/ws", "/home/u"}
	homeConfig := g
	homeConfig.Roots = []string{"/ws", "/home/u/.config"}
	homeSSH := g
	homeSSH.Roots = []string{"/ws", "/home/u/.ssh"}
	gd := g
	gd.Deny = []string{"secrets/*.key", "**/.env", "**/private/**"}
	allowVS := g
	allowVS.AllowEdit = []string{".vscode/settings.json", ".vscode/tasks.json", ".vscode/launch.json", ".vscode/mcp.json"}
	for _, c := range []struct {
		g        CreateGuard
		op, path string
		rule     string // "" allowed
	}{
		{g, OpSymlink, "/ws/.vscode", "filesystem.protected:.vscode/settings.json"},
		{g, OpRename, "/ws/.vscode", "filesystem.protected:.vscode/settings.json"},
		{g, OpLink, "/ws/.vscode", "filesystem.protected:.vscode/settings.json"},
		{g, OpMkdir, "/ws/.vscode", ""},
		{g, OpOpen, "/ws/.vscode", ""},
		{g, OpSymlink, "/ws/sub/deep/.vscode", "filesystem.protected:.vscode/settings.json"},
		{g, OpSymlink, "/ws/.claude", "filesystem.protected:.claude/settings.json"},
		{g, OpRename, "/ws/a/.github", "filesystem.protected:.github/hooks"},
		{g, OpSymlink, "/ws/.git/hooks", "filesystem.protected:.git/hooks"},
		{g, OpRename, "/ws/.git", "filesystem.protected:.git/hooks"},
		{g, OpMkdir, "/ws/.git/hooks", ""},
		{g, OpSymlink, "/ws/.cursor", "filesystem.protected:.cursor/hooks.json"},
		{g, OpSymlink, "/ws/.pi", "filesystem.protected:.pi/settings.json"},
		{g, OpSymlink, "/ws/.gemini", "filesystem.protected:.gemini/settings.json"},
		{g, OpSymlink, "/ws/.vscodex", ""},
		{g, OpSymlink, "/ws/x.vscode", ""},
		{g, OpRename, "/ws/.vscode/extensions.json", ""},
		{g, OpSymlink, "/tmp/.vscode", ""}, // not a write root
		{allowVS, OpSymlink, "/ws/.vscode", ""},
		{allowVS, OpSymlink, "/ws/.cursor", "filesystem.protected:.cursor/hooks.json"},
		{g, OpReplace, "/ws/sub/.envrc", ""},
		{g, OpRename, "/ws/sub/.envrc", "filesystem.protected:.envrc"},
		{g, OpReplace, "/ws/sub/.vscode/settings.json", ""},
		{g, OpReplace, "/ws/.env", "files.deny:**/.env"},
		// A directory a files.deny pattern needs (its literal and glob
		// segments, not **), placed whole: what it holds or leads to
		// would match without being created there.
		{g, OpSymlink, "/ws/.VSCODE", "filesystem.protected:.vscode/settings.json"},
		{g, OpRename, "/ws/sub/.Claude", "filesystem.protected:.claude/settings.json"},
		{g, OpLink, "/ws/.GIT", "filesystem.protected:.git/hooks"},
		{g, OpSymlink, "/ws/.git/HOOKS", "filesystem.protected:.git/hooks"},
		{g, OpMkdir, "/ws/.VSCODE", ""},
		{gd, OpSymlink, "/ws/secrets", "files.deny:secrets/*.key"},
		{gd, OpRename, "/ws/secrets", "files.deny:secrets/*.key"},
		{gd, OpLink, "/ws/secrets", "files.deny:secrets/*.key"},
		{gd, OpMkdir, "/ws/secrets", ""},
		{gd, OpSymlink, "/ws/sub/secrets", ""},
		{gd, OpSymlink, "/ws/a/b/private", "files.deny:**/private/**"},
		{gd, OpRename, "/ws/private", "files.deny:**/private/**"},
		{gd, OpSymlink, "/ws/x", ""},
		{gd, OpSymlink, "/ws/sub/.envx", ""},
		// A hard link's source: a denied file or a protected name is not
		// given another name.
		{gd, OpLinkSource, "/ws/late/.env", "files.deny:**/.env"},
		{gd, OpLinkSource, "/ws/secrets/a.key", "files.deny:secrets/*.key"},
		{gd, OpLinkSource, "/home/u/x/.env", "files.deny:**/.env"},
		{g, OpLinkSource, "/ws/sub/.envrc", "filesystem.protected:.envrc"},
		{g, OpLinkSource, "/ws/.git/hooks/pre-commit", "filesystem.protected:.git/hooks"},
		{g, OpLinkSource, "/ws/x", ""},
		{g, OpLinkSource, "/ws/.vscode", ""},
		{allowVS, OpLinkSource, "/ws/.vscode/settings.json", ""},
		// A rename's source: a denied file the host made later, or a
		// directory a pattern needs, keeps its name (anywhere: the home
		// overlay too); a protected name may be moved away.
		{gd, OpMoveSource, "/ws/late/.env", "files.deny:**/.env"},
		{gd, OpMoveSource, "/home/u/hl/.env", "files.deny:**/.env"},
		{gd, OpMoveSource, "/ws/secrets/new.key", "files.deny:secrets/*.key"},
		{gd, OpMoveSource, "/ws/secrets", "files.deny:secrets/*.key"},
		{gd, OpMoveSource, "/ws/late", ""},
		{gd, OpMoveSource, "/ws/notes.txt", ""},
		{g, OpMoveSource, "/ws/sub/.envrc", ""},
		// Existing at start: made again by open, mkdir, mknod or bind;
		// a symlink, a rename or a hard link there stays refused, and so
		// does an existing nested .vscode renamed back into place.
		{existing, OpOpen, "/ws/sub/.envrc", ""},
		{existing, OpMknod, "/ws/sub/.envrc", ""},
		{existing, OpBind, "/ws/sub/.envrc", ""},
		{existing, OpMkdir, "/ws/sub/.claude/commands", ""},
		{existing, OpSymlink, "/ws/sub/.envrc", "filesystem.protected:.envrc"},
		{existing, OpRename, "/ws/sub/.envrc", "filesystem.protected:.envrc"},
		{existing, OpLink, "/ws/sub/.envrc", "filesystem.protected:.envrc"},
		{existing, OpRename, "/ws/sub/.claude/commands", "filesystem.protected:.claude/commands"},
		{existing, OpRename, "/ws/sub/.vscode", "filesystem.protected:.vscode/settings.json"},
		{existing, OpOpen, "/ws/sub/.vscode/tasks.json", "filesystem.protected:.vscode/tasks.json"},
		// The home's protected names' directories, in a write root.
		{home, OpSymlink, "/home/u/.ssh", "filesystem.protected:~/.ssh"},
		{home, OpRename, "/home/u/.config/systemd", "filesystem.protected:~/.config/systemd"},
		{home, OpSymlink, "/home/u/.config", "filesystem.protected:~/.config/fish"},
		{home, OpLink, "/home/u/.local", "filesystem.protected:~/.local/bin"},
		{home, OpRename, "/home/u/.Cargo", "filesystem.protected:~/.cargo/config.toml"},
		{home, OpMkdir, "/home/u/.config", ""},
		{home, OpMkdir, "/home/u/.local", ""},
		{home, OpMkdir, "/home/u/.ssh", "filesystem.protected:~/.ssh"},
		{home, OpSymlink, "/home/u/.config/myapp", ""},
		{home, OpRename, "/home/u/proj/.local", ""},
		{homeConfig, OpSymlink, "/home/u/.config/systemd", "filesystem.protected:~/.config/systemd"},
		{homeSSH, OpSymlink, "/home/u/.ssh/x", ""},
	} {
		d := c.g.DecidePlace(c.op, c.path)
		if c.rule == "" {
			if !d.Allowed() {
				t.Errorf("%s %s (allow %v): refused (%s, %s), want allowed", c.op, c.path, c.g.AllowEdit, d.Rule, d.Reason)
			}
			continue
		}
		if d.Allowed() || d.Rule != c.rule {
			t.Errorf("%s %s (allow %v): %v %q, want refused by %q", c.op, c.path, c.g.AllowEdit, d.Verdict, d.Rule, c.rule)
		}
		if !strings.Contains(d.Reason, c.path) {
			t.Errorf("%s: reason %q does not name the path", c.path, d.Reason)
		}
	}
	// Derived from the list: every proper prefix of a plant name.
	names := map[string]bool{}
	for _, a := range PlantAncestors(nil) {
		names[a.Name] = true
	}
	for _, e := range PlantNames() {
		parts := strings.Split(e, "/")
		for i := 1; i < len(parts); i++ {
			if p := strings.Join(parts[:i], "/"); !names[p] {
				t.Errorf("%s: its directory %s is not a PlantAncestor", e, p)
			}
		}
	}
}

// TestPlanExistingPlants: the plan's walk finds the protected names below
// the write roots' tops that exist at start (not the top-level ones,
// which are read-only binds; not inside node_modules or .git; not those
// allowEdit frees), and past its bound says so in NotCovered.
func TestPlanExistingPlants(t *testing.T) {
	home, ws := fsFixture(t)
	for _, f := range []string{"sub/.envrc", "sub/.vscode/settings.json", "sub/.vscode/extensions.json", ".envrc", ".vscode/tasks.json",
		"node_modules/x/.envrc", "a/b/.claude/commands/c.md", "a/.mcp.json"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, AllowEdit: []string{".mcp.json"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ws + "/a/b/.claude/commands", ws + "/a/b/.claude/commands/c.md", ws + "/sub/.envrc", ws + "/sub/.vscode/settings.json"}
	if got := p.CreateGuard().Existing; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("existing %q, want %q", got, want)
	}
	for _, n := range p.NotCovered {
		if strings.Contains(n, "not walked whole") {
			t.Errorf("not covered %q within the bound", n)
		}
	}
	if d := p.CreateGuard().DecideCreate(ws + "/sub/.envrc"); !d.Allowed() || d.Reason != ReasonRecreate+": "+ws+"/sub/.envrc, a .envrc, existed at start" {
		t.Errorf("sub/.envrc: %v %q, want allowed: %s", d.Verdict, d.Reason, ReasonRecreate)
	}
	// Past the bound: the walk stops, what it found so far stays, and
	// NotCovered says so.
	q := *p
	q.existingPlants, q.NotCovered = nil, nil
	if err := q.findExisting(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if len(q.NotCovered) != 1 || !strings.Contains(q.NotCovered[0], "first 3 entries ("+ws+" was not walked whole)") {
		t.Errorf("not covered %q, want the bound named", q.NotCovered)
	}
	if len(q.existingPlants) >= len(want) {
		t.Errorf("existing %q past a bound of 3 entries", q.existingPlants)
	}
	// With / a write root nothing is walked, and NotCovered says so.
	a := *p
	a.existingPlants, a.NotCovered, a.AllWritable = nil, nil, true
	if err := a.findExisting(context.Background(), ExistingScanLimit); err != nil {
		t.Fatal(err)
	}
	if len(a.existingPlants) != 0 || len(a.NotCovered) != 1 || !strings.Contains(a.NotCovered[0], "with / a write root") {
		t.Errorf("all writable: existing %q, not covered %q", a.existingPlants, a.NotCovered)
	}
}
