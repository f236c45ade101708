package hooks

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Codex: PreToolUse and PermissionRequest hooks in hooks.json (user:
// $CODEX_HOME or ~/.codex; project: .codex/, read only in a trusted
// project), Claude-style matcher groups whose matchers are regular
// expressions, each entry run only when trusted (below). Answers are
// Claude Code's subset: no explicit allow, no ask.

func codexEvents() map[string]Kind {
	return kinds(map[string]Kind{"PreToolUse": KindTool, "PermissionRequest": KindPermission},
		"SessionStart", "SessionEnd", "SubagentStart", "SubagentStop", "PostToolUse", "PreCompact",
		"PostCompact", "UserPromptSubmit", "Stop", "Interrupt")
}

func codexProtocol() *protocol {
	return &protocol{
		events:      codexEvents(),
		typedShells: true,
		encode:      func(c Call, r Reply, reason, _ string) Output { return encodeClaudeLike(c, r, reason, false) },
		// Codex blocks on exit 2 with stderr and reads no JSON beside it.
		answerShapes: []string{`''`, `'{"hookSpecificOutput":{'*'}}'`},
		denyShapes:   []string{`''`, `'{"hookSpecificOutput":{'*'"deny"'*'}}'`},
		install: installer{
			path: func(a InstallArgs, base string, user bool) string {
				if user {
					return filepath.Join(a.codexHome(), "hooks.json")
				}
				return filepath.Join(base, ".codex", "hooks.json")
			},
			events:  []string{"PreToolUse", "PermissionRequest"},
			matcher: ".*",
			handler: func(a InstallArgs, ev, cmd string) *object {
				h := commandHandler(cmd)
				if ev == "PreToolUse" {
					h.set("statusMessage", "hookgate: checking tool call")
				}
				return h
			},
			projectTrust: func(a InstallArgs, path string) error {
				if codexProjectTrusted(a.codexHome(), a.Project) {
					return nil
				}
				if a.TrustProject {
					return trustCodexProject(a.codexHome(), a.Project, a.now())
				}
				key, _ := tomlKey(filepath.Clean(a.Project))
				return fmt.Errorf("Codex ignores %s unless the project is trusted: add [projects.%s] trust_level = \"trusted\" to %s (it trusts all of the project's Codex configuration), or install with --trust-project, or with --scope user",
					filepath.Dir(path), key, filepath.Join(a.codexHome(), "config.toml"))
			},
			trust: func(a InstallArgs, path string) error {
				if err := trustCodexHooks(a.codexHome(), path, a.now()); err != nil {
					return fmt.Errorf("hook written to %s but not trusted, so Codex would skip it: %w", path, err)
				}
				return nil
			},
			verify: func(ctx context.Context, a VerifyArgs, path string, data []byte) error {
				if a.Scope == "project" && !codexProjectTrusted(a.codexHome(), a.Project) {
					return fmt.Errorf("Codex ignores %s: the project is not trusted in %s", filepath.Dir(path), filepath.Join(a.codexHome(), "config.toml"))
				}
				if a.Codex != "" {
					return codexListTrusted(ctx, a, path)
				}
				return codexFileTrusted(a.codexHome(), path, data)
			},
		},
		launch: codexLauncher,
	}
}

// Codex runs a hook only when it is trusted: its user config.toml holds,
// per hook entry, [hooks.state."<source>:<event>:<group>:<handler>"] with
// trusted_hash = "sha256:<hex>" of the entry's canonical form (Codex 0.171,
// codex-rs/hooks/src/engine/discovery.rs, hook_hash, and
// config_rules.rs, which reads hooks.state from the user layer only, so
// project hooks are trusted there too). An untrusted entry is skipped
// silently by codex exec: installing without trust installs nothing.

// codexEventLabels are Codex's labels for the events hookgate gates.
var codexEventLabels = map[string]string{"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request"}

// CodexHome is Codex's configuration directory: $CODEX_HOME, else
// ~/.codex.
func CodexHome(env func(string) string, home string) string {
	if h := env("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(home, ".codex")
}

// codexTrust is one trust entry: the hook's key and hash.
type codexTrust struct {
	Key, Hash string
}

// codexHandlerHash is Codex's hash of one command handler in its group:
// SHA-256 of the compact JSON, keys sorted, strings escaped as serde_json
// does (only '"', '\\' and control characters).
func codexHandlerHash(label, matcher, command, statusMessage string, timeout int) string {
	if timeout < 1 {
		timeout = 1
	}
	var b strings.Builder
	b.WriteString(`{"event_name":`)
	serdeString(&b, label)
	b.WriteString(`,"hooks":[{"async":false,"command":`)
	serdeString(&b, command)
	if statusMessage != "" {
		b.WriteString(`,"statusMessage":`)
		serdeString(&b, statusMessage)
	}
	b.WriteString(`,"timeout":` + strconv.Itoa(timeout) + `,"type":"command"}]`)
	b.WriteString(`,"matcher":`)
	serdeString(&b, matcher)
	b.WriteString(`}`)
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func serdeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// codexTrustFor lists the trust entries for hookgate's handlers in the
// hooks file at path (as written): its groups' positions are the keys'.
func codexTrustFor(path string, data []byte) ([]codexTrust, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	return codexTrustAt(real, data)
}

// codexTrustAt lists the trust entries for hookgate's handlers in data, a
// hooks file whose path with its symlinks resolved is real (the keys'
// source).
func codexTrustAt(real string, data []byte) ([]codexTrust, error) {
	v, err := parseOrdered(data)
	if err != nil {
		return nil, err
	}
	root, _ := v.(*object)
	if root == nil {
		return nil, errors.New("not a JSON object")
	}
	hv, _ := root.get("hooks")
	hooksObj, _ := hv.(*object)
	if hooksObj == nil {
		return nil, nil
	}
	var out []codexTrust
	for _, ev := range hooksObj.keys {
		label, gated := codexEventLabels[ev]
		if !gated {
			continue
		}
		list, _ := hooksObj.vals[ev].([]any)
		for gi, g := range list {
			gob, _ := g.(*object)
			if gob == nil {
				continue
			}
			matcher, _ := gob.vals["matcher"].(string)
			handlers, _ := gob.vals["hooks"].([]any)
			for hi, hd := range handlers {
				ho, _ := hd.(*object)
				if ho == nil {
					continue
				}
				cmd, _ := ho.vals["command"].(string)
				if !isOurs(cmd) {
					continue
				}
				status, _ := ho.vals["statusMessage"].(string)
				timeout := 600
				if n, ok := ho.vals["timeout"].(interface{ String() string }); ok {
					if t, err := strconv.Atoi(n.String()); err == nil {
						timeout = t
					}
				}
				out = append(out, codexTrust{
					Key:  fmt.Sprintf("%s:%s:%d:%d", real, label, gi, hi),
					Hash: codexHandlerHash(label, matcher, cmd, status, timeout),
				})
			}
		}
	}
	return out, nil
}

// trustCodexHooks records trust for hookgate's entries in the hooks file
// at hooksPath in codexHome's config.toml (kept as it is otherwise, after
// a backup), replacing older hookgate trust for the same keys.
func trustCodexHooks(codexHome, hooksPath string, now time.Time) error {
	data, err := os.ReadFile(hooksPath)
	if err != nil {
		return err
	}
	entries, err := codexTrustFor(hooksPath, data)
	if err != nil {
		return fmt.Errorf("%s: %w", hooksPath, err)
	}
	cfg := filepath.Join(codexHome, "config.toml")
	old, err := os.ReadFile(cfg)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := upsertCodexTrust(string(old), entries)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg, err)
	}
	if out == string(old) {
		return nil
	}
	var prev []byte
	if old != nil {
		prev = old
	}
	return writeWithBackup(cfg, prev, []byte(out), now)
}

// codexProjectTrusted reports whether codexHome's config.toml marks dir
// (or the git root holding it) as a trusted project; Codex ignores an
// untrusted project's .codex entirely, and a config.toml that does not
// decode trusts nothing.
func codexProjectTrusted(codexHome, dir string) bool {
	path := filepath.Join(codexHome, "config.toml")
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	cfg, err := readCodexConfigView(path, b)
	if err != nil {
		return false
	}
	// Codex honours the trust of the directory itself and of the git root
	// holding it, not of any ancestor.
	cands := []string{filepath.Clean(dir)}
	for d := filepath.Clean(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			cands = append(cands, d)
			break
		}
	}
	for _, d := range cands {
		if cfg.Projects[d].TrustLevel == "trusted" {
			return true
		}
	}
	return false
}

// codexFileTrusted checks that config.toml holds, for each hookgate entry
// of the hooks file, the trust Codex would compute now, and does not
// disable it.
func codexFileTrusted(codexHome, path string, data []byte) error {
	entries, err := codexTrustFor(path, data)
	if err != nil {
		return err
	}
	cfgPath := filepath.Join(codexHome, "config.toml")
	raw, _ := os.ReadFile(cfgPath)
	cfg, err := readCodexConfigView(cfgPath, raw)
	if err != nil {
		return fmt.Errorf("Codex cannot read its configuration, so it runs no hook: %w", err)
	}
	for _, e := range entries {
		st := cfg.Hooks.State[e.Key]
		if st.Enabled != nil && !*st.Enabled {
			return fmt.Errorf("%s disables hookgate's hook %s", cfgPath, e.Key)
		}
		if st.TrustedHash != e.Hash {
			return fmt.Errorf("Codex does not trust %s (no trusted_hash %s in %s): codex exec would skip it; reinstall", e.Key, e.Hash, cfgPath)
		}
	}
	return nil
}

// codexListTrusted asks Codex's app-server (hooks/list) whether hookgate's
// entries in path are enabled and trusted.
func codexListTrusted(ctx context.Context, a VerifyArgs, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, a.Codex, "app-server")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+a.codexHome())
	cmd.Dir = a.Project
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("codex app-server: %w", err)
	}
	defer func() { in.Close(); cmd.Process.Kill(); cmd.Wait() }()
	cwd := a.Project
	if cwd == "" {
		cwd = a.Home
	}
	for _, m := range []string{
		`{"id":1,"method":"initialize","params":{"clientInfo":{"name":"hookgate","version":"1"}}}`,
		`{"method":"initialized"}`,
		fmt.Sprintf(`{"id":2,"method":"hooks/list","params":{"cwds":[%s]}}`, jsonString(cwd)),
	} {
		fmt.Fprintln(in, m)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	real, _ := filepath.EvalSymlinks(path)
	for sc.Scan() {
		var msg struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil || *msg.ID != 2 {
			continue
		}
		if len(msg.Error) > 0 {
			return fmt.Errorf("codex hooks/list: %s", msg.Error)
		}
		hooks := collectHooks(msg.Result)
		found := map[string]bool{}
		for _, h := range hooks {
			if !isOurs(h.Command) || (h.SourcePath != "" && h.SourcePath != real && h.SourcePath != path) {
				continue
			}
			if !h.Enabled {
				return fmt.Errorf("Codex lists hookgate's %s hook as disabled", h.EventName)
			}
			if h.TrustStatus != "trusted" && h.TrustStatus != "managed" {
				return fmt.Errorf("Codex lists hookgate's %s hook as %s: codex exec would skip it; reinstall", h.EventName, h.TrustStatus)
			}
			found[strings.ToLower(h.EventName)] = true
		}
		if !found["pretooluse"] {
			return fmt.Errorf("Codex does not list hookgate's PreToolUse hook from %s (wrong CODEX_HOME, hooks disabled, or an untrusted project)", path)
		}
		return nil
	}
	return fmt.Errorf("codex app-server gave no hooks/list answer (%v)", sc.Err())
}

// codexHook is what hooks/list reports of one hook.
type codexHook struct {
	Key         string `json:"key"`
	EventName   string `json:"eventName"`
	Command     string `json:"command"`
	SourcePath  string `json:"sourcePath"`
	Enabled     bool   `json:"enabled"`
	TrustStatus string `json:"trustStatus"`
}

// collectHooks finds every hook object in a hooks/list result, whatever
// the nesting (per cwd, per source).
func collectHooks(raw json.RawMessage) []codexHook {
	var out []codexHook
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["trustStatus"]; ok {
				b, _ := json.Marshal(x)
				var h codexHook
				if json.Unmarshal(b, &h) == nil {
					out = append(out, h)
				}
				return
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	var v any
	if json.Unmarshal(raw, &v) == nil {
		walk(v)
	}
	return out
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// trustCodexProject marks dir a trusted project in codexHome's
// config.toml: a [projects."DIR"] table appended to the text, checked by
// decoding the result (checkTOMLEdit).
func trustCodexProject(codexHome, dir string, now time.Time) error {
	cfg := filepath.Join(codexHome, "config.toml")
	old, err := os.ReadFile(cfg)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir = filepath.Clean(dir)
	doc, err := decodeCodexTOML(cfg, old)
	if err != nil {
		return err
	}
	key, err := tomlKey(dir)
	if err != nil {
		return err
	}
	if projects, _ := tomlTable(doc, "projects"); projects[dir] != nil {
		return fmt.Errorf("%s has [projects.%s] without trust_level = \"trusted\"; set it there", cfg, key)
	}
	line, err := tomlKeyValue("trust_level", "trusted")
	if err != nil {
		return err
	}
	out := appendTOML(string(old), "[projects."+key+"]\n"+line+"\n")
	err = checkTOMLEdit(cfg, string(old), out, func(doc map[string]any) bool {
		return tomlSet(doc, map[string]any{"trust_level": "trusted"}, "projects", dir)
	})
	if err != nil {
		return fmt.Errorf("%w; trust the project by hand or with Codex", err)
	}
	return writeWithBackup(cfg, old, []byte(out), now)
}
