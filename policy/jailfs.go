package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FilesystemSection is the policy file's top-level "filesystem" section:
// what the sandbox (sandboxd run) makes writable beyond the workspace. It
// lives outside Bound so that the bound keeps the SDK's wire format.
type FilesystemSection struct {
	// Write are extra write roots: absolute paths, "~/..." (the home
	// directory) or paths relative to the working directory. "/" makes the
	// whole host writable (an explicit choice, audited).
	Write []string `json:"write,omitempty"`
	// AllowEdit are entries of ProtectedInRoot (PlantNames) the command
	// may edit and create in the write roots, for teams that want the
	// agent to change them (.vscode/settings.json): they are neither
	// bound read-only at start nor refused at creation (see CreateGuard).
	AllowEdit []string `json:"allowEdit,omitempty"`
	// OpenGate is when files.deny must hold at open time: "" or
	// OpenGateAuto (the default) as sandboxd can have it (the fanotify
	// gate as root, off otherwise, and the start line says so);
	// OpenGateAlways wherever sandboxd runs (the fanotify gate as root,
	// the seccomp route otherwise, see OpenGuardSpec), and a session
	// that can have neither does not start.
	OpenGate string `json:"openGate,omitempty"`
}

// The values of filesystem.openGate.
const (
	OpenGateAuto   = "auto"
	OpenGateAlways = "always"
)

// openGateMode decodes filesystem.openGate: auto or always.
func (d *decoder) openGateMode(n *yaml.Node, p string) string {
	s := d.str(n, p)
	if s != OpenGateAuto && s != OpenGateAlways && resolveAlias(n).Tag == "!!str" {
		d.errf(n, p, "%q is not an open gate mode (%s or %s)", s, OpenGateAuto, OpenGateAlways)
	}
	return s
}

// allowEdit decodes filesystem.allowEdit: entries of PlantNames.
func (d *decoder) allowEdit(n *yaml.Node, p string) []string {
	l := d.strList(n, p)
	for i, w := range l {
		if err := ValidateAllowEdit(w); err != nil {
			d.errf(n, index(p, i), "%v", err)
		}
	}
	return l
}

// writeRoots decodes filesystem.write: exact paths, never globs.
func (d *decoder) writeRoots(n *yaml.Node, p string) []string {
	l := d.strList(n, p)
	for i, w := range l {
		if err := ValidateWriteRoot(w); err != nil {
			d.errf(n, index(p, i), "%v", err)
		}
	}
	return l
}

// ValidateWriteRoot checks one write root as given (--write or
// filesystem.write): a path, not a pattern.
func ValidateWriteRoot(w string) error {
	switch {
	case w == "":
		return errors.New("empty path")
	case strings.ContainsAny(w, "\x00\r\n"):
		return fmt.Errorf("%q: control character in path", w)
	case strings.ContainsAny(w, "*?["):
		return fmt.Errorf("%q: a write root is a path, not a pattern", w)
	case strings.HasPrefix(w, "~") && w != "~" && !strings.HasPrefix(w, "~/"):
		return fmt.Errorf("%q: only ~/ (the current user's home) is supported", w)
	}
	return nil
}

// ProtectedInHome are the home directory's start-up and configuration
// files: read-only inside the sandbox, inside write roots too, unless a
// write root names the exact path. Code planted there runs later outside
// the sandbox (a shell start-up file, a systemd unit, an ssh key) or turns
// off the harness's own hook gate. The mount layer holds the ones that
// exist at start; with the home (or a directory in it) a write root,
// creating one that does not is refused by the create gate
// (CreateGuard.DecideCreate, measured from the home), as is a symlink, a
// rename or a hard link named as one of their directories (~/.config of
// ~/.config/systemd). filesystem.allowEdit does not free these (it frees
// PlantNames in the write roots only).
var ProtectedInHome = []string{
	".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile", ".pam_environment",
	".zshrc", ".zprofile", ".zshenv", ".zlogin", ".zlogout", ".config/fish",
	".gitconfig", ".config/git", ".ssh", ".config/systemd", ".config/autostart", ".config/environment.d",
	".local/bin", ".npmrc", ".cargo/config.toml", ".cargo/config", ".cargo/bin", "go/bin",
	".kube/config", ".aws/config", ".docker/config.json", ".vimrc", ".config/nvim",
	".claude/settings.json", ".claude/settings.local.json", ".claude.json",
	".codex", ".gemini/settings.json", ".cursor/hooks.json", ".mcp.json",
	// Copilot CLI's user hooks, settings and trusted folders (a trusted
	// folder's settings can switch every hook off).
	".copilot/hooks", ".copilot/settings.json", ".copilot/config.json",
	// Pi's user settings (shellCommandPrefix runs before every command)
	// and extensions.
	".pi/agent/settings.json", ".pi/agent/extensions",
}

// protectedInHomeDirs are the entries of ProtectedInHome that are
// directories (the others are files).
var protectedInHomeDirs = map[string]bool{
	".config/fish": true, ".config/git": true, ".ssh": true, ".config/systemd": true, ".config/autostart": true,
	".config/environment.d": true, ".local/bin": true, ".cargo/bin": true, "go/bin": true, ".config/nvim": true,
	".codex": true, ".copilot/hooks": true, ".pi/agent/extensions": true,
}

// ProtectedInHomeIsDir says whether an entry of ProtectedInHome is a
// directory (where a sandbox makes it in a home of its own).
func ProtectedInHomeIsDir(rel string) bool { return protectedInHomeDirs[rel] }

// ProtectedInRoot are protected in the workspace and every write root:
// git runs hooks and configured programs (core.fsmonitor, core.hooksPath)
// from them, and the harnesses read their project settings there.
var ProtectedInRoot = []string{
	".git/hooks", ".git/config", ".git/config.worktree", ".git/commondir", ".git/modules", ".gitmodules",
	".claude/settings.json", ".claude/settings.local.json", ".codex", ".gemini/settings.json",
	".cursor/hooks.json", ".mcp.json",
	// Copilot CLI's repository hooks and settings.
	".github/hooks", ".github/copilot",
	// Pi's project settings and extensions.
	".pi/settings.json", ".pi/extensions",
	// Editors' and harnesses' files that run or load when the project is
	// opened next, outside the session: VS Code's tasks (runOn:
	// folderOpen), launch configurations (run on F5), settings (a
	// terminal profile, an interpreter's or git's path are programs it
	// runs) and MCP servers (started by the editor); Cursor's MCP
	// servers; direnv's .envrc (evaluated on cd, once allowed); Claude
	// Code's project commands, agents and skills (prompts a later
	// session follows with the user's permissions).
	".vscode/settings.json", ".vscode/tasks.json", ".vscode/launch.json", ".vscode/mcp.json",
	".cursor/mcp.json", ".envrc", ".claude/commands", ".claude/agents", ".claude/skills",
}

// DecideProtectedWrite decides a write the hooks see (a harness's write
// tool, a shell redirection or copy) to path by the sandbox's protected
// paths: below the home, a ProtectedInHome entry; anywhere, a
// ProtectedInRoot entry below some directory (a hook does not know the
// workspace's root). Code planted there runs, or turns a hook gate off,
// outside the session; the sandbox's filesystem layer holds the same
// paths read-only, and hooks only, this is what stops a plant.
func (m FileMatcher) DecideProtectedWrite(path string) Decision {
	c := m.Canonicalize(path)
	if m.Home != "" {
		for _, e := range ProtectedInHome {
			if p := m.Home + "/" + e; under(c, p) {
				return Denied(Because(ReasonProtectedWrite, "%s is under %s", c, p), RuleAt(RuleFilesystemProtected, "~/"+e))
			}
		}
	}
	for _, e := range ProtectedInRoot {
		if slices.Contains(m.AllowEdit, e) {
			continue // filesystem.allowEdit
		}
		if c == "/"+e || strings.HasSuffix(c, "/"+e) || strings.Contains(c, "/"+e+"/") {
			return Denied(Because(ReasonProtectedWrite, "%s is under a %s", c, e), RuleAt(RuleFilesystemProtected, e))
		}
	}
	return AllowedBy("not a protected path", "")
}

// UserDataDirs hold user data: hidden under files.allowOnly, except the
// paths the session needs (the workspace, write roots, allowOnly paths).
var UserDataDirs = []string{"/home", "/root", "/srv", "/mnt", "/media"}

// SystemSecrets are hidden under files.allowOnly (globs over /etc); the
// rest of the system stays readable so programs run.
var SystemSecrets = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh/ssh_host_*_key", "/etc/sudoers", "/etc/sudoers.d"}

// FSInput is what the sandbox's filesystem plan depends on. Paths are taken
// as given and canonicalized here.
type FSInput struct {
	// Workspace is the working directory (always a write root unless a
	// file rule denies it).
	Workspace string
	// Home is the user's home directory ("" none).
	Home string
	// Write are the operator's extra write roots (--write, then the policy
	// file's filesystem.write), relative to Workspace or "~/".
	Write []string
	// Files are the session's effective file rules (nil: none).
	Files *FileRules
	// AlwaysProtected are read-only whatever the write roots (the policy
	// file's directory, sandboxd's runtime directory, the resolver files).
	AlwaysProtected []string
	// HarnessConfig are the harnesses' configuration directories where
	// the environment moves them (HarnessConfigFromEnv); ProtectedInHome
	// covers their default places.
	HarnessConfig HarnessConfigDirs
	// Hide are exact paths hidden whatever the file rules: the files the
	// proxy reads credentials' values from (CredentialSpec.File), which
	// nothing inside may read. Those that do not exist are left out.
	Hide []string
	// ScanLimit bounds the entries the deny-pattern scan may look at
	// (0: DefaultScanLimit); past it the plan is refused.
	ScanLimit int
	// AllowEdit are the protected names the command may edit and create
	// in the write roots (filesystem.allowEdit; see CreateGuard).
	AllowEdit []string
}

// HarnessConfigDirs are the harnesses' configuration directories that
// the environment moves out of their default places in the home.
type HarnessConfigDirs struct {
	// ClaudeConfigDir is $CLAUDE_CONFIG_DIR ("" unset): Claude Code's
	// settings files are there.
	ClaudeConfigDir string
	// CodexHome is $CODEX_HOME ("" unset): Codex's configuration and
	// hooks, all of it.
	CodexHome string
}

// HarnessConfigFromEnv reads the harnesses' configuration directories
// from the environment through getenv (os.Getenv).
func HarnessConfigFromEnv(getenv func(string) string) HarnessConfigDirs {
	return HarnessConfigDirs{ClaudeConfigDir: getenv("CLAUDE_CONFIG_DIR"), CodexHome: getenv("CODEX_HOME")}
}

// protected are the paths of h a session must not write, those that exist
// being protected: an agent must not be able to turn off its own hook
// gate.
func (h HarnessConfigDirs) protected() []string {
	var out []string
	if d := h.ClaudeConfigDir; d != "" {
		out = append(out, filepath.Join(d, "settings.json"), filepath.Join(d, "settings.local.json"))
	}
	if d := h.CodexHome; d != "" {
		out = append(out, d)
	}
	return out
}

// DefaultScanLimit bounds the files.deny scan.
const DefaultScanLimit = 200000

// FSPlan is the sandbox's filesystem: what the kernel layer enforces for
// the whole session (see procjail.FileSystem).
type FSPlan struct {
	Workspace  string   `json:"workspace"`
	Home       string   `json:"home,omitempty"`
	WriteRoots []string `json:"writeRoots"`
	Protected  []string `json:"protected"`
	Hidden     []string `json:"hidden"`
	Revealed   []string `json:"revealed,omitempty"`
	// Pinned are directories between a write root and a protected or
	// hidden path below it, made mount points so that they cannot be
	// renamed: "mv .git .git.o; mkdir .git" would otherwise carry the
	// read-only .git/config away and put a writable one in its place.
	Pinned      []string `json:"pinned,omitempty"`
	HomeOverlay string   `json:"homeOverlay,omitempty"`
	// AllWritable: "/" is a write root.
	AllWritable bool `json:"allWritable,omitempty"`
	// NotCovered are the file rules the kernel layer does not hold, each
	// with why (a pattern that matched nothing present at start).
	NotCovered []string `json:"notCovered,omitempty"`
	// Scanned counts the entries the deny-pattern scan looked at.
	Scanned int `json:"scanned"`
	// LinkScanned counts the entries the search for other names (hard
	// links) of hidden files looked at (see hideLinks).
	LinkScanned int `json:"linkScanned,omitempty"`

	denyWrite map[string]string // write root refused -> the deny pattern
	links     map[string]string // a hidden other name (hard link) -> the hidden file it names
	linked    map[fileKey]*linkedFile
	// hiddenIDs are the hidden regular files hideLinks walked, each with
	// the path it was found at (OpenGuard).
	hiddenIDs map[fileKey]string
	// openGated: the open gate decides opens (GateOpens).
	openGated bool
	matcher   FileMatcher
	files     *FileRules
	hide      []string // FSInput.Hide, canonical
	// allowEdit is FSInput.AllowEdit (CreateGuard).
	allowEdit []string
	// existingPlants are the protected names below the write roots'
	// tops at start (findExisting; CreateGuard.Existing).
	existingPlants []string
}

// PlanFilesystem decides the sandbox's filesystem: the write roots (the
// workspace and the operator's, narrowed by files.allowOnly, less those
// files.deny covers), the protected paths (ProtectedInHome,
// ProtectedInRoot, in.AlwaysProtected), the hidden ones (what files.deny
// matches now, found by a bounded scan; under files.allowOnly also
// UserDataDirs and SystemSecrets, revealing what the session needs) and
// the home overlay (home's changes discarded; not under allowOnly). Of
// in.HarnessConfig, the paths that exist are protected too. The
// scan stops, and the plan fails, once ctx is done.
func PlanFilesystem(ctx context.Context, in FSInput) (*FSPlan, error) {
	if in.Workspace == "" {
		return nil, errors.New("filesystem plan: no working directory")
	}
	ws := Canonicalize(in.Workspace, "/")
	home := ""
	if in.Home != "" {
		home = Canonicalize(in.Home, "/")
	}
	m := FileMatcher{Home: home, Cwd: ws, DenyAnywhere: true}
	p := &FSPlan{Workspace: ws, Home: home, matcher: m, files: in.Files, denyWrite: map[string]string{}, allowEdit: in.AllowEdit}
	for _, a := range in.AllowEdit {
		if err := ValidateAllowEdit(a); err != nil {
			return nil, fmt.Errorf("filesystem.allowEdit: %w", err)
		}
	}
	var deny []string
	var allowOnly []string
	restricted := false
	if in.Files != nil {
		deny, allowOnly, restricted = in.Files.Deny, in.Files.AllowOnly, in.Files.AllowOnly != nil
	}

	// Write roots.
	roots := []string{ws}
	for _, w := range in.Write {
		if err := ValidateWriteRoot(w); err != nil {
			return nil, fmt.Errorf("write root: %w", err)
		}
		c := m.Canonicalize(w)
		if _, err := os.Stat(c); err != nil {
			return nil, fmt.Errorf("write root %s: %w", w, errors.Unwrap(err))
		}
		roots = append(roots, c)
	}
	// A write root reached through a symlink that lies where a sandbox can
	// write (the workspace, another write root) could have been planted by
	// an earlier session: "out -> /" would make the next one's whole host
	// writable, "out -> ~/.ssh" would name a protected path exactly.
	for _, w := range in.Write {
		if link := linkInside(m, w, roots); link != "" {
			return nil, fmt.Errorf("write root %s goes through the symlink %s, inside a writable directory; give the path it points to", w, link)
		}
	}
	if restricted {
		roots = narrowToAllowOnly(roots, allowOnly, m)
	}
	for _, r := range dedupe(roots) {
		if pat := m.Denied(r, deny); pat != "" {
			p.denyWrite[r] = pat
			continue
		}
		if r == "/" {
			p.AllWritable = true
		}
		p.WriteRoots = append(p.WriteRoots, r)
	}

	// Protected paths: exact paths, those a write root names exactly are
	// left writable (the operator chose them).
	var prot []string
	if home != "" {
		for _, f := range ProtectedInHome {
			prot = append(prot, home+"/"+f)
		}
	}
	for _, r := range append([]string{ws}, p.WriteRoots...) {
		for _, f := range ProtectedInRoot {
			if !slices.Contains(in.AllowEdit, f) {
				prot = append(prot, strings.TrimSuffix(r, "/")+"/"+f)
			}
		}
	}
	for _, a := range in.AlwaysProtected {
		p.Protected = append(p.Protected, Canonicalize(a, ws))
	}
	for _, a := range in.HarnessConfig.protected() {
		if _, err := os.Lstat(a); err == nil {
			p.Protected = append(p.Protected, Canonicalize(a, ws))
		}
	}
	for _, r := range append([]string{ws}, p.WriteRoots...) {
		prot = append(prot, gitProtected(r, home)...)
	}
	// One memo for these lookups: the ~100 protected names share a few
	// parents (home, the workspace, .git), each of whose components was
	// looked up again for every name (~0.8 ms of every sandboxd run).
	// It lives only for this loop: the plan's matcher looks afresh.
	memo := &linkMemo{}
	for _, c := range prot {
		// The parent resolved, the name as it is: a protected name that is
		// a symlink inside a write root could be replaced by a directory
		// of the command's own (rm .git/hooks; mkdir .git/hooks), which no
		// bind on the link's target prevents: refused.
		at := canonicalize(filepath.Dir(c), "/", memo) + "/" + filepath.Base(c)
		if li := memo.lookup(at); li.link {
			if p.InWriteRoot(at) && !hasPath(p.WriteRoots, at) {
				return nil, fmt.Errorf("protected path %s is a symlink inside a write root; the sandbox cannot keep it read-only (make it a real file or directory, or name it with --write)", at)
			}
		}
		c = canonicalize(c, "/", memo)
		if !hasPath(p.WriteRoots, c) {
			p.Protected = append(p.Protected, c)
		}
	}
	p.Protected = dedupe(p.Protected)

	// Hidden: what files.deny matches now.
	limit := in.ScanLimit
	if limit <= 0 {
		limit = DefaultScanLimit
	}
	hidden, err := p.scanDenied(ctx, deny, limit)
	if err != nil {
		return nil, err
	}
	for r := range p.denyWrite {
		hidden = append(hidden, r)
	}
	for _, h := range in.Hide {
		c := Canonicalize(h, ws)
		if _, err := os.Lstat(c); err == nil {
			hidden = append(hidden, c)
			p.hide = append(p.hide, c)
		}
	}
	// The other names (hard links) of what is hidden so far: the mask is
	// on a path, the deny is on the file.
	links, err := p.hideLinks(ctx, hidden, limit)
	if err != nil {
		return nil, err
	}
	hidden = append(hidden, links...)
	if restricted {
		// These trees are too large to walk for their files' other
		// names (hard links) at every start.
		p.NotCovered = append(p.NotCovered, "files.allowOnly: the other names (hard links) of the files it hides are not looked for; one in a shown path is readable there")
		for _, d := range UserDataDirs {
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				hidden = append(hidden, Canonicalize(d, "/"))
			}
		}
		// The workspace's siblings: its parent, hidden with the workspace
		// revealed; never "/" or a system directory (a workspace such as
		// /app in a container keeps the system visible).
		if parent := filepath.Dir(ws); parent != ws && !hasPath(systemDirs, parent) {
			hidden = append(hidden, parent)
		}
		for _, g := range SystemSecrets {
			matches, _ := filepath.Glob(g)
			for _, f := range matches {
				hidden = append(hidden, Canonicalize(f, "/"))
			}
		}
		reveal := append([]string{}, p.WriteRoots...)
		if _, denied := p.denyWrite[ws]; !denied {
			reveal = append(reveal, ws)
		}
		for _, pat := range allowOnly {
			if lit := literalDir(pat, m); lit != "" {
				if _, err := os.Lstat(lit); err == nil && m.Denied(lit, deny) == "" {
					reveal = append(reveal, lit)
				}
			}
		}
		for _, r := range dedupe(reveal) {
			if !hasPath(p.WriteRoots, r) {
				p.Revealed = append(p.Revealed, r)
			}
		}
	}
	p.Hidden = outermostBetween(dedupe(hidden), append(append([]string{}, p.Revealed...), p.WriteRoots...))
	if hasPath(p.Hidden, "/") {
		return nil, errors.New("files.deny would hide the whole filesystem")
	}
	// A hidden path wins over a protected or revealed one below it.
	p.Protected = notBelow(p.Protected, p.Hidden, p.Revealed, p.WriteRoots)
	p.Revealed = notDenied(p.Revealed, deny, m)

	// A home that is the root directory (a container user with no
	// passwd entry gets HOME=/) gets no overlay: that would make the
	// whole filesystem writable, if discarded, and the kernel refuses an
	// overlay whose upper layer is inside its lower one anyway.
	if fi, err := os.Stat(home); home != "" && home != "/" && err == nil && fi.IsDir() && !restricted && !p.AllWritable && !p.InWriteRoot(home) && !hasPath(p.Hidden, home) {
		p.HomeOverlay = home
	}
	p.Pinned = p.pins()
	if err := p.findExisting(ctx, ExistingScanLimit); err != nil {
		return nil, err
	}
	// What a private tmp directory covers is out of sight inside: nothing
	// to bind or mask there (the init would not find it).
	p.Protected, p.Hidden, p.Pinned = p.inSight(p.Protected), p.inSight(p.Hidden), p.inSight(p.Pinned)
	return p, nil
}

// inSight drops the paths that a private tmp directory covers and that no
// write root, revealed path or the home overlay brings back.
func (p *FSPlan) inSight(l []string) []string {
	// The innermost of the places that contain x decides, as in Explain:
	// a write root, revealed path or home overlay inside a private tmp
	// directory (or that directory itself) is placed over its tmpfs; one
	// around it (a write root "/") is covered there like the rest.
	shown := append(append([]string{}, p.WriteRoots...), p.Revealed...)
	if p.HomeOverlay != "" {
		shown = append(shown, p.HomeOverlay)
	}
	out := []string{}
	for _, x := range l {
		covered := false
		for _, t := range PrivateTmpDirs {
			if !under(x, t) {
				continue
			}
			covered = true
			for _, r := range shown {
				if under(x, r) && under(r, t) {
					covered = false
				}
			}
		}
		if !covered {
			out = append(out, x)
		}
	}
	return out
}

// systemDirs hold the system's runtime: never hidden as a workspace's
// parent.
var systemDirs = []string{"/", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/var", "/opt"}

// pins are the existing directories strictly between a write root, or
// the home overlay, and a protected or hidden path inside it (see
// FSPlan.Pinned): in the overlay a rename would change nothing on the
// host, but a harness running in the session reads its settings by path
// ("mv ~/.claude ~/.c; mkdir ~/.claude" would give it others).
func (p *FSPlan) pins() []string {
	var out []string
	roots := p.WriteRoots
	if p.HomeOverlay != "" {
		roots = append(slices.Clone(roots), p.HomeOverlay)
	}
	for _, x := range append(append([]string{}, p.Protected...), p.Hidden...) {
		for _, r := range roots {
			if !under(x, r) || x == r {
				continue
			}
			for d := filepath.Dir(x); d != r && under(d, r); d = filepath.Dir(d) {
				if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
					out = append(out, d)
				}
			}
		}
	}
	return dedupe(out)
}

// linkInside returns the first symlink along w (as given: "~/" expanded,
// made absolute against the workspace) that lies inside one of dirs, or "".
func linkInside(m FileMatcher, w string, dirs []string) string {
	if w == "~" || strings.HasPrefix(w, "~/") {
		w = m.Home + w[1:]
	}
	if !filepath.IsAbs(w) {
		w = filepath.Join(m.Cwd, w)
	}
	w = filepath.Clean(w)
	for at := w; at != "/"; at = filepath.Dir(at) {
		fi, err := os.Lstat(at)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		c := Canonicalize(filepath.Dir(at), "/") + "/" + filepath.Base(at)
		for _, d := range dirs {
			if under(c, d) && c != d {
				return at
			}
		}
	}
	return ""
}

// gitProtected are the paths of the repository at root that git would run
// code from, beyond ProtectedInRoot: .git itself when it is a file (a
// gitdir: pointer a session could aim at a git directory of its own) or
// missing (watched: one created during the session is reported), each
// linked worktree's commondir, config.worktree and gitdir files, the
// directory core.hooksPath names inside root (from .git/config, or a
// relative one from the user's global config), and the files .git/config
// includes from inside root.
func gitProtected(root, home string) []string {
	var out []string
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil || !fi.IsDir() {
		out = append(out, dotgit)
		return out
	}
	for _, f := range []string{"commondir", "config.worktree", "gitdir"} {
		m, _ := filepath.Glob(filepath.Join(dotgit, "worktrees", "*", f))
		out = append(out, m...)
	}
	cfg := parseGitConfig(filepath.Join(dotgit, "config"))
	hp := cfg["core.hookspath"]
	if len(hp) == 0 && home != "" {
		for _, g := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config")} {
			if v := parseGitConfig(g)["core.hookspath"]; len(v) > 0 && !filepath.IsAbs(v[0]) && !strings.HasPrefix(v[0], "~") {
				hp = v
			}
		}
	}
	for _, v := range append(hp, cfg["include.path"]...) {
		if p := inRoot(root, home, v); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// inRoot resolves a git config path value against root (and "~/"), and
// returns it when it lies strictly inside root ("" otherwise: outside, it
// is as read-only as the rest of the host).
func inRoot(root, home, v string) string {
	if v == "" {
		return ""
	}
	if strings.HasPrefix(v, "~/") && home != "" {
		v = filepath.Join(home, v[2:])
	}
	if !filepath.IsAbs(v) {
		v = filepath.Join(root, v)
	}
	if v = filepath.Clean(v); !under(v, root) || v == root {
		return ""
	}
	return v
}

// parseGitConfig reads the "section.key" values of a git config file
// (keys lowercased; "[section "sub"]" counts as section; "key = v" and
// "[section] key = v" on one line; comments after # or ; dropped; see
// gitConfigEntries).
func parseGitConfig(path string) map[string][]string {
	out := map[string][]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, e := range gitConfigEntries(b) {
		key := e.section + "." + e.name
		out[key] = append(out[key], e.value)
	}
	return out
}

// gitConfigEntry is one "name = value" line of a git config file.
type gitConfigEntry struct {
	section string // the header's first word, lower case ("core"; "core.x" in the old [core.x] form)
	sub     string // the header's quoted subsection ([filter "lfs"]: lfs), as written
	name    string // lower case
	value   string // trimmed, without surrounding quotes
}

// gitConfigEntries reads the "name = value" lines of a git config file,
// each with its section: "[section "sub"]" headers, "[section] name = v"
// on one line, comments after # or ; dropped. Lines without "=" (boolean
// keys) are left out.
func gitConfigEntries(b []byte) []gitConfigEntry {
	var out []gitConfigEntry
	section, sub := "", ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				section, sub = "", ""
				continue
			}
			section, sub = "", ""
			if f := strings.Fields(line[1:end]); len(f) > 0 {
				section = strings.ToLower(f[0])
				sub = strings.Trim(strings.Join(f[1:], " "), `"`)
			}
			line = strings.TrimSpace(line[end+1:])
		}
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			continue
		}
		out = append(out, gitConfigEntry{section: section, sub: sub, name: strings.ToLower(strings.TrimSpace(k)), value: strings.Trim(strings.TrimSpace(v), `"`)})
	}
	return out
}

// narrowToAllowOnly intersects the write roots with the allowOnly patterns
// the kernel can express: a path, or a path followed by "/**". A pattern
// with a glob before its end ("src/*.go", "*.go") cannot be a write root:
// writes it would allow are refused (the result denies more, never less).
func narrowToAllowOnly(roots, allowOnly []string, m FileMatcher) []string {
	var out []string
	for _, pat := range allowOnly {
		lit := literalDir(pat, m)
		if lit == "" || !subtreePattern(pat) {
			continue
		}
		for _, r := range roots {
			switch {
			case under(lit, r):
				out = append(out, lit)
			case under(r, lit):
				out = append(out, r)
			}
		}
	}
	return out
}

// subtreePattern reports whether pat is a literal path or a literal path
// followed by "/**".
func subtreePattern(pat string) bool {
	pat = strings.TrimSuffix(pat, "/**")
	return !strings.ContainsAny(pat, "*?[")
}

// literalDir is the canonical literal directory prefix of a pattern that
// has a "/" (relative ones anchored at m.Cwd), or "" for a bare name.
func literalDir(pat string, m FileMatcher) string {
	if !strings.Contains(pat, "/") && pat != "~" {
		return ""
	}
	segs, i := literalSegments(pat)
	lit := strings.Join(segs[:i], "/")
	if lit == "" {
		if strings.HasPrefix(pat, "/") {
			return "/"
		}
		lit = "."
	}
	return m.Canonicalize(lit)
}

// HomeScanDepth is how deep the files.deny scan looks into home for a
// pattern that may match anywhere (a bare name, "**/..."): home holds
// module caches of millions of files. The workspace and write roots are
// scanned whole.
const HomeScanDepth = 3

// scanSkip are directories the scan does not enter (unless they match a
// pattern themselves): their contents are tools' data, not the user's.
var scanSkip = map[string]bool{".git": true, "node_modules": true}

// scanRoot is one tree the scan walks: to depth levels below it (-1: all);
// a complete one must be scanned whole within the entry limit, or the plan
// is refused; a partial one stops quietly at its own bound.
type scanRoot struct {
	path     string
	depth    int
	complete bool
}

// scanDenied finds the existing paths that the deny patterns match. A
// literal pattern is looked up; a glob is matched against the entries of
// the trees it can reach: below its literal prefix, as deep as its segments
// go; a bare name or "**/" pattern in the workspace and the write roots
// (whole, at most limit entries in all, else the plan is refused) and in
// home (HomeScanDepth levels). A directory that matches is hidden whole
// and not entered; scanSkip directories are not entered. Once ctx is done
// the scan stops with its error (a signal during sandboxd run's setup).
func (p *FSPlan) scanDenied(ctx context.Context, deny []string, limit int) ([]string, error) {
	if len(deny) == 0 {
		return nil, nil
	}
	var hidden []string
	var roots []scanRoot
	home := func() {
		if p.Home != "" {
			roots = append(roots, scanRoot{path: p.Home, depth: HomeScanDepth})
		}
	}
	for _, pat := range deny {
		if !strings.ContainsAny(pat, "*?[") && strings.Contains(pat, "/") || pat == "~" {
			c := p.matcher.Canonicalize(pat)
			if _, err := os.Lstat(c); err == nil {
				hidden = append(hidden, c)
			} else {
				p.NotCovered = append(p.NotCovered, fmt.Sprintf("files.deny %q: %s does not exist at start; a file created there later is not hidden by the kernel", pat, c))
			}
			continue
		}
		lit := literalDir(pat, p.matcher)
		if lit == "" || strings.HasPrefix(pat, "**/") {
			for _, r := range append([]string{p.Workspace}, p.WriteRoots...) {
				roots = append(roots, scanRoot{path: r, depth: -1, complete: true})
			}
			home()
			p.NotCovered = append(p.NotCovered, fmt.Sprintf("files.deny %q: matched at start in the workspace and the write roots (not inside .git or node_modules) and %d levels into home; elsewhere, and files created later, are not hidden by the kernel", pat, HomeScanDepth))
			continue
		}
		if lit == "/" {
			return nil, fmt.Errorf("files.deny %q: a pattern over the whole filesystem cannot be scanned; anchor it (~/…, a path, or a relative pattern)", pat)
		}
		depth := patternDepth(pat)
		if depth < 0 && p.Home != "" && under(p.Home, lit) {
			roots = append(roots, scanRoot{path: lit, depth: HomeScanDepth})
			p.NotCovered = append(p.NotCovered, fmt.Sprintf("files.deny %q: matched at start %d levels below %s; deeper, and files created later, are not hidden by the kernel", pat, HomeScanDepth, lit))
			continue
		}
		roots = append(roots, scanRoot{path: lit, depth: depth, complete: true})
		p.NotCovered = append(p.NotCovered, fmt.Sprintf("files.deny %q: matched below %s at start; files created later are not hidden by the kernel", pat, lit))
	}
	// Complete scans first: a tree seen whole is not walked again.
	sort.SliceStable(roots, func(i, j int) bool { return roots[i].complete && !roots[j].complete })
	deadline := time.Now().Add(10 * time.Second)
	// One memo for the whole scan: each pattern's prefix is canonicalized
	// once, not once per entry.
	m := p.matcher.Memo()
	seen := map[string]int{} // path -> the depth left when it was walked
	counted := 0
	for _, r := range roots {
		base := strings.Count(r.path, "/")
		partial := 0
		stop := errors.New("stop")
		err := filepath.WalkDir(r.path, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // unreadable: the sandbox cannot read it either
			}
			level := strings.Count(path, "/") - base
			left := -1
			if r.depth >= 0 {
				left = r.depth - level
			}
			if prev, ok := seen[path]; ok && (prev < 0 || prev >= left && left >= 0) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			seen[path] = left
			p.Scanned++
			if p.Scanned%256 == 0 && ctx.Err() != nil {
				return fmt.Errorf("files.deny: the scan for hidden paths stopped: %w", context.Cause(ctx))
			}
			if r.complete {
				counted++
				if counted > limit || time.Now().After(deadline) {
					return fmt.Errorf("files.deny: the scan for hidden paths looked at more than %d entries under %s; narrow the patterns or the write roots", limit, r.path)
				}
			} else if partial++; partial > limit {
				return stop
			}
			c := path
			if d.Type()&fs.ModeSymlink != 0 {
				c = m.Canonicalize(path)
			}
			if m.Denied(c, deny) != "" {
				if _, err := os.Lstat(c); err == nil {
					hidden = append(hidden, c)
				}
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() && (left == 0 || path != r.path && scanSkip[d.Name()]) {
				return fs.SkipDir
			}
			return nil
		})
		if err != nil && err != stop {
			return nil, err
		}
	}
	return hidden, nil
}

// patternDepth is how many levels below its literal directory a pattern
// can match (a match on a directory covers what is below it), or -1 when
// it has a "**".
func patternDepth(pat string) int {
	segs := strings.Split(pat, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[") {
			for _, r := range segs[i:] {
				if r == "**" {
					return -1
				}
			}
			return len(segs) - i
		}
	}
	return 0
}

// Reveal keeps path (a program the sandbox runs, say) visible and
// read-only when a private tmp directory or a hidden path would cover it;
// a path that files.deny matches, or a credential's file, stays hidden.
func (p *FSPlan) Reveal(path string) {
	c := Canonicalize(path, p.Workspace)
	if p.files != nil && p.matcher.Denied(c, p.files.Deny) != "" {
		return
	}
	for _, h := range p.hide {
		if under(c, h) {
			return
		}
	}
	covered := false
	for _, d := range append(append([]string{}, PrivateTmpDirs...), p.Hidden...) {
		if under(c, d) {
			covered = true
		}
	}
	if covered && !p.InWriteRoot(c) && !hasPath(p.Revealed, c) {
		p.Revealed = append(p.Revealed, c)
	}
}

// InWriteRoot reports whether path is a write root or below one.
func (p *FSPlan) InWriteRoot(path string) bool {
	for _, r := range p.WriteRoots {
		if under(path, r) {
			return true
		}
	}
	return false
}

// Explain says what the sandbox does with path (write: for a write), and
// which rule decides it.
func (p *FSPlan) Explain(path string, write bool) Decision {
	c := p.matcher.Canonicalize(path)
	for _, h := range p.Hidden {
		if !under(c, h) {
			continue
		}
		revealed := false
		for _, r := range append(append([]string{}, p.Revealed...), p.WriteRoots...) {
			if under(c, r) && len(r) > len(h) {
				revealed = true
			}
		}
		if revealed {
			// A deeper root shows this path again; a hidden path below
			// that root (a files.deny match inside the workspace) may still
			// hide it.
			continue
		}
		if hasPath(p.hide, h) {
			return Denied(Because(ReasonHidden, "%s holds a credential's value, which only the proxy outside reads", c), RuleCredentialFile)
		}
		if of, ok := p.links[h]; ok {
			pat, cred := p.hiddenBy(of)
			if cred {
				return Denied(Because(ReasonHidden, "%s is another name (hard link) of %s, which holds a credential's value", c, of), RuleCredentialFile)
			}
			return Denied(Because(ReasonHidden, "%s is another name (hard link) of %s, which files.deny %q hides", c, of, pat), RuleAt(RuleFilesDeny, pat))
		}
		if p.files != nil {
			if pat := p.matcher.Denied(c, p.files.Deny); pat != "" {
				return Denied(Because(ReasonHidden, "%s matches files.deny %q", c, pat), RuleAt(RuleFilesDeny, pat))
			}
			if p.files.AllowOnly != nil {
				return Denied(Because(ReasonHidden, "%s is outside files.allowOnly", c), RuleFilesAllowOnly)
			}
		}
		return Denied(Because(ReasonHidden, "%s is below %s", c, h), RuleFilesDeny)
	}
	// The most specific of the places the jail mounts decides.
	type place struct {
		root  string
		write bool
		d     Decision
	}
	var places []place
	for _, r := range p.WriteRoots {
		places = append(places, place{r, true, AllowedBy(Because(ReasonWritable, "%s is under write root %s (lands on the host)", c, r), RuleAt(RuleFilesystemWrite, r))})
	}
	for _, r := range p.Revealed {
		places = append(places, place{r, false, Denied(Because(ReasonReadOnly, "%s is shown by files.allowOnly, not a write root", c), RuleFilesAllowOnly)})
	}
	if p.HomeOverlay != "" {
		places = append(places, place{p.HomeOverlay, true, AllowedBy(Because(ReasonWritable, "%s is in the sandbox's home overlay (discarded at exit)", c), RuleFilesystemHome)})
	}
	for _, t := range PrivateTmpDirs {
		places = append(places, place{t, true, AllowedBy(Because(ReasonWritable, "%s is in the sandbox's private %s (the host's is not visible; writes are discarded at exit)", c, t), RuleFilesystemTmp)})
	}
	best := -1
	for i, pl := range places {
		if under(c, pl.root) && (best < 0 || len(pl.root) > len(places[best].root)) {
			best = i
		}
	}
	if !write {
		if best >= 0 && places[best].d.Rule == RuleFilesystemTmp {
			if _, err := os.Lstat(c); err == nil {
				return Denied(Because(ReasonNotVisible, "%s is in the host's %s, which the sandbox replaces with its own", c, places[best].root), RuleFilesystemTmp)
			}
		}
		if p.files != nil {
			if pat := p.matcher.Denied(c, p.files.Deny); pat != "" {
				gated := false
				for _, r := range p.OpenGateRoots() {
					gated = gated || under(c, r)
				}
				switch {
				case gated && p.openGated:
					return Denied(Because(ReasonOpenRefused, "%s matches files.deny %q; it was not hidden at start, and an open of it is refused at open time (the open gate)", c, pat), RuleAt(RuleFilesDeny, pat))
				case gated:
					return AllowedBy(Because(ReasonReadable, "%s matches files.deny %q but was not hidden at start; if the host creates it later it is readable (the open gate needs sandboxd as root)", c, pat), RuleAt(RuleFilesDeny, pat))
				}
				return AllowedBy(Because(ReasonReadable, "%s matches files.deny %q but is outside what the start's scan and the open gate cover", c, pat), RuleAt(RuleFilesDeny, pat))
			}
		}
		if of, _ := p.linkOf(c); of != "" {
			// Found nowhere the plan looks for other names: the start
			// line's not_covered says so too.
			return AllowedBy(Because(ReasonReadable, "%s, another name (hard link) of the hidden %s, outside what the plan searches for other names (the workspace and the write roots)", c, of), "")
		}
		return AllowedBy(Because(ReasonReadable, "%s", c), "")
	}
	// A protected path that does not exist is not bound: in a write
	// root, the create gate decides making it.
	_, missing := os.Lstat(c)
	creatable := missing != nil && best >= 0 && places[best].d.Rule == RuleAt(RuleFilesystemWrite, places[best].root)
	unbound := ""
	for _, pr := range p.Protected {
		if under(c, pr) {
			if _, err := os.Lstat(pr); err != nil && creatable {
				unbound = pr
				continue
			}
			return Denied(Because(ReasonReadOnly, "%s is under protected %s", c, pr), RuleAt(RuleFilesystemProtected, pr))
		}
	}
	if creatable {
		if d := p.CreateGuard().DecideCreate(c); !d.Allowed() {
			return d
		}
	}
	if unbound != "" {
		// git makes it: reported at exit if it appears.
		return AllowedBy(Because(ReasonWritable, "%s does not exist: protected %s is not bound, creating it is allowed and reported at exit", c, unbound), RuleAt(RuleFilesystemProtected, unbound))
	}
	if best >= 0 {
		d := places[best].d
		if creatable && d.Allowed() {
			if a := p.CreateGuard().DecidePlace(OpSymlink, c); !a.Allowed() {
				d.Reason += "; only by mkdir: a symlink, a rename or a hard link named so is refused (" + a.Reason + ")"
			}
		}
		return d
	}
	for r, pat := range p.denyWrite {
		if under(c, r) {
			return Denied(Because(ReasonReadOnly, "%s is under write root %s, which files.deny %q denies", c, r, pat), RuleAt(RuleFilesDeny, pat))
		}
	}
	return Denied(Because(ReasonReadOnly, "%s is not under a write root", c), RuleFilesystemReadonly)
}

// PrivateTmpDirs are fresh in every sandbox (tmpfs, discarded at exit).
var PrivateTmpDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

func under(p, q string) bool { return p == q || q == "/" || strings.HasPrefix(p, q+"/") }

func hasPath(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func dedupe(l []string) []string {
	out := []string{}
	for _, x := range l {
		x = path.Clean(x)
		if !hasPath(out, x) {
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// outermostBetween drops the paths of l inside another path of l, unless a
// root that shows them again (a revealed path or write root) lies between:
// under files.allowOnly the workspace's parent is hidden and the
// workspace revealed, and a files.deny match inside the workspace must
// stay hidden.
func outermostBetween(l, roots []string) []string {
	out := []string{}
	for _, x := range l {
		inner := false
		for _, y := range l {
			if x == y || !under(x, y) {
				continue
			}
			shown := false
			for _, r := range roots {
				if r != y && under(r, y) && under(x, r) {
					shown = true
				}
			}
			if !shown {
				inner = true
			}
		}
		if !inner {
			out = append(out, x)
		}
	}
	return out
}

// notBelow drops the protected paths inside a hidden path (the mask covers
// them), unless a revealed path or write root between brings them back.
func notBelow(prot, hidden, revealed, roots []string) []string {
	out := []string{}
	for _, x := range prot {
		masked := false
		for _, h := range hidden {
			if under(x, h) {
				masked = true
				for _, r := range append(append([]string{}, revealed...), roots...) {
					if under(x, r) && len(r) > len(h) {
						masked = false
					}
				}
			}
		}
		if !masked {
			out = append(out, x)
		}
	}
	return out
}

// notDenied drops revealed paths that a deny pattern covers.
func notDenied(revealed, deny []string, m FileMatcher) []string {
	out := []string{}
	for _, r := range revealed {
		if m.Denied(r, deny) == "" {
			out = append(out, r)
		}
	}
	return out
}
