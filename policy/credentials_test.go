package policy

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDecodeCredentials(t *testing.T) {
	doc := "version: 1\nharness: claude-code\ncredentials:\n" +
		"  - {env: GITHUB_TOKEN, hosts: [GitHub.com., api.github.com]}\n" +
		"  - {env: NPM_TOKEN, hosts: [registry.npmjs.org, 10.0.0.1], file: secrets/npm}\n"
	pf, err := DecodePolicyFile([]byte(doc), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	want := []CredentialSpec{
		{Env: "GITHUB_TOKEN", Hosts: []string{"github.com", "api.github.com"}},
		{Env: "NPM_TOKEN", Hosts: []string{"registry.npmjs.org", "10.0.0.1"}, File: "secrets/npm"},
	}
	if !reflect.DeepEqual(pf.Credentials, want) {
		t.Fatalf("credentials = %+v, want %+v", pf.Credentials, want)
	}
	r, err := ResolveSession(pf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Credentials, want) {
		t.Errorf("resolved credentials = %+v", r.Credentials)
	}
	if pf, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"), FormatYAML); err != nil || pf.Credentials != nil {
		t.Errorf("no section: %+v, %v", pf.Credentials, err)
	}
}

// TestDecodeCredentialsErrors: every refusal names the field's path.
func TestDecodeCredentialsErrors(t *testing.T) {
	for bad, want := range map[string]string{
		"credentials: {env: X}\n": "credentials: must be a list",
		"credentials: [{env: X, hosts: [a.test]}, {env: Y, hosts: ['*.a.test']}]": "credentials[1].hosts[0]: \"*.a.test\": a credential host is exact",
		"credentials: [{env: X, hosts: [a.test, 'b.test:443']}]":                  "credentials[0].hosts[1]: \"b.test:443\": a credential host has no port",
		"credentials: [{env: X, hosts: [a.test, A.TEST.]}]":                       "credentials[0].hosts[1]: host a.test is listed twice",
		"credentials: [{env: X, hosts: [a.test, 'a b']}]":                         "credentials[0].hosts[1]:",
		"credentials: [{env: X, hosts: [a.test, 7]}]":                             "credentials[0].hosts[1]: must be a string",
		"credentials: [{env: X, hosts: []}]":                                      "credentials[0].hosts: at least one host",
		"credentials: [{env: X, hosts: a.test}]":                                  "credentials[0].hosts: must be a list",
		"credentials: [{env: 1X, hosts: [a.test]}]":                               "credentials[0].env: \"1X\" is not a variable name",
		"credentials: [{env: A-B, hosts: [a.test]}]":                              "credentials[0].env: \"A-B\" is not a variable name",
		"credentials: [{env: '', hosts: [a.test]}]":                               "credentials[0].env: empty variable name",
		"credentials: [{hosts: [a.test]}]":                                        "credentials[0].env: missing required field",
		"credentials: [{env: X}]":                                                 "credentials[0].hosts: missing required field",
		"credentials: [{env: X, hosts: [a.test], fle: x}]":                        "credentials[0].fle: unknown field",
		"credentials: [{env: X, hosts: [a.test], file: ''}]":                      "credentials[0].file: empty path",
		"credentials: [{env: X, hosts: [a.test], file: '~bob/x'}]":                "credentials[0].file: \"~bob/x\": only ~/",
		"credentials: [{env: X, hosts: [a.test]}, {env: X, hosts: [b.test]}]":     "credentials[1].env: X is declared twice",
		"credentials: [x]": "credentials[0]: must be a mapping",
		"credentials: [{env: X, hosts: [a.test], headers: X-Key}]":                      "credentials[0].headers: must be a list of header names",
		"credentials: [{env: X, hosts: [a.test], headers: [X-Key, 7]}]":                 "credentials[0].headers[1]: must be a string",
		"credentials: [{env: X, hosts: [a.test], headers: [X-Key, x-key]}]":             "credentials[0].headers[1]: header X-Key is listed twice",
		"credentials: [{env: X, hosts: [a.test], headers: ['X Key']}]":                  "credentials[0].headers[0]: \"X Key\" is not an HTTP header name",
		"credentials: [{env: X, hosts: [a.test], headers: [':authority']}]":             "credentials[0].headers[0]: \":authority\" is not an HTTP header name",
		"credentials: [{env: X, hosts: [a.test], headers: ['']}]":                       "credentials[0].headers[0]: empty header name",
		"credentials: [{env: X, hosts: [a.test], headers: [host]}]":                     "credentials[0].headers[0]: Host: a header that frames or routes",
		"credentials: [{env: X, hosts: [a.test], headers: [X-A, proxy-authorization]}]": "credentials[0].headers[1]: Proxy-Authorization: a header that frames",
	} {
		_, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"+bad), FormatYAML)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one with %q", bad, err, want)
		}
	}
}

// TestDecodeCredentialHeaders: headers are canonicalized; an empty list
// is the defaults alone, as an absent one.
func TestDecodeCredentialHeaders(t *testing.T) {
	doc := "version: 1\nharness: claude-code\ncredentials:\n" +
		"  - {env: A, hosts: [a.test], headers: [x-amz-security-token, PRIVATE-token, Cookie]}\n" +
		"  - {env: B, hosts: [b.test], headers: []}\n"
	pf, err := DecodePolicyFile([]byte(doc), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if got := pf.Credentials[0].Headers; !reflect.DeepEqual(got, []string{"X-Amz-Security-Token", "Private-Token", "Cookie"}) {
		t.Errorf("headers %q", got)
	}
	if pf.Credentials[1].Headers != nil {
		t.Errorf("an empty list: %q", pf.Credentials[1].Headers)
	}
	for _, bad := range []string{"Host", "content-length", "Transfer-Encoding", "connection", "Keep-Alive", "upgrade", "te", "Trailer", "Proxy-Connection", "a:b", "a\r\nb", "é"} {
		if _, err := CredentialHeader(bad); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("CredentialHeader(%q) = %v", bad, err)
		}
	}
}

func TestParseCredentialFlag(t *testing.T) {
	c, err := ParseCredentialFlag("GITHUB_TOKEN@github.com,API.GitHub.com")
	if err != nil || !reflect.DeepEqual(c, CredentialSpec{Env: "GITHUB_TOKEN", Hosts: []string{"github.com", "api.github.com"}}) {
		t.Fatalf("= %+v, %v", c, err)
	}
	for bad, want := range map[string]string{
		"GITHUB_TOKEN":               "want ENV@HOST",
		"@github.com":                "empty variable name",
		"GITHUB_TOKEN@":              "empty host",
		"GITHUB_TOKEN@a.test,":       "empty host",
		"GITHUB_TOKEN@a.test,,b":     "empty host",
		"GIT-TOKEN@a.test":           "not a variable name",
		"T@*.github.com":             "exact, not a pattern",
		"T@github.com:443":           "has no port",
		"T@a.test,A.test":            "given twice",
		"T@a b":                      "invalid host",
		"T@a.test@b.test":            "not allowed in a host",
		"T@a.test,http://b.test/x/y": "not allowed in a host",
	} {
		if _, err := ParseCredentialFlag(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one with %q", bad, err, want)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error of more than one line: %q", bad, err)
		}
	}
}

func TestCredentialFilePath(t *testing.T) {
	for _, c := range []struct{ file, want string }{
		{"", ""},
		{"tok", "/pol/tok"},
		{"../s/tok", "/s/tok"},
		{"/etc/x/../tok", "/etc/tok"},
		{"~/.config/gh/token", "/home/u/.config/gh/token"},
	} {
		if got := (CredentialSpec{Env: "X", File: c.file}).FilePath("/pol", "/home/u"); got != c.want {
			t.Errorf("FilePath(%q) = %q, want %q", c.file, got, c.want)
		}
	}
}

// TestDecideCredential: every host must be allowed by the decider the
// proxy compiles; the first that is not names the rule that refused it.
func TestDecideCredential(t *testing.T) {
	d, err := CompileNetwork(&NetworkRules{AllowDomains: []string{"*.github.com", "github.com"}, Domains: []string{"gist.github.com"}}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		hosts []string
		allow bool
		rule  string
	}{
		{[]string{"github.com", "api.github.com"}, true, ""},
		{[]string{"github.com", "gist.github.com"}, false, "network.domains:gist.github.com"},
		{[]string{"api.github.com", "example.com"}, false, RuleNetworkAllowDomains},
	} {
		got := d.DecideCredential(CredentialSpec{Env: "T", Hosts: c.hosts})
		if got.Allowed() != c.allow || !got.Allowed() && got.Rule != c.rule {
			t.Errorf("%v: %+v, want allowed=%v rule %q", c.hosts, got, c.allow, c.rule)
		}
		if !got.Allowed() && !strings.HasPrefix(got.Reason, "credential T: host ") {
			t.Errorf("%v: reason %q does not name the credential and host", c.hosts, got.Reason)
		}
	}
	closed, _ := CompileNetwork(nil, true)
	if closed.DecideCredential(CredentialSpec{Env: "T", Hosts: []string{"github.com"}}).Allowed() {
		t.Error("no allowlist under the sandbox allowed a credential host")
	}
}

// TestPlanFilesystemHide: a credential's file is hidden wherever it is
// (the workspace, home, a protected directory), and explained as such.
func TestPlanFilesystemHide(t *testing.T) {
	home, ws := fsFixture(t)
	// The policy's directory (read-only inside) may hold the file too.
	pol := filepath.Join(home, "pol")
	if err := os.MkdirAll(pol, 0o755); err != nil {
		t.Fatal(err)
	}
	files := []string{ws + "/token", home + "/.token", pol + "/npm"}
	for _, f := range files {
		if err := os.WriteFile(f, []byte("s3cret-value"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	p, err := PlanFilesystem(context.Background(), FSInput{Workspace: ws, Home: home, AlwaysProtected: []string{pol},
		Hide: append(files, ws+"/missing")})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !hasPath(p.Hidden, f) {
			t.Errorf("%s not hidden: %v", f, p.Hidden)
		}
		if d := p.Explain(f, false); d.Allowed() || d.Rule != RuleCredentialFile {
			t.Errorf("explain %s: %+v", f, d)
		}
	}
	if hasPath(p.Hidden, ws+"/missing") {
		t.Error("a missing file is hidden")
	}
	// Revealing it (a --read of the file itself) keeps it hidden.
	p.Reveal(home + "/.token")
	if hasPath(p.Revealed, home+"/.token") || p.Explain(home+"/.token", false).Allowed() {
		t.Errorf("a revealed credential file: revealed %v", p.Revealed)
	}
}

// checkCredentialsDecoded is what FuzzDecodePolicyFile holds of every
// credentials section that decodes: valid names, none twice, at least one
// host each, every host canonical and exact, every file a valid path,
// every header canonical, allowed and listed once.
func checkCredentialsDecoded(t *testing.T, creds []CredentialSpec) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range creds {
		if err := CheckEnvName(c.Env); err != nil || seen[c.Env] {
			t.Fatalf("decoded credential env %q (twice: %v): %v", c.Env, seen[c.Env], err)
		}
		seen[c.Env] = true
		if len(c.Hosts) == 0 {
			t.Fatalf("credential %s decoded without hosts", c.Env)
		}
		for _, h := range c.Hosts {
			if ch, err := CredentialHost(h); err != nil || ch != h {
				t.Fatalf("credential %s: host %q is not canonical (%q, %v)", c.Env, h, ch, err)
			}
		}
		if c.File != "" {
			if err := CheckCredentialFile(c.File); err != nil {
				t.Fatalf("credential %s: file %q: %v", c.Env, c.File, err)
			}
		}
		if c.Headers != nil && len(c.Headers) == 0 {
			t.Fatalf("credential %s: an empty, non-nil headers list", c.Env)
		}
		for i, h := range c.Headers {
			if ch, err := CredentialHeader(h); err != nil || ch != h || slices.Contains(c.Headers[:i], h) {
				t.Fatalf("credential %s: header %q is not canonical, allowed and once (%q, %v)", c.Env, h, ch, err)
			}
		}
	}
}
