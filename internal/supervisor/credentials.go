package supervisor

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/truststore"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy"
)

// Credential injection, the session's side: the real values are read at
// start and stay in this process (the proxy puts them into requests to
// their hosts); the sandbox gets a placeholder in each credential's
// variable, and a trust that is sandboxd's own roots plus the sandbox's
// CA, with which the proxy terminates TLS for those hosts alone.

// credState is what a session's credentials are, fixed at start.
type credState struct {
	specs []policy.CredentialSpec
	creds []proxy.Credential // Value only ever in this process
	ca    *proxy.CA
	// bundle and truststore are the trust files in the runtime directory
	// (read-only inside): the roots sandboxd trusts, then the sandbox CA.
	// They are written while the sandbox is set up (reading the system's
	// roots as Go does takes ~10 ms): trustDone says when, awaitTrust
	// waits for it.
	bundle, truststore string
	trustDone          chan error
	trustErr           error
	trustAwaited       bool
}

// trustStorePassword is the JVM's default truststore password: a
// truststore holds no secret, the password only seals its integrity.
const trustStorePassword = "changeit"

// caBundleVars name the PEM bundle a program trusts (OpenSSL and Go,
// Node's extra roots, Python requests, curl, git, pip, npm, the AWS CLI
// and SDKs, Deno, Codex, gRPC's C core, Nix-built programs). Each is set
// to the sandbox's bundle; what the host's named is read into the bundle,
// so nothing trusted before is lost.
var caBundleVars = []string{
	"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
	"PIP_CERT", "NPM_CONFIG_CAFILE", "AWS_CA_BUNDLE", "DENO_CERT", "CODEX_CA_CERTIFICATE",
	"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "NIX_SSL_CERT_FILE",
}

// maxCredentialFile bounds what is read from a credential's file: a
// secret, not a document.
const maxCredentialFile = 64 << 10

// credentialSpecs are the session's credentials: --credential, then the
// policy file's credentials section, then a launch's API keys
// (LaunchSpec.apiKeyCredentials). A variable declared twice refuses: one
// variable holds one placeholder.
func (o *Options) credentialSpecs(r *policy.Resolved) ([]policy.CredentialSpec, error) {
	specs, seen, err := o.declaredCredentials(r)
	if err != nil {
		return nil, err
	}
	if o.Launch != nil {
		specs = append(specs, o.Launch.apiKeyCredentials(seen, os.LookupEnv)...)
	}
	return specs, nil
}

// declaredCredentials are --credential's, then the policy's, and the set
// of their variables; a variable declared twice refuses.
func (o *Options) declaredCredentials(r *policy.Resolved) ([]policy.CredentialSpec, map[string]bool, error) {
	specs := append([]policy.CredentialSpec{}, o.Credentials...)
	if r != nil {
		specs = append(specs, r.Credentials...)
	}
	seen := map[string]bool{}
	for _, c := range specs {
		if seen[c.Env] {
			return nil, nil, fmt.Errorf("credential %s is declared twice (--credential and the policy's credentials together)", c.Env)
		}
		seen[c.Env] = true
	}
	return specs, seen, nil
}

// apiKeyCredentials are a launch's default credentials: each of the
// harness's API key variables (hooks.LaunchInfo.APIKeys) that lookup
// finds, for the host it is tied to, so that the harness's process tree
// never holds the key. A key tied to no host (the harness's one provider)
// is for the launch's API hosts (its default or --api-host, the user's
// gateway); a key tied to its provider's host (Pi's) is for that host
// alone, and only when it is among the launch's API hosts: otherwise it is
// passed as it is (the harness does not talk to that provider here), never
// given to another provider's host. Left out: a variable declared already
// (declared), a key under proxy.MinCredentialLen bytes (not a key the
// proxy could find in traffic: a test's; it is passed as it is), and every
// key under --pass-api-key or when the harness's base URL is plain
// http:// (the proxy puts no value into plain HTTP; plainHTTPNote says
// so).
func (l *LaunchSpec) apiKeyCredentials(declared map[string]bool, lookup func(string) (string, bool)) []policy.CredentialSpec {
	if l.PassAPIKey || l.plainHTTPBaseURL(lookup) != "" {
		return nil
	}
	var hosts []string
	for _, h := range l.apiHosts() {
		if ch, err := policy.CredentialHost(h); err == nil && !slices.Contains(hosts, ch) {
			hosts = append(hosts, ch)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	info, _ := hooks.LaunchInfoOf(l.Harness, "/")
	var specs []policy.CredentialSpec
	for _, k := range info.APIKeys {
		v, ok := lookup(k.Env)
		if !ok || len(v) < proxy.MinCredentialLen || declared[k.Env] {
			continue
		}
		switch {
		case k.Host == "":
			specs = append(specs, policy.CredentialSpec{Env: k.Env, Hosts: slices.Clone(hosts)})
		case slices.Contains(hosts, k.Host):
			specs = append(specs, policy.CredentialSpec{Env: k.Env, Hosts: []string{k.Host}})
		}
	}
	return specs
}

// plainHTTPBaseURL is the harness's base URL variable when lookup finds it
// plain http:// (then no key is a credential), else "".
func (l *LaunchSpec) plainHTTPBaseURL(lookup func(string) (string, bool)) string {
	info, _ := hooks.LaunchInfoOf(l.Harness, "/")
	if info.BaseURLEnv == "" {
		return ""
	}
	if u, _ := lookup(info.BaseURLEnv); strings.HasPrefix(strings.ToLower(strings.TrimSpace(u)), "http://") {
		return info.BaseURLEnv
	}
	return ""
}

// plainHTTPNote is the stderr line that says a launch's API keys stay in
// the harness's environment because its base URL is plain http://
// (credentials are the launch's default: without the line the user would
// not know the key is inside),
// naming the keys that are set, long enough to have been credentials and
// not declared otherwise; "" when there are none.
func (l *LaunchSpec) plainHTTPNote(declared map[string]bool, lookup func(string) (string, bool)) string {
	if l.PassAPIKey {
		return ""
	}
	base := l.plainHTTPBaseURL(lookup)
	if base == "" {
		return ""
	}
	info, _ := hooks.LaunchInfoOf(l.Harness, "/")
	var keys []string
	for _, k := range info.APIKeys {
		if v, ok := lookup(k.Env); ok && len(v) >= proxy.MinCredentialLen && !declared[k.Env] {
			keys = append(keys, k.Env)
		}
	}
	switch len(keys) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("sandboxd: %s is plain http://: %s is passed to the harness as it is, not as a credential", base, keys[0])
	}
	return fmt.Sprintf("sandboxd: %s is plain http://: %s are passed to the harness as they are, not as credentials", base, strings.Join(keys, " and "))
}

// policyDir is the policy file's directory (absolute), against which a
// credential's relative file is read.
func (o *Options) policyDir() string {
	if o.PolicyFile == "" {
		return ""
	}
	abs, err := filepath.Abs(o.PolicyFile)
	if err != nil {
		return filepath.Dir(o.PolicyFile)
	}
	return filepath.Dir(abs)
}

// credentialFile is where c's value is read, "" for sandboxd's
// environment.
func (o *Options) credentialFile(c policy.CredentialSpec) string {
	home, _ := os.UserHomeDir()
	return c.FilePath(o.policyDir(), home)
}

// credentialFiles are the files the session's credentials are read from:
// hidden inside the sandbox.
func (o *Options) credentialFiles(r *policy.Resolved) []string {
	specs, _ := o.credentialSpecs(r)
	var out []string
	for _, c := range specs {
		if f := o.credentialFile(c); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readCredential reads c's real value: its file (line breaks at the end
// trimmed), or sandboxd's own variable, read before --unset-env's filter
// (a removed variable can still be a credential: its placeholder is set).
func readCredential(c policy.CredentialSpec, file string) (string, error) {
	if file == "" {
		v, ok := os.LookupEnv(c.Env)
		switch {
		case !ok:
			return "", fmt.Errorf("credential %s: sandboxd's environment has no %s (set it, or name a file in the policy's credentials)", c.Env, c.Env)
		case v == "":
			return "", fmt.Errorf("credential %s: %s is empty in sandboxd's environment", c.Env, c.Env)
		}
		return v, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("credential %s: %w", c.Env, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", fmt.Errorf("credential %s: %s is not a regular file", c.Env, file)
	}
	// The sandbox hides the file's path; another hard link to it would
	// stay readable inside under its other name.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return "", fmt.Errorf("credential %s: %s has %d hard links; the others would stay readable inside (keep the secret in a file of one link)", c.Env, file, st.Nlink)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCredentialFile+1))
	if err != nil {
		return "", fmt.Errorf("credential %s: %w", c.Env, err)
	}
	if len(b) > maxCredentialFile {
		return "", fmt.Errorf("credential %s: %s is over %d KiB; a credential's file holds the secret alone", c.Env, file, maxCredentialFile>>10)
	}
	v := strings.TrimRight(string(b), "\r\n")
	if v == "" {
		return "", fmt.Errorf("credential %s: %s is empty", c.Env, file)
	}
	return v, nil
}

// credentials reads the session's credentials, refuses the start when one
// cannot be injected (a host the network policy does not allow, a missing
// variable or file, a value too short to find in traffic), makes their
// placeholders and the sandbox's CA, starts writing the trust files into
// the runtime directory and puts the placeholders into the environment
// the sandbox gets (hostEnv, which the launch's configuration reads too).
func (s *session) credentials() (func(), error) {
	cur := s.live.Current()
	specs, err := s.opts.credentialSpecs(cur.resolved)
	if err != nil {
		return nil, err
	}
	if l := s.opts.Launch; l != nil {
		// Said once, here at start: the launch's keys are credentials by
		// default, and a plain-http base URL silently keeps them inside.
		_, declared, _ := s.opts.declaredCredentials(cur.resolved)
		if note := l.plainHTTPNote(declared, os.LookupEnv); note != "" {
			fmt.Fprintln(s.stderr, note)
		}
	}
	if len(specs) == 0 {
		return nil, nil
	}
	st := &credState{specs: specs}
	if st.creds, err = s.opts.readCredentials(cur.proxy, specs); err != nil {
		return nil, err
	}
	if st.ca, err = proxy.NewCA(credentialHosts(st.creds)); err != nil {
		return nil, err
	}
	if err := st.startTrust(filepath.Join(s.dir, "trust"), s.hostEnv); err != nil {
		return nil, err
	}
	s.hostEnv = placeholderEnv(s.hostEnv, st.creds)
	s.envRemoved = notCredentials(s.envRemoved, specs)
	s.cred = st
	// Before the runtime directory is removed.
	return func() { st.awaitTrust() }, nil
}

// readCredentials decides each credential's hosts with the proxy's own
// reading of its policy (proxy.Policy.Names, so a host
// is allowed here exactly when the proxy would let it through), reads its
// value and makes its placeholder.
func (o *Options) readCredentials(pp proxy.Policy, specs []policy.CredentialSpec) ([]proxy.Credential, error) {
	nd, err := pp.Names()
	if err != nil {
		return nil, err
	}
	var creds []proxy.Credential
	for _, c := range specs {
		if d := nd.DecideCredential(c); !d.Allowed() {
			return nil, errors.New(d.Reason)
		}
		v, err := readCredential(c, o.credentialFile(c))
		if err != nil {
			return nil, err
		}
		// Two variables holding one key (GEMINI_API_KEY and GOOGLE_API_KEY,
		// GH_TOKEN and GITHUB_TOKEN) share one placeholder: the value is
		// then swapped one way in both directions. A value strictly inside
		// another still refuses (CheckCredentials).
		ph := ""
		for _, o := range creds {
			if o.Value == v {
				ph = o.Placeholder
				break
			}
		}
		if ph == "" {
			if ph, err = proxy.NewPlaceholder(v); err != nil {
				return nil, fmt.Errorf("credential %s: %v", c.Env, err)
			}
		}
		creds = append(creds, proxy.Credential{Name: c.Env, Hosts: c.Hosts, Value: v, Placeholder: ph, Headers: slices.Clone(c.Headers)})
	}
	return creds, proxy.CheckCredentials(creds)
}

// credentialHosts is the union of the credentials' hosts: the CA's.
func credentialHosts(creds []proxy.Credential) []string {
	var hosts []string
	for _, c := range creds {
		for _, h := range c.Hosts {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
	}
	return hosts
}

// startTrust makes dir now (the filesystem plan keeps it visible) and
// writes its files in the background (ready awaits them before the
// command starts). hostEnv is the environment before the placeholders.
func (st *credState) startTrust(dir string, hostEnv []string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("sandbox CA: %w", err)
	}
	st.bundle, st.truststore = filepath.Join(dir, "ca-bundle.pem"), filepath.Join(dir, "truststore.jks")
	st.trustDone = make(chan error, 1)
	go func() { st.trustDone <- writeTrust(st.bundle, st.truststore, st.ca, hostEnv) }()
	return nil
}

// awaitTrust waits (once) for the trust files to be written, and says
// whether they are. Nil without credentials.
func (st *credState) awaitTrust() error {
	if st == nil || st.trustDone == nil {
		return nil
	}
	if !st.trustAwaited {
		st.trustErr, st.trustAwaited = <-st.trustDone, true
	}
	return st.trustErr
}

// placeholderEnv is env with every credential's variable set to its
// placeholder (set even when the host did not have it, or --unset-env
// removed it), and the real value replaced by the placeholder wherever
// else it occurs (GH_TOKEN holding GITHUB_TOKEN's value, a URL with it as
// a password): no variable inside holds a real value.
func placeholderEnv(env []string, creds []proxy.Credential) []string {
	out := make([]string, 0, len(env)+len(creds))
	for _, kv := range env {
		for _, c := range creds {
			kv = strings.ReplaceAll(kv, c.Value, c.Placeholder)
		}
		out = append(out, kv)
	}
	for _, c := range creds {
		out = append(withoutEnv(out, c.Name), c.Name+"="+c.Placeholder)
	}
	return out
}

// notCredentials drops from removed the variables that are credentials:
// the sandbox gets them, as placeholders.
func notCredentials(removed []policy.EnvRemoval, specs []policy.CredentialSpec) []policy.EnvRemoval {
	var out []policy.EnvRemoval
	for _, r := range removed {
		if !isCredential(specs, r.Name) {
			out = append(out, r)
		}
	}
	return out
}

func isCredential(specs []policy.CredentialSpec, name string) bool {
	for _, c := range specs {
		if c.Env == name {
			return true
		}
	}
	return false
}

// writeTrust writes the sandbox's trust: to bundle, a PEM bundle of the
// roots sandboxd trusts (truststore.SystemRoots), those of the bundles
// the host's caBundleVars named, then the sandbox CA; to jks, the same as
// a JKS truststore for the JVM.
func writeTrust(bundle, jks string, ca *proxy.CA, hostEnv []string) error {
	roots := truststore.SystemRoots(os.Getenv)
	get := envLookup(hostEnv)
	for _, v := range caBundleVars {
		if f := get(v); f != "" {
			if data, err := os.ReadFile(f); err == nil {
				roots = append(roots, truststore.ParsePEM(data)...)
			}
		}
	}
	roots = truststore.Dedupe(roots)
	entries := []truststore.Entry{{Alias: "barry-sandbox-ca", DER: ca.Certificate().Raw}}
	for i, r := range roots {
		entries = append(entries, truststore.Entry{Alias: fmt.Sprintf("root-%d", i+1), DER: r})
	}
	store, err := truststore.JKS(entries, trustStorePassword, time.Now())
	if err != nil {
		return err
	}
	if err := os.WriteFile(bundle, append(truststore.PEM(roots), ca.PEM()...), 0o644); err != nil {
		return fmt.Errorf("sandbox CA: %w", err)
	}
	if err := os.WriteFile(jks, store, 0o644); err != nil {
		return fmt.Errorf("sandbox CA: %w", err)
	}
	return nil
}

// trustEnv is env with the trust variables pointing at the sandbox's
// bundle and truststore (the variables whatever their case: npm reads
// npm_config_cafile too), and the truststore appended to the JVM options
// (after the proxy's: a later -D wins).
func trustEnv(env []string, bundle, jks string) []string {
	for _, v := range caBundleVars {
		env = append(withoutEnvFold(env, v), v+"="+bundle)
	}
	java := strings.TrimSpace(envLookup(env)("JAVA_TOOL_OPTIONS") + " " + truststore.JVMOptions(jks))
	return append(withoutEnv(env, "JAVA_TOOL_OPTIONS"), "JAVA_TOOL_OPTIONS="+java)
}

// withoutEnvFold drops every entry named name in any case.
func withoutEnvFold(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, name) {
			out = append(out, kv)
		}
	}
	return out
}

// sealCredentials completes the sandbox for its credentials once its
// environment and filesystem plan are made (jailSpec): the trust
// variables are set and the trust files kept visible; and it refuses the
// start when a real value would still be inside (in an argument, in a
// variable a launch set) or a credential's variable would not hold its
// placeholder (a variable sandboxd sets itself), when a credential's file
// would be readable, or when the trust files would not be.
func (s *session) sealCredentials() error {
	st := s.cred
	if st == nil {
		return nil
	}
	if strings.ContainsAny(st.truststore, " \t\n") {
		return fmt.Errorf("sandbox CA: the runtime directory %s holds white space, which JAVA_TOOL_OPTIONS cannot carry", filepath.Dir(st.truststore))
	}
	s.env = trustEnv(s.env, st.bundle, st.truststore)
	if err := checkSealed(st.creds, s.env, s.opts.Command); err != nil {
		return err
	}
	dir := filepath.Dir(st.bundle)
	s.fsPlan.Reveal(dir)
	if d := s.fsPlan.Explain(dir, false); !d.Allowed() {
		return fmt.Errorf("sandbox CA: %s would not be readable inside: %s", dir, d.Reason)
	}
	for _, c := range st.specs {
		f := s.opts.credentialFile(c)
		if f == "" {
			continue
		}
		if d := s.fsPlan.Explain(f, false); d.Allowed() {
			return fmt.Errorf("credential %s: its file %s would be readable inside (%s); the sandbox cannot hide it here (a --read or write root names it or a directory revealed below a hidden one holds it)", c.Env, f, d.Reason)
		}
	}
	return nil
}

// checkSealed refuses an environment or command line that holds a real
// value, or one where a credential's variable is not its placeholder.
func checkSealed(creds []proxy.Credential, env, argv []string) error {
	get := envLookup(env)
	for _, c := range creds {
		if get(c.Name) != c.Placeholder {
			return fmt.Errorf("credential %s: sandboxd sets that variable itself inside; name the credential's variable otherwise", c.Name)
		}
		for _, kv := range env {
			if strings.Contains(kv, c.Value) {
				k, _, _ := strings.Cut(kv, "=")
				return fmt.Errorf("credential %s: its value would be in the sandbox's variable %s", c.Name, k)
			}
		}
		for _, a := range argv {
			if strings.Contains(a, c.Value) {
				return fmt.Errorf("credential %s: its value is in COMMAND's arguments, which every process inside can read", c.Name)
			}
		}
		// An encoded copy (a git http.extraHeader's Basic credentials in
		// GIT_CONFIG_VALUE_0, a URL's percent-encoded password, a JSON
		// document) cannot be swapped for the placeholder's (the
		// encoding's edges mix with the bytes around it): refused.
		forms := encodedForms(c.Value)
		for _, kv := range env {
			if f := findEncoded(kv, forms); f != "" {
				k, _, _ := strings.Cut(kv, "=")
				return fmt.Errorf("credential %s: the sandbox's variable %s holds its value %s, which cannot be replaced by the placeholder; unset it (--unset-env %s)", c.Name, k, f, k)
			}
		}
		for _, a := range argv {
			if f := findEncoded(a, forms); f != "" {
				return fmt.Errorf("credential %s: COMMAND's arguments hold its value %s, which every process inside can read", c.Name, f)
			}
		}
	}
	return nil
}

// encodedForm is one encoding of a credential's value: text is what a
// string holding the value so encoded contains.
type encodedForm struct{ name, text string }

// minEncodedCore is the shortest base64 core looked for: a shorter one
// would be found in ordinary text.
const minEncodedCore = 8

// encodedForms are the encodings of v that checkSealed looks for: standard
// and URL-safe base64 at each of the three alignments v can have in the
// encoded bytes (base64 of "user:" + v is at one of them), percent-encoded
// (as a query, a path and a URL's password encode it), and JSON-escaped;
// each only when it differs from v itself (which is looked for already).
// For base64, the core is what v alone decides: v is encoded after 0, 1
// or 2 filler bytes, the characters that hold filler bits are dropped
// (none, 2 or 3), and the last 4 (which hold bits of what follows v).
func encodedForms(v string) []encodedForm {
	var out []encodedForm
	add := func(name, text string) {
		if text != v && text != "" && !slices.ContainsFunc(out, func(f encodedForm) bool { return f.text == text }) {
			out = append(out, encodedForm{name, text})
		}
	}
	for _, enc := range []struct {
		name string
		e    *base64.Encoding
	}{{"base64-encoded", base64.StdEncoding}, {"base64-encoded (URL-safe)", base64.URLEncoding}} {
		for k, drop := range []int{0, 2, 3} {
			b := enc.e.EncodeToString(append(make([]byte, k), v...))
			if core := b[min(drop, len(b)):max(drop, len(b)-4)]; len(core) >= minEncodedCore {
				add(enc.name, core)
			}
		}
	}
	add("percent-encoded", url.QueryEscape(v))
	add("percent-encoded", url.PathEscape(v))
	add("percent-encoded", strings.TrimPrefix(url.UserPassword("u", v).String(), "u:"))
	if j, err := json.Marshal(v); err == nil {
		add("JSON-escaped", string(j[1:len(j)-1]))
	}
	var nohtml strings.Builder
	je := json.NewEncoder(&nohtml)
	je.SetEscapeHTML(false)
	if je.Encode(v) == nil {
		j := strings.TrimSpace(nohtml.String())
		add("JSON-escaped", j[1:len(j)-1])
	}
	return out
}

// findEncoded names the first of forms that s holds, "" for none.
func findEncoded(s string, forms []encodedForm) string {
	for _, f := range forms {
		if strings.Contains(s, f.text) {
			return f.name
		}
	}
	return ""
}

// proxyCredentials and proxyCA are what proxy.Config gets (none without
// credentials).
func (st *credState) proxyCredentials() []proxy.Credential {
	if st == nil {
		return nil
	}
	return st.creds
}

func (st *credState) proxyCA() *proxy.CA {
	if st == nil {
		return nil
	}
	return st.ca
}

// credAuditAttrs name, on the session's start line, the credentials the
// proxy injects (variable names only).
func (s *session) credAuditAttrs() []slog.Attr {
	if s.cred == nil {
		return nil
	}
	names := make([]string, len(s.cred.specs))
	for i, c := range s.cred.specs {
		names[i] = c.Env
	}
	return []slog.Attr{slog.Any(audit.AttrCredentials, names)}
}

// credentialsFixed is the live policy's enforcer for the credentials
// section: they are fixed at start (their values are read once, the
// placeholders are in the command's environment), so a reload that
// changes them is audited and said, and changes nothing.
func (s *session) credentialsFixed(next *sessionPolicy) error {
	specs, _ := s.opts.credentialSpecs(next.resolved)
	var started []policy.CredentialSpec
	if s.cred != nil {
		started = s.cred.specs
	}
	if jsonString(nonNilSpecs(specs)) == jsonString(nonNilSpecs(started)) {
		return nil
	}
	s.keptAtStart(audit.MsgEnvFixed, "credentials changed: the sandbox keeps the credentials it started with (restart the sandbox to change them)")
	return nil
}

func nonNilSpecs(l []policy.CredentialSpec) []policy.CredentialSpec {
	if l == nil {
		return []policy.CredentialSpec{}
	}
	return l
}
