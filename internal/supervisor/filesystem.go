package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// fsState is the session's filesystem plan, fixed at start.
type fsState struct {
	*policy.FSPlan
	files    string          // the file rules it was planned from (JSON)
	write    string          // the policy file's filesystem section (JSON)
	missing  map[string]bool // protected paths that did not exist at start
	identity map[string]procjail.FileID
	// placeholders are protected files the jail makes, read-only, in the
	// home overlay (session.placeholders).
	placeholders []string
	// noCreateGate, when set, says why the create gate is off (container
	// mode without what it needs); creations are then only reported at
	// exit.
	noCreateGate string
	// openGateMode is the policy file's filesystem.openGate ("",
	// auto or always); openRoute: the open gate is the seccomp route
	// (session.openGate), and jail gives the init the open guard;
	// openMarks: it is the fanotify gate, and jail gives the init its
	// decisions for the files the create gate makes (MarkGuard).
	openGateMode string
	openRoute    bool
	openMarks    bool
	// gitConfigs are the write roots' repositories' configs at start
	// (policy.GitConfigs), to report those that appear or change.
	gitConfigs map[string]policy.GitConfig
}

// writeRoots are the operator's write roots: --write, then the policy
// file's filesystem.write.
func (o *Options) writeRoots(r *policy.Resolved) []string {
	w := append([]string{}, o.Write...)
	if r != nil && r.Filesystem != nil {
		w = append(w, r.Filesystem.Write...)
	}
	if o.Launch != nil {
		w = append(w, o.Launch.stateDirs()...)
	}
	return w
}

// launchWriteRoots are the write roots a launch made for this session
// (a harness's private home), beside the operator's.
func (o *Options) launchWriteRoots() []string {
	if o.Launch == nil || o.Launch.privateHome == "" {
		return nil
	}
	return []string{o.Launch.privateHome}
}

// planFilesystem decides the sandbox's filesystem for the session's
// policy at start (policy.PlanFilesystem owns every rule of it).
func planFilesystem(ctx context.Context, o *Options, sp *sessionPolicy, alwaysProtected []string) (*fsState, error) {
	ws := o.Dir
	if ws == "" {
		var err error
		if ws, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		if err == nil {
			err = fmt.Errorf("%s is not a directory", ws)
		}
		return nil, fmt.Errorf("working directory: %w", err)
	}
	home, _ := os.UserHomeDir()
	alwaysProtected = existingOnly(alwaysProtected)
	var files *policy.FileRules
	if sp.bound != nil {
		files = sp.bound.Files
	}
	plan, err := policy.PlanFilesystem(ctx, policy.FSInput{
		Workspace: ws, Home: home, Write: append(o.writeRoots(sp.resolved), o.launchWriteRoots()...), Files: files, AlwaysProtected: alwaysProtected,
		HarnessConfig: policy.HarnessConfigFromEnv(os.Getenv),
		// The credentials' files: only the proxy, outside, reads them.
		Hide:      o.credentialFiles(sp.resolved),
		AllowEdit: allowEdit(sp),
	})
	if err != nil {
		return nil, err
	}
	// sandboxd itself runs inside as the ssh ProxyCommand helper
	// (GIT_SSH_COMMAND): keep it visible when a private /tmp or a mask
	// would cover it.
	if self, err := os.Executable(); err == nil {
		plan.Reveal(self)
	}
	// A launched harness's hook runs hookgate inside, and the harness
	// itself must be there to run.
	if o.Launch != nil {
		plan.Reveal(o.Launch.Hookgate)
		if err := revealHarness(plan, o.Command[0]); err != nil {
			return nil, err
		}
	}
	for _, r := range o.Read {
		abs, err := filepath.Abs(r)
		if err == nil {
			_, err = os.Stat(abs)
		}
		if err != nil {
			return nil, fmt.Errorf("--read %s: %w", r, err)
		}
		plan.Reveal(abs)
	}
	st := &fsState{FSPlan: plan, files: jsonString(files), write: jsonString(filesystemSection(sp)), missing: map[string]bool{}, openGateMode: openGateMode(sp),
		identity: procjail.Identify(plan.Protected, plan.Hidden, plan.Pinned, plan.WriteRoots, plan.Revealed, []string{plan.HomeOverlay})}
	// Below the home overlay the init sees the overlay's inodes, not the
	// host's: nothing to compare there (and its changes are discarded).
	for p := range st.identity {
		if plan.HomeOverlay != "" && p != plan.HomeOverlay && isUnder(p, plan.HomeOverlay) && !plan.InWriteRoot(p) {
			delete(st.identity, p)
		}
	}
	for _, p := range plan.Protected {
		if _, err := os.Lstat(p); err != nil {
			st.missing[p] = true
		}
	}
	st.gitConfigs, _ = policy.GitConfigs(ctx, plan.WriteRoots, policy.DefaultScanLimit)
	return st, nil
}

// revealHarness keeps a launched harness's program visible inside when a
// private /tmp or a hidden directory would cover it: its install
// directory (the prefix of an npm-style bin/ link, and the directory its
// link resolves to) and its script's interpreter's (#!/usr/bin/env node),
// read-only. One that stays out of sight (files.deny hides it) refuses
// the launch, naming why.
func revealHarness(plan *policy.FSPlan, prog string) error {
	paths := []string{prog}
	if interp := interpreterOf(prog); interp != "" {
		paths = append(paths, interp)
	}
	var check []string
	for _, p := range paths {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			real = p
		}
		dirs := []string{filepath.Dir(real)}
		if filepath.Base(filepath.Dir(p)) == "bin" {
			dirs = append(dirs, filepath.Dir(filepath.Dir(p)))
		}
		for _, d := range dirs {
			// Never a temporary directory or / whole: only an install
			// directory in it.
			if d == "/" || slices.Contains(policy.PrivateTmpDirs, d) {
				continue
			}
			plan.Reveal(d)
		}
		check = append(check, p, real)
	}
	for _, p := range check {
		if d := plan.Explain(p, false); !d.Allowed() {
			return fmt.Errorf("%w: %s would not be visible inside the sandbox (%s): install the harness where the sandbox shows it, or give --program a path it shows", ErrLaunch, p, d.Reason)
		}
	}
	return nil
}

// interpreterOf is the interpreter a script names on its #! line, found
// as the kernel (an absolute path) or env (on PATH) finds it; "" for none.
func interpreterOf(prog string) string {
	f, err := os.Open(prog)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 256)
	n, _ := f.Read(buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	if !strings.HasPrefix(line, "#!") {
		return ""
	}
	fields := strings.Fields(line[2:])
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, a := range fields[1:] {
			if strings.HasPrefix(a, "-") {
				continue
			}
			p, err := exec.LookPath(a)
			if err != nil {
				return ""
			}
			p, _ = filepath.Abs(p)
			return p
		}
		return ""
	}
	return fields[0]
}

func filesystemSection(sp *sessionPolicy) *policy.FilesystemSection {
	if sp.resolved == nil {
		return nil
	}
	return sp.resolved.Filesystem
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// allowEdit is the policy file's filesystem.allowEdit.
func allowEdit(sp *sessionPolicy) []string {
	if f := filesystemSection(sp); f != nil {
		return f.AllowEdit
	}
	return nil
}

// openGateMode is the policy file's filesystem.openGate.
func openGateMode(sp *sessionPolicy) string {
	if f := filesystemSection(sp); f != nil {
		return f.OpenGate
	}
	return ""
}

// jail is the plan in procjail's terms. The create gate decides by the
// plan's CreateGuard (policy.CreateDeciderFor in the init), the open
// gate's seccomp route, when on, by its OpenGuardSpec
// (policy.OpenDeciderFor).
func (f *fsState) jail() procjail.FileSystem {
	var guard, openGuard, markGuard []byte
	var openRoots []string
	if f.noCreateGate == "" {
		guard, _ = json.Marshal(f.CreateGuard())
	}
	switch {
	case f.openRoute:
		// Decided where the fanotify gate would decide (its roots).
		openGuard, _ = json.Marshal(f.OpenGuardSpec())
		openRoots = f.OpenGateRoots()
	case f.openMarks && guard != nil:
		markGuard, _ = json.Marshal(f.OpenGuardSpec())
		openRoots = f.OpenGateRoots()
	}
	return procjail.FileSystem{
		Confine: true, WriteRoots: f.WriteRoots, Protected: f.Protected, Hidden: f.Hidden,
		Revealed: f.Revealed, HomeOverlay: f.HomeOverlay, Pinned: f.Pinned, Identity: f.identity,
		Placeholders: f.placeholders, CreateGuard: guard, OpenGuard: openGuard, MarkGuard: markGuard, OpenRoots: openRoots,
	}
}

// createRefused writes the audit line of one creation the create gate
// refused.
func (s *session) createRefused(r procjail.CreateRefusal) {
	audit.Event(context.Background(), s.log, slog.LevelWarn, audit.KindSession, audit.MsgCreateRefused,
		slog.String(audit.AttrDecision, "deny"), slog.String(audit.AttrPath, r.Path), slog.String(audit.AttrOp, r.Op),
		slog.Int(audit.AttrPID, r.Pid), slog.String(audit.AttrComm, r.Comm),
		slog.String(audit.AttrRule, r.Rule), slog.String(audit.AttrReason, policy.OneLine(r.Reason)))
}

// auditAttrs describe the filesystem layer in the session start line.
func (f *fsState) auditAttrs(landlockABI int) []slog.Attr {
	// Protected paths that do not exist cannot be bound: listed apart, as
	// watched (reported at exit if they appear), so the line claims no
	// more than the kernel holds.
	var bound, watched []string
	for _, p := range f.Protected {
		if f.missing[p] {
			watched = append(watched, p)
		} else {
			bound = append(bound, p)
		}
	}
	attrs := []slog.Attr{
		slog.Any(audit.AttrWriteRoots, f.WriteRoots), slog.Any(audit.AttrProtected, bound), slog.Any(audit.AttrWatched, watched), slog.Any(audit.AttrHidden, f.Hidden),
		slog.String(audit.AttrHomeOverlay, f.HomeOverlay), slog.Int(audit.AttrLandlock, landlockABI),
	}
	notCovered := append([]string{}, f.NotCovered...)
	if landlockABI == 0 {
		notCovered = append(notCovered, "the kernel has no Landlock: the mount namespace alone holds the file rules")
	}
	if len(notCovered) > 0 {
		attrs = append(attrs, slog.Any(audit.AttrNotCovered, notCovered))
	}
	return attrs
}

// reloadNote says, for a reload whose file rules or filesystem section
// differ from those the sandbox started with, that the kernel layer keeps
// the start's; "" when they are the same.
func (f *fsState) reloadNote(next *sessionPolicy) string {
	var files *policy.FileRules
	if next.bound != nil {
		files = next.bound.Files
	}
	if jsonString(files) == f.files && jsonString(filesystemSection(next)) == f.write {
		return ""
	}
	return "file rules changed: hook rulings apply the new ones now, but the kernel file layer keeps the rules the sandbox started with (restart the sandbox to change it)"
}

// createdProtected lists the protected paths that did not exist at start
// and exist now: the sandbox could not bind them read-only, so the command
// may have written them.
func (f *fsState) createdProtected() []string {
	var out []string
	for _, p := range f.Protected {
		if !f.missing[p] {
			continue
		}
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// changedGitConfigs says, for each repository config in the write roots
// (nested ones included) that appeared or changed during the session and
// names a program git runs (policy.GitConfigReport), what to report; and
// that the walk stopped, when it did (bounded as the files.deny scan).
func (f *fsState) changedGitConfigs(ctx context.Context) []string {
	after, complete := policy.GitConfigs(ctx, f.WriteRoots, policy.DefaultScanLimit)
	var out []string
	for p := range after {
		if msg := policy.GitConfigReport(p, f.gitConfigs, after); msg != "" {
			out = append(out, msg)
		}
	}
	slices.Sort(out)
	if !complete {
		out = append(out, fmt.Sprintf("the check of the write roots' repositories' configs stopped (more than %d entries, or 10 s): a config further on that names a program git runs is not reported", policy.DefaultScanLimit))
	}
	return out
}

func isUnder(p, q string) bool { return p == q || q == "/" || strings.HasPrefix(p, q+"/") }

// existingOnly keeps the paths that exist (a protected path that does not
// is nothing to bind).
func existingOnly(l []string) []string {
	var out []string
	for _, p := range l {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
