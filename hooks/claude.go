package hooks

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Claude Code: PreToolUse and PermissionRequest hooks in settings.json
// (user: ~/.claude or $CLAUDE_CONFIG_DIR; project: .claude/), matcher
// groups of command handlers. An answer is hookSpecificOutput JSON on
// stdout; exit 2 with stderr blocks. Since 2.1.2xx a handler's
// onFailure: "block" turns a failed hook into a block.

func claudeEvents() map[string]Kind {
	return kinds(map[string]Kind{"PreToolUse": KindTool, "PermissionRequest": KindPermission},
		"SessionStart", "Setup", "InstructionsLoaded", "UserPromptSubmit", "UserPromptExpansion",
		"MessageDisplay", "PermissionDenied", "PostToolUse", "PostToolUseFailure", "PostToolBatch",
		"Notification", "SubagentStart", "SubagentStop", "TaskCreated", "TaskCompleted", "Stop",
		"StopFailure", "TeammateIdle", "ConfigChange", "CwdChanged", "DirectoryAdded", "FileChanged",
		"WorktreeCreate", "WorktreeRemove", "PreCompact", "PostCompact", "Elicitation",
		"ElicitationResult", "SessionEnd")
}

func claudeProtocol() *protocol {
	return &protocol{
		events: claudeEvents(),
		// PreToolUse enforces an ask; a PermissionRequest is already one.
		canAsk: func(c Call) bool { return c.Kind == KindTool },
		encode: func(c Call, r Reply, reason, _ string) Output { return encodeClaudeLike(c, r, reason, true) },
		// updatedInput with no permissionDecision: the call as rewritten,
		// left to Claude Code's own permission flow (which runs the hooks
		// again on it).
		rewrite: func(c Call, input map[string]any, reason string) Output {
			return Output{Stdout: encodeJSON(hookSpecificOutput{hookSpecific{HookEventName: c.Event,
				PermissionDecisionReason: reason, UpdatedInput: input}})}
		},
		failStdout: func(reason string) []byte {
			return encodeJSON(hookSpecificOutput{hookSpecific{HookEventName: "PreToolUse",
				PermissionDecision: "deny", PermissionDecisionReason: reason}})
		},
		answerShapes: []string{`''`, `'{"hookSpecificOutput":{'*'}}'`},
		denyShapes:   []string{`''`, `'{"hookSpecificOutput":{'*'"deny"'*'}}'`},
		install: installer{
			path: func(a InstallArgs, base string, user bool) string {
				if user && a.ClaudeConfigDir != "" {
					return filepath.Join(a.ClaudeConfigDir, "settings.json")
				}
				return filepath.Join(base, ".claude", "settings.json")
			},
			events:  []string{"PreToolUse", "PermissionRequest"},
			matcher: "*",
			handler: func(a InstallArgs, ev, cmd string) *object {
				h := commandHandler(cmd)
				// Claude Code 2.1.2xx+: a hook that fails (also an exit-0
				// answer that is not valid JSON) blocks instead of letting
				// the call through; the wrapper covers the versions without.
				h.set("onFailure", "block")
				return h
			},
			verify: func(_ context.Context, a VerifyArgs, _ string, _ []byte) error {
				return claudeHooksEnabled(a.InstallArgs)
			},
		},
		launch: claudeLauncher,
	}
}

// claudeLauncher is how sandboxd launch starts the harness.
func claudeLauncher() *launcher {
	return &launcher{
		program:  "claude",
		apiHosts: []string{"api.anthropic.com"},
		// x-api-key, and Authorization: Bearer.
		apiKeys:    []APIKey{{Env: "ANTHROPIC_API_KEY"}, {Env: "ANTHROPIC_AUTH_TOKEN"}},
		baseURLEnv: "ANTHROPIC_BASE_URL",
		// Its transcripts and session state persist; the rest of
		// ~/.claude (plugins, agents, commands, skills, CLAUDE.md) is
		// code or instructions a later session outside the sandbox
		// would load, so it stays in the discarded home overlay.
		stateDirs: []string{".claude/projects", ".claude/sessions", ".claude/session-env", ".claude/shell-snapshots", ".claude/todos"},
		configure: claudeLaunch,
		preflight: claudeLaunchPreflight,
		// --setting-sources names the sources it reads.
		heldSettingsOnly: true,
		// Settings, hooks, commands, agents, skills: measured, a
		// settings.local.json made mid-session loaded its hook.
		projectDirs: []string{".claude"},
		refused: []refusedArg{
			{[]string{"--settings", "--setting-sources", "--managed-settings", "--managed-settings-in-initialize", "--initialize-fields",
				"--await-initialize", "--await-claim", "--project-config-root", "--forward-home-settings",
				"--hold-repository-while-parked", "--client-data-url", "--allow-other-models"}, "settings (its hook gate and permissions.deny)"},
			{[]string{"--bare", "--safe-mode", "--restricted", "--init", "--init-only", "--maintenance"}, "hook gate (these modes change which settings and hooks load)"},
			{[]string{"--allowedTools", "--allowed-tools", "--disallowedTools", "--disallowed-tools", "--tools",
				"--permission-prompt-tool", "--permission-prompts"}, "native tool ceiling"},
			{[]string{"--mcp-config", "--strict-mcp-config", "--channels", "--dangerously-load-development-channels", "--plugin-dir-no-mcp"}, "MCP configuration"},
			{[]string{"--plugin-dir", "--plugin-url", "--cowork", "--agents", "--agent", "--agent-id", "--agent-name", "--agent-type",
				"--agent-color", "--team-name", "--teammate-mode", "--lead-verify-key", "--parent-session-id", "--plan-mode-required"},
				"hook gate (plugins and agents bring their own hooks and tools)"},
			{[]string{"--remote", "--cloud", "--teleport", "--environment", "--pool", "--remote-control", "--rc",
				"--remote-control-session-name-prefix", "--sdk-url", "--bg", "--background", "--attach-serve", "--desktop", "--ide", "--chrome"},
				"sandbox (the session would run outside it)"},
		},
		subcommands: []string{"mcp", "plugin", "plugins", "install", "update", "upgrade", "auth", "setup-token", "doctor",
			"import", "gateway", "agents", "attach", "logs", "respawn", "rm", "stop", "kill", "purge", "auto-mode", "ultrareview"},
	}
}

// claudeLaunchPreflight refuses a launch when the user's, the project's or
// the local settings switch hooks off or hold their own PreToolUse or
// PermissionRequest hooks: those run beside the session's, and one could
// rewrite a call hookgate allowed (updatedInput).
func claudeLaunchPreflight(p LaunchPlan) error {
	sources, _ := claudeSources(p)
	for _, s := range sources {
		if err := claudeHooksEnabledIn(s.file); err != nil {
			return err
		}
		if err := foreignHooks(s.file, "Claude Code", "PreToolUse", "PermissionRequest"); err != nil {
			return err
		}
	}
	return nil
}

// claudeSource is one of the settings sources Claude Code reads besides
// the flag and managed settings: its --setting-sources name and file.
type claudeSource struct{ name, file string }

// claudeSources splits the user's, the project's and the local settings
// sources into those the session reads, whose files the sandbox holds
// (LaunchPlan.Held: a file the command could write or create mid-session
// could switch hooks off, disableAllHooks being restrictive), and those
// it leaves out. With a Held, a project's sources with no project are
// left out.
func claudeSources(p LaunchPlan) (read, left []claudeSource) {
	files := claudeSettingsFiles(InstallArgs{Harness: ClaudeCode, Home: p.Home, Project: p.Project, ClaudeConfigDir: p.getenv("CLAUDE_CONFIG_DIR")})
	for i, name := range []string{"user", "project", "local"} {
		s := claudeSource{name: name}
		if i < len(files) {
			s.file = files[i]
		}
		if p.Held == nil || s.file != "" && p.Held(s.file) {
			read = append(read, s)
		} else {
			left = append(left, s)
		}
	}
	return read, left
}

// claudeLaunch writes Claude Code's session configuration: flag settings
// (--settings, which rank above the user's, project's and local ones)
// holding hookgate's entries, permissions.deny with the ceiling and
// disableAllHooks off; the ceiling again as --disallowedTools; and an MCP
// configuration with only the session's servers, made the only one by
// --strict-mcp-config unless relaxed.
func claudeLaunch(p LaunchPlan) (LaunchConfig, error) {
	settings, err := sessionHooks(p)
	if err != nil {
		return LaunchConfig{}, err
	}
	perms := newObject()
	perms.set("deny", toAny(p.Denied))
	settings.set("permissions", perms)
	settings.set("disableAllHooks", false)
	// Flag settings rank above the user's: these pins keep a user's env
	// from switching hooks off (CLAUDE_CODE_SIMPLE, CLAUDE_CODE_SAFE_MODE)
	// or moving the model API.
	env := newObject()
	env.set("CLAUDE_CODE_SIMPLE", "0")
	env.set("CLAUDE_CODE_SAFE_MODE", "0")
	for _, k := range []string{"ANTHROPIC_BASE_URL"} {
		if v := p.getenv(k); v != "" {
			env.set(k, v)
		}
	}
	settings.set("env", env)
	servers := newObject()
	for _, s := range p.MCP {
		e := newObject()
		e.set("type", "http")
		e.set("url", s.URL)
		if s.BearerEnv != "" {
			h := newObject()
			h.set("Authorization", bearerEnvRef(s.BearerEnv))
			e.set("headers", h)
		}
		servers.set(s.Name, e)
	}
	mcp := newObject()
	mcp.set("mcpServers", servers)
	// Every value is attached with "=": --mcp-config and --disallowedTools
	// take several values, and a prompt after them (claude [options]
	// [prompt]) would be read as one more.
	args := []string{"--settings=" + filepath.Join(p.Dir, "settings.json"), "--mcp-config=" + filepath.Join(p.Dir, "mcp.json")}
	if !p.Relax {
		args = append(args, "--strict-mcp-config")
	}
	if len(p.Denied) > 0 {
		args = append(args, "--disallowedTools="+strings.Join(p.Denied, ","))
	}
	read, left := claudeSources(p)
	var notes []string
	if len(left) > 0 {
		// The flag and managed settings are read whatever this says.
		var names, files []string
		for _, s := range read {
			names = append(names, s.name)
		}
		project := false
		for _, s := range left {
			files = append(files, fmt.Sprintf("%s settings (%s)", s.name, cmp.Or(s.file, "no project")))
			project = project || s.name == "project"
		}
		args = append(args, "--setting-sources="+strings.Join(names, ","))
		note := "Claude Code reads no " + strings.Join(files, " or ") + " in this session"
		if project {
			// The project source carries them in Claude Code.
			note += ", nor the project's CLAUDE.md, skills and commands"
		}
		notes = append(notes, note+": the sandbox cannot keep those files from the command")
	}
	return LaunchConfig{
		Notes: notes,
		Files: map[string][]byte{"settings.json": encodeOrdered(settings), "mcp.json": encodeOrdered(mcp)},
		Args:  args,
		// No self-update and no traffic but the model API's: the sandbox
		// would refuse the rest.
		Env: []string{"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
		// Each switches settings hooks or plugins off or elsewhere.
		Unset: []string{"CLAUDE_CODE_SIMPLE", "CLAUDE_CODE_SAFE_MODE", "CLAUDE_CODE_RESTRICTED", "CLAUDE_CODE_PLUGIN_DIRS",
			"CLAUDE_CODE_PERSONAL_HOOKS_OFF", "CLAUDE_CODE_MANAGED_SETTINGS_PATH"},
	}, nil
}

type hookSpecific struct {
	HookEventName            string           `json:"hookEventName"`
	PermissionDecision       string           `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string           `json:"permissionDecisionReason,omitempty"`
	Decision                 *permissionReply `json:"decision,omitempty"`
	UpdatedInput             map[string]any   `json:"updatedInput,omitempty"`
}

type permissionReply struct {
	Behavior string `json:"behavior"`
	Message  string `json:"message,omitempty"`
}

type hookSpecificOutput struct {
	HookSpecificOutput hookSpecific `json:"hookSpecificOutput"`
}

// encodeClaudeLike writes Claude Code's answers and Codex's subset of
// them. Codex has no allow without updatedInput and no ask: its allow
// (explicitAllow false) is empty stdout, and Encode has already turned
// its ask into a deny.
func encodeClaudeLike(c Call, r Reply, reason string, explicitAllow bool) Output {
	switch c.Kind {
	case KindTool:
		hs := hookSpecific{HookEventName: c.Event, PermissionDecisionReason: reason}
		switch r {
		case ReplyPass:
			return Output{}
		case ReplyAllow:
			if !explicitAllow {
				return Output{}
			}
			hs.PermissionDecision = "allow"
		case ReplyAsk:
			hs.PermissionDecision = "ask"
		default:
			hs.PermissionDecision = "deny"
		}
		return Output{Stdout: encodeJSON(hookSpecificOutput{hs})}
	case KindPermission:
		hs := hookSpecific{HookEventName: c.Event}
		switch r {
		case ReplyPass, ReplyAsk:
			return Output{}
		case ReplyAllow:
			hs.Decision = &permissionReply{Behavior: "allow"}
		default:
			hs.Decision = &permissionReply{Behavior: "deny", Message: reason}
		}
		return Output{Stdout: encodeJSON(hookSpecificOutput{hs})}
	}
	return Output{}
}

// claudeHooksEnabled refuses settings that switch hooks off: Claude Code
// reads user, project and local settings; disableAllHooks in any of them
// turns off hookgate's.
func claudeHooksEnabled(a InstallArgs) error {
	for _, f := range claudeSettingsFiles(a) {
		if err := claudeHooksEnabledIn(f); err != nil {
			return err
		}
	}
	return nil
}

// claudeHooksEnabledIn refuses one settings file (absent: fine) that sets
// disableAllHooks.
func claudeHooksEnabledIn(f string) error {
	b, err := os.ReadFile(f)
	if err != nil {
		return nil
	}
	var s struct {
		DisableAllHooks bool `json:"disableAllHooks"`
	}
	if json.Unmarshal(b, &s) == nil && s.DisableAllHooks {
		return fmt.Errorf("%s sets disableAllHooks: Claude Code runs no hook", f)
	}
	return nil
}

// claudeSettingsFiles are the settings files Claude Code reads for a: the
// user's (in ~/.claude or $CLAUDE_CONFIG_DIR) and, with a project, the
// project's and the local ones.
func claudeSettingsFiles(a InstallArgs) []string {
	user := filepath.Join(a.Home, ".claude")
	if a.ClaudeConfigDir != "" {
		user = a.ClaudeConfigDir
	}
	files := []string{filepath.Join(user, "settings.json")}
	if a.Project != "" {
		files = append(files, filepath.Join(a.Project, ".claude", "settings.json"), filepath.Join(a.Project, ".claude", "settings.local.json"))
	}
	return files
}
