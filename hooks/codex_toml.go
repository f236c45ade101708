package hooks

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Codex's config.toml through github.com/pelletier/go-toml/v2: every read
// decodes the file as TOML, every string and key written is quoted by the
// library, and every edit of a user's file is checked by decoding the
// result: it must hold what the old file held plus the one change, or the
// edit is refused and the file left as it was. A user's file is edited as
// text (its comments and layout kept); only the lines hookgate owns change.

// decodeCodexTOML decodes a TOML file's text (an empty text is an empty
// document); a syntax error names the file, line and column.
func decodeCodexTOML(path string, text []byte) (map[string]any, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal(text, &doc); err != nil {
		return nil, tomlError(path, err)
	}
	return doc, nil
}

// tomlError is a decoding error with the file, line and column.
func tomlError(path string, err error) error {
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Errorf("%s:%d:%d: %w", path, row, col, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// tomlKey is one key part as the library writes it: bare when it can be,
// else quoted.
func tomlKey(s string) (string, error) {
	b, err := toml.Marshal(map[string]bool{s: true})
	if err != nil {
		return "", fmt.Errorf("toml key %q: %w", s, err)
	}
	return strings.TrimSuffix(string(b), " = true\n"), nil
}

// tomlKeyValue is one "key = value" line (without its newline) as the
// library writes it; v is a scalar or an array.
func tomlKeyValue(k string, v any) (string, error) {
	b, err := toml.Marshal(map[string]any{k: v})
	if err != nil {
		return "", fmt.Errorf("toml %s: %w", k, err)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// tomlTable returns the table at path in a decoded document; ok is false
// when a part is missing or not a table.
func tomlTable(doc map[string]any, path ...string) (map[string]any, bool) {
	for _, k := range path {
		t, ok := doc[k].(map[string]any)
		if !ok {
			return nil, false
		}
		doc = t
	}
	return doc, true
}

// tomlSet sets path to v in a decoded document, creating the tables on the
// way; false when a part of the way is a value that is not a table.
func tomlSet(doc map[string]any, v any, path ...string) bool {
	for _, k := range path[:len(path)-1] {
		next, present := doc[k]
		if !present {
			t := map[string]any{}
			doc[k], next = t, t
		}
		t, ok := next.(map[string]any)
		if !ok {
			return false
		}
		doc = t
	}
	doc[path[len(path)-1]] = v
	return true
}

// tomlKeyParts decodes a table header's or key's dotted parts, and the
// range of the last.
func tomlKeyParts(it unstable.Iterator) ([]string, unstable.Range) {
	var parts []string
	var last unstable.Range
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
		last = it.Node().Raw
	}
	return parts, last
}

// tomlEdit is one change to a text: the bytes [at, at+drop) become text.
type tomlEdit struct {
	at, drop int
	text     string
}

// applyTOMLEdits applies non-overlapping edits to cfg.
func applyTOMLEdits(cfg string, edits []tomlEdit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	for _, e := range edits {
		cfg = cfg[:e.at] + e.text + cfg[e.at+e.drop:]
	}
	return cfg
}

// appendTOML appends lines (each ending in a newline) to cfg as a block of
// their own, after a blank line.
func appendTOML(cfg, lines string) string {
	if cfg != "" && !strings.HasSuffix(cfg, "\n") {
		cfg += "\n"
	}
	if cfg != "" {
		cfg += "\n"
	}
	return cfg + lines
}

// checkTOMLEdit decodes an edited text and compares it with the old text's
// document after change: an edit that would make the file unreadable, lose
// or alter anything else, or not land where Codex reads it, is refused.
func checkTOMLEdit(path, old, edited string, change func(doc map[string]any) bool) error {
	want, err := decodeCodexTOML(path, []byte(old))
	if err != nil {
		return err
	}
	if !change(want) {
		return fmt.Errorf("%w: a key on the way is not a table", ErrConfigForm)
	}
	got, err := decodeCodexTOML(path, []byte(edited))
	if err != nil {
		return fmt.Errorf("%w: the edit would not be TOML Codex reads (%v)", ErrConfigForm, err)
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%w: the edit would change more than hookgate's keys", ErrConfigForm)
	}
	return nil
}

// upsertCodexTrust sets hooks.state."KEY".trusted_hash for each entry in
// a config.toml text, keeping the rest of the text as it is. An entry
// whose [hooks.state."KEY"] table is written (in any quoting) gets its
// trusted_hash replaced or added there; an entry not present is appended as
// such a table; an entry present in another form (an inline table, dotted
// keys) is refused, as is any edit the decoded result does not confirm
// (checkTOMLEdit: an inline hooks.state, say, cannot take a new table).
func upsertCodexTrust(cfg string, entries []codexTrust) (string, error) {
	const path = "config.toml"
	doc, err := decodeCodexTOML(path, []byte(cfg))
	if err != nil {
		return "", err
	}
	state, _ := tomlTable(doc, "hooks", "state")
	// Where each [hooks.state."KEY"] table is written: the end of its
	// header line, and its trusted_hash key-value if it has one.
	type place struct {
		lineEnd int
		hash    *unstable.Range
	}
	places := map[string]*place{}
	var p unstable.Parser
	p.Reset([]byte(cfg))
	var cur *place
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			cur = nil
			parts, last := tomlKeyParts(e.Key())
			if e.Kind == unstable.Table && len(parts) == 3 && parts[0] == "hooks" && parts[1] == "state" {
				end := int(last.Offset + last.Length)
				lineEnd := len(cfg)
				if nl := strings.IndexByte(cfg[end:], '\n'); nl >= 0 {
					lineEnd = end + nl + 1
				}
				cur = &place{lineEnd: lineEnd}
				places[parts[2]] = cur
			}
		case unstable.KeyValue:
			if parts, _ := tomlKeyParts(e.Key()); cur != nil && len(parts) == 1 && parts[0] == "trusted_hash" {
				r := e.Raw
				cur.hash = &r
			}
		}
	}
	if err := p.Error(); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Key < entries[j].Key })
	var edits []tomlEdit
	var tail strings.Builder
	for _, e := range entries {
		if t, ok := state[e.Key].(map[string]any); ok && t["trusted_hash"] == e.Hash {
			continue
		}
		line, err := tomlKeyValue("trusted_hash", e.Hash)
		if err != nil {
			return "", err
		}
		pl := places[e.Key]
		switch {
		case pl != nil && pl.hash != nil:
			edits = append(edits, tomlEdit{at: int(pl.hash.Offset), drop: int(pl.hash.Length), text: line})
		case pl != nil:
			if pl.lineEnd == len(cfg) && !strings.HasSuffix(cfg, "\n") {
				line = "\n" + line
			}
			edits = append(edits, tomlEdit{at: pl.lineEnd, text: line + "\n"})
		case state[e.Key] != nil:
			return "", fmt.Errorf(`%w: hooks.state %q is not written as a [hooks.state."KEY"] table; add hookgate's trust by hand or with Codex`, ErrConfigForm, e.Key)
		default:
			k, err := tomlKey(e.Key)
			if err != nil {
				return "", err
			}
			if tail.Len() > 0 {
				tail.WriteString("\n")
			}
			tail.WriteString("[hooks.state." + k + "]\n" + line + "\n")
		}
	}
	out := applyTOMLEdits(cfg, edits)
	if tail.Len() > 0 {
		out = appendTOML(out, tail.String())
	}
	if out == cfg {
		return cfg, nil
	}
	err = checkTOMLEdit(path, cfg, out, func(doc map[string]any) bool {
		for _, e := range entries {
			if !tomlSet(doc, e.Hash, "hooks", "state", e.Key, "trusted_hash") {
				return false
			}
		}
		return true
	})
	if err != nil {
		return "", fmt.Errorf("%w; add hookgate's trust by hand or with Codex", err)
	}
	return out, nil
}

// codexConfigView is what hookgate reads of Codex's config.toml: the
// projects' trust and the hooks' state.
type codexConfigView struct {
	Projects map[string]struct {
		TrustLevel string `toml:"trust_level"`
	} `toml:"projects"`
	Hooks struct {
		State map[string]struct {
			Enabled     *bool  `toml:"enabled"`
			TrustedHash string `toml:"trusted_hash"`
		} `toml:"state"`
	} `toml:"hooks"`
}

// readCodexConfigView decodes what hookgate reads of a config.toml text.
func readCodexConfigView(path string, text []byte) (codexConfigView, error) {
	var v codexConfigView
	if err := toml.Unmarshal(text, &v); err != nil {
		return v, tomlError(path, err)
	}
	return v, nil
}

// tomlLeaves calls f with each key-value of a TOML text (inline tables
// opened up): its full key, its value and the line of its key.
func tomlLeaves(text []byte, f func(key []string, v *unstable.Node, line int)) error {
	var p unstable.Parser
	p.Reset(text)
	var table []string
	var walk func(key []string, v *unstable.Node, line int)
	walk = func(key []string, v *unstable.Node, line int) {
		if v.Kind != unstable.InlineTable {
			f(key, v, line)
			return
		}
		for it := v.Children(); it.Next(); {
			kv := it.Node()
			if kv.Kind != unstable.KeyValue {
				continue
			}
			parts, _ := tomlKeyParts(kv.Key())
			walk(append(slices.Clip(key), parts...), kv.Value(), line)
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table, _ = tomlKeyParts(e.Key())
		case unstable.KeyValue:
			parts, last := tomlKeyParts(e.Key())
			walk(append(slices.Clip(table), parts...), e.Value(), p.Shape(last).Start.Line)
		}
	}
	return p.Error()
}
