package supervisor

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

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
