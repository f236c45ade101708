//go:build linux

package supervisor

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/internal/truststore"
	"github.com/barry-rocks/sandbox/policy"
)

// runDir is a directory for a test's files that the sandbox can see (its
// /tmp is its own): under /run as root.
func runDir(t *testing.T) string {
	t.Helper()
	testenv.NeedRoot(t)
	d, err := os.MkdirTemp("/run", "sandboxd-credtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// runSession runs script under sh in a sandbox with opts (the workspace
// is ws), and returns its exit status and error.
func runSession(t *testing.T, opts Options, ws, script string) (int, error) {
	t.Helper()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	opts.Dir, opts.Command, opts.Stdout, opts.Stderr = ws, []string{"/bin/sh", "-c", script}, out, out
	code, err := Run(opts)
	if b, _ := os.ReadFile(out.Name()); len(b) > 0 {
		t.Logf("sandbox output:\n%s", b)
	}
	return code, err
}

// TestCredentialsRefuseStart: a credential for a host the session's
// network policy does not allow, a missing variable, a missing file or a
// value too short refuse the start: the command never runs, the error
// says why (sandboxd run turns it into exit 125).
func TestCredentialsRefuseStart(t *testing.T) {
	base := runDir(t)
	ws := filepath.Join(base, "ws")
	os.Mkdir(ws, 0o755)
	marker := filepath.Join(ws, "ran")
	t.Setenv("CRED_REFUSE_TOKEN", realToken)
	t.Setenv("CRED_REFUSE_SHORT", "abc")
	os.Unsetenv("CRED_REFUSE_UNSET")
	polDir := filepath.Join(base, "pol")
	os.Mkdir(polDir, 0o755)
	pol := filepath.Join(polDir, "p.yaml")
	os.WriteFile(pol, []byte("version: 1\nharness: claude-code\ncredentials: [{env: NPM_TOKEN, hosts: [api.example.test], file: missing-token}]\n"), 0o644)
	// A credential file with a second hard link (in the workspace): the
	// other name would stay readable inside.
	os.WriteFile(filepath.Join(polDir, "linked-token"), []byte(realToken), 0o600)
	os.Link(filepath.Join(polDir, "linked-token"), filepath.Join(ws, "copy"))
	linkedPol := filepath.Join(polDir, "linked.yaml")
	os.WriteFile(linkedPol, []byte("version: 1\nharness: claude-code\ncredentials: [{env: NPM_TOKEN, hosts: [api.example.test], file: linked-token}]\n"), 0o644)
	cred := func(v string) []policy.CredentialSpec {
		c, err := policy.ParseCredentialFlag(v)
		if err != nil {
			t.Fatal(err)
		}
		return []policy.CredentialSpec{c}
	}
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"host not allowed", Options{AllowDomains: []string{"api.example.test"}, Credentials: cred("CRED_REFUSE_TOKEN@api.example.test,other.example.test")},
			"credential CRED_REFUSE_TOKEN: host other.example.test is not allowed by the session's network policy: not in allowlist"},
		{"host denied", Options{AllowDomains: []string{"*.example.test"}, DenyDomains: []string{"api.example.test"}, Credentials: cred("CRED_REFUSE_TOKEN@api.example.test")},
			"host api.example.test is not allowed by the session's network policy: denied domain"},
		{"no network", Options{Credentials: cred("CRED_REFUSE_TOKEN@api.example.test")}, "is not allowed by the session's network policy"},
		{"missing variable", Options{AllowDomains: []string{"api.example.test"}, Credentials: cred("CRED_REFUSE_UNSET@api.example.test")},
			"credential CRED_REFUSE_UNSET: sandboxd's environment has no CRED_REFUSE_UNSET"},
		{"short value", Options{AllowDomains: []string{"api.example.test"}, Credentials: cred("CRED_REFUSE_SHORT@api.example.test")},
			"credential CRED_REFUSE_SHORT: the value is 3 bytes"},
		{"missing file", Options{AllowDomains: []string{"api.example.test"}, PolicyFile: pol},
			"credential NPM_TOKEN: open " + filepath.Join(polDir, "missing-token") + ": no such file"},
		{"hard-linked file", Options{AllowDomains: []string{"api.example.test"}, PolicyFile: linkedPol},
			"credential NPM_TOKEN: " + filepath.Join(polDir, "linked-token") + " has 2 hard links"},
		{"encoded copy in a variable", Options{AllowDomains: []string{"api.example.test"}, Credentials: cred("CRED_REFUSE_TOKEN@api.example.test")},
			"credential CRED_REFUSE_TOKEN: the sandbox's variable GIT_CONFIG_VALUE_0 holds its value base64-encoded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if strings.HasPrefix(tc.name, "encoded") {
				// git's http.extraHeader, as a credential helper's user
				// would set it: base64 of "user:VALUE".
				t.Setenv("GIT_CONFIG_VALUE_0", "Authorization: Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+realToken)))
			}
			code, err := runSession(t, tc.opts, ws, "touch "+marker)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %d, %v; want an error with %q", code, err, tc.want)
			}
			if strings.Contains(err.Error(), realToken) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q holds the value or more than one line", err)
			}
			if _, serr := os.Stat(marker); serr == nil {
				t.Fatal("the command ran")
			}
		})
	}
}

// TestCredentialsInside: inside, each credential's variable holds its
// placeholder and no process has a real value (every /proc/*/environ,
// a background process's too); the credential files (one in the
// policy's read-only directory, one in the writable workspace) cannot be
// read; the trust variables name a bundle that ends with the sandbox CA
// and a JKS truststore, both readable; the session's start line names
// the credentials.
func TestCredentialsInside(t *testing.T) {
	base := runDir(t)
	ws, polDir := filepath.Join(base, "ws"), filepath.Join(base, "pol")
	os.Mkdir(ws, 0o755)
	os.Mkdir(polDir, 0o755)
	const fileValue, wsValue = "npm_F1leValueFromThePolicyDir0123", "sk-W0rkspaceFileValue0123456789"
	os.WriteFile(filepath.Join(polDir, "npm-token"), []byte(fileValue+"\n"), 0o600)
	wsTok := filepath.Join(ws, "openai.key")
	os.WriteFile(wsTok, []byte(wsValue), 0o600)
	pol := filepath.Join(polDir, "p.yaml")
	os.WriteFile(pol, []byte("version: 1\nharness: claude-code\ncredentials:\n"+
		"  - {env: NPM_TOKEN, hosts: [registry.example.test], file: npm-token}\n"+
		"  - {env: OPENAI_API_KEY, hosts: [api.example.test], file: "+wsTok+"}\n"), 0o644)
	t.Setenv("GITHUB_TOKEN", realToken)
	t.Setenv("GH_TOKEN", realToken)
	auditFile := filepath.Join(base, "audit.jsonl")
	script := `sleep 5 & env > env.txt; cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' > procenv.txt; kill $!
cat ` + filepath.Join(polDir, "npm-token") + ` > tok1.txt 2>&1; echo "rc=$?" >> tok1.txt
cat openai.key > tok2.txt 2>&1; echo "rc=$?" >> tok2.txt
cat "$SSL_CERT_FILE" > bundle.pem
head -c 4 "${JAVA_TOOL_OPTIONS##*trustStore=}" > /dev/null 2>&1; echo "jks=$?" >> tok2.txt
ls -l "$(dirname "$SSL_CERT_FILE")" > trust.txt`
	// The truststore path is followed by more options: read it apart.
	script = strings.Replace(script, `head -c 4 "${JAVA_TOOL_OPTIONS##*trustStore=}" > /dev/null 2>&1; echo "jks=$?" >> tok2.txt`,
		`jks=$(echo "$JAVA_TOOL_OPTIONS" | tr ' ' '\n' | sed -n 's/^-Djavax.net.ssl.trustStore=//p'); od -An -tx1 -N4 "$jks" > jks.txt`, 1)
	code, err := runSession(t, Options{AllowDomains: []string{"*.example.test", "github.com"}, PolicyFile: pol, AuditPath: auditFile,
		UnsetEnv: []string{"GITHUB_*"}, Credentials: []policy.CredentialSpec{{Env: "GITHUB_TOKEN", Hosts: []string{"github.com"}}}}, ws, script)
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	env, procEnv := read("env.txt"), read("procenv.txt")
	for _, v := range []string{realToken, fileValue, wsValue} {
		for name, s := range map[string]string{"env": env, "/proc/*/environ": procEnv, "bundle": read("bundle.pem")} {
			if strings.Contains(s, v) {
				t.Errorf("a real value is in the sandbox's %s", name)
			}
		}
	}
	get := envLookup(strings.Split(strings.TrimSpace(env), "\n"))
	for name, real := range map[string]string{"GITHUB_TOKEN": realToken, "GH_TOKEN": realToken, "NPM_TOKEN": fileValue, "OPENAI_API_KEY": wsValue} {
		ph := get(name)
		if len(ph) != len(real) || ph == real || ph[:3] != real[:3] {
			t.Errorf("%s = %q inside, want a placeholder of %d bytes with the value's prefix", name, ph, len(real))
		}
	}
	if get("GH_TOKEN") != get("GITHUB_TOKEN") {
		t.Error("GH_TOKEN, which held GITHUB_TOKEN's value, is not its placeholder")
	}
	if strings.Count(procEnv, "GITHUB_TOKEN="+get("GITHUB_TOKEN")) < 2 {
		t.Errorf("the background process's environment lacks the placeholder:\n%s", procEnv)
	}
	for _, f := range []string{"tok1.txt", "tok2.txt"} {
		if s := read(f); strings.Contains(s, "rc=0") || strings.Contains(s, fileValue) || strings.Contains(s, wsValue) {
			t.Errorf("%s: a credential file was read inside: %q", f, s)
		}
	}
	bundle := get("SSL_CERT_FILE")
	for _, v := range caBundleVars {
		if get(v) != bundle {
			t.Errorf("%s = %q, want the bundle %s", v, get(v), bundle)
		}
	}
	certs := truststore.ParsePEM([]byte(read("bundle.pem")))
	if len(certs) < 2 || len(certs) != len(truststore.SystemRoots(os.Getenv))+1 {
		t.Errorf("the bundle inside holds %d certificates", len(certs))
	}
	if !strings.Contains(get("JAVA_TOOL_OPTIONS"), "-Dhttps.proxyHost=127.0.0.1") || !strings.Contains(get("JAVA_TOOL_OPTIONS"), "-Djavax.net.ssl.trustStoreType=JKS") {
		t.Errorf("JAVA_TOOL_OPTIONS = %q", get("JAVA_TOOL_OPTIONS"))
	}
	if s := strings.TrimSpace(read("jks.txt")); s != "fe ed fe ed" {
		t.Errorf("the truststore inside starts with %q", s)
	}
	var start map[string]any
	f, _ := os.Open(auditFile)
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.Contains(sc.Text(), realToken) || strings.Contains(sc.Text(), fileValue) {
			t.Error("an audit line holds a value")
		}
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == audit.MsgSessionStart {
			start = m
		}
	}
	var names []string
	for _, n := range start[audit.AttrCredentials].([]any) {
		names = append(names, n.(string))
	}
	if want := []string{"GITHUB_TOKEN", "NPM_TOKEN", "OPENAI_API_KEY"}; !slices.Equal(names, want) {
		t.Errorf("start line credentials %q, want %q", names, want)
	}
	if removed, ok := start[audit.AttrEnvRemoved]; ok {
		t.Errorf("the start line lists %v as removed: a credential's variable is set (its placeholder)", removed)
	}
}
