package supervisor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// LaunchSpec is a harness started under the session policy ("sandboxd
// launch"): the launch resolves the session as the launch enforces it
// (policy.Resolved.ForLaunch), adds the harness's model API hosts to the
// allowlist, writes the harness's session configuration (the hook gate,
// the native ceiling, the strict MCP configuration: hooks.Launch) into the
// runtime directory, which is read-only inside, and runs the harness with
// it.
type LaunchSpec struct {
	Harness hooks.Harness
	// Hookgate is hookgate's absolute path; it is kept visible inside.
	Hookgate string
	// Args are the user's harness arguments (hooks.CheckLaunchArgs has
	// passed them), after the session configuration's.
	Args []string
	// APIHosts replace the harness's default model API hosts (a gateway);
	// nil keeps them.
	APIHosts []string
	// MCP are the session's MCP servers.
	MCP []hooks.LaunchMCPServer
	// Relax lifts the strict MCP configuration.
	Relax bool
	// PassAPIKey gives the harness its API key itself (--pass-api-key);
	// by default the key is a credential for the API hosts
	// (apiKeyCredentials).
	PassAPIKey bool

	// home is the harness's home (the launch step's: the command's own
	// in container mode); "" before it, the user's.
	home string
	// privateHome is the session's private configuration-and-state
	// directory of a harness that needs one (hooks.LaunchInfo.PrivateHome),
	// made by the launch step: a write root of the session.
	privateHome string
}

// privateHomeSuffix names a session's private harness home beside its
// runtime directory.
const privateHomeSuffix = ".home"

// ErrLaunch is a launch refused before anything started.
var ErrLaunch = errors.New("launch refused")

// resolve checks that the policy is the harness's and returns the
// resolution as the launch enforces it.
func (l *LaunchSpec) resolve(r *policy.Resolved) (*policy.Resolved, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: sandboxd launch needs a session policy (--policy FILE)", ErrLaunch)
	}
	if r.Harness != string(l.Harness) {
		return nil, fmt.Errorf("%w: the policy file is for harness %s, not %s", ErrLaunch, r.Harness, l.Harness)
	}
	return r.ForLaunch()
}

// apiHosts are the model API hosts the session must reach.
func (l *LaunchSpec) apiHosts() []string {
	if l.APIHosts != nil {
		return l.APIHosts
	}
	info, _ := hooks.LaunchInfoOf(l.Harness, "/")
	return info.APIHosts
}

// stateDirs are the harness's own state directories, write roots of the
// session.
func (l *LaunchSpec) stateDirs() []string {
	home := l.home
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return nil
		}
	}
	info, _ := hooks.LaunchInfoOf(l.Harness, home)
	return info.StateDirs
}

// withAPIHosts returns b with the model API hosts in its allowlist
// (policy.WithModelHosts decides); a host it refuses refuses the launch.
func (l *LaunchSpec) withAPIHosts(b *policy.Bound) (*policy.Bound, error) {
	b, err := policy.WithModelHosts(b, l.apiHosts())
	if refused := (*policy.ModelHostError)(nil); errors.As(err, &refused) {
		return nil, fmt.Errorf("%w: %w", ErrLaunch, err)
	}
	return b, err
}

// launched is what the launch step wrote and gives the jail.
type launched struct {
	harness, mode string
	dir           string
	cfg           hooks.LaunchConfig
	ceiling       []string
	mcp           []string
	forwards      []procjail.Forward // MCP servers on the host's loopback
	homeFiles     []string           // the session's files in the private home: read-only inside
	projectDirs   []string           // the harness's project directories: read-only inside (nested mode)
	placeholders  []string           // settings files it reads that did not exist: made read-only inside (placeholders)
}

// launchConfig writes the harness's session configuration into the
// runtime directory (read-only inside: an agent cannot turn its own gate
// off) and makes the session's command the harness with it.
func (s *session) launchConfig() (func(), error) {
	l := s.opts.Launch
	if l == nil {
		return nil, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, fmt.Errorf("%w: home directory: %v", ErrLaunch, err)
	}
	// The command reads its configuration here: in container mode, as
	// another uid (the directory and its files root's, read-only).
	dirMode, fileMode := os.FileMode(0o700), os.FileMode(0o600)
	var held func(string) bool
	if c := s.container; c != nil {
		// No mount layer keeps a harness's settings from the command,
		// which owns its workspace (.claude/settings.local.json's
		// disableAllHooks turns the gate off): only a harness told to
		// read the settings files that hold against the uid runs here,
		// in the command's own home (containerHome).
		if info, _ := hooks.LaunchInfoOf(l.Harness, home); !info.HeldSettingsOnly || info.PrivateHome {
			return nil, fmt.Errorf("%w: %s does not run in container mode (it would read settings the command could change, in its workspace or home); %s does, or give the container sandboxd's seccomp profile for nested mode (%s)", ErrLaunch, l.Harness, hooks.ClaudeCode, procjail.SeccompProfileFix)
		}
		home = s.agentHome
		held = func(p string) bool { return unchangeableBy(p, c.UID, c.GID) }
		dirMode, fileMode = 0o755, 0o644
	}
	l.home = home
	r := s.live.Current().resolved
	dir := filepath.Join(s.dir, "launch")
	if err := os.Mkdir(dir, dirMode); err != nil {
		return nil, fmt.Errorf("launch configuration: %w", err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return nil, fmt.Errorf("launch configuration: %w", err)
	}
	project := s.opts.Dir
	if project == "" {
		project, _ = os.Getwd()
	}
	var stops []func()
	var keep map[string]string // set once the configuration is rendered
	stop := func() {
		for _, f := range stops {
			f()
		}
	}
	var projectDirs, placeholders []string
	if s.container == nil {
		// Nested mode binds every settings file that exists read-only.
		// The project's harness directories are kept read-only whole
		// (made, empty, when missing, and removed at the end if still
		// empty: git does not see an empty directory), so the command
		// can make no settings file there for the running harness to
		// load; a user settings file that does not exist is left out.
		info, _ := hooks.LaunchInfoOf(l.Harness, home)
		for _, rel := range info.ProjectDirs {
			d := filepath.Join(project, rel)
			made, err := ensureDir(d, project)
			if err != nil {
				return stop, fmt.Errorf("%w: %v", ErrLaunch, err)
			}
			if made {
				stops = append(stops, func() { os.Remove(d) })
			}
			projectDirs = append(projectDirs, d)
		}
		held = func(p string) bool {
			for _, d := range projectDirs {
				if isUnder(p, d) {
					return true
				}
			}
			if _, err := os.Lstat(p); err != nil {
				// Made read-only inside by the jail, or the start is
				// refused (placeholders).
				placeholders = append(placeholders, p)
			}
			return true
		}
	}
	plan := hooks.LaunchPlan{Harness: l.Harness, Dir: dir, Hookgate: l.Hookgate, Home: home, Project: project,
		Denied: slices.Sorted(slices.Values(r.Native.Denied)), MCP: l.MCP, Relax: l.Relax, Args: l.Args,
		// What the harness's configuration copies from the environment
		// (ANTHROPIC_BASE_URL into Claude Code's settings, OPENAI_BASE_URL
		// into Codex's) comes from what the sandbox gets: a variable
		// --unset-env or environment.unset removes is not written inside
		// by another way.
		Getenv: envLookup(s.hostEnv), Held: held}
	if p, err := exec.LookPath(s.opts.Command[0]); err == nil {
		plan.Program, _ = filepath.Abs(p)
	}
	if info, _ := hooks.LaunchInfoOf(l.Harness, home); info.PrivateHome {
		// Beside the runtime directory, not in it: that one is
		// read-only inside, this one is the harness's state. Removed with
		// the session (and by PruneStale after a crash).
		l.privateHome = s.dir + privateHomeSuffix
		if err := os.Mkdir(l.privateHome, 0o700); err != nil {
			return nil, fmt.Errorf("launch: private home: %w", err)
		}
		stops = append(stops, func() {
			keepFiles(l.privateHome, keep, s.stderr)
			os.RemoveAll(l.privateHome)
		})
		plan.PrivateHome = l.privateHome
	}
	cfg, err := hooks.Launch(plan)
	if err != nil {
		return stop, fmt.Errorf("%w: %v", ErrLaunch, err)
	}
	keep = cfg.Keep
	for _, n := range cfg.Notes {
		fmt.Fprintf(s.stderr, "sandboxd: %s\n", n)
	}
	for name, data := range cfg.Files {
		if err := os.WriteFile(filepath.Join(dir, name), data, fileMode); err != nil {
			return stop, fmt.Errorf("launch configuration: %w", err)
		}
	}
	var homeFiles []string
	for _, name := range slices.Sorted(maps.Keys(cfg.HomeFiles)) {
		f := filepath.Join(l.privateHome, name)
		if err := os.WriteFile(f, cfg.HomeFiles[name], 0o600); err != nil {
			return stop, fmt.Errorf("launch configuration: %w", err)
		}
		homeFiles = append(homeFiles, f)
	}
	for _, d := range l.stateDirs() {
		var err error
		if s.container != nil {
			err = mkdirsAs(d, s.container.UID, s.container.GID)
		} else {
			err = os.MkdirAll(d, 0o700)
		}
		if err != nil {
			return stop, fmt.Errorf("launch: state directory %s: %w", d, err)
		}
	}
	s.opts.Command = append(append(append([]string{}, s.opts.Command[0]), cfg.Args...), l.Args...)
	s.launched = &launched{harness: string(l.Harness), mode: r.Mode, dir: dir, cfg: cfg, ceiling: plan.Denied, homeFiles: homeFiles, projectDirs: projectDirs, placeholders: placeholders}
	for _, m := range l.MCP {
		s.launched.mcp = append(s.launched.mcp, m.Name)
		f, closeFwd, err := s.forwardLoopback(m.URL)
		if err != nil {
			return stop, fmt.Errorf("%w: MCP server %s: %v", ErrLaunch, m.Name, err)
		}
		if closeFwd != nil {
			stops = append(stops, closeFwd)
			s.launched.forwards = append(s.launched.forwards, f)
		}
	}
	return stop, nil
}

// placeholders makes the launched harness's settings files that did not
// exist at the start unchangeable inside: below the home overlay, the
// jail makes them ("{}") and binds them read-only (procjail.FileSystem
// Placeholders; macOS's profile refuses their creation). One in a write
// root refuses the start: the command could make it and the running
// harness would load it.
func (s *session) placeholders() error {
	if s.launched == nil {
		return nil
	}
	p := s.fsPlan
	for _, f := range s.launched.placeholders {
		if _, err := os.Lstat(f); err == nil || slices.Contains(p.placeholders, f) {
			continue
		}
		switch {
		case p.AllWritable || p.InWriteRoot(f):
			return fmt.Errorf("%w: %s does not exist and lies in a write root: the command could make it and %s would load it (create it, {} for empty settings, or drop the write root)", ErrLaunch, f, s.launched.harness)
		case runtime.GOOS == "linux" && p.HomeOverlay != "" && isUnder(f, p.HomeOverlay):
			p.placeholders = append(p.placeholders, f)
			if !slices.Contains(p.Protected, f) {
				p.Protected = append(p.Protected, f)
			}
			delete(p.missing, f) // bound, not watched
		}
	}
	return nil
}

// ensureDir makes sure d is a directory, not a symlink, making it (owned
// as project is) when missing; made says it did.
func ensureDir(d, project string) (made bool, err error) {
	fi, err := os.Lstat(d)
	switch {
	case err == nil && fi.IsDir():
		return false, nil
	case err == nil:
		return false, fmt.Errorf("%s is not a directory: the harness's project settings would not be kept from the command", d)
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		return false, err
	}
	if pi, err := os.Stat(project); err == nil {
		if st, ok := pi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
			if err := os.Lchown(d, int(st.Uid), int(st.Gid)); err != nil {
				os.Remove(d)
				return false, err
			}
		}
	}
	return true, nil
}

// forwardLoopback makes an MCP server on the host's loopback (Barry's
// http://127.0.0.1:PORT/mcp) reachable at the same address inside, where
// loopback is the sandbox's own: a relay from a Unix socket in the
// runtime directory to the host's port, forwarded inside. A server
// elsewhere goes through the proxy like any host (nil, nil, nil).
func (s *session) forwardLoopback(raw string) (procjail.Forward, func(), error) {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return procjail.Forward{}, nil, fmt.Errorf("URL %q has no host", raw)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if u.Hostname() == "localhost" {
		ip, err = netip.MustParseAddr("127.0.0.1"), nil
	}
	if err != nil || !ip.IsLoopback() {
		return procjail.Forward{}, nil, nil
	}
	port, err := strconv.ParseUint(u.Port(), 10, 16)
	if err != nil || port == 0 {
		return procjail.Forward{}, nil, fmt.Errorf("URL %q: a loopback server needs its port", raw)
	}
	if port == 53 || port == ProxyInsidePort || port == HookInsidePort || port == CaptureInsidePort {
		return procjail.Forward{}, nil, fmt.Errorf("port %d is the sandbox's own inside", port)
	}
	sock := filepath.Join(s.dir, fmt.Sprintf("mcp-%d.sock", port))
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return procjail.Forward{}, nil, err
	}
	target := net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relayTo(c, target)
		}
	}()
	return procjail.Forward{InsidePort: uint16(port), Network: "tcp", Target: sock}, func() { ln.Close() }, nil
}

// relayTo copies between c and a new TCP connection to target until both
// directions end.
func relayTo(c net.Conn, target string) {
	defer c.Close()
	u, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, u); c.(*net.UnixConn).CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// env is env with the launch's variables removed and added.
func (l *launched) env(env []string) []string {
	if l == nil {
		return env
	}
	for _, k := range l.cfg.Unset {
		env = withoutEnv(env, k)
	}
	for _, kv := range l.cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		env = append(withoutEnv(env, k), kv)
	}
	return env
}

// auditAttrs describe the launch on the session's start line.
func (l *launched) auditAttrs() []slog.Attr {
	if l == nil {
		return nil
	}
	return []slog.Attr{slog.String("harness", l.harness), slog.String("mode", l.mode),
		slog.Any("ceiling", nonNil(l.ceiling)), slog.Any("mcp_servers", nonNil(l.mcp))}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// keepLimit bounds what one session's private home hands back to the
// host (keepFiles).
const keepLimit = 256 << 20

// keepFiles copies, for each directory of the private home in keep, its
// regular files that the host directory it maps to does not have yet, at
// the end of the session (its processes are gone): symlinks and special
// files are skipped, no file on the host is replaced, and at most
// keepLimit bytes are copied; what is left behind is said on w.
func keepFiles(home string, keep map[string]string, w io.Writer) {
	total := int64(0)
	for _, rel := range slices.Sorted(maps.Keys(keep)) {
		src, dst := filepath.Join(home, rel), keep[rel]
		filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			r, err := filepath.Rel(src, path)
			if err != nil {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			if total+fi.Size() > keepLimit {
				fmt.Fprintf(w, "sandboxd: %s not kept in %s: the session's files exceed %d MiB\n", r, dst, keepLimit>>20)
				return nil
			}
			target := filepath.Join(dst, r)
			if _, err := os.Lstat(target); err == nil {
				return nil
			}
			if err := copyNew(path, target); err != nil {
				fmt.Fprintf(w, "sandboxd: %s not kept: %v\n", r, err)
				return nil
			}
			total += fi.Size()
			return nil
		})
	}
}

// copyNew copies the regular file src (not followed if a symlink) to dst,
// which must not exist, creating its parents.
func copyNew(src, dst string) error {
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		os.Remove(dst)
		return err
	}
	return out.Close()
}
