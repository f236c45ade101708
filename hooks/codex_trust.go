package hooks

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Codex runs a hook only when it is trusted: its user config.toml holds,
// per hook entry, [hooks.state."<source>:<event>:<group>:<handler>"] with
// trusted_hash = "sha256:<hex>" of the entry's canonical form (Codex 0.171,
// codex-rs/hooks/src/engine/discovery.rs, hook_hash, and
// config_rules.rs, which reads hooks.state from the user layer only, so
// project hooks are trusted there too). An untrusted entry is skipped
// silently by codex exec: installing without trust installs nothing.

// codexEventLabels are Codex's labels for the events hookgate gates.
var codexEventLabels = map[string]string{"PreToolUse": "pre_tool_use", "PermissionRequest": "permission_request"}

// CodexHome is Codex's configuration directory: $CODEX_HOME, else
// ~/.codex.
func CodexHome(env func(string) string, home string) string {
	if h := env("CODEX_HOME"); h != "" {
		return h
	}
	return filepath.Join(home, ".codex")
}

// codexTrust is one trust entry: the hook's key and hash.
type codexTrust struct {
	Key, Hash string
}

// codexHandlerHash is Codex's hash of one command handler in its group:
// SHA-256 of the compact JSON, keys sorted, strings escaped as serde_json
// does (only '"', '\\' and control characters).
func codexHandlerHash(label, matcher, command, statusMessage string, timeout int) string {
	if timeout < 1 {
		timeout = 1
	}
	var b strings.Builder
	b.WriteString(`{"event_name":`)
	serdeString(&b, label)
	b.WriteString(`,"hooks":[{"async":false,"command":`)
	serdeString(&b, command)
	if statusMessage != "" {
		b.WriteString(`,"statusMessage":`)
		serdeString(&b, statusMessage)
	}
	b.WriteString(`,"timeout":` + strconv.Itoa(timeout) + `,"type":"command"}]`)
	b.WriteString(`,"matcher":`)
	serdeString(&b, matcher)
	b.WriteString(`}`)
	sum := sha256.Sum256([]byte(b.String()))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func serdeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// codexTrustFor lists the trust entries for hookgate's handlers in the
// hooks file at path (as written): its groups' positions are the keys'.
func codexTrustFor(path string, data []byte) ([]codexTrust, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	v, err := parseOrdered(data)
	if err != nil {
		return nil, err
	}
	root, _ := v.(*object)
	if root == nil {
		return nil, errors.New("not a JSON object")
	}
	hv, _ := root.get("hooks")
	hooksObj, _ := hv.(*object)
	if hooksObj == nil {
		return nil, nil
	}
	var out []codexTrust
	for _, ev := range hooksObj.keys {
		label, gated := codexEventLabels[ev]
		if !gated {
			continue
		}
		list, _ := hooksObj.vals[ev].([]any)
		for gi, g := range list {
			gob, _ := g.(*object)
			if gob == nil {
				continue
			}
			matcher, _ := gob.vals["matcher"].(string)
			handlers, _ := gob.vals["hooks"].([]any)
			for hi, hd := range handlers {
				ho, _ := hd.(*object)
				if ho == nil {
					continue
				}
				cmd, _ := ho.vals["command"].(string)
				if !isOurs(cmd) {
					continue
				}
				status, _ := ho.vals["statusMessage"].(string)
				timeout := 600
				if n, ok := ho.vals["timeout"].(interface{ String() string }); ok {
					if t, err := strconv.Atoi(n.String()); err == nil {
						timeout = t
					}
				}
				out = append(out, codexTrust{
					Key:  fmt.Sprintf("%s:%s:%d:%d", real, label, gi, hi),
					Hash: codexHandlerHash(label, matcher, cmd, status, timeout),
				})
			}
		}
	}
	return out, nil
}

// trustCodexHooks records trust for hookgate's entries in the hooks file
// at hooksPath in codexHome's config.toml (kept as it is otherwise, after
// a backup), replacing older hookgate trust for the same keys.
func trustCodexHooks(codexHome, hooksPath string, now time.Time) error {
	data, err := os.ReadFile(hooksPath)
	if err != nil {
		return err
	}
	entries, err := codexTrustFor(hooksPath, data)
	if err != nil {
		return fmt.Errorf("%s: %w", hooksPath, err)
	}
	cfg := filepath.Join(codexHome, "config.toml")
	old, err := os.ReadFile(cfg)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	out, err := upsertCodexTrust(string(old), entries)
	if err != nil {
		return fmt.Errorf("%s: %w", cfg, err)
	}
	if out == string(old) {
		return nil
	}
	var prev []byte
	if old != nil {
		prev = old
	}
	return writeWithBackup(cfg, prev, []byte(out), now)
}

// upsertCodexTrust sets [hooks.state."KEY"] trusted_hash for each entry in
// a config.toml text. It edits only those tables; a config that keeps
// hooks.state in another form (an inline table, a dotted key) is refused
// rather than made invalid.
func upsertCodexTrust(cfg string, entries []codexTrust) (string, error) {
	for _, line := range strings.Split(cfg, "\n") {
		t := strings.TrimSpace(line)
		compact := strings.ReplaceAll(strings.ReplaceAll(t, " ", ""), "\t", "")
		if strings.HasPrefix(t, "hooks.state") || strings.HasPrefix(t, "state") && strings.Contains(cfg, "[hooks]") ||
			compact == "[hooks.state]" || strings.HasPrefix(compact, "hooks=") || strings.HasPrefix(compact, "[hooks.state.'") ||
			strings.HasPrefix(compact, "[hooks.state.") && !strings.HasPrefix(t, "[hooks.state.\"") {
			return "", errors.New(`hooks.state is written in a form hookgate does not edit (use [hooks.state."KEY"] tables); add hookgate's trust by hand or with Codex`)
		}
	}
	lines := strings.Split(cfg, "\n")
	if cfg == "" {
		lines = nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	for _, e := range entries {
		header := "[hooks.state." + tomlQuote(e.Key) + "]"
		start := -1
		for i, l := range lines {
			if strings.TrimSpace(l) == header {
				start = i
				break
			}
		}
		if start < 0 {
			if len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) != "" {
				lines = append(lines, "")
			}
			lines = append(lines, header, "trusted_hash = "+tomlQuote(e.Hash))
			continue
		}
		end := len(lines)
		for i := start + 1; i < len(lines); i++ {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "[") {
				end = i
				break
			}
		}
		body := []string{"trusted_hash = " + tomlQuote(e.Hash)}
		for _, l := range lines[start+1 : end] {
			k, _, _ := strings.Cut(strings.TrimSpace(l), "=")
			if strings.TrimSpace(k) != "trusted_hash" && strings.TrimSpace(l) != "" {
				body = append(body, l)
			}
		}
		lines = append(append(append([]string{}, lines[:start+1]...), body...), lines[end:]...)
	}
	out := strings.Join(lines, "\n")
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	return out, nil
}

// tomlQuote is a TOML basic string.
func tomlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// codexProjectTrusted reports whether codexHome's config.toml marks dir
// (or an ancestor: Codex checks the directory, the project root and the
// git root) as a trusted project; Codex ignores an untrusted project's
// .codex entirely.
func codexProjectTrusted(codexHome, dir string) bool {
	b, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		return false
	}
	lines := strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n")
	// Codex honours the trust of the directory itself and of the git root
	// holding it, not of any ancestor.
	cands := []string{filepath.Clean(dir)}
	for d := filepath.Clean(dir); d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			cands = append(cands, d)
			break
		}
	}
	for _, d := range cands {
		header := "[projects." + tomlQuote(d) + "]"
		for i, l := range lines {
			if strings.TrimSpace(l) != header {
				continue
			}
			for _, x := range lines[i+1:] {
				x = strings.TrimSpace(x)
				if strings.HasPrefix(x, "[") {
					break
				}
				k, v, ok := strings.Cut(x, "=")
				if ok && strings.TrimSpace(k) == "trust_level" && strings.Trim(strings.TrimSpace(v), `"'`) == "trusted" {
					return true
				}
			}
		}
	}
	return false
}
