package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sidecarCredSession is a session resolved from a policy allowing
// api.test with the given credentials section, ready for
// sidecarCredentials.
func sidecarCredSession(t *testing.T, creds string) *session {
	t.Helper()
	f := filepath.Join(t.TempDir(), "policy.yaml")
	pol := "version: 1\nharness: claude-code\nsession:\n  bound:\n    network: {enforce: sandbox, allowDomains: [api.test]}\ncredentials:\n" + creds
	if err := os.WriteFile(f, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &session{opts: Options{PolicyFile: f}, stderr: os.Stderr}
	cleanup, err := s.resolve()
	if cleanup != nil {
		t.Cleanup(cleanup)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSidecarCredentials: the values are read from the Secret's directory
// alone; the placeholders (of the values' length, never a value) and the
// trust (with the sandbox CA) are written to the run directory; a
// restarted sidecar keeps the placeholders; every missing piece refuses
// the start with one line.
func TestSidecarCredentials(t *testing.T) {
	secret, run := t.TempDir(), t.TempDir()
	const value = "tok_realSecretValue0123456789"
	if err := os.WriteFile(filepath.Join(secret, "api-token"), []byte(value+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "OTHER_TOKEN"), []byte("other_realValue98765\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	// Never from the environment: a variable of the credential's name is
	// not read.
	t.Setenv("API_TOKEN", "env_valueMustNotBeUsed00000000")
	creds := "  - {env: API_TOKEN, hosts: [api.test], file: " + secret + "/api-token}\n  - {env: OTHER_TOKEN, hosts: [api.test]}\n"
	o := SidecarOptions{CredentialDir: secret, RunDir: run}

	start := func() *session {
		t.Helper()
		s := sidecarCredSession(t, creds)
		if _, err := s.sidecarCredentials(o); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := start()
	if s.cred == nil || len(s.cred.creds) != 2 || s.cred.creds[0].Value != value || s.cred.creds[1].Value != "other_realValue98765" {
		t.Fatalf("credentials %+v", s.cred)
	}
	phs := map[string]string{}
	for _, c := range s.cred.creds {
		b, err := os.ReadFile(filepath.Join(run, SidecarPlaceholders, c.Name))
		if err != nil {
			t.Fatal(err)
		}
		ph := strings.TrimSuffix(string(b), "\n")
		if ph != c.Placeholder || len(ph) != len(c.Value) || ph == c.Value || !strings.HasSuffix(string(b), "\n") {
			t.Errorf("%s: placeholder file %q, credential's %q", c.Name, b, c.Placeholder)
		}
		phs[c.Name] = ph
	}
	bundle, err := os.ReadFile(filepath.Join(run, SidecarTrust, TrustBundle))
	if err != nil || !strings.Contains(string(bundle), string(s.cred.ca.PEM())) {
		t.Errorf("the bundle lacks the sandbox CA (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(run, SidecarTrust, TrustStore)); err != nil {
		t.Error(err)
	}
	filepath.Walk(run, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), value) || strings.Contains(string(b), "other_realValue98765") {
				t.Errorf("%s holds a real value", p)
			}
			if strings.HasPrefix(fi.Name(), ".") {
				t.Errorf("%s: a temporary file left", p)
			}
		}
		return nil
	})
	// A stale placeholder of a credential no longer named is removed.
	os.WriteFile(filepath.Join(run, SidecarPlaceholders, "GONE"), []byte("x\n"), 0o444)

	// The sidecar restarted: the agent's processes hold the placeholders
	// they read; they still work.
	again := start()
	for _, c := range again.cred.creds {
		if c.Placeholder != phs[c.Name] {
			t.Errorf("%s: placeholder %q after a restart, was %q", c.Name, c.Placeholder, phs[c.Name])
		}
	}
	if _, err := os.Stat(filepath.Join(run, SidecarPlaceholders, "GONE")); !os.IsNotExist(err) {
		t.Errorf("a stale placeholder stays: %v", err)
	}

	for _, tc := range []struct {
		name, creds string
		o           SidecarOptions
		want        string
	}{
		{"no credential dir", creds, SidecarOptions{RunDir: run},
			"sidecar: the policy names credentials (API_TOKEN, OTHER_TOKEN): --credential-dir (the mounted Secret) and --run-dir (the directory the agent mounts read-only) are required"},
		{"no run dir", creds, SidecarOptions{CredentialDir: secret},
			"sidecar: the policy names credentials (API_TOKEN, OTHER_TOKEN): --credential-dir (the mounted Secret) and --run-dir (the directory the agent mounts read-only) are required"},
		{"a file outside the Secret", "  - {env: API_TOKEN, hosts: [api.test], file: /etc/hostname}\n", o,
			"credential API_TOKEN: its file /etc/hostname is not a key of the mounted Secret " + secret + "; in a pod a value is read from the Secret alone (name " + secret + "/KEY, or no file for " + secret + "/API_TOKEN)"},
		{"a missing key", "  - {env: MISSING_TOKEN, hosts: [api.test]}\n", o,
			"credential MISSING_TOKEN: open " + secret + "/MISSING_TOKEN: no such file or directory"},
		{"a host the policy denies", "  - {env: OTHER_TOKEN, hosts: [other.test]}\n", o, "credential OTHER_TOKEN: host other.test is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := sidecarCredSession(t, tc.creds)
			_, err := s.sidecarCredentials(tc.o)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
			if s.cred != nil {
				t.Errorf("credentials set on a refusal")
			}
		})
	}
}
