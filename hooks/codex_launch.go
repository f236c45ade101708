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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
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
	// The session's configuration is a decoded document, written by the
	// library: what is copied of the user's is values, never text, so
	// none of it can become a table of the session's.
	doc := map[string]any{}
	for k, v := range user.top {
		doc[k] = v
	}
	doc["check_for_update_on_startup"] = false
	doc["approval_policy"] = "never"
	doc["sandbox_mode"] = "danger-full-access"
	if u := p.getenv("OPENAI_BASE_URL"); u != "" {
		// Codex reads no OPENAI_BASE_URL; its configuration key is this.
		doc["openai_base_url"] = u
	}
	files := map[string][]byte{"hooks.json": hooksJSON}
	features := map[string]any{"hooks": true}
	for _, t := range p.Denied {
		switch codexCeiling()[t] {
		case "feature":
			if t == "view_image" {
				features["view_image"] = false
			} else {
				// exec_command and write_stdin go together.
				features["shell_tool"] = false
			}
		case "key":
			doc["web_search"] = "disabled"
		case "catalog":
			catalog, err := codexCatalogWithoutPatch(p)
			if err != nil {
				return LaunchConfig{}, err
			}
			files["model-catalog.json"] = catalog
			doc["model_catalog_json"] = filepath.Join(home, "model-catalog.json")
		default:
			return LaunchConfig{}, fmt.Errorf("launch: Codex has no setting that takes back %s", t)
		}
	}
	doc["features"] = features
	doc["analytics"] = map[string]any{"enabled": false}
	doc["feedback"] = map[string]any{"enabled": false}
	if p.Project != "" {
		doc["projects"] = map[string]any{filepath.Clean(p.Project): map[string]any{"trust_level": "untrusted"}}
	}
	if user.providers != nil {
		doc["model_providers"] = user.providers
	}
	servers := map[string]any{}
	for name, v := range user.servers {
		servers[name] = v
	}
	for _, s := range p.MCP {
		if !codexServerName().MatchString(s.Name) {
			return LaunchConfig{}, fmt.Errorf("launch: MCP server name %q: Codex takes letters, digits, '-' and '_'", s.Name)
		}
		if _, ok := user.servers[s.Name]; ok {
			return LaunchConfig{}, fmt.Errorf("launch: the user's MCP server %q has the name of one of the session's", s.Name)
		}
		server := map[string]any{"url": s.URL}
		if s.BearerEnv != "" {
			server["bearer_token_env_var"] = s.BearerEnv
		}
		servers[s.Name] = server
	}
	if len(servers) > 0 {
		doc["mcp_servers"] = servers
	}
	// The hook's trust: Codex skips an untrusted hook silently.
	state := map[string]any{}
	for _, e := range trust {
		state[e.Key] = map[string]any{"trusted_hash": e.Hash}
	}
	doc["hooks"] = map[string]any{"state": state}
	text, err := toml.Marshal(doc)
	if err != nil {
		return LaunchConfig{}, fmt.Errorf("launch: the session's config.toml: %w", err)
	}
	files["config.toml"] = append([]byte("# sandboxd launch: this session's Codex configuration (CODEX_HOME), read-only inside the sandbox.\n"), text...)
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

// codexUserPart is what a session copies of the user's config.toml, as
// decoded values: its model settings at the top level, its model
// providers, and under --relax its MCP servers.
type codexUserPart struct {
	top       map[string]any
	providers any
	servers   map[string]any
}

// codexCopiedKeys are the user's top-level settings a session keeps: which
// model, through which provider, how it reasons.
var codexCopiedKeys = []string{"model", "model_provider", "model_reasoning_effort", "model_reasoning_summary",
	"model_verbosity", "model_context_window", "openai_base_url", "chatgpt_base_url"}

// codexUserConfig reads what the session copies of the user's
// config.toml ($CODEX_HOME, else ~/.codex), decoded by the TOML library:
// any form TOML allows (multi-line strings and arrays, inline tables,
// dotted keys) is read as Codex reads it. A file that does not decode is
// refused with its line and column (Codex would refuse it too), as are
// MCP servers, under --relax, that are not a table of tables.
func codexUserConfig(p LaunchPlan) (codexUserPart, error) {
	path := filepath.Join(CodexHome(p.getenv, p.Home), "config.toml")
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return codexUserPart{}, nil
	}
	if err != nil {
		return codexUserPart{}, fmt.Errorf("launch: %w", err)
	}
	doc, err := decodeCodexTOML(path, raw)
	if err != nil {
		return codexUserPart{}, fmt.Errorf("launch: the user's Codex configuration, whose model settings the session copies: %w", err)
	}
	out := codexUserPart{top: map[string]any{}, providers: doc["model_providers"]}
	for _, k := range codexCopiedKeys {
		if v, ok := doc[k]; ok {
			out.top[k] = v
		}
	}
	if v, ok := doc["mcp_servers"]; ok && p.Relax {
		servers, ok := v.(map[string]any)
		if !ok {
			return codexUserPart{}, fmt.Errorf("launch: %s: mcp_servers is not a table of servers", path)
		}
		for name, s := range servers {
			if _, ok := s.(map[string]any); !ok {
				return codexUserPart{}, fmt.Errorf("launch: %s: mcp_servers.%s is not a table", path, name)
			}
		}
		out.servers = servers
	}
	return out, nil
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
// own when apply_patch is taken back. The files are parsed as TOML, so a
// key counts in any form ([features] hooks = false, features.hooks =
// false, features = { hooks = false }); a file that does not parse refuses
// the launch.
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
		var refusal error
		err = tomlLeaves(raw, func(key []string, v *unstable.Node, line int) {
			if refusal != nil {
				return
			}
			k := strings.Join(key, ".")
			at := fmt.Sprintf("%s:%d", path, line)
			isTrue := v.Kind == unstable.Bool && string(v.Data) == "true"
			isFalse := v.Kind == unstable.Bool && string(v.Data) == "false"
			feature, isFeature := strings.CutPrefix(k, "features.")
			switch {
			case k == "allow_managed_hooks_only" && isTrue:
				refusal = fmt.Errorf("%s sets allow_managed_hooks_only: Codex would run no hook but the machine's, not the session's gate", at)
			case k == "features.hooks" && isFalse:
				refusal = fmt.Errorf("%s turns Codex's hooks off: the session's gate would not run", at)
			case isFeature && off[feature] && !isFalse:
				refusal = fmt.Errorf("%s sets the feature %s, which the session's ceiling turns off", at, feature)
			case k == "web_search" && !(v.Kind == unstable.String && string(v.Data) == "disabled") && slices.Contains(p.Denied, "web_search"):
				val := string(v.Data)
				if v.Kind == unstable.String {
					val = strconv.Quote(val)
				}
				refusal = fmt.Errorf("%s sets web_search = %s, which the session's ceiling turns off (no hook sees Codex's web search)", at, val)
			case k == "model_catalog_json" && slices.Contains(p.Denied, "apply_patch"):
				refusal = fmt.Errorf("%s sets a model catalog of its own, which would bring back apply_patch the session's ceiling takes back", at)
			}
		})
		if err != nil {
			return fmt.Errorf("%s: Codex cannot read it, so the launch cannot tell whether it keeps the session's hook: %w", path, err)
		}
		if refusal != nil {
			return refusal
		}
	}
	return nil
}
