package hooks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Gemini CLI: BeforeTool hooks in settings.json (user: ~/.gemini;
// project: .gemini/, read only in a trusted folder), matcher groups whose
// matchers are regular expressions, timeouts in milliseconds. It denies
// only on {"decision":"deny"} (or exit 2 with stderr); exit 1 is a
// warning and a timeout runs the tool.

func geminiEvents() map[string]Kind {
	return kinds(map[string]Kind{"BeforeTool": KindTool},
		"SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
		"BeforeToolSelection", "AfterTool", "Notification", "PreCompress")
}

func geminiProtocol() *protocol {
	return &protocol{
		events:    geminiEvents(),
		extraURLs: geminiRawGitHub,
		encode: func(c Call, r Reply, reason, _ string) Output {
			switch {
			case c.Kind == KindOther || r == ReplyPass:
				return Output{Stdout: emptyObject}
			case r == ReplyAllow:
				return Output{Stdout: encodeJSON(geminiReply{Decision: "allow"})}
			}
			return Output{Stdout: encodeJSON(geminiReply{Decision: "deny", Reason: reason})}
		},
		failStdout:   func(reason string) []byte { return encodeJSON(geminiReply{Decision: "deny", Reason: reason}) },
		answerShapes: []string{`'{}'`, `'{"decision":"allow"}'`, `'{"decision":"deny",'*'}'`},
		denyShapes:   []string{`''`, `'{"decision":"deny",'*'}'`},
		launch:       geminiLauncher,
		install: installer{
			path: func(a InstallArgs, base string, _ bool) string {
				return filepath.Join(base, ".gemini", "settings.json")
			},
			events:  []string{"BeforeTool"},
			matcher: ".*",
			handler: func(a InstallArgs, _, cmd string) *object {
				h := newObject()
				h.set("type", "command")
				h.set("command", cmd)
				h.set("name", "hookgate")
				// Gemini CLI timeouts are in milliseconds.
				h.set("timeout", json.Number(fmt.Sprint(hookTimeout*1000)))
				return h
			},
			projectTrust: func(a InstallArgs, path string) error {
				if err := geminiTrustRefused(a, path); err != nil {
					return err
				}
				if a.GeminiTrustWorkspace == "true" || geminiProjectTrusted(a.Home, a.Project) {
					return nil
				}
				if a.TrustProject {
					return trustGeminiProject(a.Home, a.Project, a.now())
				}
				return fmt.Errorf("Gemini CLI ignores %s unless the folder is trusted: install with --trust-project (adds it to %s), or run gemini with GEMINI_CLI_TRUST_WORKSPACE=true and install with --scope user",
					filepath.Dir(path), geminiTrustedFolders(a.Home))
			},
			verify: func(_ context.Context, a VerifyArgs, path string, _ []byte) error {
				for _, f := range []string{path, filepath.Join(a.Home, ".gemini", "settings.json"), filepath.Join(a.Project, ".gemini", "settings.json")} {
					if why := geminiHooksDisabled(f); why != "" {
						return fmt.Errorf("%s: Gemini CLI would not run hookgate", why)
					}
				}
				if a.Scope != "project" {
					return nil
				}
				if err := geminiTrustRefused(a.InstallArgs, path); err != nil {
					return err
				}
				if a.GeminiTrustWorkspace != "true" && !geminiProjectTrusted(a.Home, a.Project) {
					return fmt.Errorf("Gemini CLI ignores %s: the folder is not in %s (GEMINI_CLI_TRUST_WORKSPACE=true on every run would also do)", filepath.Dir(path), geminiTrustedFolders(a.Home))
				}
				return nil
			},
		},
	}
}

// Gemini CLI loads a workspace's .gemini/settings.json (its hooks too)
// only in a trusted folder: ~/.gemini/trustedFolders.json maps a path to
// TRUST_FOLDER (that folder) or TRUST_PARENT (its parent's children), or
// the run sets GEMINI_CLI_TRUST_WORKSPACE=true. A headless run in an
// untrusted folder refuses to start; an interactive one asks.

// geminiTrustRefused refuses a project's hooks where the environment
// says GEMINI_CLI_TRUST_WORKSPACE=false: Gemini CLI then trusts no
// folder, whatever trustedFolders.json says.
func geminiTrustRefused(a InstallArgs, path string) error {
	if a.GeminiTrustWorkspace == "false" {
		return fmt.Errorf("Gemini CLI ignores %s: GEMINI_CLI_TRUST_WORKSPACE=false in this environment trusts no folder", filepath.Dir(path))
	}
	return nil
}

// geminiTrustedFolders is the trusted-folders file under home.
func geminiTrustedFolders(home string) string {
	return filepath.Join(home, ".gemini", "trustedFolders.json")
}

// geminiProjectTrusted reports whether dir is trusted in home's
// trustedFolders.json.
func geminiProjectTrusted(home, dir string) bool {
	b, err := os.ReadFile(geminiTrustedFolders(home))
	if err != nil {
		return false
	}
	var m map[string]string
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	dir = filepath.Clean(dir)
	for p, level := range m {
		p = filepath.Clean(p)
		switch strings.ToUpper(level) {
		case "TRUST_FOLDER":
			if dir == p || strings.HasPrefix(dir, p+"/") {
				return true
			}
		case "TRUST_PARENT":
			if parent := filepath.Dir(p); dir == parent || strings.HasPrefix(dir, parent+"/") {
				return true
			}
		}
	}
	return false
}

// trustGeminiProject adds dir as TRUST_FOLDER to home's trustedFolders.json.
func trustGeminiProject(home, dir string, now time.Time) error {
	path := geminiTrustedFolders(home)
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	m := map[string]string{}
	if len(old) > 0 {
		if err := json.Unmarshal(old, &m); err != nil {
			return fmt.Errorf("%s: not a JSON object of folders (%v); not touching it", path, err)
		}
	}
	m[filepath.Clean(dir)] = "TRUST_FOLDER"
	out, _ := json.MarshalIndent(m, "", "  ")
	return writeWithBackup(path, old, append(out, '\n'), now)
}

// geminiHooksDisabled returns why settings at path switch hookgate's hook
// off (hooksConfig.enabled: false, or hookgate in hooksConfig.disabled), or
// "".
func geminiHooksDisabled(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var s struct {
		HooksConfig struct {
			Enabled  *bool    `json:"enabled"`
			Disabled []string `json:"disabled"`
		} `json:"hooksConfig"`
	}
	if json.Unmarshal(b, &s) != nil {
		return ""
	}
	if s.HooksConfig.Enabled != nil && !*s.HooksConfig.Enabled {
		return path + " sets hooksConfig.enabled: false"
	}
	for _, d := range s.HooksConfig.Disabled {
		if d == "hookgate" || isOurs(d) {
			return path + " lists hookgate in hooksConfig.disabled"
		}
	}
	return ""
}

type geminiReply struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// geminiRawGitHub returns the hosts Gemini CLI's web_fetch fetches instead
// of the URLs given: it rewrites a github.com URL whose path holds "/blob/"
// to raw.githubusercontent.com before fetching it itself.
func geminiRawGitHub(urls []string) []string {
	var out []string
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err == nil && strings.EqualFold(strings.TrimSuffix(u.Hostname(), "."), "github.com") && strings.Contains(u.EscapedPath(), "/blob/") {
			out = append(out, "https://raw.githubusercontent.com/")
		}
	}
	return out
}

// geminiLauncher is how sandboxd launch starts Gemini CLI.
func geminiLauncher() *launcher {
	return &launcher{
		program:  "gemini",
		apiHosts: []string{"generativelanguage.googleapis.com"},
		// x-goog-api-key.
		apiKeys:    []APIKey{{Env: "GEMINI_API_KEY"}, {Env: "GOOGLE_API_KEY"}},
		baseURLEnv: "GOOGLE_GEMINI_BASE_URL",
		// Its chats, logs and history; settings.json, trustedFolders.json
		// and policies stay in the discarded home overlay.
		stateDirs: []string{".gemini/tmp", ".gemini/history"},
		configure: geminiLaunch,
		preflight: geminiLaunchPreflight,
		refused: []refusedArg{
			{[]string{"--policy", "--admin-policy", "--adminPolicy"}, "policy engine (its rules can allow what the session's settings exclude)"},
			{[]string{"--allowed-tools", "--allowedTools"}, "native tool ceiling"},
			{[]string{"--allowed-mcp-server-names", "--allowedMcpServerNames"}, "MCP configuration"},
			{[]string{"-e", "--extensions", "-l", "--list-extensions", "--listExtensions"}, "hook gate (extensions bring hooks and MCP servers)"},
			{[]string{"-s", "--sandbox", "--acp", "--experimental-acp", "--experimentalAcp"}, "sandbox (Gemini CLI would relaunch itself elsewhere, or be driven by another program)"},
			{[]string{"--skip-trust", "--skipTrust"}, "settings (folder trust is the launch's)"},
			{[]string{"--fake-responses", "--fakeResponses", "--fake-responses-non-strict", "--fakeResponsesNonStrict",
				"--record-responses", "--recordResponses"}, "model (test options)"},
		},
		subcommands: []string{"mcp", "extensions", "extension", "skills", "skill", "hooks", "hook", "gemma"},
	}
}

// geminiLaunch writes Gemini CLI's session configuration as its system
// settings (GEMINI_CLI_SYSTEM_SETTINGS_PATH), the layer that wins over the
// user's and the workspace's: hookgate's BeforeTool entry under a name of
// this session's (a user's hooksConfig.disabled names hooks, and no layer
// can undo it), hooks on, folder trust off (hooks run in an untrusted
// folder only so), the ceiling in tools.exclude, and the session's MCP
// servers, the only ones unless relaxed: mcp.allowed holds their names
// and mcp.excluded the user's and the workspace's (an allowlist that
// intersects to nothing would allow every server). -e none loads no
// extension (they bring hooks and servers).
func geminiLaunch(p LaunchPlan) (LaunchConfig, error) {
	settings, err := sessionHooks(p)
	if err != nil {
		return LaunchConfig{}, err
	}
	name := geminiSessionHookName(p.Dir)
	hv, _ := settings.get("hooks")
	for _, g := range hv.(*object).vals["BeforeTool"].([]any) {
		for _, h := range g.(*object).vals["hooks"].([]any) {
			h.(*object).set("name", name)
		}
	}
	hc := newObject()
	hc.set("enabled", true)
	settings.set("hooksConfig", hc)
	trust := newObject()
	trust.set("enabled", false)
	sec := newObject()
	sec.set("folderTrust", trust)
	settings.set("security", sec)
	tools := newObject()
	tools.set("exclude", toAny(p.Denied))
	settings.set("tools", tools)
	servers := newObject()
	var names []string
	for _, s := range p.MCP {
		e := newObject()
		e.set("httpUrl", s.URL)
		if s.BearerEnv != "" {
			h := newObject()
			h.set("Authorization", bearerEnvRef(s.BearerEnv))
			e.set("headers", h)
		}
		servers.set(s.Name, e)
		names = append(names, s.Name)
	}
	settings.set("mcpServers", servers)
	if !p.Relax {
		mcp := newObject()
		mcp.set("allowed", toAny(names))
		// "mcp" is the server mcp.serverCommand starts, which no
		// mcpServers entry names.
		others := []string{}
		if !slices.Contains(names, "mcp") {
			others = append(others, "mcp")
		}
		for _, n := range geminiUserServers(p) {
			if !slices.Contains(names, n) {
				others = append(others, n)
			}
		}
		mcp.set("excluded", toAny(others))
		settings.set("mcp", mcp)
	}
	path := filepath.Join(p.Dir, "system-settings.json")
	return LaunchConfig{
		Files: map[string][]byte{"system-settings.json": encodeOrdered(settings)},
		Args:  []string{"--extensions=none"},
		Env:   []string{"GEMINI_CLI_SYSTEM_SETTINGS_PATH=" + path},
		// Each moves a settings layer, trusts a folder, or relaunches
		// Gemini CLI in a sandbox of its own.
		Unset: []string{"GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "GEMINI_CLI_TRUST_WORKSPACE",
			"GEMINI_CLI_INTEGRATION_TEST", "GEMINI_SANDBOX", "SANDBOX"},
	}, nil
}

// geminiSessionHookName is hookgate's hook name in a session: fixed per
// session directory, unknown before it exists.
func geminiSessionHookName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return "hookgate-" + hex.EncodeToString(sum[:6])
}

// geminiSettingsFiles are the user's and the workspace's settings.
func geminiSettingsFiles(p LaunchPlan) []string {
	home := p.Home
	if h := p.getenv("GEMINI_CLI_HOME"); h != "" {
		home = h
	}
	files := []string{filepath.Join(home, ".gemini", "settings.json")}
	if p.Project != "" {
		files = append(files, filepath.Join(p.Project, ".gemini", "settings.json"))
	}
	return files
}

// geminiUserServers are the MCP server names the user's and the
// workspace's settings define.
func geminiUserServers(p LaunchPlan) []string {
	var out []string
	for _, f := range geminiSettingsFiles(p) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var s struct {
			MCPServers map[string]json.RawMessage `json:"mcpServers"`
		}
		if json.Unmarshal(b, &s) == nil {
			for n := range s.MCPServers {
				if !slices.Contains(out, n) {
					out = append(out, n)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// geminiLaunchPreflight refuses a launch Gemini CLI would not hold: its
// system settings are read only from a path that is root's all the way up
// (otherwise it warns and runs without them), and the user's or the
// workspace's settings must not bring their own BeforeTool hooks (one
// could allow or rewrite a call hookgate ruled on) or settings it cannot
// parse.
func geminiLaunchPreflight(p LaunchPlan) error {
	if os.Geteuid() != 0 {
		return errors.New("Gemini CLI reads its system settings only from a path owned by root, and skips them otherwise: sandboxd launch gemini must run as root")
	}
	for d := p.Dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("launch: %w", err)
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("%s is not root's alone (owner, or group/other write): Gemini CLI would skip the session's system settings under it", d)
		}
		if d == "/" {
			break
		}
	}
	for _, f := range geminiSettingsFiles(p) {
		if err := foreignHooks(f, "Gemini CLI", "BeforeTool"); err != nil {
			return err
		}
		// mcp.serverCommand starts a program as an MCP server named "mcp"
		// (excluded, but the file's own intent is to run it).
		var s struct {
			MCP struct {
				ServerCommand string `json:"serverCommand"`
			} `json:"mcp"`
		}
		if b, err := os.ReadFile(f); err == nil && json.Unmarshal(b, &s) == nil && s.MCP.ServerCommand != "" && !p.Relax {
			return fmt.Errorf("%s sets mcp.serverCommand, an MCP server outside the session's; remove it, or launch with --relax", f)
		}
	}
	return nil
}
