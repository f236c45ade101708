package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LaunchPlan is what "sandboxd launch" puts in a harness's session
// configuration: the hook gate, the native ceiling and the MCP servers.
type LaunchPlan struct {
	Harness Harness
	// Dir is the session's configuration directory: the files of the
	// LaunchConfig are written there, and it is read-only inside the
	// sandbox, so the agent cannot turn its own gate off.
	Dir string
	// Hookgate is hookgate's absolute path (visible inside the sandbox);
	// the hook reads its ruling server from BARRY_HOOK_SOCKET.
	Hookgate string
	// Home is the user's home, where the harness keeps its own state.
	Home string
	// Project is the working directory the harness starts in (its project
	// settings live there); "" skips the project's checks.
	Project string
	// Denied are the native tools the ceiling takes back (the session's
	// native policy), sorted.
	Denied []string
	// MCP are the session's MCP servers.
	MCP []LaunchMCPServer
	// Relax lifts the strict MCP configuration: the user's own MCP
	// servers load beside the session's.
	Relax bool
	// Getenv reads the launcher's environment (what the harness starts
	// with); nil reads none.
	Getenv func(string) string
	// PrivateHome is, for a harness whose configuration directory is
	// also its state directory (Codex's CODEX_HOME), the session's own
	// such directory: empty, writable inside, the LaunchConfig's
	// HomeFiles kept read-only in it. "" for the other harnesses.
	PrivateHome string
	// Program is the harness's executable (absolute), for a launch that
	// asks the harness itself for a default it must change (Codex's model
	// catalog); "" when unknown.
	Program string
	// Args are the user's harness arguments (CheckLaunchArgs has passed
	// them), which follow the configuration's.
	Args []string
	// Root prefixes the system-wide configuration paths a preflight reads
	// (/etc/codex); "" is "/". Tests only.
	Root string
	// Held says whether the sandbox keeps a settings file of the harness
	// unchangeable by the session's commands: it exists and is read-only
	// inside (nested mode), or neither it nor a directory on its way is
	// theirs to change (container mode). A harness that can be told which
	// settings to read (LaunchInfo.HeldSettingsOnly) reads only those;
	// one the command could write or create mid-session could switch its
	// hooks off. nil: every file is held.
	Held func(path string) bool
}

// rooted is the system path sys under p's Root.
func (p LaunchPlan) rooted(sys string) string {
	if p.Root == "" {
		return sys
	}
	return filepath.Join(p.Root, sys)
}

func (p LaunchPlan) getenv(k string) string {
	if p.Getenv == nil {
		return ""
	}
	return p.Getenv(k)
}

// LaunchMCPServer is one MCP server of a launched session: a streamable-HTTP endpoint
// and the environment variable that holds its bearer token ("" for none).
// The token itself is never written into a configuration file.
type LaunchMCPServer struct {
	Name      string
	URL       string
	BearerEnv string
}

// LaunchConfig is what a launch gives the harness.
type LaunchConfig struct {
	// Files are written under the plan's Dir (relative name → content).
	Files map[string][]byte
	// Args go after the program and before the user's arguments.
	Args []string
	// Env is added to the harness's environment (NAME=value).
	Env []string
	// Unset are variables removed from the harness's environment: each
	// would switch the session configuration off or move it.
	Unset []string
	// HomeFiles are written under the plan's PrivateHome (relative name →
	// content) and are read-only inside, while the rest of it is the
	// harness's writable state.
	HomeFiles map[string][]byte
	// Keep are directories of the private home whose files outlast the
	// session: at its end each one's new regular files are copied to the
	// host directory it maps to (the harness's transcripts, which a later
	// session outside resumes), never over a file already there.
	Keep map[string]string
	// Notes are one-line notices for the user: settings the session
	// leaves out (LaunchPlan.Held).
	Notes []string
}

// launcher is how one harness is launched under a session.
type launcher struct {
	// program is the harness's command.
	program string
	// apiHosts are the model API hosts the harness talks to by default.
	apiHosts []string
	// apiKeys are the variables the harness reads its model API keys
	// from, each with the host it is for, and baseURLEnv the one that
	// moves its API elsewhere ("" for none): a launch makes a key a
	// credential for its host.
	apiKeys    []APIKey
	baseURLEnv string
	// stateDirs are the harness's own state directories under home,
	// writable inside the sandbox (sessions, logs, caches).
	stateDirs []string
	// configure renders the session configuration.
	configure func(p LaunchPlan) (LaunchConfig, error)
	// preflight refuses a launch whose harness would not hold the session
	// configuration: the user's or the project's own settings switching
	// hooks off, or another hook that could answer for hookgate or rewrite
	// a call it allowed. nil: nothing to check.
	preflight func(p LaunchPlan) error
	// refused are the harness's arguments that would override the session
	// configuration.
	refused []refusedArg
	// subcommands are the harness's subcommands: a launch starts a
	// session, and they manage the harness's own configuration instead.
	subcommands []string
	// noEndOfOptions is true when the harness's parser reads options
	// after "--" too (Pi's does): every argument is then checked.
	noEndOfOptions bool
	// optionValues are, for a harness that reads global options before
	// its subcommand, the options that take the next word as their value;
	// nil: the subcommand is the first word.
	optionValues []string
	// privateHome names the variable that points the harness at a
	// private configuration-and-state directory (LaunchPlan.PrivateHome);
	// "" for none.
	privateHome string
	// heldSettingsOnly: the configuration reads only the settings files
	// LaunchPlan.Held holds (LaunchInfo.HeldSettingsOnly).
	heldSettingsOnly bool
	// projectDirs are LaunchInfo.ProjectDirs.
	projectDirs []string
}

// refusedArg is one option a launch refuses, with every spelling.
type refusedArg struct {
	// names are the option's spellings ("--settings", "-c").
	names []string
	// why is what the option would override.
	why string
}

// launcherOf returns h's launcher, or nil.
func launcherOf(h Harness) *launcher {
	if f := mustProtocol(h).launch; f != nil {
		return f()
	}
	return nil
}

// ErrRefusedArgument is returned for a harness argument that would
// override the session configuration.
var ErrRefusedArgument = errors.New("argument refused")

// LaunchInfo is what a launch needs to know of a harness before it
// writes any configuration.
type LaunchInfo struct {
	// Program is the harness's command.
	Program string
	// APIHosts are the model API hosts it talks to by default.
	APIHosts []string
	// APIKeys are the variables it reads its model API keys from, each
	// tied to the host it is for, and BaseURLEnv the one that points it
	// at another API ("" for none).
	APIKeys    []APIKey
	BaseURLEnv string
	// StateDirs are its own state directories (absolute), writable
	// inside the sandbox.
	StateDirs []string
	// PrivateHome is true for a harness launched with a private
	// configuration-and-state directory (LaunchPlan.PrivateHome), which
	// the launch creates, keeps writable inside and removes at the end.
	PrivateHome bool
	// HeldSettingsOnly is true for a harness launched to read only the
	// settings files LaunchPlan.Held holds (Claude Code's
	// --setting-sources): it can run where the workspace is the
	// command's to change (container mode).
	HeldSettingsOnly bool
	// ProjectDirs are the directories of the project (relative) the
	// harness reads its project settings, hooks and instructions from,
	// and watches: a file the command made there mid-session would load
	// into the running harness (a hook of its own beside the gate).
	ProjectDirs []string
}

// APIKey is one variable a harness reads a model API key from, and the
// host the key is for. A key goes to its own provider only: a harness
// with several providers (Pi) holds keys that another provider's host must
// never be given.
type APIKey struct {
	Env string
	// Host is the provider's API host (canonical) the key is for, when
	// the harness has several providers; "" for the launch's API hosts
	// (the harness's default or --api-host: the user's gateway, which the
	// harness's one key is for).
	Host string
}

// LaunchInfoOf returns what launching h needs, for the user whose home is
// home; ok is false for a harness sandboxd launch does not start.
func LaunchInfoOf(h Harness, home string) (info LaunchInfo, ok bool) {
	l := launcherOf(h)
	if l == nil {
		return LaunchInfo{}, false
	}
	info = LaunchInfo{Program: l.program, APIHosts: slices.Clone(l.apiHosts), PrivateHome: l.privateHome != "",
		APIKeys: slices.Clone(l.apiKeys), BaseURLEnv: l.baseURLEnv, HeldSettingsOnly: l.heldSettingsOnly,
		ProjectDirs: slices.Clone(l.projectDirs)}
	for _, d := range l.stateDirs {
		info.StateDirs = append(info.StateDirs, filepath.Join(home, d))
	}
	return info, true
}

// CheckLaunchArgs refuses the first argument that would override the
// session configuration (its own settings, configuration or MCP options,
// tool lists, setting sources, plugin or extension directories, bypass
// modes), in every spelling: "--opt", "--opt=value", and a short option
// alone or with its value attached. Words after "--" are not options,
// for a harness whose parser agrees.
func CheckLaunchArgs(h Harness, args []string) error {
	l := launcherOf(h)
	if l == nil {
		return fmt.Errorf("%w: harness %s is not launched by sandboxd launch", ErrUnknownHarness, h)
	}
	if sub := l.subcommandOf(args); slices.Contains(l.subcommands, sub) {
		return fmt.Errorf("%w: %s: a subcommand of %s, not a session (run it outside sandboxd launch)", ErrRefusedArgument, sub, l.program)
	}
	for _, a := range args {
		if a == "--" && !l.noEndOfOptions {
			return nil
		}
		for _, r := range l.refused {
			for _, n := range r.names {
				if optionIs(a, n) {
					return fmt.Errorf("%w: %s: %s would override the session's %s", ErrRefusedArgument, a, n, r.why)
				}
			}
		}
	}
	return nil
}

// subcommandOf is the word of args the harness would read as its
// subcommand: the first, or for a harness that reads global options
// before its subcommand (optionValues set), the first that is neither an
// option nor an option's value.
func (l *launcher) subcommandOf(args []string) string {
	if l.optionValues == nil {
		if len(args) > 0 {
			return args[0]
		}
		return ""
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case strings.HasPrefix(a, "-") && len(a) > 1:
			if slices.Contains(l.optionValues, a) {
				i++
			}
		default:
			return a
		}
	}
	return ""
}

// optionIs reports whether argument a is option name in one of its
// spellings.
func optionIs(a, name string) bool {
	if a == name {
		return true
	}
	if strings.HasPrefix(name, "--") {
		return strings.HasPrefix(a, name+"=")
	}
	// A short option: "-c" also as "-cVALUE" (and, for a single letter,
	// inside a cluster such as "-yc" the harness would read as -y -c).
	if len(name) == 2 && strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") {
		return strings.HasPrefix(a, name) || strings.ContainsRune(a[1:], rune(name[1])) && isCluster(a)
	}
	return false
}

// isCluster reports whether a looks like a cluster of short flags
// ("-yc"), not a short option with an attached value.
func isCluster(a string) bool {
	for _, c := range a[1:] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return len(a) > 2
}

// Launch renders the session configuration of plan p.
func Launch(p LaunchPlan) (LaunchConfig, error) {
	l := launcherOf(p.Harness)
	if l == nil {
		return LaunchConfig{}, fmt.Errorf("%w: harness %s is not launched by sandboxd launch", ErrUnknownHarness, p.Harness)
	}
	if !filepath.IsAbs(p.Dir) || !filepath.IsAbs(p.Hookgate) || !filepath.IsAbs(p.Home) {
		return LaunchConfig{}, fmt.Errorf("launch: the session directory, hookgate and home must be absolute paths (%q, %q, %q)", p.Dir, p.Hookgate, p.Home)
	}
	for _, s := range p.MCP {
		if s.Name == "" || s.URL == "" {
			return LaunchConfig{}, fmt.Errorf("launch: MCP server %+v needs a name and a URL", s)
		}
	}
	if l.privateHome != "" && !filepath.IsAbs(p.PrivateHome) {
		return LaunchConfig{}, fmt.Errorf("launch: %s needs the session's private %s directory (absolute), not %q", p.Harness, l.privateHome, p.PrivateHome)
	}
	if l.preflight != nil {
		if err := l.preflight(p); err != nil {
			return LaunchConfig{}, err
		}
	}
	return l.configure(p)
}

// sessionHooks returns a settings object holding only hookgate's entries
// for p's harness, as install writes them (the fail-closed wrapper around
// hookgate check, which asks the ruling server named by BARRY_HOOK_SOCKET).
func sessionHooks(p LaunchPlan) (*object, error) {
	root := newObject()
	pr := mustProtocol(p.Harness)
	if err := mergeHooks(root, InstallArgs{Harness: p.Harness, Binary: p.Hookgate}, pr.install, true); err != nil {
		return nil, err
	}
	return root, nil
}

// foreignHooks refuses a settings file (absent: fine) whose matcher groups
// for events hold a handler that is not hookgate's: it would run beside
// the session's gate and could allow or rewrite a call the gate ruled on.
// hookgate's own entries (an earlier hookgate install) only ever deny or
// say nothing. A file that does not parse as such settings is refused
// too: the harness's reading of it cannot be checked.
func foreignHooks(path, harness string, events ...string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: not valid JSON or not %s's settings (%v): its reading of it cannot be checked", path, harness, err)
	}
	for _, ev := range events {
		for _, g := range s.Hooks[ev] {
			for _, h := range g.Hooks {
				if !isOurs(h.Command) {
					return fmt.Errorf("%s has its own %s hook %q, which would run beside the session's gate; remove it to launch", path, ev, clipCommand(h.Command))
				}
			}
		}
	}
	return nil
}

// bearerEnvRef is how a harness's configuration names the bearer token's
// variable: "Bearer ${NAME}".
func bearerEnvRef(name string) string { return "Bearer ${" + name + "}" }
