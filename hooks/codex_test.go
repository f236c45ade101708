package hooks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/pelletier/go-toml/v2"
)

// TestCodexHandlerHash: the worked example checked against Codex 0.171's
// own hooks/list currentHash.
func TestCodexHandlerHash(t *testing.T) {
	got := codexHandlerHash("pre_tool_use", ".*", "/usr/bin/hookgate check --harness codex", "hookgate: checking tool call", 10)
	if want := "sha256:df900c073f6ccac0f09f759f280be4cf9bc9cf40847d3604bb25210ddc94e506"; got != want {
		t.Errorf("hash %s, want %s", got, want)
	}
}

// codexTrustCases is the specification of upsertCodexTrust: a config.toml
// text, and either the error it is refused with or the trust it reads back
// with (decoded by the TOML library, not by the code under test) beside
// everything the text held before.
var codexTrustCases = []struct {
	name, cfg string
	refused   string // "" when the edit is made
}{
	{"empty", "", ""},
	{"other tables", "model = \"x\"\n\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n", ""},
	{"no final newline", "model = 'x'", ""},
	{"comments kept", "# mine\nmodel = \"x\" # the model\n", ""},
	{"old hash replaced", "[hooks.state.\"/h/hooks.json:pre_tool_use:0:0\"]\nenabled = true\ntrusted_hash = \"sha256:old\" # was\n", ""},
	{"literal-quoted table", "[hooks.state.'/h/hooks.json:pre_tool_use:0:0']\ntrusted_hash = 'sha256:old'\n[x]\ny = 1\n", ""},
	{"table without a hash", "[ hooks . state . \"/h/hooks.json:pre_tool_use:0:0\" ]\nenabled = true\n", ""},
	{"header last, no newline", "[hooks.state.\"/h/hooks.json:pre_tool_use:0:0\"]", ""},
	// Another key's trust in another form: the new table goes beside it.
	{"explicit hooks.state with inline entries", "[hooks.state]\n\"k\" = {trusted_hash = \"x\"}\n", ""},
	{"dotted hooks.state", "[hooks]\nstate.k.trusted_hash = \"x\"\n", ""},
	{"CRLF", "model = \"x\"\r\n[hooks]\r\nx = 1\r\n", ""},
	// Forms a new table cannot join, or an entry hookgate would have
	// to rewrite inside another form.
	{"inline hooks.state", "hooks.state = {}\n", "configuration not edited"},
	{"inline state under [hooks]", "[hooks]\nstate = {}\n", "configuration not edited"},
	{"the entry inline", "[hooks.state]\n\"/h/hooks.json:pre_tool_use:0:0\" = {trusted_hash = \"x\"}\n", "is not written as a"},
	{"the entry dotted", "hooks.state.\"/h/hooks.json:pre_tool_use:0:0\".trusted_hash = \"x\"\n", "is not written as a"},
	{"hooks not a table", "hooks = 1\n", "configuration not edited"},
	{"not TOML", "model = \"x\n", "config.toml:1:"},
}

// TestUpsertCodexTrust: each case of codexTrustCases; the text around the
// edit is kept (comments too), and a second run changes nothing.
func TestUpsertCodexTrust(t *testing.T) {
	seen := map[string]bool{}
	entries := []codexTrust{
		{Key: "/h/hooks.json:pre_tool_use:0:0", Hash: "sha256:aa"},
		{Key: "/h/it's \"quoted\"\\ ünï\t.json:permission_request:0:0", Hash: "sha256:bb"},
	}
	for _, c := range codexTrustCases {
		if seen[c.cfg] {
			t.Fatalf("%s: duplicate case", c.name)
		}
		seen[c.cfg] = true
		t.Run(c.name, func(t *testing.T) {
			out, err := upsertCodexTrust(c.cfg, slices.Clone(entries))
			if c.refused != "" {
				if err == nil || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("got %v, want an error with %q:\n%s", err, c.refused, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkCodexTrust(t, c.cfg, out, entries)
			if strings.HasPrefix(c.cfg, "#") && !strings.Contains(out, "# mine\nmodel = \"x\" # the model\n") {
				t.Errorf("comments lost:\n%s", out)
			}
			again, err := upsertCodexTrust(out, slices.Clone(entries))
			if err != nil || again != out {
				t.Errorf("second run: %v\n%s", err, again)
			}
		})
	}
}

// checkCodexTrust decodes old and edited with the TOML library: edited
// holds each entry's trusted_hash and, apart from that, what old held.
func checkCodexTrust(t *testing.T, old, edited string, entries []codexTrust) {
	t.Helper()
	want, got := map[string]any{}, map[string]any{}
	if err := toml.Unmarshal([]byte(old), &want); err != nil {
		t.Fatalf("old text: %v", err)
	}
	if err := toml.Unmarshal([]byte(edited), &got); err != nil {
		t.Fatalf("edited text does not decode: %v\n%s", err, edited)
	}
	child := func(m map[string]any, k string) map[string]any {
		if m[k] == nil {
			m[k] = map[string]any{}
		}
		c, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("old %s is not a table, yet the edit was made:\n%s", k, edited)
		}
		return c
	}
	for _, e := range entries {
		child(child(child(want, "hooks"), "state"), e.Key)["trusted_hash"] = e.Hash
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("the edit is not the old document plus the trust (-want +edited):\n%s\n%s", diff, edited)
	}
}

// FuzzUpsertCodexTrust: whatever config.toml holds, an edit that is made
// decodes (with the library) to the old document plus hookgate's trust.
func FuzzUpsertCodexTrust(f *testing.F) {
	for _, c := range codexTrustCases {
		f.Add(c.cfg, "/h/hooks.json:pre_tool_use:0:0", "sha256:aa")
	}
	f.Add("[hooks.state.\"k\\u0027\"]\ntrusted_hash = \"\"\n", "k'", "\"\\\n")
	f.Fuzz(func(t *testing.T, cfg, key, hash string) {
		if !utf8.ValidString(key) || !utf8.ValidString(hash) {
			return
		}
		entries := []codexTrust{{Key: key, Hash: hash}}
		out, err := upsertCodexTrust(cfg, entries)
		if err != nil {
			return
		}
		checkCodexTrust(t, cfg, out, entries)
	})
}

// TestInstallCodexTrusts: install under CODEX_HOME writes the hooks file
// there and a trust entry whose key and hash match the entry written.
func TestInstallCodexTrusts(t *testing.T) {
	home, codexHome := t.TempDir(), t.TempDir()
	a := InstallArgs{Harness: Codex, Home: home, CodexHome: codexHome, Binary: "/opt/hookgate", Now: func() time.Time { return time.Unix(0, 0) }}
	path, _, err := Install(a)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(codexHome, "hooks.json") {
		t.Fatalf("hooks file %s, want under CODEX_HOME", path)
	}
	data, _ := os.ReadFile(path)
	entries, err := codexTrustFor(path, data)
	if err != nil || len(entries) != 2 {
		t.Fatalf("trust entries %v %v", entries, err)
	}
	cfg, _ := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	checkCodexTrust(t, "", string(cfg), entries)
	if _, err := os.Stat(filepath.Join(home, ".codex")); err == nil {
		t.Error("install wrote ~/.codex although CODEX_HOME is set")
	}
	// Project scope refuses an untrusted project, with the line to add.
	proj := t.TempDir()
	pa := a
	pa.Scope, pa.Project = "project", proj
	if _, _, err := Install(pa); err == nil || !strings.Contains(err.Error(), "trust_level") {
		t.Errorf("untrusted project: %v", err)
	}
	// The line the refusal names, added as it says, trusts the project.
	_, _, err = Install(pa)
	line := regexp.MustCompile(`add (\[projects\..*\]) (trust_level = "trusted")`).FindStringSubmatch(err.Error())
	if line == nil {
		t.Fatalf("the refusal names no line to add: %v", err)
	}
	os.WriteFile(filepath.Join(codexHome, "config.toml"), append(cfg, []byte("\n"+line[1]+"\n"+line[2]+"\n")...), 0o644)
	if _, _, err := Install(pa); err != nil {
		t.Errorf("trusted project: %v", err)
	}
	// --trust-project on an untrusted project: the table it appends
	// decodes as the project's trust.
	proj2 := t.TempDir()
	pa.Project, pa.TrustProject = proj2, true
	if _, _, err := Install(pa); err != nil {
		t.Fatalf("--trust-project: %v", err)
	}
	var doc struct {
		Projects map[string]map[string]any `toml:"projects"`
	}
	cfg, _ = os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err := toml.Unmarshal(cfg, &doc); err != nil || doc.Projects[proj2]["trust_level"] != "trusted" || doc.Projects[proj]["trust_level"] != "trusted" {
		t.Errorf("--trust-project: %v %v\n%s", err, doc.Projects, cfg)
	}
}
