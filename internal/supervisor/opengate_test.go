package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// TestOpenRefusedLines: the open gate's refusal lines are capped per path
// and second, and every refusal is still counted: 250 refusals of one path
// within a second write 100 lines, and the 150 others one summary line
// ("repeated": 150) at the path's next refusal a second later; that path,
// having had more than 100, gets no line of its own in that second, and
// its count comes out at the session's end (flush). Another path in the
// same second gets lines of its own, and one a quiet second after a small
// window does too. The lines are read back from the audit's JSON.
func TestOpenRefusedLines(t *testing.T) {
	var buf bytes.Buffer
	s := &session{log: slog.New(slog.NewJSONHandler(&buf, nil))}
	t0 := time.Unix(1000, 0)
	ref := func(path string, i int) procjail.OpenRefusal {
		return procjail.OpenRefusal{Path: path, Pid: i, Comm: "cat", Rule: "files.deny:**/.env", Reason: "r"}
	}
	at := s.openRefusedAt
	for i := range 250 {
		at(ref("/ws/.env", i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	at(ref("/ws/b/.env", 1), t0.Add(500*time.Millisecond))
	at(ref("/ws/.env", 250), t0.Add(1500*time.Millisecond))
	at(ref("/ws/c/.env", 1), t0.Add(1500*time.Millisecond))
	at(ref("/ws/c/.env", 2), t0.Add(3*time.Second))
	s.flushRefusals()

	type line struct {
		Path     string `json:"path"`
		Pid      int    `json:"pid"`
		Repeated int    `json:"repeated"`
	}
	var lines []line
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m line
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	own, counted := map[string]int{}, map[string]int{}
	for _, l := range lines {
		if l.Repeated > 0 {
			counted[l.Path] += l.Repeated
		} else {
			own[l.Path]++
			counted[l.Path]++
		}
	}
	if own["/ws/.env"] != 100 || counted["/ws/.env"] != 251 {
		t.Errorf("/ws/.env: %d lines of its own, %d refusals counted; want 100 and 251", own["/ws/.env"], counted["/ws/.env"])
	}
	if own["/ws/b/.env"] != 1 || own["/ws/c/.env"] != 2 || counted["/ws/c/.env"] != 2 {
		t.Errorf("the other paths: %v %v; want a line each", own, counted)
	}
	var sums []line
	for _, l := range lines {
		if l.Repeated > 0 {
			sums = append(sums, l)
		}
	}
	// The summary of the first second's 150 (its last refusal: pid 249),
	// then at the end the one refusal of the next second (pid 250).
	if len(sums) != 2 || sums[0] != (line{"/ws/.env", 249, 150}) || sums[1] != (line{"/ws/.env", 250, 1}) {
		t.Errorf("summary lines %+v; want /ws/.env 150 (pid 249) then 1 (pid 250)", sums)
	}
	if len(lines) != 105 {
		t.Errorf("%d lines; want 105", len(lines))
	}
}

// TestOpenGateChoice: where the fanotify gate cannot be had (container
// mode here: no mount namespace of its own), filesystem.openGate decides.
// Without it (or auto) the gate is off, not_covered says so and the init
// gets no open guard (no route, no cost); with always the seccomp route is
// on: the start line says which, not_covered no longer says the gate is
// off, and the init's guard refuses a late files.deny match; with always
// and no create gate (its machinery) the session does not start, and the
// error names filesystem.openGate and why.
func TestOpenGateChoice(t *testing.T) {
	ws := t.TempDir()
	for _, c := range []struct {
		name, mode, noCreate string
		state, err           string // err: a part of the error; "" none
		route                bool
	}{
		{"default", "", "", "off: container mode has no mount namespace of its own to mark", "", false},
		{"auto", policy.OpenGateAuto, "", "off: container mode has no mount namespace of its own to mark", "", false},
		{"always", policy.OpenGateAlways, "", OpenRouteState, "", true},
		{"always without the create gate", policy.OpenGateAlways, "Landlock ABI 5 (the gate needs its signal scope, ABI 6)", "",
			"filesystem.openGate is always, and neither route can be had: no fanotify gate (container mode has no mount namespace of its own to mark), and no seccomp route (it needs the create gate, which is off: Landlock ABI 5 (the gate needs its signal scope, ABI 6))", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			plan, err := policy.PlanFilesystem(context.Background(), policy.FSInput{Workspace: ws, Files: &policy.FileRules{Deny: []string{"**/.env"}}})
			if err != nil {
				t.Fatal(err)
			}
			s := &session{container: &procjail.ContainerMode{UID: 1000, GID: 1000},
				fsPlan: &fsState{FSPlan: plan, openGateMode: c.mode, noCreateGate: c.noCreate}}
			_, err = s.openGate()
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("openGate: %v; want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.openGateState != c.state {
				t.Errorf("open_gate %q; want %q", s.openGateState, c.state)
			}
			off := strings.Contains(strings.Join(s.fsPlan.NotCovered, "\n"), "open gate off")
			if off == c.route {
				t.Errorf("not_covered says the gate is off: %v, with the route %v:\n%s", off, c.route, strings.Join(s.fsPlan.NotCovered, "\n"))
			}
			jail := s.fsPlan.jail()
			guard := jail.OpenGuard
			if (len(guard) > 0) != c.route || (len(jail.OpenRoots) > 0) != c.route {
				t.Fatalf("the init's open guard %q and roots %q, with the route %v", guard, jail.OpenRoots, c.route)
			}
			if c.route && strings.Join(jail.OpenRoots, " ") != strings.Join(plan.OpenGateRoots(), " ") {
				t.Errorf("the route's roots %q; want the fanotify gate's %q", jail.OpenRoots, plan.OpenGateRoots())
			}
			if !c.route {
				return
			}
			decide, err := policy.OpenDeciderFor(guard)
			if err != nil {
				t.Fatal(err)
			}
			late := filepath.Join(policy.Canonicalize(ws, "/"), "late", ".env")
			if refused, rule, _ := decide(late, 1, 1, true); !refused || rule != "files.deny:**/.env" {
				t.Errorf("the init's guard on %s: refused %v rule %q", late, refused, rule)
			}
		})
	}
}
