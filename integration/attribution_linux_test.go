//go:build linux

package integration

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestAttribution: the proxy's audit line of a connection names the
// process inside the sandbox that opened it (its pid there and its argv),
// for an allowed and a denied request of a proxy-aware client (curl) and
// for a captured connection of one that ignores the proxy variables
// (Node's fetch); the session's summary counts the denial by command; as
// root and as uid 65534.
func TestAttribution(t *testing.T) {
	testenv.NeedCommand(t, "node")
	w := newWorld(t)
	script := `curl -sS --max-time 10 https://allowed.test/attr-allowed >/dev/null
curl -sS --max-time 10 https://denied.test/attr-denied >/dev/null 2>&1
node -e 'fetch("https://allowed.test/attr-node").then(r => r.text()).then(() => {}, e => console.log(e))'
true`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script},
				extraEnv: []string{"NODE_EXTRA_CA_CERTS=" + w.caFile}})
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
			// The session's summary counts the denial by its command.
			if !strings.Contains(r.stderr, "; denied by command: curl 1\n") {
				t.Errorf("the session summary does not count curl's denial: %q", r.stderr)
			}
			for _, c := range []struct {
				host, decision, captured string
				argv                     []string
			}{
				{"allowed.test", "allow", "", []string{"curl", "-sS", "--max-time", "10", "https://allowed.test/attr-allowed"}},
				{"denied.test", "deny", "", []string{"curl", "-sS", "--max-time", "10", "https://denied.test/attr-denied"}},
				{"allowed.test", "allow", webAddr + ":443", []string{"node", "-e"}},
			} {
				found := false
				for _, l := range strings.Split(r.audit, "\n") {
					var m map[string]any
					if json.Unmarshal([]byte(l), &m) != nil || m[audit.AttrKind] != "connect" || m[audit.AttrHost] != c.host ||
						m[audit.AttrDecision] != c.decision || (m[audit.AttrCaptured] != nil) != (c.captured != "") {
						continue
					}
					var argv []string
					for _, a := range asSlice(m[audit.AttrArgv]) {
						argv = append(argv, a)
					}
					pid, _ := m[audit.AttrPID].(float64)
					if pid > 1 && len(argv) >= len(c.argv) && slices.Equal(argv[:len(c.argv)], c.argv) {
						found = true
					}
				}
				if !found {
					t.Errorf("no %s %s line naming pid and argv %q in the audit:\n%s", c.decision, c.host, c.argv, r.audit)
				}
			}
		})
	}
}

func asSlice(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
