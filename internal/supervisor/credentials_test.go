package supervisor

import (
	"bytes"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/truststore"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy"
)

const realToken = "ghp_R3alT0kenValue0123456789abcdefABCD"

// TestPlaceholderEnv: the credential's variable holds its placeholder
// (also when the host did not have it), and the real value is in no
// variable: one holding it elsewhere (GH_TOKEN, a URL) gets the
// placeholder in its place.
func TestPlaceholderEnv(t *testing.T) {
	ph, err := proxy.NewPlaceholder(realToken)
	if err != nil {
		t.Fatal(err)
	}
	npm := proxy.Credential{Name: "NPM_TOKEN", Hosts: []string{"registry.npmjs.org"}, Value: "npm_S3cretNpmValue42", Placeholder: "npm_Pl4ceholderValue"}
	creds := []proxy.Credential{{Name: "GITHUB_TOKEN", Hosts: []string{"github.com"}, Value: realToken, Placeholder: ph}, npm}
	env := []string{"PATH=/usr/bin", "GITHUB_TOKEN=" + realToken, "GH_TOKEN=" + realToken,
		"REMOTE=https://x:" + realToken + "@github.com/o/r", "GITHUB_TOKEN=" + realToken}
	got := placeholderEnv(env, creds)
	for _, kv := range got {
		if strings.Contains(kv, realToken) || strings.Contains(kv, npm.Value) {
			t.Errorf("a real value is in %q", kv)
		}
	}
	get := envLookup(got)
	if get("GITHUB_TOKEN") != ph || get("GH_TOKEN") != ph || get("NPM_TOKEN") != npm.Placeholder {
		t.Errorf("placeholders not set: %q", got)
	}
	if get("REMOTE") != "https://x:"+ph+"@github.com/o/r" || get("PATH") != "/usr/bin" {
		t.Errorf("other variables: %q", got)
	}
	if n := strings.Count(strings.Join(got, "\n"), "GITHUB_TOKEN="); n != 1 {
		t.Errorf("GITHUB_TOKEN set %d times", n)
	}
	if !strings.HasPrefix(ph, "ghp_") || len(ph) != len(realToken) {
		t.Errorf("placeholder %q is not of the value's shape", ph)
	}
	if err := checkSealed(creds, got, []string{"sh", "-c", "true"}); err != nil {
		t.Errorf("checkSealed: %v", err)
	}
	if err := checkSealed(creds, got, []string{"curl", "-H", "Authorization: token " + realToken}); err == nil || strings.Contains(err.Error(), realToken) {
		t.Errorf("a value in the arguments: %v", err)
	}
	if err := checkSealed(creds, append(withoutEnv(got, "GITHUB_TOKEN"), "GITHUB_TOKEN=other-value-set-later"), nil); err == nil {
		t.Error("a credential variable overridden after the placeholder passed")
	}
	if err := checkSealed(creds, append(got, "LEAK="+npm.Value), nil); err == nil || strings.Contains(err.Error(), npm.Value) {
		t.Errorf("a value added after: %v", err)
	}
}

// TestCheckSealedEncoded: a variable (or an argument) holding a value
// encoded (base64 at every alignment, as git's Basic extra header holds
// it; URL-safe base64; percent-encoded; JSON-escaped) refuses the start,
// naming the variable and never the value; the placeholder's environment
// and unrelated variables pass.
func TestCheckSealedEncoded(t *testing.T) {
	const special = "s3cr3t/Val+ue=abc@def\"q<x>"
	creds := []proxy.Credential{{Name: "GITHUB_TOKEN", Hosts: []string{"github.com"}, Value: realToken}, {Name: "ODD", Hosts: []string{"a.test"}, Value: special}}
	for i := range creds {
		ph, err := proxy.NewPlaceholder(creds[i].Value)
		if err != nil {
			t.Fatal(err)
		}
		creds[i].Placeholder = ph
	}
	base := placeholderEnv([]string{"PATH=/usr/bin", "HOME=/home/u", "GITHUB_TOKEN=" + realToken}, creds)
	if err := checkSealed(creds, base, []string{"git", "push"}); err != nil {
		t.Fatalf("the placeholder environment: %v", err)
	}
	// The placeholder encoded is harmless.
	if err := checkSealed(creds, append(base, "PH="+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+creds[0].Placeholder))), nil); err != nil {
		t.Errorf("a placeholder encoded: %v", err)
	}
	jsonEsc := func(v string, html bool) string {
		var b strings.Builder
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(html)
		e.Encode(v)
		return strings.Trim(strings.TrimSpace(b.String()), `"`)
	}
	type leak struct{ name, form, value string }
	var leaks []leak
	for _, pre := range []string{"", "x", "xy", "x-access-token:", "user:", "ab:"} {
		for _, post := range []string{"", "\n", ":x", "yz"} {
			for _, v := range []string{realToken, special} {
				b := []byte(pre + v + post)
				leaks = append(leaks,
					leak{"std " + pre + "|" + post, "base64-encoded", "Authorization: Basic " + base64.StdEncoding.EncodeToString(b)},
					leak{"raw std " + pre + "|" + post, "base64-encoded", base64.RawStdEncoding.EncodeToString(b) + "!"},
					leak{"url " + pre + "|" + post, "base64-encoded", base64.RawURLEncoding.EncodeToString(b)})
			}
		}
	}
	leaks = append(leaks,
		leak{"query", "percent-encoded", "URL=https://a.test/?k=" + url.QueryEscape(special) + "&x=1"},
		leak{"path", "percent-encoded", "https://a.test/" + url.PathEscape(special) + "/x"},
		leak{"userinfo", "percent-encoded", (&url.URL{Scheme: "https", User: url.UserPassword("u", special), Host: "a.test"}).String()},
		leak{"json", "JSON-escaped", `{"key":"` + jsonEsc(special, true) + `"}`},
		leak{"json no html escape", "JSON-escaped", `{"key":"` + jsonEsc(special, false) + `"}`})
	for _, l := range leaks {
		if strings.Contains(l.value, realToken) || strings.Contains(l.value, special) {
			// Not this test's case: the raw value is replaced, not refused.
			continue
		}
		err := checkSealed(creds, append(base, "GIT_CONFIG_VALUE_0="+l.value), nil)
		if err == nil || !strings.Contains(err.Error(), "variable GIT_CONFIG_VALUE_0 holds its value "+l.form) {
			t.Errorf("%s: %v", l.name, err)
			continue
		}
		if strings.Contains(err.Error(), realToken) || strings.Contains(err.Error(), special) || strings.Contains(err.Error(), l.value) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error %q holds the value or more than one line", l.name, err)
		}
		if err := checkSealed(creds, base, []string{"curl", "-H", l.value}); err == nil || !strings.Contains(err.Error(), "COMMAND's arguments hold its value "+l.form) {
			t.Errorf("%s in an argument: %v", l.name, err)
		}
	}
	// Each form found, for the value with special characters.
	for _, f := range encodedForms(special) {
		if f.text == special || f.text == "" {
			t.Errorf("form %s is the value itself or empty", f.name)
		}
	}
	// Base64 at three alignments (the URL-safe cores equal these here),
	// three percent-encodings, two JSON escapes.
	if n := len(encodedForms(special)); n != 3+3+2 {
		t.Errorf("the value with special characters has %d forms, want 8", n)
	}
	if n := len(encodedForms("ab?c/d~e+f>g")); n != 6+2+1 {
		t.Errorf("a value whose base64 holds + and /: %d forms, want 9 (six base64 cores; its path and password encodings are one) (%v)", n, encodedForms("ab?c/d~e+f>g"))
	}
}

// TestReadCredentialsShared: two variables holding one value share one
// placeholder (GEMINI_API_KEY and GOOGLE_API_KEY); one value strictly
// inside another still refuses; a credential's headers reach the proxy's.
func TestReadCredentialsShared(t *testing.T) {
	const key = "AIzaSyD0123456789abcdefghijklmnopqrstu"
	t.Setenv("GEMINI_API_KEY", key)
	t.Setenv("GOOGLE_API_KEY", key)
	t.Setenv("CRED_LONGER", key+"more")
	t.Setenv("CRED_OTHER", realToken)
	o := &Options{}
	pp := proxy.Policy{Allow: []string{"generativelanguage.googleapis.com", "a.test"}}
	specs := []policy.CredentialSpec{
		{Env: "GEMINI_API_KEY", Hosts: []string{"generativelanguage.googleapis.com"}},
		{Env: "CRED_OTHER", Hosts: []string{"a.test"}, Headers: []string{"X-Amz-Security-Token"}},
		{Env: "GOOGLE_API_KEY", Hosts: []string{"generativelanguage.googleapis.com"}},
	}
	creds, err := o.readCredentials(pp, specs)
	if err != nil {
		t.Fatal(err)
	}
	if creds[0].Placeholder != creds[2].Placeholder || creds[0].Placeholder == creds[1].Placeholder || creds[0].Value != key {
		t.Errorf("placeholders %q, %q, %q: the equal values' are not one", creds[0].Placeholder, creds[1].Placeholder, creds[2].Placeholder)
	}
	if !slices.Equal(creds[1].Headers, []string{"X-Amz-Security-Token"}) || creds[0].Headers != nil {
		t.Errorf("headers %q, %q", creds[1].Headers, creds[0].Headers)
	}
	env := placeholderEnv([]string{"GEMINI_API_KEY=" + key, "GOOGLE_API_KEY=" + key}, creds)
	if err := checkSealed(creds, env, nil); err != nil {
		t.Errorf("checkSealed: %v", err)
	}
	if get := envLookup(env); get("GOOGLE_API_KEY") != creds[0].Placeholder || get("GEMINI_API_KEY") != creds[0].Placeholder {
		t.Errorf("env %q", env)
	}
	_, err = o.readCredentials(pp, append(specs, policy.CredentialSpec{Env: "CRED_LONGER", Hosts: []string{"a.test"}}))
	if err == nil || !strings.Contains(err.Error(), "one value holds the other") || strings.Contains(err.Error(), key) {
		t.Errorf("a value inside another: %v", err)
	}
}

// TestTrustEnv: every trust variable names the bundle (a lower-case npm
// one is replaced too), and the JVM options keep the proxy's and add the
// truststore.
func TestTrustEnv(t *testing.T) {
	env := []string{"JAVA_TOOL_OPTIONS=-Dhttps.proxyHost=127.0.0.1", "npm_config_cafile=/host/ca.pem", "SSL_CERT_FILE=/host/b.pem", "KEEP=1"}
	got := trustEnv(env, "/run/s/trust/ca-bundle.pem", "/run/s/trust/truststore.jks")
	get := envLookup(got)
	for _, v := range caBundleVars {
		if get(v) != "/run/s/trust/ca-bundle.pem" {
			t.Errorf("%s = %q", v, get(v))
		}
	}
	if get("npm_config_cafile") != "" || get("KEEP") != "1" {
		t.Errorf("env %q", got)
	}
	want := "-Dhttps.proxyHost=127.0.0.1 -Djavax.net.ssl.trustStore=/run/s/trust/truststore.jks -Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=JKS"
	if get("JAVA_TOOL_OPTIONS") != want {
		t.Errorf("JAVA_TOOL_OPTIONS = %q", get("JAVA_TOOL_OPTIONS"))
	}
}

// TestWriteTrust: the bundle is sandboxd's roots, then those of a bundle
// the host's NODE_EXTRA_CA_CERTS named, then the sandbox CA; the
// truststore holds the same certificates.
func TestWriteTrust(t *testing.T) {
	ca, err := proxy.NewCA([]string{"github.com"})
	if err != nil {
		t.Fatal(err)
	}
	extraCA, err := proxy.NewCA([]string{"corp.test"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	extra := filepath.Join(dir, "corp.pem")
	os.WriteFile(extra, extraCA.PEM(), 0o644)
	bundle, jks := filepath.Join(dir, "ca-bundle.pem"), filepath.Join(dir, "truststore.jks")
	if err := writeTrust(bundle, jks, ca, []string{"NODE_EXTRA_CA_CERTS=" + extra}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatal(err)
	}
	got := truststore.ParsePEM(data)
	sys := truststore.SystemRoots(os.Getenv)
	if len(got) != len(sys)+2 {
		t.Fatalf("bundle holds %d certificates, want the %d system roots, the host's extra one and the CA", len(got), len(sys))
	}
	for i, r := range sys {
		if !bytes.Equal(got[i], r) {
			t.Fatalf("bundle certificate %d is not the system root %d", i, i)
		}
	}
	if !bytes.Equal(got[len(got)-2], extraCA.Certificate().Raw) || !bytes.Equal(got[len(got)-1], ca.Certificate().Raw) {
		t.Error("the host's extra root and the sandbox CA are not last")
	}
	if !bytes.HasSuffix(data, ca.PEM()) {
		t.Error("the bundle does not end with the CA's PEM")
	}
	store, err := os.ReadFile(jks)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint32(store) != 0xFEEDFEED || int(binary.BigEndian.Uint32(store[8:])) != len(got) {
		t.Errorf("truststore: magic %x, %d entries, want %d", store[:4], binary.BigEndian.Uint32(store[8:]), len(got))
	}
	if !bytes.Contains(store, ca.Certificate().Raw) {
		t.Error("truststore lacks the CA")
	}
	// The bundle verifies a leaf of the CA: what a client inside does.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(data)
	leaf, err := ca.Leaf("github.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "github.com"}); err != nil {
		t.Errorf("the bundle does not verify the proxy's certificate: %v", err)
	}
}

func TestReadCredential(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "tok")
	os.WriteFile(f, []byte(realToken+"\r\n\n"), 0o600)
	c := policy.CredentialSpec{Env: "TOKEN_FROM_FILE", Hosts: []string{"github.com"}}
	if v, err := readCredential(c, f); err != nil || v != realToken {
		t.Errorf("file: %q, %v", v, err)
	}
	t.Setenv("CRED_TEST_SET", realToken)
	t.Setenv("CRED_TEST_EMPTY", "")
	if v, err := readCredential(policy.CredentialSpec{Env: "CRED_TEST_SET"}, ""); err != nil || v != realToken {
		t.Errorf("env: %q, %v", v, err)
	}
	big := filepath.Join(dir, "big")
	os.WriteFile(big, bytes.Repeat([]byte("x"), maxCredentialFile+1), 0o600)
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	// A hard link: the sandbox hides one name, the other would be read.
	linked, other := filepath.Join(dir, "linked"), filepath.Join(dir, "other-name")
	os.WriteFile(linked, []byte(realToken), 0o600)
	if err := os.Link(linked, other); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		env, file, want string
	}{
		{"CRED_TEST_UNSET_X", "", "sandboxd's environment has no CRED_TEST_UNSET_X"},
		{"CRED_TEST_EMPTY", "", "CRED_TEST_EMPTY is empty"},
		{"T", filepath.Join(dir, "missing"), "no such file"},
		{"T", dir, "not a regular file"},
		{"T", big, "is over 64 KiB"},
		{"T", empty, "is empty"},
		{"T", linked, linked + " has 2 hard links"},
		{"T", other, other + " has 2 hard links"},
	} {
		_, err := readCredential(policy.CredentialSpec{Env: tc.env}, tc.file)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "credential "+tc.env+": ") || strings.Contains(err.Error(), realToken) {
			t.Errorf("%s %s: %v, want %q", tc.env, tc.file, err, tc.want)
		}
	}
}

// TestCredentialSpecs: the flags' come first, the policy's after; a
// variable in both refuses, and a reload that changes them is noted.
func TestCredentialSpecs(t *testing.T) {
	r := resolveDoc(t, "version: 1\nharness: claude-code\ncredentials: [{env: B, hosts: [b.test], file: tok}]\n")
	o := &Options{Credentials: []policy.CredentialSpec{{Env: "A", Hosts: []string{"a.test"}}}, PolicyFile: "/etc/pol/p.yaml"}
	specs, err := o.credentialSpecs(r)
	if err != nil || len(specs) != 2 || specs[0].Env != "A" || specs[1].Env != "B" {
		t.Fatalf("specs %+v, %v", specs, err)
	}
	if files := o.credentialFiles(r); !slices.Equal(files, []string{"/etc/pol/tok"}) {
		t.Errorf("files %q, want the policy directory's tok", files)
	}
	o.Credentials = append(o.Credentials, policy.CredentialSpec{Env: "B", Hosts: []string{"b.test"}})
	if _, err := o.credentialSpecs(r); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("twice: %v", err)
	}
	if _, err := o.compute(r); err == nil {
		t.Error("compute took a credential declared twice")
	}
}

// TestCredentialsInFingerprint: credentials are part of what the session
// runs with; a session without any keeps its fingerprint.
func TestCredentialsInFingerprint(t *testing.T) {
	base, err := (&Options{}).compute(nil)
	if err != nil {
		t.Fatal(err)
	}
	with, err := (&Options{Credentials: []policy.CredentialSpec{{Env: "A", Hosts: []string{"a.test"}}}}).compute(nil)
	if err != nil {
		t.Fatal(err)
	}
	if base.fingerprint == with.fingerprint {
		t.Error("a credential does not change the fingerprint")
	}
	want := policy.ScopeFingerprint(map[string]any{"policy": "", "bound": (*policy.Bound)(nil), "allowPrivate": "[]", "write": []string{}, "unsetEnv": []string{}})
	if base.fingerprint != want {
		t.Errorf("the fingerprint without credentials changed")
	}
}

// TestExplainEnvCredentials: a credential is listed by name, as a
// credential with its hosts, never with a value; the trust variables are
// sandboxd's; a credential removed by --unset-env is not listed as
// removed (its placeholder is set).
func TestExplainEnvCredentials(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", realToken)
	e, err := ExplainEnv(Options{UnsetEnv: []string{"GITHUB_*"}, Credentials: []policy.CredentialSpec{{Env: "GITHUB_TOKEN", Hosts: []string{"github.com", "api.github.com"}}}})
	if err != nil {
		t.Fatal(err)
	}
	var cred, ssl *EnvVariable
	for i, v := range e.Variables {
		switch v.Name {
		case "GITHUB_TOKEN":
			cred = &e.Variables[i]
		case "SSL_CERT_FILE":
			ssl = &e.Variables[i]
		}
	}
	if cred == nil || cred.From != "credential" || !slices.Equal(cred.Hosts, []string{"github.com", "api.github.com"}) {
		t.Errorf("GITHUB_TOKEN: %+v", cred)
	}
	if ssl == nil || ssl.From != "sandboxd" {
		t.Errorf("SSL_CERT_FILE: %+v", ssl)
	}
	for _, r := range e.Removed {
		if r.Name == "GITHUB_TOKEN" {
			t.Error("the credential is listed as removed")
		}
	}
	if b := jsonString(e); strings.Contains(b, realToken) {
		t.Error("the explanation holds the value")
	}
}

// TestCredentialsFixedOnReload: credentials are fixed at start; a reload
// that changes the policy's says so (stderr and an audit line) and
// changes nothing, one that keeps them says nothing.
func TestCredentialsFixedOnReload(t *testing.T) {
	dir := t.TempDir()
	stream, err := OpenAudit(filepath.Join(dir, "audit.jsonl"), "s")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	const head = "version: 1\nharness: claude-code\n"
	start := resolveDoc(t, head+"credentials: [{env: A, hosts: [a.test]}]\n")
	specs, _ := (&Options{}).credentialSpecs(start)
	s := &session{stderr: stderr, log: stream.Logger(), cred: &credState{specs: specs}}
	for _, tc := range []struct {
		doc  string
		note bool
	}{
		{head + "credentials: [{env: A, hosts: [a.test]}]\nenvironment: {unset: [X]}\n", false},
		{head + "credentials: [{env: A, hosts: [a.test, b.test]}]\n", true},
		{head, true},
	} {
		os.Truncate(stderr.Name(), 0)
		stderr.Seek(0, 0)
		s.credentialsFixed(&sessionPolicy{resolved: resolveDoc(t, tc.doc)})
		b, _ := os.ReadFile(stderr.Name())
		if got := strings.Contains(string(b), "credentials changed: the sandbox keeps the credentials it started with"); got != tc.note {
			t.Errorf("%q: noted %v, want %v (%q)", tc.doc, got, tc.note, b)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if n := strings.Count(string(b), `"msg":"`+audit.MsgEnvFixed+`"`); n != 2 {
		t.Errorf("%d %q audit lines, want 2:\n%s", n, audit.MsgEnvFixed, b)
	}
	// A session started without credentials notes a reload that adds some.
	s.cred = nil
	os.Truncate(stderr.Name(), 0)
	stderr.Seek(0, 0)
	s.credentialsFixed(&sessionPolicy{resolved: resolveDoc(t, head)})
	s.credentialsFixed(&sessionPolicy{resolved: resolveDoc(t, head+"credentials: [{env: A, hosts: [a.test]}]\n")})
	if b, _ := os.ReadFile(stderr.Name()); strings.Count(string(b), "credentials changed") != 1 {
		t.Errorf("without credentials at start: %q", b)
	}
}
