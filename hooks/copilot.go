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
func copilotEvents() map[string]Kind {
	return kinds(map[string]Kind{"preToolUse": KindTool},
		"preMcpToolCall", "postToolUse", "postToolUseFailure", "userPromptSubmitted",
		"userPromptTransformed", "sessionStart", "sessionEnd", "postResult", "prePRDescription",
		"errorOccurred", "agentStop", "subagentStart", "subagentStop", "preCompact",
		"permissionRequest", "notification")
}

// copilotHooksFile is the file hookgate owns in a hooks directory.
const copilotHooksFile = "hookgate.json"

func copilotProtocol() *protocol {
	return &protocol{
		events: copilotEvents(),
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
				return copilotVerify(a, path, data)
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

// copilotVerify checks what Copilot reads beside hookgate's entry: the
// file's version, the folder's trust for a project install, and every
// other source of hooks and settings that could undo hookgate's ruling.
// Copilot runs every preToolUse hook it finds, hookgate's among them, and
// passes one hook's modifiedArgs down the chain, so another preToolUse
// hook (in the user's hooks directory in an order that is not the names',
// inline in settings.json, or in a trusted folder's .github) could
// rewrite a call hookgate allowed: verify refuses them. A trusted
// folder's .github/copilot settings with disableAllHooks switch every
// hook off; Copilot reads them in the cwd and in its git root.
func copilotVerify(a VerifyArgs, path string, data []byte) error {
	if v, _ := parseOrdered(data); v != nil {
		if n, _ := v.(*object).vals["version"].(json.Number); n != "" && n != "1" {
			return fmt.Errorf("%s: version %s: Copilot CLI rejects the whole file", path, n)
		}
	}
	home := a.copilotHome()
	if a.Scope == "project" && !copilotTrusted(home, a.Project) {
		return fmt.Errorf("Copilot CLI ignores %s: the folder is not in trustedFolders in %s", filepath.Dir(path), filepath.Join(home, "config.json"))
	}
	settings := filepath.Join(home, "settings.json")
	if b, err := os.ReadFile(settings); err == nil {
		var s struct {
			DisabledHooks []any `json:"disabledHooks"`
		}
		if json.Unmarshal(b, &s) != nil {
			if strings.Contains(string(b), "disabledHooks") || strings.Contains(string(b), "reToolUse") {
				return fmt.Errorf("%s is not plain JSON and mentions disabledHooks or preToolUse: hookgate cannot tell whether Copilot runs it", settings)
			}
		} else if len(s.DisabledHooks) > 0 {
			return fmt.Errorf("%s lists disabledHooks, which may name hookgate's (by a hash hookgate cannot check): remove them", settings)
		}
	}
	if f := copilotOtherPreToolUse([]string{settings}, path); f != "" {
		return fmt.Errorf("%s has another preToolUse hook, which Copilot also runs and which could rewrite a call hookgate allowed (modifiedArgs): remove it", f)
	}
	if f := copilotOtherPreToolUse(globJSON(filepath.Join(home, "hooks")), path); f != "" {
		return fmt.Errorf("%s has another preToolUse hook, which Copilot also runs and which could rewrite a call hookgate allowed (modifiedArgs): remove it", f)
	}
	if a.Project == "" {
		return nil
	}
	for _, dir := range copilotFolders(a.Project) {
		if !copilotTrusted(home, dir) {
			continue
		}
		cs := []string{filepath.Join(dir, ".github", "copilot", "settings.json"), filepath.Join(dir, ".github", "copilot", "settings.local.json")}
		for _, p := range cs {
			if copilotDisablesHooks(p) {
				return fmt.Errorf("%s sets disableAllHooks in a trusted folder: Copilot CLI runs no hook there", p)
			}
		}
		if f := copilotOtherPreToolUse(append(cs, globJSON(filepath.Join(dir, ".github", "hooks"))...), path); f != "" {
			return fmt.Errorf("%s has another preToolUse hook, which Copilot also runs in this trusted folder and which could rewrite a call hookgate allowed (modifiedArgs): remove it", f)
		}
	}
	return nil
}

// copilotFolders are the folders Copilot reads a project's .github from
// when started in dir: dir and its git root.
func copilotFolders(dir string) []string {
	out := []string{dir}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			if d != dir {
				out = append(out, d)
			}
			return out
		}
		if filepath.Dir(d) == d {
			return out
		}
	}
}

// globJSON lists the *.json files of dir.
func globJSON(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	return m
}

// copilotOtherPreToolUse returns the first of files (ours aside) that
// holds a preToolUse hook other than hookgate's, or one that cannot be
// read as JSON while naming one.
func copilotOtherPreToolUse(files []string, ours string) string {
	for _, f := range files {
		if f == ours {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		v, err := parseOrdered(b)
		root, _ := v.(*object)
		if err != nil || root == nil {
			if strings.Contains(string(b), "reToolUse") {
				return f
			}
			continue
		}
		hv, _ := root.get("hooks")
		hooks, _ := hv.(*object)
		if hooks == nil {
			continue
		}
		for _, ev := range []string{"preToolUse", "PreToolUse"} {
			list, _ := hooks.vals[ev].([]any)
			for _, item := range list {
				o, _ := item.(*object)
				if o == nil {
					return f
				}
				handlers := []any{o}
				if hs, ok := o.vals["hooks"].([]any); ok {
					handlers = hs
				}
				for _, hd := range handlers {
					ho, _ := hd.(*object)
					if ho == nil {
						return f
					}
					cmd, _ := ho.vals["command"].(string)
					if !isOurs(cmd) {
						return f
					}
				}
			}
		}
	}
	return ""
}

// within reports, for trustedFolders, whether the clean path p is dir or below it.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}
