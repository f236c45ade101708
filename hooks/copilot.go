package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

// GitHub Copilot CLI (1.0.102): preToolUse command hooks in any
// $COPILOT_HOME/hooks/*.json (user, loaded always) or a repository's
// .github/hooks/*.json (loaded only when the folder is trusted, in
// $COPILOT_HOME/config.json's trustedFolders), as
// {"version":1,"hooks":{"preToolUse":[{"type":"command","command":...,"timeoutSec":N}]}}.
// The payload is camelCase with no event name: {"sessionId","timestamp",
// "cwd","toolName","toolArgs":{...}}. It denies on
// {"permissionDecision":"deny","permissionDecisionReason":R} (R reaches
// the model), on any non-zero exit, a signal or a missing command; it
// runs the tool on a timeout, on stdout that is not one JSON document and
// on an unknown decision, so the fail-closed wrapper passes only
// hookgate's own shapes. An explicit {"permissionDecision":"allow"} skips
// Copilot's own path and URL checks, so hookgate never sends it: its allow
// is empty stdout (no opinion). A trusted repository's
// .github/copilot/settings.json or settings.local.json with
// disableAllHooks switches every hook off, the user's too; verify reports
// it. (Measured on the real binary; the integration test drives it.)

// copilotEvents are Copilot's hook types (its HookType enum); hookgate is
// installed on preToolUse only.
var copilotEvents = kinds(map[string]Kind{"preToolUse": KindTool},
	"preMcpToolCall", "postToolUse", "postToolUseFailure", "userPromptSubmitted",
	"userPromptTransformed", "sessionStart", "sessionEnd", "postResult", "prePRDescription",
	"errorOccurred", "agentStop", "subagentStart", "subagentStop", "preCompact",
	"permissionRequest", "notification")

// copilotHooksFile is the file hookgate owns in a hooks directory.
const copilotHooksFile = "hookgate.json"

func copilotProtocol() *protocol {
	return &protocol{
		events: copilotEvents,
		event: func(f *fields) string {
			// Copilot's Claude-compatible form (PascalCase events, Claude's
			// tool names) is not what install writes: refuse it rather than
			// read its tools as Copilot's.
			if _, ok := f.top["hook_event_name"]; ok {
				f.fail("hook_event_name", "present: Copilot's Claude-compatible hook form is not supported; install with hookgate install --harness copilot")
				return ""
			}
			return "preToolUse"
		},
		decode: func(f *fields, c *Call) {
			c.SessionID = f.str("sessionId", false)
			c.Cwd = f.str("cwd", false)
			c.Tool = f.str("toolName", true)
			c.Input = f.objectOrJSONString("toolArgs")
		},
		mcpIDs: copilotMCPIDs,
		encode: func(c Call, r Reply, reason, _ string) Output {
			if c.Kind == KindOther || r == ReplyAllow || r == ReplyPass {
				return Output{}
			}
			return Output{Stdout: encodeJSON(copilotReply{Decision: "deny", Reason: reason})}
		},
		failStdout:   func(reason string) []byte { return encodeJSON(copilotReply{Decision: "deny", Reason: reason}) },
		answerShapes: []string{`''`, `'{"permissionDecision":"deny",'*'}'`},
		denyShapes:   []string{`''`, `'{"permissionDecision":"deny",'*'}'`},
		install: installer{
			path: func(a InstallArgs, base string, user bool) string {
				if user {
					return filepath.Join(a.copilotHome(), "hooks", copilotHooksFile)
				}
				return filepath.Join(base, ".github", "hooks", copilotHooksFile)
			},
			events: []string{"preToolUse"},
			flat:   true,
			handler: func(a InstallArgs, _, cmd string) *object {
				h := newObject()
				h.set("type", "command")
				// "command" runs through bash -c, as "bash" does.
				h.set("command", cmd)
				h.set("timeoutSec", json.Number(fmt.Sprint(hookTimeout)))
				return h
			},
			prepare: func(root *object) {
				if _, ok := root.get("version"); !ok {
					root.keys = append([]string{"version"}, root.keys...)
					root.vals["version"] = json.Number("1")
				}
			},
			projectTrust: func(a InstallArgs, path string) error {
				if copilotTrusted(a.copilotHome(), a.Project) {
					return nil
				}
				if a.TrustProject {
					return trustCopilotFolder(a.copilotHome(), a.Project, a.now())
				}
				return fmt.Errorf("Copilot CLI ignores %s unless the folder is trusted: install with --trust-project (adds it to trustedFolders in %s), or install with --scope user",
					filepath.Dir(path), filepath.Join(a.copilotHome(), "config.json"))
			},
			verify: func(_ context.Context, a VerifyArgs, path string, data []byte) error {
				if v, _ := parseOrdered(data); v != nil {
					if n, _ := v.(*object).vals["version"].(json.Number); n != "" && n != "1" {
						return fmt.Errorf("%s: version %s: Copilot CLI rejects the whole file", path, n)
					}
				}
				if a.Scope == "project" && !copilotTrusted(a.copilotHome(), a.Project) {
					return fmt.Errorf("Copilot CLI ignores %s: the folder is not in trustedFolders in %s", filepath.Dir(path), filepath.Join(a.copilotHome(), "config.json"))
				}
				settings := filepath.Join(a.copilotHome(), "settings.json")
				if b, err := os.ReadFile(settings); err == nil {
					var s struct {
						DisabledHooks []any `json:"disabledHooks"`
					}
					if json.Unmarshal(b, &s) == nil && len(s.DisabledHooks) > 0 {
						return fmt.Errorf("%s lists disabledHooks, which may name hookgate's (by a hash hookgate cannot check): remove them", settings)
					}
				}
				if a.Project != "" && copilotTrusted(a.copilotHome(), a.Project) {
					for _, f := range []string{"settings.json", "settings.local.json"} {
						p := filepath.Join(a.Project, ".github", "copilot", f)
						if copilotDisablesHooks(p) {
							return fmt.Errorf("%s sets disableAllHooks in a trusted folder: Copilot CLI runs no hook there", p)
						}
					}
				}
				return nil
			},
		},
	}
}

type copilotReply struct {
	Decision string `json:"permissionDecision"`
	Reason   string `json:"permissionDecisionReason,omitempty"`
}

// copilotHome is Copilot's configuration directory: $COPILOT_HOME, else
// ~/.copilot.
func (a InstallArgs) copilotHome() string {
	if a.CopilotHome != "" {
		return a.CopilotHome
	}
	return filepath.Join(a.Home, ".copilot")
}

// copilotMCPIDs reads Copilot's MCP tool names, "<server>-<tool>": one
// reading per "-" (server names may hold one); a native tool's name is
// never one.
func copilotMCPIDs(c Call, _ *Session, _ map[string]bool) ([]string, bool) {
	if _, native := policy.NativeToolOf(string(Copilot), c.Tool); native {
		return nil, false
	}
	var ids []string
	for i := 1; i < len(c.Tool)-1; i++ {
		if c.Tool[i] == '-' {
			ids = append(ids, c.Tool[:i]+":"+c.Tool[i+1:])
		}
	}
	return ids, len(ids) > 0
}

// copilotConfig reads $COPILOT_HOME/config.json, which Copilot writes as
// JSON after a header of // comment lines: it returns the header and the
// object. A missing or empty file is an empty object.
func copilotConfig(path string) (header string, root *object, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", newObject(), nil
	}
	if err != nil {
		return "", nil, err
	}
	rest := b
	for {
		t := bytes.TrimLeft(rest, " \t\r\n")
		if !bytes.HasPrefix(t, []byte("//")) {
			rest = t
			break
		}
		nl := bytes.IndexByte(t, '\n')
		if nl < 0 {
			rest = nil
			break
		}
		rest = t[nl+1:]
	}
	header = string(b[:len(b)-len(rest)])
	if len(bytes.TrimSpace(rest)) == 0 {
		return header, newObject(), nil
	}
	v, err := parseOrdered(rest)
	if err != nil {
		return "", nil, fmt.Errorf("%s: not JSON after its comment header (%v); not touching it", path, err)
	}
	o, ok := v.(*object)
	if !ok {
		return "", nil, fmt.Errorf("%s: not a JSON object; not touching it", path)
	}
	return header, o, nil
}

// copilotTrusted reports whether dir is in Copilot's trustedFolders, or
// below one of them.
func copilotTrusted(copilotHome, dir string) bool {
	_, root, err := copilotConfig(filepath.Join(copilotHome, "config.json"))
	if err != nil || dir == "" {
		return false
	}
	list, _ := root.vals["trustedFolders"].([]any)
	for _, v := range list {
		if f, ok := v.(string); ok && f != "" && within(filepath.Clean(dir), filepath.Clean(f)) {
			return true
		}
	}
	return false
}

// trustCopilotFolder adds dir to trustedFolders in config.json, keeping
// its header and every other setting, with a backup.
func trustCopilotFolder(copilotHome, dir string, now time.Time) error {
	path := filepath.Join(copilotHome, "config.json")
	header, root, err := copilotConfig(path)
	if err != nil {
		return err
	}
	var list []any
	if v, ok := root.get("trustedFolders"); ok {
		l, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: trustedFolders is not a list; not touching it", path)
		}
		list = l
	}
	if slices.Contains(list, any(dir)) {
		return nil
	}
	root.set("trustedFolders", append(list, dir))
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return writeWithBackup(path, old, append([]byte(header), encodeOrdered(root)...), now)
}

// copilotDisablesHooks reports whether a settings file sets
// disableAllHooks.
func copilotDisablesHooks(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var s struct {
		DisableAllHooks bool `json:"disableAllHooks"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		// Not plain JSON (comments, say): whether Copilot reads it as set
		// cannot be told here, so any mention counts.
		return strings.Contains(string(b), "disableAllHooks")
	}
	return s.DisableAllHooks
}
