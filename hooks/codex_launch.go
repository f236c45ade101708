package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Codex under sandboxd launch. Codex reads hooks, their trust
// (hooks.state), MCP servers and feature switches from its user layer,
// $CODEX_HOME/config.toml and hooks.json, and a user's config.toml can
// turn a session's hook off by its predictable key (docs/harness-launch.md
// §2.1). So the launch gives Codex a private CODEX_HOME of the session's:
// a writable directory (Codex keeps its databases, logs and transcripts
// there) whose config.toml and hooks.json are the session's and read-only
// inside. The user's own layer is never loaded; what a session needs of
// it (the model and its providers, and under --relax the MCP servers) is
// copied in, table by table.

// codexLauncher is how sandboxd launch starts the harness.
func codexLauncher() *launcher {
	return &launcher{
		program: "codex",
		// The API-key provider's host; a ChatGPT login talks to
		// chatgpt.com and auth.openai.com instead (--api-host).
		apiHosts:    []string{"api.openai.com"},
		apiKeys:     []APIKey{{Env: "OPENAI_API_KEY"}, {Env: "CODEX_API_KEY"}},
		baseURLEnv:  "OPENAI_BASE_URL",
		privateHome: "CODEX_HOME",
		configure:   codexLaunch,
		preflight:   codexLaunchPreflight,
		// clap: "-c X", "-cX", "--config X" and "--config=X"; no prefix
		// matching. Global options are also read after a subcommand.
		refused: []refusedArg{
			{[]string{"-c", "--config", "--enable", "--disable", "-p", "--profile", "--ignore-user-config", "--ignore-rules"},
				"configuration (its hook, the native tool ceiling and the MCP servers)"},
			{[]string{"--dangerously-bypass-hook-trust", "--trust"}, "hook gate (hook trust decides which hooks run)"},
			{[]string{"-s", "--sandbox", "--approve-for-me", "--not-so-yolo"},
				"sandbox settings (sandboxd's sandbox is the boundary; Codex's own cannot start inside it)"},
			{[]string{"--search", "--oss", "--local-provider", "--cyber-access-program", "--thread-source"},
				"native tool ceiling and model routing"},
			{[]string{"--remote", "--remote-auth-token-env"}, "sandbox (the session would run on another machine)"},
			{[]string{"-C", "--cd", "--add-dir", "--worktree"}, "workspace (the sandbox's filesystem rules are the working directory's)"},
		},
		// clap reads global options before the subcommand (codex -m x
		// mcp list); these take a value.
		optionValues: []string{"-c", "--config", "--enable", "--disable", "--remote", "--remote-auth-token-env",
			"-i", "--image", "-m", "--model", "--local-provider", "-p", "--profile", "-s", "--sandbox", "-C", "--cd",
			"--add-dir", "-a", "--ask-for-approval"},
		// Sessions (exec and its alias e, review, resume, fork) pass.
		subcommands: []string{"mcp", "mcp-server", "plugin", "features", "login", "logout", "app-server",
			"remote-control", "exec-server", "sandbox", "cloud", "apply", "a", "debug", "doctor", "update", "queue", "agents",
			"completion", "responses-api-proxy", "archive", "unarchive", "delete", "migrate-rollouts", "migrate-nfs-db"},
	}
}

// codexCeiling is how Codex takes back each native tool before it starts
// (docs/harness-launch.md §2.2): a feature switched off, a configuration
// key, or (apply_patch) a model catalog without it.
var codexCeiling = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"exec_command": "feature", "shell": "feature", "Bash": "feature", "write_stdin": "feature",
		"view_image": "feature", "web_search": "key", "apply_patch": "catalog",
	}
})

// codexLaunch writes Codex's session configuration into the private
// CODEX_HOME: hooks.json with hookgate's entries, and config.toml with
// their trust, hooks on, Codex's own sandbox and approvals off (sandboxd's
// sandbox and gate decide), the native ceiling, the workspace recorded as
// an untrusted project (Codex then loads none of its .codex, hooks and
// servers included; codex exec asks nothing, the terminal UI shows its
// "Folder access" notice), the session's MCP servers and,
// copied from the user's config.toml, the model settings (and the user's
// MCP servers when relaxed).
func codexLaunch(p LaunchPlan) (LaunchConfig, error) {
	hooksObj, err := sessionHooks(p)
	if err != nil {
		return LaunchConfig{}, err
	}
	hooksJSON := encodeOrdered(hooksObj)
	home, err := filepath.EvalSymlinks(p.PrivateHome)
	if err != nil {
		return LaunchConfig{}, fmt.Errorf("launch: %w", err)
	}
	trust, err := codexTrustAt(filepath.Join(home, "hooks.json"), hooksJSON)
	if err != nil {
		return LaunchConfig{}, err
	}
	user, err := codexUserConfig(p)
	if err != nil {
		return LaunchConfig{}, err
	}
	var top, features []string
	set := map[string]bool{}
	key := func(k, v string) { top = append(top, k+" = "+v); set[k] = true }
	key("check_for_update_on_startup", "false")
	key("approval_policy", tomlQuote("never"))
	key("sandbox_mode", tomlQuote("danger-full-access"))
	if u := p.getenv("OPENAI_BASE_URL"); u != "" {
		// Codex reads no OPENAI_BASE_URL; its configuration key is this.
		key("openai_base_url", tomlQuote(u))
	}
	files := map[string][]byte{"hooks.json": hooksJSON}
	features = append(features, "hooks = true")
	shellOff := false
	for _, t := range p.Denied {
		switch codexCeiling()[t] {
		case "feature":
			if t == "view_image" {
				features = append(features, "view_image = false")
			} else if !shellOff {
				// exec_command and write_stdin go together.
				features = append(features, "shell_tool = false")
				shellOff = true
			}
		case "key":
			key("web_search", tomlQuote("disabled"))
		case "catalog":
			catalog, err := codexCatalogWithoutPatch(p)
			if err != nil {
				return LaunchConfig{}, err
			}
			files["model-catalog.json"] = catalog
			key("model_catalog_json", tomlQuote(filepath.Join(home, "model-catalog.json")))
		default:
			return LaunchConfig{}, fmt.Errorf("launch: Codex has no setting that takes back %s", t)
		}
	}
	var b strings.Builder
	b.WriteString("# sandboxd launch: this session's Codex configuration (CODEX_HOME), read-only inside the sandbox.\n")
	for _, l := range top {
		b.WriteString(l + "\n")
	}
	for _, l := range user.top {
		k, _, _ := strings.Cut(l, "=")
		if !set[strings.TrimSpace(k)] {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString("\n[features]\n" + strings.Join(features, "\n") + "\n")
	b.WriteString("\n[analytics]\nenabled = false\n\n[feedback]\nenabled = false\n")
	if p.Project != "" {
		b.WriteString("\n[projects." + tomlQuote(filepath.Clean(p.Project)) + "]\ntrust_level = \"untrusted\"\n")
	}
	names := map[string]bool{}
	for _, s := range p.MCP {
		if !codexServerName().MatchString(s.Name) {
			return LaunchConfig{}, fmt.Errorf("launch: MCP server name %q: Codex takes letters, digits, '-' and '_'", s.Name)
		}
		names[s.Name] = true
		b.WriteString("\n[mcp_servers." + s.Name + "]\nurl = " + tomlQuote(s.URL) + "\n")
		if s.BearerEnv != "" {
			b.WriteString("bearer_token_env_var = " + tomlQuote(s.BearerEnv) + "\n")
		}
	}
	for _, sec := range user.tables {
		if n := sec.mcpName(); n != "" && names[n] {
			return LaunchConfig{}, fmt.Errorf("launch: the user's MCP server %q has the name of one of the session's", n)
		}
		b.WriteString("\n" + strings.Join(sec.lines, "\n") + "\n")
	}
	// The hook's trust: Codex skips an untrusted hook silently.
	for _, e := range trust {
		b.WriteString("\n[hooks.state." + tomlQuote(e.Key) + "]\ntrusted_hash = " + tomlQuote(e.Hash) + "\n")
	}
	files["config.toml"] = []byte(b.String())
	var args []string
	if !slices.Contains(p.Args, "--no-daemon") {
		// The terminal UI would start, or attach to, a background app
		// server on a Unix socket, which the sandbox refuses (and one
		// outside would run beyond it); Codex refuses the flag twice.
		args = []string{"--no-daemon"}
	}
	return LaunchConfig{
		Args:      args,
		HomeFiles: files,
		Env:       []string{"CODEX_HOME=" + p.PrivateHome},
		// CODEX_SQLITE_HOME would keep the session's state elsewhere;
		// CODEX_EXEC_SERVER_URL would run its commands on an executor
		// elsewhere.
		Unset: []string{"CODEX_SQLITE_HOME", "CODEX_EXEC_SERVER_URL"},
		// Its transcripts, for codex resume outside.
		Keep: map[string]string{"sessions": filepath.Join(CodexHome(p.getenv, p.Home), "sessions")},
	}, nil
}

// codexServerName is what Codex accepts as an MCP server's name.
var codexServerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]+$`) })

// codexUserPart is what a session copies of the user's config.toml: its
// model settings at the top level, and tables (the model providers, and
// under --relax the MCP servers), each as its lines.
type codexUserPart struct {
	top    []string
	tables []codexTable
}

type codexTable struct {
	header string
	lines  []string
}

// mcpName is the MCP server a table belongs to ("" for another table).
func (t codexTable) mcpName() string {
	rest, ok := strings.CutPrefix(t.header, "mcp_servers.")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ".")
	return strings.Trim(name, `"'`)
}

// codexCopiedKeys are the user's top-level settings a session keeps: which
// model, through which provider, how it reasons.
var codexCopiedKeys = []string{"model", "model_provider", "model_reasoning_effort", "model_reasoning_summary",
	"model_verbosity", "model_context_window", "openai_base_url", "chatgpt_base_url"}

// codexUserConfig reads what the session copies of the user's
// config.toml ($CODEX_HOME, else ~/.codex). Codex's TOML is read line by
// line: a copied line must be one "key = value" (or a table header of a
// copied table), so that nothing the user wrote can become a table of
// the session's (hooks.state, features); a config in another form
// (multi-line strings or arrays, inline or dotted forms of the copied
// tables) is refused with the line.
func codexUserConfig(p LaunchPlan) (codexUserPart, error) {
	path := filepath.Join(CodexHome(p.getenv, p.Home), "config.toml")
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return codexUserPart{}, nil
	}
	if err != nil {
		return codexUserPart{}, fmt.Errorf("launch: %w", err)
	}
	copied := func(header string) bool {
		for _, pre := range []string{"model_providers", "mcp_servers"} {
			if pre == "mcp_servers" && !p.Relax {
				continue
			}
			if header == pre || strings.HasPrefix(header, pre+".") {
				return true
			}
		}
		return false
	}
	var out codexUserPart
	var cur *codexTable
	header := ""  // the current table; "" is the top level
	pending := 0  // open brackets of a value that goes on below
	longStr := "" // the quotes of a multi-line string that goes on below
	for i, line := range strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		bad := func(why string) error {
			return fmt.Errorf("launch: %s:%d: %s; sandboxd launch copies the user's Codex model settings, model providers and MCP servers line by line (one [TABLE] header or key = value per line)", path, i+1, why)
		}
		// The rest of a value of a table not copied: skipped whole, so
		// that none of its lines is read as a header.
		if longStr != "" {
			if strings.Count(t, longStr)%2 == 1 {
				longStr = ""
			}
			continue
		}
		if pending > 0 {
			pending += tomlBalance(t)
			continue
		}
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if strings.HasPrefix(t, "[") {
			h, ok := codexHeader(t)
			if !ok && copied(strings.Trim(t, "[] ")) {
				return out, bad("an array of tables or a header sandboxd does not read")
			}
			header, cur = h, nil
			if !ok {
				header = t
			}
			if ok && copied(h) {
				out.tables = append(out.tables, codexTable{header: h, lines: []string{"[" + h + "]"}})
				cur = &out.tables[len(out.tables)-1]
			}
			continue
		}
		k, v, ok := strings.Cut(t, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		use := cur != nil
		dotted := false
		if cur == nil && header == "" {
			switch {
			case k == "model_providers" || p.Relax && k == "mcp_servers":
				return out, bad("an inline form of a copied table")
			case strings.HasPrefix(k, "model_providers.") || p.Relax && strings.HasPrefix(k, "mcp_servers."):
				use, dotted = true, true
			case slices.Contains(codexCopiedKeys, k):
				use = true
			}
		}
		if !use {
			for _, q := range []string{`"""`, "'''"} {
				if strings.Count(v, q)%2 == 1 {
					longStr = q
				}
			}
			if longStr == "" {
				pending = tomlBalance(v)
			}
			continue
		}
		if !ok || k == "" || strings.ContainsAny(t, "\r\x00") || !codexOneLineValue(v) {
			return out, bad("not one key = value")
		}
		switch {
		case cur != nil:
			cur.lines = append(cur.lines, t)
		case dotted:
			// model_providers.x.base_url = "...": kept as its table.
			parts := strings.SplitN(k, ".", 3)
			if len(parts) < 3 {
				return out, bad("an inline form of a copied table")
			}
			h := parts[0] + "." + parts[1]
			out.tables = append(out.tables, codexTable{header: h, lines: []string{"[" + h + "]", parts[2] + " = " + v}})
		default:
			out.top = append(out.top, k+" = "+v)
		}
	}
	// Tables of the same header (a dotted top-level key and its table)
	// merge, so the written file declares each once.
	merged := []codexTable{}
	for _, t := range out.tables {
		j := slices.IndexFunc(merged, func(m codexTable) bool { return m.header == t.header })
		if j < 0 {
			merged = append(merged, t)
			continue
		}
		merged[j].lines = append(merged[j].lines, t.lines[1:]...)
	}
	out.tables = merged
	return out, nil
}

// codexHeader reads a table header line "[a.b]" (with an optional
// comment); ok is false for an array of tables or a malformed header.
func codexHeader(t string) (string, bool) {
	if strings.HasPrefix(t, "[[") {
		return "", false
	}
	end := strings.Index(t, "]")
	if end < 0 {
		return "", false
	}
	rest := strings.TrimSpace(t[end+1:])
	if rest != "" && !strings.HasPrefix(rest, "#") {
		return "", false
	}
	h := strings.TrimSpace(t[1:end])
	return h, h != "" && !strings.ContainsAny(h, "[]")
}

// tomlBalance is the number of brackets ('[', '{') a line opens and does
// not close, outside its strings.
func tomlBalance(v string) int {
	depth, _ := tomlScan(v)
	return depth
}

// tomlScan reads one line of a TOML value up to its comment: the brackets
// it leaves open, and whether it leaves a string open.
func tomlScan(v string) (depth int, openString bool) {
	inStr := byte(0)
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inStr != 0:
			if c == '\\' && inStr == '"' {
				i++
			} else if c == inStr {
				inStr = 0
			}
		case c == '"' || c == '\'':
			inStr = c
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == '#':
			return depth, false
		}
	}
	return depth, inStr != 0
}

// codexOneLineValue reports whether v is a whole TOML value on its line: a
// string (not multi-line), or a number, boolean, array or inline table
// whose brackets close on the line.
func codexOneLineValue(v string) bool {
	if v == "" || strings.Contains(v, `"""`) || strings.Contains(v, "'''") || strings.ContainsAny(v, "\r\n\x00") {
		return false
	}
	depth, open := tomlScan(v)
	return depth == 0 && !open
}

// codexCatalogWithoutPatch asks Codex for its model catalog (codex debug
// models) and returns it with every model's apply_patch tool removed:
// Codex has no switch for apply_patch, which comes from the catalog's
// apply_patch_tool_type (run ap1).
func codexCatalogWithoutPatch(p LaunchPlan) ([]byte, error) {
	if p.Program == "" {
		return nil, errors.New("launch: taking back Codex's apply_patch needs its model catalog, and the codex program is unknown")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Program, "debug", "models")
	cmd.Env = []string{"PATH=" + p.getenv("PATH"), "HOME=" + p.Home, "CODEX_HOME=" + p.PrivateHome}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("launch: %s debug models (its model catalog, to take back apply_patch): %v: %s", p.Program, err, strings.TrimSpace(stderr.String()))
	}
	var cat map[string]any
	if err := json.Unmarshal(out, &cat); err != nil {
		return nil, fmt.Errorf("launch: %s debug models: not a model catalog: %v", p.Program, err)
	}
	models, _ := cat["models"].([]any)
	if len(models) == 0 {
		return nil, fmt.Errorf("launch: %s debug models: the catalog lists no model", p.Program)
	}
	for _, m := range models {
		mo, ok := m.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("launch: %s debug models: a model that is not an object", p.Program)
		}
		mo["apply_patch_tool_type"] = nil
	}
	b, err := json.MarshalIndent(cat, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// codexLaunchPreflight refuses a launch whose machine-wide Codex
// configuration (/etc/codex: requirements.toml and managed_config.toml,
// which rank above the session's layer) would drop or switch off the
// session's hook (allow_managed_hooks_only, hooks = false among the
// features) or undo its ceiling: a web search mode other than disabled, a
// feature the ceiling switched off switched on, or a model catalog of its
// own when apply_patch is taken back. Tables and keys are read as written
// in either form ([features] hooks = false, features.hooks = false).
func codexLaunchPreflight(p LaunchPlan) error {
	off := map[string]bool{}
	for _, t := range p.Denied {
		switch {
		case t == "view_image":
			off["view_image"] = true
		case codexCeiling()[t] == "feature":
			off["shell_tool"] = true
		}
	}
	for _, f := range []string{"requirements.toml", "managed_config.toml"} {
		path := p.rooted(filepath.Join("/etc/codex", f))
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		table := ""
		for i, line := range strings.Split(string(raw), "\n") {
			t := strings.ReplaceAll(strings.ReplaceAll(strings.TrimSpace(line), " ", ""), "\t", "")
			if h, ok := codexHeader(t); ok {
				table = h
				continue
			}
			k, v, _ := strings.Cut(t, "=")
			v, _, _ = strings.Cut(v, "#")
			if table != "" {
				k = table + "." + k
			}
			at := fmt.Sprintf("%s:%d", path, i+1)
			feature, isFeature := strings.CutPrefix(k, "features.")
			switch {
			case k == "allow_managed_hooks_only" && v == "true":
				return fmt.Errorf("%s sets allow_managed_hooks_only: Codex would run no hook but the machine's, not the session's gate", at)
			case k == "features.hooks" && v == "false":
				return fmt.Errorf("%s turns Codex's hooks off: the session's gate would not run", at)
			case isFeature && off[feature] && v != "false":
				return fmt.Errorf("%s sets the feature %s, which the session's ceiling turns off", at, feature)
			case k == "web_search" && v != `"disabled"` && slices.Contains(p.Denied, "web_search"):
				return fmt.Errorf("%s sets web_search = %s, which the session's ceiling turns off (no hook sees Codex's web search)", at, v)
			case k == "model_catalog_json" && slices.Contains(p.Denied, "apply_patch"):
				return fmt.Errorf("%s sets a model catalog of its own, which would bring back apply_patch the session's ceiling takes back", at)
			}
		}
	}
	return nil
}
