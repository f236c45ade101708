package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Gemini CLI: BeforeTool hooks in settings.json (user: ~/.gemini;
// project: .gemini/, read only in a trusted folder), matcher groups whose
// matchers are regular expressions, timeouts in milliseconds. It denies
// only on {"decision":"deny"} (or exit 2 with stderr); exit 1 is a
// warning and a timeout runs the tool.

var geminiEvents = kinds(map[string]Kind{"BeforeTool": KindTool},
	"SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeModel", "AfterModel",
	"BeforeToolSelection", "AfterTool", "Notification", "PreCompress")

func geminiProtocol() *protocol {
	return &protocol{
		events:    geminiEvents,
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
				if geminiProjectTrusted(a.Home, a.Project) {
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
				if a.Scope == "project" && !geminiProjectTrusted(a.Home, a.Project) {
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
