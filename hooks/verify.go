package hooks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// VerifyArgs say which installation to check.
type VerifyArgs struct {
	InstallArgs
	// Codex is the codex binary asked through its app-server (hooks/list);
	// "" checks Codex's files alone.
	Codex string
}

// Verify checks that the harness will really run hookgate on its tool
// calls, from what the harness itself reads: the configuration file and
// the hookgate entry in it (first in line for each gated event, its
// binary executable, the fail-closed wrapper around it), the settings that
// would switch it off (Claude Code's disableAllHooks), and for Codex the
// trust Codex records (asked from Codex's app-server when a codex binary
// is given, else recomputed). It returns the configuration file and nil,
// or the first problem as an error.
func Verify(ctx context.Context, a VerifyArgs) (string, error) {
	path, err := ConfigPath(a.InstallArgs)
	if err != nil {
		return "", err
	}
	if a.Harness == Pi {
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), piMarker) {
			return path, fmt.Errorf("%s: no hookgate extension (%v)", path, err)
		}
		if sh := piShadowed(path); sh != "" {
			return path, fmt.Errorf("%s: Pi loads only that file from the directory and skips hookgate.ts", sh)
		}
		return path, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return path, fmt.Errorf("%s: %w: hookgate is not installed there", path, err)
	}
	v, err := parseOrdered(data)
	root, _ := v.(*object)
	if err != nil || root == nil {
		return path, fmt.Errorf("%s: not a JSON object (%v): the harness would not load it", path, err)
	}
	hv, _ := root.get("hooks")
	hooksObj, _ := hv.(*object)
	if hooksObj == nil {
		return path, fmt.Errorf("%s: no hooks", path)
	}
	for _, ev := range gatedEvents[a.Harness] {
		cmd, matcher, err := firstHandler(a.Harness, hooksObj, ev)
		if err != nil {
			return path, fmt.Errorf("%s: %s: %w", path, ev, err)
		}
		w, _ := shellWords(cmd)
		if len(w) < 5 || unwrap(w)[0] == w[0] {
			return path, fmt.Errorf("%s: %s: hookgate runs without the fail-closed wrapper (reinstall: a crash or a hang would let the tool run)", path, ev)
		}
		inner := unwrap(w)
		if cmd != wrappedCommand(a.Harness, inner) {
			return path, fmt.Errorf("%s: %s: hookgate's hook command is not the one install writes (its wrapper was changed); reinstall", path, ev)
		}
		if want := entryMatcher(a.Harness); a.Harness != Cursor && matcher != want {
			return path, fmt.Errorf("%s: %s: hookgate's entry matches %q, not every tool (%q); reinstall", path, ev, matcher, want)
		}
		if err := runsHookgate(ctx, inner[0]); err != nil {
			return path, fmt.Errorf("%s: %s: %w (every call would be denied)", path, ev, err)
		}
	}
	switch a.Harness {
	case ClaudeCode:
		if err := claudeHooksEnabled(a.InstallArgs); err != nil {
			return path, err
		}
	case Gemini:
		for _, f := range []string{path, filepath.Join(a.Home, ".gemini", "settings.json"), filepath.Join(a.Project, ".gemini", "settings.json")} {
			if why := geminiHooksDisabled(f); why != "" {
				return path, fmt.Errorf("%s: Gemini CLI would not run hookgate", why)
			}
		}
		if a.Scope == "project" && !geminiProjectTrusted(a.Home, a.Project) {
			return path, fmt.Errorf("Gemini CLI ignores %s: the folder is not in %s (GEMINI_CLI_TRUST_WORKSPACE=true on every run would also do)", filepath.Dir(path), geminiTrustedFolders(a.Home))
		}
	case Codex:
		if a.Scope == "project" && !codexProjectTrusted(a.codexHome(), a.Project) {
			return path, fmt.Errorf("Codex ignores %s: the project is not trusted in %s", filepath.Dir(path), filepath.Join(a.codexHome(), "config.toml"))
		}
		if a.Codex != "" {
			return path, codexListTrusted(ctx, a, path)
		}
		return path, codexFileTrusted(a.codexHome(), path, data)
	}
	return path, nil
}

// runsHookgate checks that bin is an executable hookgate ("hookgate
// version" answers as hookgate does).
func runsHookgate(ctx context.Context, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "hookgate ") {
		return fmt.Errorf("%s does not run as hookgate (%v)", bin, err)
	}
	return nil
}

// firstHandler returns the command (and its group's matcher) of the first
// handler for event ev: it must be hookgate's (a handler before it could
// answer first and allow).
func firstHandler(h Harness, hooksObj *object, ev string) (string, string, error) {
	list, _ := hooksObj.vals[ev].([]any)
	for _, item := range list {
		o, _ := item.(*object)
		if o == nil {
			continue
		}
		handlers := []any{o}
		if hs, ok := o.vals["hooks"].([]any); ok && h != Cursor {
			handlers = hs
		}
		matcher, _ := o.vals["matcher"].(string)
		for _, hd := range handlers {
			ho, _ := hd.(*object)
			if ho == nil {
				continue
			}
			cmd, _ := ho.vals["command"].(string)
			if isOurs(cmd) {
				return cmd, matcher, nil
			}
			return "", "", fmt.Errorf("another hook (%q) runs before hookgate", clipCommand(cmd))
		}
	}
	return "", "", errors.New("no hookgate entry")
}

func clipCommand(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// claudeHooksEnabled refuses settings that switch hooks off: Claude Code
// reads user, project and local settings; disableAllHooks in any of them
// turns off hookgate's.
func claudeHooksEnabled(a InstallArgs) error {
	user := filepath.Join(a.Home, ".claude")
	if a.ClaudeConfigDir != "" {
		user = a.ClaudeConfigDir
	}
	files := []string{filepath.Join(user, "settings.json")}
	if a.Project != "" {
		files = append(files, filepath.Join(a.Project, ".claude", "settings.json"), filepath.Join(a.Project, ".claude", "settings.local.json"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var s struct {
			DisableAllHooks bool `json:"disableAllHooks"`
		}
		if json.Unmarshal(b, &s) == nil && s.DisableAllHooks {
			return fmt.Errorf("%s sets disableAllHooks: Claude Code runs no hook", f)
		}
	}
	return nil
}

// codexFileTrusted checks that config.toml holds, for each hookgate entry
// of the hooks file, the trust Codex would compute now.
func codexFileTrusted(codexHome, path string, data []byte) error {
	entries, err := codexTrustFor(path, data)
	if err != nil {
		return err
	}
	raw, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	cfg := strings.ReplaceAll(string(raw), "\r\n", "\n")
	for _, e := range entries {
		header := "[hooks.state." + tomlQuote(e.Key) + "]"
		if i := strings.Index(cfg, header); i >= 0 {
			body := cfg[i+len(header):]
			if j := strings.Index(body, "\n["); j >= 0 {
				body = body[:j]
			}
			for _, l := range strings.Split(body, "\n") {
				if k, v, ok := strings.Cut(l, "="); ok && strings.TrimSpace(k) == "enabled" && strings.TrimSpace(v) == "false" {
					return fmt.Errorf("%s disables hookgate's hook %s", filepath.Join(codexHome, "config.toml"), e.Key)
				}
			}
		}
		if !strings.Contains(cfg, header+"\ntrusted_hash = "+tomlQuote(e.Hash)) {
			return fmt.Errorf("Codex does not trust %s (no trusted_hash %s in %s): codex exec would skip it; reinstall", e.Key, e.Hash, filepath.Join(codexHome, "config.toml"))
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
