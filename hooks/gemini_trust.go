package hooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

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

// trustCodexProject marks dir a trusted project in codexHome's
// config.toml.
func trustCodexProject(codexHome, dir string, now time.Time) error {
	cfg := filepath.Join(codexHome, "config.toml")
	old, err := os.ReadFile(cfg)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	header := "[projects." + tomlQuote(filepath.Clean(dir)) + "]"
	if strings.Contains(string(old), header) {
		return fmt.Errorf("%s has %s without trust_level = \"trusted\"; set it there", cfg, header)
	}
	out := string(old)
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	if out != "" {
		out += "\n"
	}
	out += header + "\ntrust_level = \"trusted\"\n"
	return writeWithBackup(cfg, old, []byte(out), now)
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
