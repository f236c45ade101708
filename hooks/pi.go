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
)

// Pi has no hook configuration: hookgate installs a Pi extension
// (pi/hookgate.ts, in ~/.pi/agent/extensions, $PI_CODING_AGENT_DIR or a
// project's .pi/extensions) whose tool_call handler runs hookgate with the
// event as JSON and blocks unless hookgate answers {"block": false} in
// time; the extension itself fails closed, so no shell wrapper is needed.

func piEvents() map[string]Kind {
	return kinds(map[string]Kind{"tool_call": KindTool})
}

func piProtocol() *protocol {
	return &protocol{
		events: piEvents(),
		decode: func(f *fields, c *Call) {
			c.Tool = f.str("tool_name", true)
			c.Input = f.object("tool_input", true)
			c.ToolUseID = f.str("tool_call_id", false)
		},
		paths: piPaths,
		encode: func(c Call, r Reply, reason, _ string) Output {
			if c.Kind == KindOther || r == ReplyAllow || r == ReplyPass {
				return Output{Stdout: encodeJSON(piReply{})}
			}
			return Output{Stdout: encodeJSON(piReply{Block: true, Reason: reason})}
		},
		failStdout: func(reason string) []byte { return encodeJSON(piReply{Block: true, Reason: reason}) },
		install: installer{
			path: func(a InstallArgs, base string, user bool) string {
				if !user {
					return filepath.Join(base, ".pi", "extensions", "hookgate.ts")
				}
				if a.PiAgentDir != "" {
					return filepath.Join(a.PiAgentDir, "extensions", "hookgate.ts")
				}
				return filepath.Join(base, ".pi", "agent", "extensions", "hookgate.ts")
			},
			edit: editPi,
			verifyFile: func(path string) error {
				b, err := os.ReadFile(path)
				if err != nil || !strings.Contains(string(b), piMarker) {
					return fmt.Errorf("%s: no hookgate extension (%v)", path, err)
				}
				if sh := piShadowed(path); sh != "" {
					return fmt.Errorf("%s: Pi loads only that file from the directory and skips hookgate.ts", sh)
				}
				return nil
			},
		},
		launch: piLauncher,
	}
}

// piLauncher is how sandboxd launch starts the harness.
func piLauncher() *launcher {
	return &launcher{
		program: "pi",
		// Pi's default provider is Google's; --api-host names another.
		apiHosts: []string{"generativelanguage.googleapis.com"},
		// Its providers' keys, each tied to its provider's host: a key
		// is a credential only when that host is among the launch's API
		// hosts (--api-host), never for another provider's host.
		apiKeys: []APIKey{
			{Env: "GEMINI_API_KEY", Host: "generativelanguage.googleapis.com"},
			{Env: "ANTHROPIC_API_KEY", Host: "api.anthropic.com"},
			{Env: "OPENAI_API_KEY", Host: "api.openai.com"},
		},
		stateDirs: []string{".pi/agent/sessions"},
		configure: piLaunch,
		preflight: piLaunchPreflight,
		// Pi's parser reads "--" as an unknown flag and goes on.
		noEndOfOptions: true,
		refused: []refusedArg{
			{[]string{"-e", "--extension", "-ne", "--no-extensions"}, "hook gate (extensions load beside it and can rewrite a call it allowed)"},
			{[]string{"-t", "--tools", "-nt", "--no-tools", "-nbt", "--no-builtin-tools"}, "native tool ceiling"},
			{[]string{"--mode"}, "session (an RPC or JSON mode is driven by another program)"},
		},
		subcommands: []string{"install", "remove", "uninstall", "update", "list", "config"},
	}
}

type piReply struct {
	Block  bool   `json:"block"`
	Reason string `json:"reason,omitempty"`
}

// piPaths rewrites paths the way Pi reads them before use: it strips one
// leading "@" (a file mention) and reads Unicode spaces as spaces.
func piPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		p = strings.TrimPrefix(p, "@")
		out[i] = strings.Map(func(r rune) rune {
			if r == '\u00a0' || (r >= '\u2000' && r <= '\u200a') || r == '\u202f' || r == '\u205f' || r == '\u3000' {
				return ' '
			}
			return r
		}, p)
	}
	return out
}

//go:embed pi/hookgate.ts
var piExtension string

const piMarker = "(managed by `hookgate install --harness pi`)"

// piEntryFiles, when one is in an extensions directory, are all Pi loads
// from it: hookgate.ts beside them would be skipped.
var piEntryFiles = []string{"index.ts", "index.js", "package.json"}

// piShadowed returns the file that makes Pi skip hookgate.ts in its
// extensions directory, or "".
func piShadowed(path string) string {
	for _, f := range piEntryFiles {
		p := filepath.Join(filepath.Dir(path), f)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// piExtensionFor is hookgate's extension running a's hookgate command.
func piExtensionFor(a InstallArgs) string {
	bin, _ := json.Marshal(a.Binary)
	args, _ := json.Marshal(a.argv())
	src := strings.Replace(piExtension, `const HOOKGATE = "hookgate";`, "const HOOKGATE = "+string(bin)+";", 1)
	return strings.Replace(src, `const ARGS = ["check", "--harness", "pi"];`, "const ARGS = "+string(args)+";", 1)
}

// piLaunchPreflight refuses a launch when the user's or the project's Pi
// settings change how bash runs (shellCommandPrefix runs its code before
// every command, shellPath replaces the shell): the gate sees only the
// command.
func piLaunchPreflight(p LaunchPlan) error {
	agent := p.getenv("PI_CODING_AGENT_DIR")
	if agent == "" {
		agent = filepath.Join(p.Home, ".pi", "agent")
	}
	files := []string{filepath.Join(agent, "settings.json")}
	if p.Project != "" {
		files = append(files, filepath.Join(p.Project, ".pi", "settings.json"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: not a JSON object (%v): Pi's reading of it cannot be checked", f, err)
		}
		for _, k := range []string{"shellCommandPrefix", "shellPath"} {
			if v, ok := s[k]; ok && v != nil && v != "" {
				return fmt.Errorf("%s sets %s, which changes what bash runs beyond the command the gate rules on; remove it to launch", f, k)
			}
		}
	}
	return nil
}

// piDefaultTools are the built-in tools Pi offers when --tools is not
// given (grep, find and ls are off by default).
var piDefaultTools = []string{"read", "bash", "edit", "write"}

// piLaunch writes Pi's session configuration: hookgate's extension, the
// only one loaded (--no-extensions drops the discovered and configured
// ones, which load after it and could rewrite a call it allowed), and the
// ceiling as a --tools allowlist of the default tools the session keeps.
// Pi has no MCP: the session's MCP servers and --relax do not apply.
func piLaunch(p LaunchPlan) (LaunchConfig, error) {
	if len(p.MCP) > 0 {
		return LaunchConfig{}, errors.New("Pi has no MCP client: a session MCP server cannot be given to it")
	}
	ext := filepath.Join(p.Dir, "hookgate.ts")
	args := []string{"--no-extensions", "--extension", ext}
	if len(p.Denied) > 0 {
		var keep []string
		for _, t := range piDefaultTools {
			if !slices.Contains(p.Denied, t) {
				keep = append(keep, t)
			}
		}
		if len(keep) == 0 {
			args = append(args, "--no-tools")
		} else {
			args = append(args, "--tools", strings.Join(keep, ","))
		}
	}
	return LaunchConfig{
		Files: map[string][]byte{"hookgate.ts": []byte(piExtensionFor(InstallArgs{Harness: Pi, Binary: p.Hookgate}))},
		Args:  args,
	}, nil
}

func editPi(a InstallArgs, path string, install bool) (string, bool, error) {
	if install {
		if sh := piShadowed(path); sh != "" {
			return path, false, fmt.Errorf("Pi loads only %s from %s, so it would skip hookgate.ts there: import hookgate.ts from it, or move it", filepath.Base(sh), filepath.Dir(path))
		}
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return path, false, err
	}
	if old != nil && !strings.Contains(string(old), piMarker) {
		return path, false, fmt.Errorf("%s exists and is not hookgate's extension; not touching it", path)
	}
	if !install {
		if old == nil {
			return path, false, nil
		}
		if err := backup(path, old, a.now()); err != nil {
			return path, false, err
		}
		return path, true, os.Remove(path)
	}
	src := piExtensionFor(a)
	if string(old) == src {
		return path, false, nil
	}
	if err := writeWithBackup(path, old, []byte(src), a.now()); err != nil {
		return path, false, err
	}
	return path, true, nil
}
