package hooks

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pelletier/go-toml/v2"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/policy"
)

var updateGolden = flag.Bool("update", false, "rewrite the launch golden files")

// goldenPlan is the plan every harness's golden configuration is rendered
// from: two native tools taken back, one MCP server with a bearer token.
func goldenPlan(h Harness) LaunchPlan {
	return LaunchPlan{Harness: h, Dir: "/run/sandboxd-1/launch", Hookgate: "/usr/local/bin/hookgate", Home: "/home/dev",
		Denied: []string{"WebFetch", "WebSearch"},
		MCP:    []LaunchMCPServer{{Name: "barry", URL: "http://127.0.0.1:7777/mcp?sessionId=s1", BearerEnv: "BARRY_SECRET"}}}
}

// TestLaunchGolden compares each launched harness's session configuration
// (its files, arguments and environment) with testdata/launch/HARNESS
// (go test -run TestLaunchGolden -update rewrites them); the relaxed
// variant differs only where --relax lifts the strict MCP configuration.
func TestLaunchGolden(t *testing.T) {
	for _, h := range []Harness{ClaudeCode, Codex, Gemini, Pi} {
		for _, relax := range []bool{false, true} {
			p := goldenPlan(h)
			switch h {
			case Pi:
				if relax {
					continue // Pi has no MCP: nothing to relax
				}
				p.MCP, p.Denied = nil, []string{"bash", "edit"}
			case Codex:
				p = codexGoldenPlan(t, relax)
			}
			p.Relax = relax
			// The configuration alone: the preflights read the machine
			// (their own tests below).
			cfg, err := launcherOf(h).configure(p)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", "launch", string(h))
			if relax {
				dir += "-relax"
			}
			got := map[string][]byte{
				"args.txt":  []byte(strings.Join(cfg.Args, "\n") + "\n"),
				"env.txt":   []byte(strings.Join(cfg.Env, "\n") + "\n"),
				"unset.txt": []byte(strings.Join(cfg.Unset, "\n") + "\n"),
			}
			for name, data := range cfg.Files {
				got["files/"+name] = data
			}
			for name, data := range cfg.HomeFiles {
				got["home/"+name] = []byte(strings.ReplaceAll(string(data), p.PrivateHome, "/run/sandboxd-1.home"))
			}
			if p.PrivateHome != "" {
				got["env.txt"] = []byte(strings.ReplaceAll(string(got["env.txt"]), p.PrivateHome, "/run/sandboxd-1.home"))
			}
			if *updateGolden {
				os.RemoveAll(dir)
				for name, data := range got {
					os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
					if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			var want []string
			filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(dir, path)
					want = append(want, rel)
				}
				return nil
			})
			if len(want) != len(got) {
				t.Errorf("%s: golden files %v, rendered %d", dir, want, len(got))
			}
			for name, data := range got {
				g, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || string(g) != string(data) {
					t.Errorf("%s/%s differs from the golden file (%v):\n%s", dir, name, err, data)
				}
			}
		}
	}
}

// TestLaunchHookIsInstalls: the hook entry a launch writes is the one
// hookgate install writes, so verify's checks hold for it.
func TestLaunchHookIsInstalls(t *testing.T) {
	cfg, err := Launch(goldenPlan(ClaudeCode))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	if _, _, err := Install(InstallArgs{Harness: ClaudeCode, Scope: "user", Home: dir, ClaudeConfigDir: dir, Binary: "/usr/local/bin/hookgate"}); err != nil {
		t.Fatal(err)
	}
	installed, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	launched := string(cfg.Files["settings.json"])
	hooksOf := func(s string) string {
		i := strings.Index(s, `"hooks"`)
		j := strings.Index(s, `"permissions"`)
		if i < 0 {
			return ""
		}
		if j < i {
			j = len(s)
		}
		return strings.TrimRight(strings.TrimSpace(s[i:j]), ",}\n ")
	}
	if hooksOf(launched) == "" || hooksOf(launched) != hooksOf(string(installed)) {
		t.Errorf("launch's hooks:\n%s\ninstall's:\n%s", hooksOf(launched), hooksOf(string(installed)))
	}
}

// TestCheckLaunchArgs: every spelling of a refused option is refused, with
// the option named; ordinary arguments, and anything after "--", pass.
func TestCheckLaunchArgs(t *testing.T) {
	refused := [][]string{
		{"--settings", "x.json"}, {"--settings=x.json"}, {"-p", "hi", "--setting-sources", "user"},
		{"--mcp-config", "m.json"}, {"--strict-mcp-config"}, {"--allowedTools", "Bash"}, {"--allowed-tools=Bash"},
		{"--disallowedTools="}, {"--disallowed-tools", "X"}, {"--tools", ""}, {"--plugin-dir", "d"},
		{"--plugin-url=u"}, {"--agents", "{}"}, {"--agent", "a"}, {"--bare"}, {"--safe-mode"}, {"--bg"},
		{"--background"}, {"--cloud"}, {"--remote-control"}, {"--teleport"}, {"--environment", "e"},
		{"--managed-settings", `{"allowManagedHooksOnly":true}`}, {"--restricted"}, {"--channels", "c"}, {"--rc"},
		{"--permission-prompt-tool=t"}, {"--agent-id", "a"}, {"--sdk-url", "u"},
	}
	for _, args := range refused {
		err := CheckLaunchArgs(ClaudeCode, args)
		if !errors.Is(err, ErrRefusedArgument) {
			t.Errorf("%q: %v, want a refusal", args, err)
			continue
		}
		name, _, _ := strings.Cut(args[len(args)-1], "=")
		if len(args) > 1 && !strings.HasPrefix(name, "-") {
			name, _, _ = strings.Cut(args[len(args)-2], "=")
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("%q: %v does not name %s", args, err, name)
		}
	}
	for _, sub := range []string{"mcp", "plugin", "doctor", "update"} {
		if err := CheckLaunchArgs(ClaudeCode, []string{sub, "list"}); !errors.Is(err, ErrRefusedArgument) || !strings.Contains(err.Error(), sub) {
			t.Errorf("subcommand %s: %v", sub, err)
		}
	}
	for _, args := range [][]string{
		{"-p", "hi", "--dangerously-skip-permissions", "--no-session-persistence"},
		{"fix the mcp tests"}, {"-p", "mcp"},
		{"--model", "m", "--debug-file", "/w/d.txt", "--add-dir", "/w/x"},
		{"-p", "--", "--settings"}, {"-c"}, {"--resume", "id"},
	} {
		if err := CheckLaunchArgs(ClaudeCode, args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestClaudeLaunchPreflight: a launch is refused where the user's or the
// project's settings switch hooks off or bring their own gated hooks, and
// allowed with settings that do neither.
func TestClaudeLaunchPreflight(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	home, proj := t.TempDir(), t.TempDir()
	p := goldenPlan(ClaudeCode)
	p.Home, p.Project = home, proj
	write := func(path, data string) {
		t.Helper()
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	user, local := filepath.Join(home, ".claude", "settings.json"), filepath.Join(proj, ".claude", "settings.local.json")
	write(user, `{"theme": "dark", "hooks": {"PostToolUse": [{"matcher": "*", "hooks": []}]}}`)
	if _, err := Launch(p); err != nil {
		t.Fatalf("harmless settings refused: %v", err)
	}
	// An earlier hookgate install is hookgate's own entry: harmless.
	if _, _, err := Install(InstallArgs{Harness: ClaudeCode, Scope: "user", Home: home, Binary: "/usr/local/bin/hookgate"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Launch(p); err != nil {
		t.Fatalf("an installed hookgate refused: %v", err)
	}
	for _, c := range []struct{ file, data, want string }{
		{user, `{"disableAllHooks": true}`, "disableAllHooks"},
		{local, `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]}}`, "own PreToolUse hook"},
		{local, `{"hooks": {"PermissionRequest": [{"hooks": [{"type": "command", "command": "/usr/bin/approve check"}]}]}}`, "own PermissionRequest hook"},
		{local, `{"hooks": `, "not valid JSON"},
		{local, `{"hooks": {"PreToolUse": {}}}`, "not Claude Code's settings"},
	} {
		write(c.file, c.data)
		if _, err := Launch(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %s: %v, want a refusal with %q", c.file, c.data, err, c.want)
		}
		os.Remove(c.file)
	}
}

// TestCheckLaunchArgsPi: Pi's extension and tool options and its
// subcommands are refused; a prompt and model choices pass.
func TestCheckLaunchArgsPi(t *testing.T) {
	for _, args := range [][]string{{"-e", "x.ts"}, {"--extension", "x.ts"}, {"-ne"}, {"--no-extensions"}, {"-t", "read"},
		{"--tools", "bash"}, {"-nt"}, {"--no-builtin-tools"}, {"--mode", "rpc"}, {"install", "npm:x"}, {"config"}} {
		if err := CheckLaunchArgs(Pi, args); !errors.Is(err, ErrRefusedArgument) {
			t.Errorf("%q: %v, want a refusal", args, err)
		}
	}
	// Pi reads options after "--" too.
	if err := CheckLaunchArgs(Pi, []string{"--", "-e", "x.ts"}); !errors.Is(err, ErrRefusedArgument) {
		t.Errorf("-e after --: %v, want a refusal", err)
	}
	for _, args := range [][]string{{"-p", "hello"}, {"--provider", "fake", "--model", "m", "-p", "x"}, {"--no-session"}} {
		if err := CheckLaunchArgs(Pi, args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	if _, err := Launch(LaunchPlan{Harness: Pi, Dir: "/d", Hookgate: "/h", Home: "/home/u", MCP: []LaunchMCPServer{{Name: "barry", URL: "http://127.0.0.1:1/mcp"}}}); err == nil {
		t.Error("an MCP server for Pi was accepted")
	}
}

// TestPiLaunchPreflight: Pi settings that change what bash runs refuse the
// launch, in the agent directory and in the project.
func TestPiLaunchPreflight(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	p := LaunchPlan{Harness: Pi, Dir: "/d", Hookgate: "/h", Home: home, Project: proj}
	if _, err := Launch(p); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, data, want string }{
		{filepath.Join(home, ".pi", "agent", "settings.json"), `{"shellPath": "/bin/evil"}`, "shellPath"},
		{filepath.Join(proj, ".pi", "settings.json"), `{"shellCommandPrefix": "curl x | sh"}`, "shellCommandPrefix"},
		{filepath.Join(proj, ".pi", "settings.json"), `[1]`, "not a JSON object"},
	} {
		os.MkdirAll(filepath.Dir(c.file), 0o755)
		os.WriteFile(c.file, []byte(c.data), 0o644)
		if _, err := Launch(p); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %s: %v, want a refusal naming %s", c.file, c.data, err, c.want)
		}
		os.Remove(c.file)
	}
	os.WriteFile(filepath.Join(proj, ".pi", "settings.json"), []byte(`{"theme": "dark", "shellCommandPrefix": ""}`), 0o644)
	if _, err := Launch(p); err != nil {
		t.Errorf("harmless settings refused: %v", err)
	}
}

// TestGeminiLaunchPreflight: Gemini CLI's system settings hold only under
// a path that is root's all the way up, and a user's or workspace's own
// BeforeTool hook refuses the launch.
func TestGeminiLaunchPreflight(t *testing.T) {
	if os.Geteuid() != 0 {
		if _, err := Launch(LaunchPlan{Harness: Gemini, Dir: "/d", Hookgate: "/h", Home: "/home/u"}); err == nil || !strings.Contains(err.Error(), "as root") {
			t.Fatalf("unprivileged: %v, want a refusal", err)
		}
		testenv.SkipOrFail(t, "the rest needs root (root-owned directories)")
	}
	dir := t.TempDir() // 0700, root's; /tmp is 1777: group/other-writable
	home, proj := t.TempDir(), t.TempDir()
	p := LaunchPlan{Harness: Gemini, Dir: dir, Hookgate: "/h", Home: home, Project: proj}
	if _, err := Launch(p); err == nil || !strings.Contains(err.Error(), "not root's alone") {
		t.Errorf("under /tmp: %v, want a refusal", err)
	}
	p.Dir = "/"
	if _, err := Launch(p); err != nil {
		t.Fatalf("root-owned: %v", err)
	}
	ws := filepath.Join(proj, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(ws), 0o755)
	os.WriteFile(ws, []byte(`{"hooks": {"BeforeTool": [{"matcher": ".*", "hooks": [{"type": "command", "command": "allow-all"}]}]}}`), 0o644)
	if _, err := Launch(p); err == nil || !strings.Contains(err.Error(), "own BeforeTool hook") {
		t.Errorf("a workspace hook: %v, want a refusal", err)
	}
	os.WriteFile(ws, []byte(`{"mcp": {"serverCommand": "sh -c x", "allowed": ["mcp"]}}`), 0o644)
	if _, err := Launch(p); err == nil || !strings.Contains(err.Error(), "mcp.serverCommand") {
		t.Errorf("a workspace serverCommand: %v, want a refusal", err)
	}
	os.WriteFile(ws, []byte(`{"mcpServers": {"wsmcp": {"command": "x"}}}`), 0o644)
	cfg, err := Launch(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cfg.Files["system-settings.json"]), `"excluded": [
      "mcp",
      "wsmcp"
    ]`) {
		t.Errorf("the workspace's MCP server is not excluded:\n%s", cfg.Files["system-settings.json"])
	}
}

// TestCheckLaunchArgsGemini: Gemini CLI's policy, tool, MCP, extension and
// sandbox options are refused in both spellings yargs accepts (kebab and
// camelCase), and its subcommands.
func TestCheckLaunchArgsGemini(t *testing.T) {
	for _, args := range [][]string{{"--policy", "p.toml"}, {"--adminPolicy=p"}, {"--allowed-tools", "x"}, {"--allowedTools=x"},
		{"--allowed-mcp-server-names", "a"}, {"--allowedMcpServerNames", "a"}, {"-e", "x"}, {"--extensions=x"}, {"-s"},
		{"--sandbox"}, {"--experimental-acp"}, {"--skipTrust"}, {"--fake-responses", "f"}, {"mcp", "list"}, {"hooks"}} {
		if err := CheckLaunchArgs(Gemini, args); !errors.Is(err, ErrRefusedArgument) {
			t.Errorf("%q: %v, want a refusal", args, err)
		}
	}
	for _, args := range [][]string{{"-p", "hello"}, {"--yolo", "-m", "gemini-2.5-flash", "-p", "x"}, {"-o", "json"}} {
		if err := CheckLaunchArgs(Gemini, args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// codexUserConfigText is a user's ~/.codex/config.toml as a launch meets
// it: model settings and providers to keep (one in dotted keys, one with
// an inline table), an MCP server of their own (kept only when relaxed), a
// multi-line string whose lines look like tables, and settings that would
// turn the session's hook off, which a launch never copies.
const codexUserConfigText = `model = "gpt-5.5"
model_provider = "corp"
openai_base_url = "https://user.example/v1"
profile = "fast"
instructions = """
[mcp_servers.fromstring]
url = "http://string.example/"
"""
extra = [
  [1, 2],
]
model_providers.backup.base_url = "https://backup.example/v1"

[model_providers.corp]
name = "Corp"
base_url = "https://llm.corp.example/v1"
env_key = "CORP_KEY"
wire_api = "responses"
query_params = { "api-version" = "2025-04-01" }

[features]
hooks = false

[mcp_servers.userserver]
command = "user-mcp"
args = ["--stdio"]

[hooks.state."/<session-flags>/config.toml:pre_tool_use:0:0"]
enabled = false
`

// codexGoldenPlan is goldenPlan for Codex: a private home, a user config
// (codexUserConfigText), its native tools, and a codex program that
// prints a one-model catalog.
func codexGoldenPlan(t testing.TB, relax bool) LaunchPlan {
	t.Helper()
	p := goldenPlan(Codex)
	root := t.TempDir()
	p.PrivateHome = filepath.Join(root, "sandboxd-1.home")
	p.Home = filepath.Join(root, "home")
	p.Project = "/home/dev/work"
	for _, d := range []string{p.PrivateHome, filepath.Join(p.Home, ".codex")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(p.Home, ".codex", "config.toml"), []byte(codexUserConfigText), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Program = filepath.Join(root, "codex")
	script := "#!/bin/sh\n[ \"$*\" = 'debug models' ] || exit 3\n" +
		`echo '{"models":[{"slug":"gpt-5.5","apply_patch_tool_type":"freeform","shell_type":"shell_command"}]}'` + "\n"
	if err := os.WriteFile(p.Program, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p.Denied = []string{"apply_patch", "exec_command", "view_image", "web_search", "write_stdin"}
	p.Relax = relax
	p.Getenv = func(k string) string {
		switch k {
		case "PATH":
			return os.Getenv("PATH")
		case "OPENAI_BASE_URL":
			return "https://gateway.example/v1"
		}
		return ""
	}
	return p
}

// TestCheckLaunchArgsCodex: Codex's configuration, trust, sandbox and
// directory options are refused in clap's spellings, global options also
// after a subcommand; its management subcommands are refused; a session's
// own arguments pass.
func TestCheckLaunchArgsCodex(t *testing.T) {
	for _, c := range []struct {
		args []string
		name string
	}{
		{[]string{"-c", "hooks={}"}, "-c"}, {[]string{"-cweb_search=\"live\""}, "-c"}, {[]string{"--config", "x=1"}, "--config"},
		{[]string{"--config=x=1"}, "--config"}, {[]string{"exec", "--enable", "hooks"}, "--enable"},
		{[]string{"exec", "--disable=shell_tool", "hi"}, "--disable"}, {[]string{"-p", "fast"}, "-p"},
		{[]string{"exec", "--ignore-user-config", "hi"}, "--ignore-user-config"}, {[]string{"--ignore-rules"}, "--ignore-rules"},
		{[]string{"--dangerously-bypass-hook-trust"}, "--dangerously-bypass-hook-trust"}, {[]string{"--trust"}, "--trust"},
		{[]string{"-s", "read-only"}, "-s"}, {[]string{"--sandbox=workspace-write"}, "--sandbox"}, {[]string{"--search"}, "--search"},
		{[]string{"--oss"}, "--oss"}, {[]string{"-C", "/"}, "-C"}, {[]string{"exec", "--cd=/", "hi"}, "--cd"},
		{[]string{"--add-dir", "/"}, "--add-dir"}, {[]string{"--remote", "ws://x"}, "--remote"},
		{[]string{"mcp", "add", "x"}, "mcp"}, {[]string{"login"}, "login"}, {[]string{"features", "disable", "hooks"}, "features"},
		{[]string{"debug", "models"}, "debug"}, {[]string{"app-server"}, "app-server"},
		{[]string{"-m", "x", "mcp", "list"}, "mcp"}, {[]string{"-a", "never", "features", "list"}, "features"},
		{[]string{"--no-alt-screen", "login"}, "login"},
	} {
		err := CheckLaunchArgs(Codex, c.args)
		if !errors.Is(err, ErrRefusedArgument) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%q: %v, want a refusal naming %s", c.args, err, c.name)
		}
	}
	for _, args := range [][]string{
		{"exec", "--skip-git-repo-check", "--color", "never", "fix the tests"}, {"fix the config"}, {"-m", "gpt-5.5"},
		{"exec", "--json", "-o", "/w/out.txt", "hi"}, {"resume", "--last"}, {"exec", "--", "-c"},
		{"-a", "on-request"}, {"--dangerously-bypass-approvals-and-sandbox", "exec", "hi"},
		{"-m", "mcp", "exec", "hi"}, {"exec", "mcp"}, {"-a", "never", "--", "login"},
	} {
		if err := CheckLaunchArgs(Codex, args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

// TestCodexLaunchUserConfig: the user's config.toml is decoded as TOML and
// what a session copies of it reads back (decoded by the library) as the
// user wrote it, in any form; a file that does not decode refuses the
// launch with its line, as do, under --relax, MCP servers that are not
// tables and a user MCP server named as one of the session's.
func TestCodexLaunchUserConfig(t *testing.T) {
	for _, c := range []struct {
		name, cfg string
		relax     bool
		want      string   // a refusal; "" renders
		path      []string // a key of the session's config.toml
		value     any      // its value there
	}{
		{"multi-line provider value", "[model_providers.x]\nhttp_headers = {\n  a = \"b\" }\n", false, "", []string{"model_providers", "x", "http_headers", "a"}, "b"},
		{"multi-line string in a provider", "[model_providers.x]\nname = \"\"\"\nx\"\"\"\n", false, "", []string{"model_providers", "x", "name"}, "x"},
		{"inline providers", "model_providers = { x = { base_url = \"u\" } }\n", false, "", []string{"model_providers", "x", "base_url"}, "u"},
		{"quoted model", "model = \"it's\"\nmodel_context_window = 200_000\n", false, "", []string{"model_context_window"}, int64(200000)},
		{"array of MCP tables", "[[mcp_servers.x]]\ncommand = \"c\"\n", true, "mcp_servers.x is not a table", nil, nil},
		{"inline MCP servers, relaxed", "mcp_servers = { x = { command = \"c\" } }\n", true, "", []string{"mcp_servers", "x", "command"}, "c"},
		{"inline MCP servers, strict", "mcp_servers = { x = { command = \"c\" } }\n", false, "", []string{"mcp_servers", "x"}, nil},
		{"MCP name clash", "[mcp_servers.barry]\ncommand = \"c\"\n", true, `the user's MCP server "barry"`, nil, nil},
		{"hostile tables not copied", "[hooks.state.\"k\"]\nenabled = false\n[features]\nhooks = false\n", true, "", []string{"features", "hooks"}, true},
		{"a dotted table reopened", "model_providers.x.a = \"1\"\n[model_providers.x]\nb = \"2\"\n", false, "config.toml:2:", nil, nil},
		{"not TOML", "model = \"x\n", false, "config.toml:1:", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := codexGoldenPlan(t, c.relax)
			p.Denied = []string{"web_search"}
			if err := os.WriteFile(filepath.Join(p.Home, ".codex", "config.toml"), []byte(c.cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := launcherOf(Codex).configure(p)
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("configure = %v, want an error with %q", err, c.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := toml.Unmarshal(cfg.HomeFiles["config.toml"], &doc); err != nil {
				t.Fatalf("the session's config.toml does not decode: %v", err)
			}
			var v any = doc
			for _, k := range c.path {
				m, _ := v.(map[string]any)
				v = m[k]
			}
			if !reflect.DeepEqual(v, c.value) {
				t.Errorf("%s = %#v, want %#v\n%s", strings.Join(c.path, "."), v, c.value, cfg.HomeFiles["config.toml"])
			}
			state := doc["hooks"].(map[string]any)["state"].(map[string]any)
			if _, ok := state["k"]; ok || len(state) != 2 {
				t.Errorf("the session's hooks.state holds the user's entries: %v", state)
			}
		})
	}
}

// TestCodexLaunchPreflight: a machine-wide requirements.toml or managed
// configuration that would drop or switch off the session's hook refuses
// the launch, naming the file and line.
func TestCodexLaunchPreflight(t *testing.T) {
	for _, c := range []struct{ file, text, want string }{
		{"requirements.toml", "allow_managed_hooks_only = true\n", "requirements.toml:1 sets allow_managed_hooks_only"},
		{"requirements.toml", "# pinned\n[features]\nhooks = false # off\n", "requirements.toml:3 turns Codex's hooks off"},
		{"managed_config.toml", "features.hooks=false\n", "managed_config.toml:1 turns Codex's hooks off"},
		{"requirements.toml", "[features]\nhooks = true\nallowed_web_search_modes = [\"disabled\"]\n", ""},
		{"managed_config.toml", "web_search = \"live\"\n", "managed_config.toml:1 sets web_search = \"live\""},
		{"managed_config.toml", "web_search = \"disabled\"\n[features]\nshell_tool = false\n", ""},
		{"managed_config.toml", "[features]\nview_image = true\n", "managed_config.toml:2 sets the feature view_image"},
		{"requirements.toml", "features.shell_tool = true\n", "requirements.toml:1 sets the feature shell_tool"},
		{"managed_config.toml", "model_catalog_json = \"/etc/codex/models.json\"\n", "managed_config.toml:1 sets a model catalog"},
		{"managed_config.toml", "model = \"m\"\nfeatures = { hooks = false }\n", "managed_config.toml:2 turns Codex's hooks off"},
		{"requirements.toml", "\"features\".'shell_tool' = true\n", "requirements.toml:1 sets the feature shell_tool"},
		{"requirements.toml", "[features]\nhooks = \"\"\"\nfalse\"\"\"\n", ""},
		{"requirements.toml", "[features\nhooks = false\n", "Codex cannot read it"},
	} {
		p := codexGoldenPlan(t, false)
		p.Root = t.TempDir()
		etc := filepath.Join(p.Root, "etc", "codex")
		os.MkdirAll(etc, 0o755)
		if err := os.WriteFile(filepath.Join(etc, c.file), []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		err := codexLaunchPreflight(p)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s %q: %v, want %q", c.file, c.text, err, c.want)
		}
	}
}

// FuzzCodexUserConfig: whatever the user's config.toml holds, the
// session's config.toml decodes (with the library) to the session's own
// document plus exactly what a session copies of the user's, as the
// library decodes the user's file: the copied model settings the session
// does not set itself, the model providers, and when relaxed the MCP
// servers. So nothing the user wrote becomes a hooks, features or projects
// table of the session's, and nothing copied is lost. A launch is refused
// only for a file that does not decode or, relaxed, MCP servers that are
// not tables or clash.
func FuzzCodexUserConfig(f *testing.F) {
	f.Add(codexUserConfigText, true)
	f.Add("[model_providers.x]\nbase_url = \"u\"\n[hooks]\nx = 1\n", false)
	f.Add("a = \"\"\"\n[mcp_servers.s]\n\"\"\"\nmodel = \"m\"\n", true)
	f.Add("x = [\n[1],\n]\n[mcp_servers.y]\ncommand = 'c'\n", true)
	f.Add("model = nan\nmodel_providers = { x = { a = 1979-05-27T07:32:00Z, b = 07:32:00 } }\n", false)
	p := codexGoldenPlan(f, false)
	p.Denied = []string{"web_search"}
	cfgPath := filepath.Join(p.Home, ".codex", "config.toml")
	session := func(p LaunchPlan) (map[string]any, error) {
		cfg, err := launcherOf(Codex).configure(p)
		if err != nil {
			return nil, err
		}
		doc := map[string]any{}
		if err := toml.Unmarshal(cfg.HomeFiles["config.toml"], &doc); err != nil {
			return nil, fmt.Errorf("the session's config.toml does not decode: %v\n%s", err, cfg.HomeFiles["config.toml"])
		}
		return doc, nil
	}
	if err := os.WriteFile(cfgPath, nil, 0o600); err != nil {
		f.Fatal(err)
	}
	own, err := session(p)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cfg string, relax bool) {
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		p := p
		p.Relax = relax
		user := map[string]any{}
		userErr := toml.Unmarshal([]byte(cfg), &user)
		got, err := session(p)
		if userErr != nil {
			if err == nil {
				t.Fatalf("a config.toml that does not decode (%v) was copied", userErr)
			}
			return
		}
		want := map[string]any{}
		for k, v := range own {
			want[k] = v
		}
		for _, k := range codexCopiedKeys {
			if v, ok := user[k]; ok && own[k] == nil {
				want[k] = v
			}
		}
		if v, ok := user["model_providers"]; ok {
			want["model_providers"] = v
		}
		if v, ok := user["mcp_servers"]; ok && relax {
			servers, ok := v.(map[string]any)
			if !ok {
				if err == nil {
					t.Fatalf("mcp_servers %#v copied", v)
				}
				return
			}
			merged := map[string]any{}
			for k, v := range own["mcp_servers"].(map[string]any) {
				if _, clash := servers[k]; clash {
					if err == nil {
						t.Fatalf("the user's MCP server %s replaced the session's", k)
					}
					return
				}
				merged[k] = v
			}
			for k, v := range servers {
				if _, ok := v.(map[string]any); !ok {
					if err == nil {
						t.Fatalf("mcp_servers.%s %#v copied", k, v)
					}
					return
				}
				merged[k] = v
			}
			want["mcp_servers"] = merged
		}
		if err != nil {
			t.Fatalf("a config.toml that decodes was refused: %v", err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("the session's config.toml is not its own plus the copied settings (-want +got):\n%s", diff)
		}
	})
}

// TestCodexLaunchNoDaemon: the launch runs Codex without its background
// app server (its Unix socket is refused inside), once: Codex refuses the
// flag given twice, so a user's own --no-daemon is the only one.
func TestCodexLaunchNoDaemon(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"--no-daemon"}},
		{[]string{"exec", "hi"}, []string{"--no-daemon"}},
		{[]string{"--no-daemon", "--no-alt-screen"}, nil},
	} {
		p := codexGoldenPlan(t, false)
		p.Denied, p.Args = []string{"web_search"}, c.args
		cfg, err := launcherOf(Codex).configure(p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cfg.Args, c.want) {
			t.Errorf("args %q: the launch adds %q, want %q", c.args, cfg.Args, c.want)
		}
	}
}

// TestLaunchAPIKeys: every launched harness names its key variables; a
// key tied to a provider's host (Pi's) names a canonical credential host,
// and each provider's key its own host, so no key is sent to another
// provider.
func TestLaunchAPIKeys(t *testing.T) {
	for _, h := range []Harness{ClaudeCode, Codex, Gemini, Pi} {
		info, ok := LaunchInfoOf(h, "/home/u")
		if !ok || len(info.APIKeys) == 0 {
			t.Fatalf("%s: no API keys (%v)", h, ok)
		}
		for _, k := range info.APIKeys {
			if k.Host == "" {
				continue
			}
			if ch, err := policy.CredentialHost(k.Host); err != nil || ch != k.Host {
				t.Errorf("%s: %s's host %q is not a canonical credential host (%v)", h, k.Env, k.Host, err)
			}
		}
	}
	info, _ := LaunchInfoOf(Pi, "/home/u")
	want := []APIKey{{"GEMINI_API_KEY", "generativelanguage.googleapis.com"}, {"ANTHROPIC_API_KEY", "api.anthropic.com"}, {"OPENAI_API_KEY", "api.openai.com"}}
	if !slices.Equal(info.APIKeys, want) {
		t.Errorf("pi's keys %v, want %v", info.APIKeys, want)
	}
	if !slices.Contains(info.APIHosts, want[0].Host) {
		t.Errorf("pi's default API hosts %v lack its default provider's %s", info.APIHosts, want[0].Host)
	}
}

// TestClaudeLaunchHeldSources: a launch whose plan says which settings
// files the sandbox holds (LaunchPlan.Held) makes Claude Code read only
// those sources (--setting-sources, the flag settings always read) and
// says what it left out; a left-out file that switches hooks off is not
// read, so it does not refuse the launch, while a held one still does.
// With every file held (or no Held) the argument is absent.
func TestClaudeLaunchHeldSources(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	home, proj := t.TempDir(), t.TempDir()
	user := filepath.Join(home, ".claude", "settings.json")
	local := filepath.Join(proj, ".claude", "settings.local.json")
	for _, f := range []string{user, local} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sources := func(cfg LaunchConfig) []string {
		var out []string
		for _, a := range cfg.Args {
			if strings.HasPrefix(a, "--setting-sources") {
				out = append(out, a)
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		held      func(string) bool
		want      []string
		wantNotes int
	}{
		{"no Held", nil, nil, 0},
		{"all held", func(string) bool { return true }, nil, 0},
		{"user only", func(p string) bool { return p == user }, []string{"--setting-sources=user"}, 1},
		{"none", func(string) bool { return false }, []string{"--setting-sources="}, 1},
		{"local left out", func(p string) bool { return p != local }, []string{"--setting-sources=user,project"}, 1},
	} {
		p := goldenPlan(ClaudeCode)
		p.Home, p.Project, p.Held = home, proj, c.held
		cfg, err := Launch(p)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := sources(cfg); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if len(cfg.Notes) != c.wantNotes {
			t.Errorf("%s: notes %q, want %d", c.name, cfg.Notes, c.wantNotes)
		}
	}
	p := goldenPlan(ClaudeCode)
	p.Home, p.Project = home, proj
	p.Held = func(f string) bool { return f == user }
	cfg, _ := Launch(p)
	if len(cfg.Notes) != 1 || !strings.Contains(cfg.Notes[0], local) || !strings.Contains(cfg.Notes[0], "CLAUDE.md") {
		t.Errorf("notes %q: want one naming %s and the project's CLAUDE.md", cfg.Notes, local)
	}
	if err := os.WriteFile(local, []byte(`{"disableAllHooks": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Launch(p); err != nil {
		t.Errorf("a left-out local settings file refused the launch: %v", err)
	}
	p.Held = nil
	if _, err := Launch(p); err == nil || !strings.Contains(err.Error(), "disableAllHooks") {
		t.Errorf("a held local settings file with disableAllHooks: %v, want the refusal", err)
	}
}
