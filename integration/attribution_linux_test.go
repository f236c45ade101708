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

// TestAttribution: the proxy's audit line of a connection, and the DNS
// proxy's of a query, name the process inside the sandbox behind it (its
// pid there and its argv): an allowed and a denied request of a
// proxy-aware client (curl), a captured connection of one that ignores the
// proxy variables (Node's fetch) and its DNS query, and a denied query
// (python3's getaddrinfo); the session's summary counts the denials by
// command; as root and as uid 65534.
func TestAttribution(t *testing.T) {
	testenv.NeedCommand(t, "node")
	w := newWorld(t)
	script := `curl -sS --max-time 10 https://allowed.test/attr-allowed >/dev/null
curl -sS --max-time 10 https://denied.test/attr-denied >/dev/null 2>&1
node -e 'fetch("https://allowed.test/attr-node").then(r => r.text()).then(() => {}, e => console.log(e))'
python3 -c 'import socket; socket.getaddrinfo("denied.test", 80)' 2>/dev/null
curl -sS --max-time 10 -H 'X-Barry-Peer: pid=1 argv=["forged"]' http://denied.test/attr-forged >/dev/null 2>&1
curl -sS --max-time 10 -H 'X-Barry-Peer: pid=1 argv=["forged"]' "http://denied.test/attr-long-$(head -c 9000 /dev/zero | tr '\0' A)" >/dev/null 2>&1
true`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script},
				extraEnv: []string{"NODE_EXTRA_CA_CERTS=" + w.caFile}})
			if r.code != 0 {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.audit, "forged") && strings.Contains(r.audit, `"argv":["forged"]`) {
				t.Errorf("a client's own X-Barry-Peer was audited:\n%s", r.audit)
			}
			// The session's summary counts the denials by their command.
			if !strings.Contains(r.stderr, "; denied by command: ") || !strings.Contains(r.stderr, "curl 3") || !strings.Contains(r.stderr, "python3 ") {
				t.Errorf("the session summary does not count curl's and python3's denials: %q", r.stderr)
			}
			for _, c := range []struct {
				kind, host, decision, captured string
				argv                           []string
			}{
				{"connect", "allowed.test", "allow", "", []string{"curl", "-sS", "--max-time", "10", "https://allowed.test/attr-allowed"}},
				{"connect", "denied.test", "deny", "", []string{"curl", "-sS", "--max-time", "10", "https://denied.test/attr-denied"}},
				{"connect", "allowed.test", "allow", webAddr + ":443", []string{"node", "-e"}},
				{"dns", "allowed.test", "allow", "", []string{"node", "-e"}},
				{"dns", "denied.test", "deny", "", []string{"python3", "-c"}},
				// A client's own X-Barry-Peer is ignored: the process
				// comes with the handed-over connection (also after a
				// request line longer than 8 KiB, which once went without
				// the init's header when the forwarder relayed).
				{"http", "denied.test", "deny", "", []string{"curl", "-sS", "--max-time", "10", "-H"}},
			} {
				found := false
				for _, l := range strings.Split(r.audit, "\n") {
					var m map[string]any
					if json.Unmarshal([]byte(l), &m) != nil || m[audit.AttrKind] != c.kind || m[audit.AttrHost] != c.host ||
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
					t.Errorf("no %s %s %s line naming pid and argv %q in the audit:\n%s", c.kind, c.decision, c.host, c.argv, r.audit)
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
