package supervisor

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// The sandbox's modes (Status.SandboxMode, the audit start line's
// sandbox_mode).
const (
	// ModeNested: namespaces of the sandbox's own (a host, or a container
	// that allows user namespaces).
	ModeNested = "nested"
	// ModeContainer: no namespaces; the command under a uid of its own,
	// confined by uid-matched netfilter rules in the container's network
	// namespace, Landlock and seccomp (procjail.ContainerMode).
	ModeContainer = "container"
)

// ContainerModeFix is how a container gets container mode.
const ContainerModeFix = "run sandboxd as root in the container with --cap-add NET_ADMIN (Kubernetes: securityContext.capabilities.add: [NET_ADMIN])"

// ContainerModeError is a container-mode start refused for a piece the
// mode lacks here; Error is the one-line refusal, Piece and Fix what
// "sandboxd doctor" lists.
type ContainerModeError struct {
	Piece, Reason, Fix string
}

func (e *ContainerModeError) Error() string {
	return "container mode: " + e.Reason + ": " + e.Fix
}

// ParseAgentID parses --agent-uid's UID[:GID].
func ParseAgentID(v string) (uid, gid uint32, hasGID bool, err error) {
	us, gs, hasGID := strings.Cut(v, ":")
	u, err := strconv.ParseUint(us, 10, 32)
	if err == nil && hasGID {
		var g uint64
		g, err = strconv.ParseUint(gs, 10, 32)
		gid = uint32(g)
	}
	if err != nil || u == 0 || u == 1<<32-1 || hasGID && (gid == 0 || gid == 1<<32-1) {
		return 0, 0, false, fmt.Errorf("--agent-uid %q: want UID[:GID], numbers, neither 0", v)
	}
	return uint32(u), gid, hasGID, nil
}

// containerFallback is prestart's answer to a nested sandbox refused for
// want of user namespaces (nestedErr): container mode's identity, or one
// error naming both the nested mode's fix and what container mode lacks.
func (s *session) containerFallback(nestedErr error) (*procjail.ContainerMode, error) {
	refuse := func(missing string) error {
		return fmt.Errorf("%w; or, for container mode (no user namespaces), %s (%s)", nestedErr, ContainerModeFix, missing)
	}
	if os.Geteuid() != 0 {
		return nil, refuse("sandboxd runs as uid " + strconv.Itoa(os.Geteuid()) + ", not root")
	}
	// The capability only: netfilter itself is proven by the init's
	// install of the rules, which refuses the start if it fails
	// (CheckUIDRules, a transaction of its own, would cost the start
	// about 10 ms; doctor runs it).
	if !procjail.HasNetAdmin() {
		return nil, refuse("CAP_NET_ADMIN is unavailable")
	}
	if procjail.LandlockABI() == 0 {
		return nil, refuse("the kernel has no Landlock, or the container's seccomp profile refuses it, and container mode holds the file rules with it")
	}
	c, err := s.agentIdentity()
	if err != nil {
		// Both modes' reasons, each with its fix.
		return nil, fmt.Errorf("%w; and %w", nestedErr, err)
	}
	return c, nil
}

// agentIdentity is container mode's uid and gid for the command: --agent-uid's,
// else the owner of the working directory when that is not root. The uid
// must be one no process runs as (every process of it is confined, and
// killed at the end).
func (s *session) agentIdentity() (*procjail.ContainerMode, error) {
	ws := s.opts.Dir
	if ws == "" {
		ws, _ = os.Getwd()
	}
	var uid, gid uint32
	if s.opts.AgentUID != "" {
		u, g, hasGID, err := ParseAgentID(s.opts.AgentUID)
		if err != nil {
			return nil, err
		}
		uid, gid = u, g
		if !hasGID {
			gid = u
		}
	} else {
		fi, err := os.Stat(ws)
		if err != nil {
			return nil, fmt.Errorf("container mode: working directory: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid == 0 {
			return nil, &ContainerModeError{Piece: "container mode: the command's uid",
				Reason: fmt.Sprintf("the command runs under a uid of its own, the owner of the working directory, and %s is root's", ws),
				Fix:    "chown the workspace to an unused uid (chown -R 1000 " + ws + "), or pass --agent-uid UID of a uid that may write it"}
		}
		uid, gid = st.Uid, st.Gid
		if gid == 0 {
			// Never root's group: files of group 0 are often writable
			// by it (an image made for any uid).
			gid = uid
		}
	}
	pids, err := procjail.UIDProcesses(uid)
	if err != nil {
		// Whether the uid runs processes is unknown: it could be one a
		// session must not confine and kill.
		return nil, fmt.Errorf("container mode: the processes of uid %d: %w", uid, err)
	}
	if len(pids) > 0 {
		return nil, &ContainerModeError{Piece: "container mode: an unused uid",
			Reason: fmt.Sprintf("every process of the command's uid %d is confined, and killed at the end, and uid %d runs processes here (pid %v)", uid, uid, pids),
			Fix:    "pass --agent-uid with a uid no process runs as, and give it the workspace (chown)"}
	}
	return &procjail.ContainerMode{UID: uid, GID: gid}, nil
}

// containerSetup readies container mode's session after the jail's
// spec: the command's own home, the runtime directory it must read in,
// and the checks of what the mode cannot hold (containerChecks). Nothing
// in nested mode.
func (s *session) containerSetup() (func(), error) {
	c := s.container
	if c == nil {
		return nil, nil
	}
	// No overlay without a mount namespace: the command's home (made by
	// containerHome) is a write root instead.
	s.fsPlan.HomeOverlay = ""
	s.fsPlan.WriteRoots = append(s.fsPlan.WriteRoots, s.agentHome)
	s.env = append(withoutEnv(s.env, "HOME"), "HOME="+s.agentHome)
	// The command reads what it is given in the runtime directory (the
	// sandbox CA's bundle) by name; the directory is not listable, its
	// sockets are out of reach (no Unix socket without
	// --allow-unix-socket) and nothing in it is writable by the uid.
	if err := os.Chmod(s.dir, 0o711); err != nil {
		return nil, fmt.Errorf("container mode: runtime directory: %w", err)
	}
	return nil, s.containerChecks()
}

// containerHome makes container mode's home for the command, before a
// launch renders its configuration there: a fresh directory of the
// session, removed at the end (as nested mode's home overlay is
// discarded), where the command may create what it likes but not replace
// what a harness or a shell reads as the user's own. The home and the
// directories on the way to a protected path (policy.ProtectedInHome)
// are root's, group the command's, mode 1770: the sticky bit lets the
// command rename and remove only what it made. Each protected path is
// made root's (empty: a file, "{}" for JSON, or a directory), so the command can
// neither write it nor make its own in its place.
func (s *session) containerHome() (func(), error) {
	c := s.container
	if c == nil {
		return nil, nil
	}
	home := s.dir + privateHomeSuffix
	cleanup := func() { os.RemoveAll(home) }
	shared := func(d string) error {
		if err := os.Mkdir(d, 0o770); err != nil && !os.IsExist(err) {
			return err
		}
		if err := os.Chown(d, 0, int(c.GID)); err != nil {
			return err
		}
		return os.Chmod(d, 0o770|os.ModeSticky)
	}
	if err := shared(home); err != nil {
		return cleanup, fmt.Errorf("container mode: the command's home: %w", err)
	}
	for _, rel := range policy.ProtectedInHome {
		p := filepath.Join(home, rel)
		var parents []string
		for d := filepath.Dir(p); d != home; d = filepath.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := shared(d); err != nil {
				return cleanup, fmt.Errorf("container mode: the command's home: %w", err)
			}
		}
		var err error
		switch {
		case policy.ProtectedInHomeIsDir(rel):
			err = os.Mkdir(p, 0o755)
		case strings.HasSuffix(rel, ".json"):
			err = os.WriteFile(p, []byte("{}\n"), 0o644) // a harness reads it: empty settings
		default:
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil && !os.IsExist(err) {
			return cleanup, fmt.Errorf("container mode: the command's home: %w", err)
		}
	}
	s.agentHome = home
	return cleanup, nil
}

// mkdirsAs makes dir and its missing parents, each made one owned by uid
// and gid (a launch's state directories in container mode's home).
func mkdirsAs(dir string, uid, gid uint32) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := mkdirsAs(filepath.Dir(dir), uid, gid); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !os.IsExist(err) {
		return err
	}
	return os.Chown(dir, int(uid), int(gid))
}

// containerChecks refuses a container-mode start whose file rules the
// mode cannot hold: with no mount layer, a denied file is hidden only if
// the command's uid cannot read it, and a read-only path (the policy's
// directory, the runtime directory) holds only if it cannot write it; the
// write roots must be writable by it. Protected paths it could write are
// reported, not refused (they are the sandbox's own defaults).
func (s *session) containerChecks() error {
	c := s.container
	p := s.fsPlan
	readable, err := procjail.AccessAs(c.UID, c.GID, p.Hidden, procjail.AccessRead)
	if err != nil {
		return fmt.Errorf("container mode: %w", err)
	}
	// What the uid owns it may chmod: a denied file of its own, or one
	// open to it behind a directory of its own, is as good as readable.
	for _, h := range p.Hidden {
		if !hasString(readable, h) && (ownedBy(h, c.UID) || openBehindOwn(h, c.UID, c.GID)) {
			readable = append(readable, h)
		}
	}
	for _, h := range readable {
		d := p.Explain(h, false)
		return &ContainerModeError{Piece: "container mode: files.deny",
			Reason: fmt.Sprintf("it cannot hide %s (%s) from the command's uid %d, which may read it, with no mount layer", h, d.Reason, c.UID),
			Fix:    fmt.Sprintf("give it to another uid (chown root and chmod 600: the owner could chmod it back), or use nested mode: %s", procjail.SeccompProfileFix)}
	}
	// A read-only path holds only if the uid can write neither it nor its
	// directory (where it could rename it away and put another in its
	// place).
	var ro []string
	for _, r := range s.readOnly {
		ro = append(ro, r)
		if !stickyAgainst(r, c.UID) {
			ro = append(ro, filepath.Dir(r))
		}
	}
	writable, err := procjail.AccessAs(c.UID, c.GID, ro, procjail.AccessWrite)
	if err != nil {
		return fmt.Errorf("container mode: %w", err)
	}
	for _, r := range s.readOnly {
		if ownedBy(r, c.UID) || ownedBy(filepath.Dir(r), c.UID) {
			writable = append(writable, r)
		}
	}
	for _, w := range writable {
		return &ContainerModeError{Piece: "container mode: read-only paths",
			Reason: fmt.Sprintf("it cannot keep the command's uid %d from changing %s (it may write there), with no mount layer", c.UID, w),
			Fix:    fmt.Sprintf("keep the policy file in a directory that uid %d neither owns nor can write, inside one it neither owns nor can write (chown root); for the runtime directory, make its parent so, or sticky", c.UID)}
	}
	roots, err := procjail.AccessAs(c.UID, c.GID, p.WriteRoots, procjail.AccessWrite)
	if err != nil {
		return fmt.Errorf("container mode: %w", err)
	}
	if len(roots) != len(p.WriteRoots) {
		for _, w := range p.WriteRoots {
			if !hasString(roots, w) {
				return &ContainerModeError{Piece: "container mode: the write roots",
					Reason: fmt.Sprintf("the write root %s is not writable by the command's uid %d", w, c.UID),
					Fix:    fmt.Sprintf("chown it to uid %d, or pass --agent-uid its owner", c.UID)}
			}
		}
	}
	p.NotCovered = append(p.NotCovered, "container mode: no mount layer; the file rules are held by Landlock and the command's uid alone, and the container's /tmp and /proc are shared")
	if len(s.allowUnix) > 0 {
		// The Unix socket gate copies the command's socket and reads its
		// connect's address as the command's uid, on a thread of the
		// init that holds the uid's real ids meanwhile: Landlock's
		// signal scope (ABI 6) must keep the command from killing it.
		if abi := procjail.LandlockABI(); abi < 6 {
			return &ContainerModeError{Piece: "container mode: --allow-unix-socket",
				Reason: fmt.Sprintf("the Unix socket gate needs Landlock's signal scope (ABI 6, Linux 6.12), and this kernel's Landlock is ABI %d", abi),
				Fix:    "drop --allow-unix-socket, or use nested mode: " + procjail.SeccompProfileFix}
		}
		if err := procjail.CheckDescriptorCopy(); err != nil {
			return &ContainerModeError{Piece: "container mode: --allow-unix-socket",
				Reason: fmt.Sprintf("the Unix socket gate copies the command's sockets, and the container refuses it (%v)", err),
				Fix:    "run the container with --cap-add SYS_PTRACE (Docker's default seccomp profile then allows pidfd_getfd), drop --allow-unix-socket, or use nested mode: " + procjail.SeccompProfileFix}
		}
	}
	// The create gate reads the command's memory and copies its
	// descriptors as the command's uid, like the Unix socket gate: where
	// the container refuses it, or Landlock cannot keep the command from
	// signalling that thread, creations are not decided at the time
	// (protected paths that appear are still reported at exit).
	if abi := procjail.LandlockABI(); abi < 6 {
		p.noCreateGate = fmt.Sprintf("Landlock ABI %d (the gate needs its signal scope, ABI 6)", abi)
	} else if err := procjail.CheckDescriptorCopy(); err != nil {
		p.noCreateGate = fmt.Sprintf("the container refuses reading the command's memory (%v; --cap-add SYS_PTRACE allows it)", err)
	}
	if p.noCreateGate != "" {
		p.NotCovered = append(p.NotCovered, "container mode: creating a protected name or a files.deny match in the workspace is not refused at the time, only reported at exit: "+p.noCreateGate)
	}
	var inRoots []string
	for _, pr := range p.Protected {
		if p.InWriteRoot(pr) {
			inRoots = append(inRoots, pr)
		}
	}
	open, err := procjail.AccessAs(c.UID, c.GID, inRoots, procjail.AccessWrite)
	if err != nil {
		return fmt.Errorf("container mode: %w", err)
	}
	for _, o := range open {
		p.NotCovered = append(p.NotCovered, fmt.Sprintf("protected %s: writable by uid %d (container mode has no mount layer to make it read-only)", o, c.UID))
	}
	if len(open) > 0 {
		fmt.Fprintf(s.stderr, "sandboxd: container mode: %d protected paths in the workspace stay writable (%s): review them before running anything there outside the sandbox\n", len(open), strings.Join(open, ", "))
	}
	return nil
}

// stickyAgainst says whether path's directory is sticky and neither it
// nor path is uid's: then uid cannot rename or remove path there (a /tmp),
// whatever it may write in the directory.
func stickyAgainst(path string, uid uint32) bool {
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil || dir.Mode()&os.ModeSticky == 0 || ownedBy(filepath.Dir(path), uid) {
		return false
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid != uid
}

// unchangeableBy says whether uid (with gid) can neither change path
// nor put another file in its place, with no mount layer to stop it: the
// path, if it exists, is not its to write (nor to chmod: not its own);
// and on the way from / to it no name is a symlink or the uid's, and each
// directory lets the uid make, rename or remove no entry (it cannot
// write it and does not own it) or is sticky against the entry below
// (stickyAgainst). A path that does not exist holds when its directory,
// held too, lets the uid make nothing in it. A check that fails says
// no.
func unchangeableBy(path string, uid, gid uint32) bool {
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return false
	}
	writable := func(p string) bool {
		w, err := procjail.AccessAs(uid, gid, []string{p}, procjail.AccessWrite)
		return err != nil || len(w) > 0
	}
	if _, err := os.Lstat(path); err == nil && writable(path) {
		return false
	}
	for c := path; c != "/"; c = filepath.Dir(c) {
		d := filepath.Dir(c)
		fi, err := os.Lstat(c)
		exists := err == nil
		switch {
		case exists && (fi.Mode()&os.ModeSymlink != 0 || ownedBy(c, uid)):
			return false
		case !exists && !errors.Is(err, fs.ErrNotExist):
			return false
		}
		if _, err := os.Lstat(d); errors.Is(err, fs.ErrNotExist) {
			continue // d is the missing name of the next step
		}
		if exists && stickyAgainst(c, uid) {
			continue
		}
		if ownedBy(d, uid) || writable(d) {
			return false
		}
	}
	return true
}

// ownedBy says whether path (not followed) is uid's.
func ownedBy(path string, uid uint32) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uid
}

// openBehindOwn says whether path's own mode lets uid (with gid) read it
// and a directory on the way is uid's: it can open its way there with a
// chmod, whatever that directory's mode is now.
func openBehindOwn(path string, uid, gid uint32) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !(fi.Mode().Perm()&0o004 != 0 || st.Gid == gid && fi.Mode().Perm()&0o040 != 0) {
		return false
	}
	for d := filepath.Dir(path); ; d = filepath.Dir(d) {
		if ownedBy(d, uid) {
			return true
		}
		if d == "/" || d == "." {
			return false
		}
	}
}

func hasString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// modeAuditAttrs name the sandbox's mode in the start line, and in
// container mode the command's uid (what the mode leaves uncovered is in
// not_covered, with the filesystem's).
func (s *session) modeAuditAttrs() []slog.Attr {
	if s.container == nil {
		return []slog.Attr{slog.String(audit.AttrSandboxMode, ModeNested)}
	}
	return []slog.Attr{slog.String(audit.AttrSandboxMode, ModeContainer), slog.Int(audit.AttrAgentUID, int(s.container.UID))}
}
