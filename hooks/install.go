package hooks

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// InstallArgs say where and how to install hookgate for one harness.
type InstallArgs struct {
	Harness Harness
	// Scope is "user" (under Home) or "project" (under Project).
	Scope   string
	Home    string
	Project string
	// Binary is hookgate's absolute path (harnesses launched from a GUI get
	// a minimal PATH; a bare name that does not resolve fails open).
	Binary string
	// Policy, when set, is passed as --policy; otherwise hookgate reads
	// BARRY_POLICY or BARRY_HOOK_SOCKET from the harness's environment.
	Policy string
	// Now names backups; nil means time.Now.
	Now func() time.Time
	// ClaudeConfigDir is $CLAUDE_CONFIG_DIR: Claude Code then reads its
	// user settings there, not in ~/.claude.
	ClaudeConfigDir string
	// CodexHome is $CODEX_HOME, where Codex reads its user hooks and
	// config ("" means ~/.codex).
	CodexHome string
	// CopilotHome is $COPILOT_HOME, where Copilot CLI reads its user hooks
	// and trusted folders ("" means ~/.copilot).
	CopilotHome string
	// PiAgentDir is $PI_CODING_AGENT_DIR, where Pi then reads its user
	// extensions instead of ~/.pi/agent.
	PiAgentDir string
	// TrustProject, with Scope "project", marks the project trusted the
	// harness's own way (Codex's [projects."DIR"] trust_level, Gemini
	// CLI's trustedFolders.json), without which Codex and Gemini ignore a
	// project's hooks; without it such an install is refused.
	TrustProject bool
	// GeminiTrustWorkspace is $GEMINI_CLI_TRUST_WORKSPACE: "true" makes
	// Gemini CLI trust every folder it runs in (and "false" none), which
	// is then what reads a project's hooks, not trustedFolders.json. The
	// install and verify read it from their own environment, so it must
	// be the harness's too.
	GeminiTrustWorkspace string
}

// codexHome is the Codex configuration directory for a.
func (a InstallArgs) codexHome() string {
	if a.CodexHome != "" {
		return a.CodexHome
	}
	return filepath.Join(a.Home, ".codex")
}

// hookTimeout is the harness's timeout for hookgate in seconds, written
// into every entry Install makes: well above the wrapper's deadline
// (WrapperDeadline, itself above MaxDeadline), so that the wrapper always
// answers (a deny, at worst) before the harness gives up on it and, for
// most harnesses, runs the tool anyway, also on a machine so loaded that
// starting the wrapper takes seconds (measured: Gemini CLI timed a 10 s
// hook out first under load).
const hookTimeout = 30

// MaxDeadline is the longest deadline hookgate check accepts: 1 s under
// the wrapper's (WrapperDeadline), itself far under hookTimeout (the
// harness's timeout Install writes), leaving room for process start and
// writing the answer. A deadline at or past the harness's
// own timeout would let the harness time out first and fail open.
const MaxDeadline = 8 * time.Second

// ConfigPath returns the file Install edits for a harness and scope.
func ConfigPath(a InstallArgs) (string, error) {
	var base string
	switch a.Scope {
	case "user", "":
		base = a.Home
	case "project":
		base = a.Project
	default:
		return "", fmt.Errorf("scope %q: want user or project", a.Scope)
	}
	if base == "" || !filepath.IsAbs(base) {
		return "", fmt.Errorf("%s directory %q is not absolute", a.Scope, base)
	}
	p, err := protocolOf(a.Harness)
	if err != nil {
		return "", err
	}
	return p.install.path(a, base, a.Scope != "project"), nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (a InstallArgs) argv() []string {
	args := []string{"check", "--harness", string(a.Harness)}
	if a.Policy != "" {
		args = append(args, "--policy", a.Policy)
	}
	return args
}

// command is the hook command Install writes: hookgate check inside the
// fail-closed wrapper (wrapper.go).
func (a InstallArgs) command() string {
	return wrappedCommand(a.Harness, append([]string{a.Binary}, a.argv()...))
}

// isOurs reports whether a hook command runs hookgate check: split into
// shell words (see shellWords) and unwrapped from the fail-closed wrapper,
// its first word's base name is "hookgate" or
// starts with "hookgate-" or "hookgate." (hookgate-linux-amd64,
// hookgate.exe) and its second word is "check". That covers the entries
// Install writes (the binary's absolute path, shell-quoted when it holds a
// space) and the ones users copy from the hook-protocol notes
// ("hookgate check --protocol cursor"). A command that does not split (an
// unterminated quote) is not ours.
func isOurs(cmd string) bool {
	w, ok := shellWords(cmd)
	if ok {
		w = unwrap(w)
	}
	if !ok || len(w) < 2 || w[1] != "check" {
		return false
	}
	base := filepath.Base(w[0])
	return base == "hookgate" || strings.HasPrefix(base, "hookgate-") || strings.HasPrefix(base, "hookgate.")
}

// shellWords splits a command line into words the way a POSIX shell
// quotes them: blanks separate words; '…' is literal (shellQuote writes
// that, closing, escaping and reopening around a quote); "…" is literal
// except that a backslash escapes $, `, ", \ and newline; a backslash
// outside quotes escapes the next character (a backslash-newline
// disappears). Nothing else (no expansion, no operators) is interpreted.
// ok is false for an unterminated quote or a trailing backslash.
func shellWords(s string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
					i++
					if s[i] == '\n' {
						continue
					}
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			i++
			if s[i] != '\n' {
				cur.WriteByte(s[i])
				inWord = true
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}

// Install merges hookgate's entry into the harness's configuration:
// idempotently (an existing hookgate entry is replaced, so running it twice
// changes nothing), keeping every other setting and hook and their order,
// after copying the old file to a timestamped backup. It refuses a file
// that is not a JSON object or whose hooks have an unexpected shape. It
// returns the file and whether it changed.
func Install(a InstallArgs) (string, bool, error) { return edit(a, true) }

// Uninstall removes hookgate's entries (and only those) from the harness's
// configuration, with a backup; for Pi it removes the extension file when
// it is hookgate's.
func Uninstall(a InstallArgs) (string, bool, error) { return edit(a, false) }

func edit(a InstallArgs, install bool) (string, bool, error) {
	path, err := ConfigPath(a)
	if err != nil {
		return "", false, err
	}
	if install && !filepath.IsAbs(a.Binary) {
		return path, false, fmt.Errorf("hookgate binary %q is not an absolute path", a.Binary)
	}
	p := mustProtocol(a.Harness)
	if p.install.edit != nil {
		return p.install.edit(a, path, install)
	}
	if install && a.Scope == "project" && p.install.projectTrust != nil {
		if err := p.install.projectTrust(a, path); err != nil {
			return path, false, err
		}
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return path, false, err
	}
	var root *object
	if len(strings.TrimSpace(string(old))) == 0 {
		root = newObject()
	} else {
		v, err := parseOrdered(old)
		if err != nil {
			return path, false, fmt.Errorf("%s: not valid JSON (%v); not touching it", path, err)
		}
		o, ok := v.(*object)
		if !ok {
			return path, false, fmt.Errorf("%s: not a JSON object; not touching it", path)
		}
		root = o
	}
	// Compare normalized forms: a file hookgate has nothing to change in is
	// left alone, whatever its formatting.
	before := encodeOrdered(root)
	if err := mergeHooks(root, a, p.install, install); err != nil {
		return path, false, fmt.Errorf("%s: %w", path, err)
	}
	out := encodeOrdered(root)
	if (old != nil && string(out) == string(before)) || (old == nil && !install) {
		return path, false, p.install.afterWrite(a, path, install)
	}
	if err := writeWithBackup(path, old, out, a.now()); err != nil {
		return path, false, err
	}
	return path, true, p.install.afterWrite(a, path, install)
}

// afterWrite records trust of the entries just installed where the
// harness needs it: Codex skips an untrusted hook without a word.
func (in installer) afterWrite(a InstallArgs, path string, install bool) error {
	if !install || in.trust == nil {
		return nil
	}
	return in.trust(a, path)
}

func (a InstallArgs) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// mergeHooks removes hookgate's entries from root.hooks and, when install,
// appends fresh ones.
func mergeHooks(root *object, a InstallArgs, in installer, install bool) error {
	hv, ok := root.get("hooks")
	var hooks *object
	switch {
	case !ok:
		if !install {
			return nil
		}
		hooks = newObject()
		root.set("hooks", hooks)
	default:
		hooks, ok = hv.(*object)
		if !ok {
			return errors.New(`"hooks" is not an object`)
		}
	}
	if install && in.prepare != nil {
		in.prepare(root)
	}
	for _, ev := range in.events {
		var list []any
		if v, ok := hooks.get(ev); ok {
			l, ok := v.([]any)
			if !ok {
				return fmt.Errorf("hooks.%s is not a list", ev)
			}
			list = l
		}
		kept, err := removeOurs(in.flat, ev, list)
		if err != nil {
			return err
		}
		if install {
			kept = append(kept, in.entry(a, ev))
		}
		if len(kept) == 0 {
			hooks.del(ev)
		} else {
			hooks.set(ev, kept)
		}
	}
	return nil
}

// removeOurs drops hookgate's handlers from an event's list: Cursor's flat
// definitions, and the handlers inside Claude-style matcher groups (a group
// left empty goes too).
func removeOurs(flat bool, ev string, list []any) ([]any, error) {
	var out []any
	for i, item := range list {
		o, ok := item.(*object)
		if !ok {
			return nil, fmt.Errorf("hooks.%s[%d] is not an object", ev, i)
		}
		if flat {
			if c, _ := o.vals["command"].(string); isOurs(c) {
				continue
			}
			out = append(out, o)
			continue
		}
		hv, ok := o.get("hooks")
		if !ok {
			out = append(out, o)
			continue
		}
		handlers, ok := hv.([]any)
		if !ok {
			return nil, fmt.Errorf("hooks.%s[%d].hooks is not a list", ev, i)
		}
		var keep []any
		for _, hd := range handlers {
			if ho, ok := hd.(*object); ok {
				if c, _ := ho.vals["command"].(string); isOurs(c) {
					continue
				}
			}
			keep = append(keep, hd)
		}
		if len(keep) == 0 {
			continue
		}
		if len(keep) != len(handlers) {
			o.set("hooks", keep)
		}
		out = append(out, o)
	}
	return out, nil
}

// entry builds hookgate's entry for one event: its handler, inside a
// matcher group matching every tool unless the harness's lists are flat.
func (in installer) entry(a InstallArgs, ev string) any {
	h := in.handler(a, ev, a.command())
	if in.flat {
		return h
	}
	g := newObject()
	g.set("matcher", in.matcher)
	g.set("hooks", []any{h})
	return g
}

// commandHandler is the usual command handler: type, command and the
// timeout in seconds.
func commandHandler(cmd string) *object {
	h := newObject()
	h.set("type", "command")
	h.set("command", cmd)
	h.set("timeout", json.Number(fmt.Sprint(hookTimeout)))
	return h
}

// writeWithBackup saves old (when there was a file) as
// NAME.hookgate-YYYYMMDDTHHMMSSZ.bak, then replaces path atomically with
// data, keeping its mode (0644 for a new file).
func writeWithBackup(path string, old, data []byte, now time.Time) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
		if err := backup(path, old, now); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func backup(path string, old []byte, now time.Time) error {
	name := path + ".hookgate-" + now.UTC().Format("20060102T150405Z") + ".bak"
	for i := 1; ; i++ {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.hookgate-%s-%d.bak", path, now.UTC().Format("20060102T150405Z"), i)
	}
	if err := os.WriteFile(name, old, 0o600); err != nil {
		return fmt.Errorf("backup of %s: %w", path, err)
	}
	return nil
}

// installedEvents lists the events of a config file that carry a hookgate
// handler.
func installedEvents(h Harness, data []byte) []string {
	flat := mustProtocol(h).install.flat
	v, err := parseOrdered(data)
	if err != nil {
		return nil
	}
	root, ok := v.(*object)
	if !ok {
		return nil
	}
	hv, _ := root.get("hooks")
	hooks, ok := hv.(*object)
	if !ok {
		return nil
	}
	var out []string
	for _, ev := range hooks.keys {
		list, _ := hooks.vals[ev].([]any)
		for _, item := range list {
			o, ok := item.(*object)
			if !ok {
				continue
			}
			handlers := []any{o}
			if hs, ok := o.vals["hooks"].([]any); ok && !flat {
				handlers = hs
			}
			for _, hd := range handlers {
				if ho, ok := hd.(*object); ok {
					if c, _ := ho.vals["command"].(string); isOurs(c) && !slices.Contains(out, ev) {
						out = append(out, ev)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
