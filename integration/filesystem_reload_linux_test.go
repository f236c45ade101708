//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFSReloadKeepsKernelLayer: a policy edit that changes file rules
// during a session is applied to the hook rulings, and sandboxd says, on
// stderr and in the reload's audit line, that the kernel file layer keeps
// the rules the sandbox started with; the secret the new rule names stays
// readable inside (the kernel layer is fixed at start), as said.
func TestFSReloadKeepsKernelLayer(t *testing.T) {
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			b := newFSBox(t, u.uid, false)
			secret := filepath.Join(b.ws, "later-secret")
			b.write(t, secret, "S3CRET\n", 0o644)
			pol := b.policy(t, `{files: {deny: ["~/.ssh"]}}`)
			gate := filepath.Join(b.ws, "go")
			go func() {
				// After the session has started: the new rule, then the go.
				deadline := time.Now().Add(20 * time.Second)
				for time.Now().Before(deadline) {
					if _, err := os.Stat(filepath.Join(b.ws, "started")); err == nil {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				doc, _ := os.ReadFile(pol)
				os.WriteFile(pol, []byte(strings.Replace(string(doc), `["~/.ssh"]`, `["~/.ssh", "later-secret"]`, 1)), 0o644)
				time.Sleep(1500 * time.Millisecond)
				os.WriteFile(gate, nil, 0o644)
				os.Chown(gate, u.uid, u.uid)
			}()
			r := b.run(t, fsRun{flags: []string{"--policy", pol}, argv: []string{"sh", "-c",
				`touch started; i=0; while [ ! -e go ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); done; cat later-secret`}})
			if r.code != 0 || !strings.Contains(r.stdout, "S3CRET") {
				t.Fatalf("the session: %s", r)
			}
			const said = "the kernel file layer keeps the rules the sandbox started with"
			if !strings.Contains(r.stderr, said) {
				t.Errorf("stderr does not say the kernel layer is fixed:\n%s", r)
			}
			if !strings.Contains(r.audit, `"msg":"file layer fixed"`) || !strings.Contains(r.audit, said) {
				t.Errorf("no audit line for the fixed kernel layer:\n%s", r.audit)
			}
		})
	}
}
