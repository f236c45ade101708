package policy

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// decodeBoundCases is the specification of strict bound decoding: a document
// and either the canonical JSON it round-trips to or the exact first error.
var decodeBoundCases = []struct {
	name    string
	doc     string
	format  Format
	wantErr string // exact error text of the first problem; "" for success
	want    string // canonical JSON when wantErr is ""
}{
	{"empty object", `{}`, FormatJSON, "", `{}`},
	{"sdk full", `{"bash":{"deny":["rm -rf"],"denyPrograms":["git:push","gh:pr:create"]},"deniedAccess":["write"],"deniedTools":["Bash"],"description":"d","files":{"allowOnly":["/work/**"],"deny":["~/.ssh"]},"name":"n","nativeTools":{"claude-code":["WebFetch"]},"network":{"actions":["write","dns"],"allowDomains":["api.github.com"],"domains":["*.internal.co"],"enforce":"sandbox"},"nodes":{"allow":["a"],"deny":["b"]}}`, FormatJSON, "",
		`{"bash":{"deny":["rm -rf"],"denyPrograms":["git:push","gh:pr:create"]},"deniedAccess":["write"],"deniedTools":["Bash"],"description":"d","files":{"allowOnly":["/work/**"],"deny":["~/.ssh"]},"name":"n","nativeTools":{"claude-code":["WebFetch"]},"network":{"actions":["write","dns"],"allowDomains":["api.github.com"],"domains":["*.internal.co"],"enforce":"sandbox"},"nodes":{"allow":["a"],"deny":["b"]}}`},
	{"empty allowOnly kept", `{"files":{"allowOnly":[]}}`, FormatJSON, "", `{"files":{"allowOnly":[]}}`},
	{"empty deny dropped", `{"files":{"deny":[]}}`, FormatJSON, "", `{"files":{}}`},
	{"enforce only", "network:\n  enforce: sandbox\n", FormatYAML, "", `{"network":{"enforce":"sandbox"}}`},
	{"misspelled action key", "network:\n  actoins: [write]\n", FormatYAML, "2:3: b.network.actoins: unknown field", ""},
	{"unknown top key", `{"denyTools":["Bash"]}`, FormatJSON, "1:2: b.denyTools: unknown field", ""},
	{"bad action", "network: {actions: [write, upload]}", FormatYAML, `1:28: b.network.actions[1]: "upload" is not a network action (one of all, dns, git:fetch, git:push, http:read, http:write, read, ssh:read, ssh:write, write)`, ""},
	{"bad enforce", "network: {enforce: strict}", FormatYAML, `1:20: b.network.enforce: "strict" is not an enforcement level (guard or sandbox)`, ""},
	{"allowDomains without sandbox", "network: {allowDomains: [a.com]}", FormatYAML, "1:25: b.network.allowDomains: " + AllowDomainsNeedsSandbox, ""},
	{"allowDomains with guard", "network: {allowDomains: [a.com], enforce: guard}", FormatYAML, "1:25: b.network.allowDomains: " + AllowDomainsNeedsSandbox, ""},
	{"wrong type list", "deniedTools: Bash", FormatYAML, "1:14: b.deniedTools: must be a list of strings, got a string", ""},
	{"wrong type item", "deniedTools: [1]", FormatYAML, "1:15: b.deniedTools[0]: must be a string, got a number", ""},
	{"wrong type bash", "bash: [git]", FormatYAML, "1:7: b.bash: must be a mapping, got a list", ""},
	{"nested unknown", "bash: {denyProgram: [git]}", FormatYAML, "1:8: b.bash.denyProgram: unknown field", ""},
	{"star allowlist", "network: {enforce: sandbox, allowDomains: ['*.com']}", FormatYAML, `1:44: b.network.allowDomains[0]: "*.com": "com" is a public suffix, so the wildcard would allow every domain registered under it`, ""},
	{"duplicate key", "name: a\nname: b\n", FormatYAML, "2:1: b.name: duplicate field", ""},
	{"null bound section", "bash: null", FormatYAML, "1:7: b.bash: must be a mapping, got null", ""},
	{"bad program rule", "bash: {denyPrograms: ['/usr/bin/git']}", FormatYAML, `1:23: b.bash.denyPrograms[0]: "/usr/bin/git": name the program, not a path (rules match the basename)`, ""},
	{"empty string in list", "deniedTools: ['']", FormatYAML, "1:15: b.deniedTools[0]: must not be empty", ""},
	{"json invalid", `{"name": "a",}`, FormatJSON, "(document): not valid JSON: invalid character '}' looking for beginning of object key string", ""},
	{"not a mapping", `[1]`, FormatYAML, "1:1: b: must be a mapping, got a list", ""},
	{"bad file glob", "files: {deny: ['a/**b']}", FormatYAML, `1:16: b.files.deny[0]: "a/**b": ** must be a whole path segment`, ""},
}

func TestDecodeBound(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range decodeBoundCases {
		if seen[c.doc] {
			t.Fatalf("duplicate case %q", c.doc)
		}
		seen[c.doc] = true
		t.Run(c.name, func(t *testing.T) {
			b, err := DecodeBound([]byte(c.doc), c.format, "b")
			if c.wantErr != "" {
				var fes FieldErrors
				if !errors.As(err, &fes) || len(fes) == 0 {
					t.Fatalf("DecodeBound = %v, %v; want error %q", b, err, c.wantErr)
				}
				if got := fes[0].Error(); got != c.wantErr {
					t.Fatalf("first error\n got %q\nwant %q", got, c.wantErr)
				}
				if !errors.Is(err, ErrInvalidPolicy) {
					t.Fatal("error does not wrap ErrInvalidPolicy")
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeBound: %v", err)
			}
			got, err := EncodeBound(b)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Fatalf("encoded\n got %s\nwant %s", got, c.want)
			}
			// Decoding the encoding gives the same value again.
			b2, err := DecodeBound(got, FormatJSON, "b")
			if err != nil {
				t.Fatal(err)
			}
			again, _ := EncodeBound(b2)
			if string(again) != string(got) {
				t.Fatalf("round trip changed %s to %s", got, again)
			}
		})
	}
}

// FuzzDecodeBound checks that decoding never panics, that an accepted bound
// re-encodes to JSON that decodes to the same encoding, and that a refusal
// names a path.
func FuzzDecodeBound(f *testing.F) {
	for _, c := range decodeBoundCases {
		f.Add(c.doc, c.format == FormatJSON)
	}
	f.Fuzz(func(t *testing.T, doc string, isJSON bool) {
		format := FormatYAML
		if isJSON {
			format = FormatJSON
		}
		b, err := DecodeBound([]byte(doc), format, "b")
		if err != nil {
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error %v does not wrap ErrInvalidPolicy", err)
			}
			if b != nil {
				t.Fatal("refused document returned a bound")
			}
			return
		}
		enc, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := DecodeBound(enc, FormatJSON, "b")
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		enc2, _ := json.Marshal(b2)
		if string(enc) != string(enc2) {
			t.Fatalf("not stable: %s vs %s", enc, enc2)
		}
		if strings.Contains(string(enc), `"network":{"allowDomains"`) && b.Network.Enforce != EnforceSandbox {
			t.Fatal("allowDomains accepted without the sandbox")
		}
	})
}
