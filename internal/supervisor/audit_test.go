package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// TestAuditConcurrent: 10,000 decisions logged from many goroutines through
// several loggers give 10,000 whole lines, each parsing on its own and
// naming the sandbox and the policy, and the counts match.
func TestAuditConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := OpenAudit(path, "sandboxd-test")
	if err != nil {
		t.Fatal(err)
	}
	a.SetPolicy("fp1")
	loggers := []*slog.Logger{a.Logger(), a.Logger().With("component", "dns"), a.Logger()}
	const workers, each = 50, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				l := loggers[(w+i)%len(loggers)]
				switch i % 3 {
				case 0:
					l.LogAttrs(context.Background(), slog.LevelInfo, audit.MsgProxy, slog.String(audit.AttrKind, "connect"),
						slog.String(audit.AttrHost, fmt.Sprintf("h%d-%d.example", w, i)), slog.String(audit.AttrDecision, "allow"),
						slog.String(audit.AttrReason, string(make([]byte, 0, 10))+fmt.Sprintf("%0500d", i)))
				case 1:
					l.LogAttrs(context.Background(), slog.LevelInfo, audit.MsgDNS, slog.String(audit.AttrKind, "dns"),
						slog.String(audit.AttrDecision, "deny"), slog.String(audit.AttrPolicy, "fp-dns"))
				default:
					audit.Decision(context.Background(), l, audit.KindHook, policy.Decision{Verdict: policy.Deny, Reason: "x\ny\"z"})
				}
			}
		}(w)
	}
	wg.Wait()
	a.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d does not parse: %v", n+1, err)
		}
		if m[audit.AttrSandbox] != "sandboxd-test" || m[audit.AttrPolicy] == nil || m[audit.AttrPolicy] == "" {
			t.Fatalf("line %d lacks sandbox or policy: %v", n+1, m)
		}
		n++
	}
	if n != workers*each {
		t.Fatalf("%d lines, want %d", n, workers*each)
	}
	c := a.Counts()
	var allowed, denied int64
	for _, v := range c {
		allowed += v[0]
		denied += v[1]
	}
	if allowed+denied != workers*each || c["connect"][0] == 0 || c["dns"][1] == 0 || c[string(audit.KindHook)][1] == 0 {
		t.Fatalf("counts %v", c)
	}
	if s := a.Summary(); s == "" || s == "no decisions" {
		t.Fatalf("summary %q", s)
	}
}

func TestOpenAuditRefusesUnwritable(t *testing.T) {
	if _, err := OpenAudit(filepath.Join(t.TempDir(), "missing", "audit.jsonl"), "x"); err == nil {
		t.Fatal("an audit file in a missing directory was accepted")
	}
}

func TestStatusListAndPrune(t *testing.T) {
	base := t.TempDir()
	mk := func(id string, pid int) {
		d := filepath.Join(base, id)
		os.Mkdir(d, 0o700)
		if pid != 0 {
			if err := writeStatus(d, Status{ID: id, PID: pid, Command: []string{"x"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	mk("sandboxd-alive", os.Getpid())
	mk("sandboxd-gone", 1<<30)
	mk("sandboxd-starting", 0)
	mk("sandboxd-lost", 0) // no status, made long ago: its sandboxd died starting
	os.Mkdir(filepath.Join(base, "sandboxd-lost"+privateHomeSuffix), 0o700)
	old := time.Now().Add(-2 * startingGrace)
	os.Chtimes(filepath.Join(base, "sandboxd-lost"), old, old)
	mk("other", os.Getpid())
	list, err := ListStatuses(base)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListStatuses = %+v, %v", list, err)
	}
	PruneStale(base)
	for id, want := range map[string]bool{"sandboxd-alive": true, "sandboxd-gone": false, "sandboxd-starting": true, "other": true,
		"sandboxd-lost": false, "sandboxd-lost" + privateHomeSuffix: false} {
		if _, err := os.Stat(filepath.Join(base, id)); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", id, err == nil, want)
		}
	}
}

// TestAuditWriteErrorReported: a failing stream is reported once, not
// silently dropped.
func TestAuditWriteErrorReported(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	a, err := OpenAudit(path, "s")
	if err != nil {
		t.Fatal(err)
	}
	var reports []error
	a.OnWriteError(func(err error) { reports = append(reports, err) })
	a.Close() // every later write fails
	for i := 0; i < 3; i++ {
		audit.Decision(context.Background(), a.Logger(), audit.KindHook, policy.Decision{Verdict: policy.Deny, Reason: "r"})
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1", len(reports))
	}
	if c := a.Counts()[string(audit.KindHook)]; c[1] != 3 {
		t.Fatalf("counts %v: decisions must still be counted", c)
	}
}

// TestOpenAuditRefusesSymlink: a link planted where the audit file goes
// (by a sandbox whose workspace holds it) is not followed.
func TestOpenAuditRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "bashrc")
	os.WriteFile(target, []byte("rc\n"), 0o644)
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if a, err := OpenAudit(link, "s"); err == nil {
		a.Close()
		t.Fatal("OpenAudit followed a symlink")
	}
	if b, _ := os.ReadFile(target); string(b) != "rc\n" {
		t.Errorf("target changed: %q", b)
	}
	if a, err := OpenAudit(dir, "s"); err == nil {
		a.Close()
		t.Fatal("OpenAudit took a directory")
	}
}

// TestAuditCountsByKindAndDecision: the stream counts a line from its kind
// and decision keys alone; a line lacking either (or saying allow/deny under
// another key, or in its message) is written but not counted.
func TestAuditCountsByKindAndDecision(t *testing.T) {
	a, err := OpenAudit("", "s")
	if err != nil {
		t.Fatal(err)
	}
	l := a.Logger()
	ctx := context.Background()
	audit.Decision(ctx, l, audit.KindReload, policy.Decision{Verdict: policy.Allow, Reason: "policy file changed"})
	audit.Decision(ctx, l, audit.KindReload, policy.Decision{Verdict: policy.Deny, Reason: "bad"})
	audit.Decision(ctx, l, audit.KindHook, policy.Decision{Verdict: policy.Ask, Reason: "ask"}) // neither allowed nor denied
	audit.Event(ctx, l, slog.LevelInfo, audit.KindSession, audit.MsgSessionStart)
	l.Info(audit.MsgHookRuling, "verdict", "deny")
	l.Info(audit.MsgPolicyReload, audit.AttrDecision, "deny")
	got := a.Counts()
	want := map[string][2]int64{"reload": {1, 1}}
	if len(got) != len(want) || got["reload"] != want["reload"] {
		t.Fatalf("counts %v, want %v", got, want)
	}
}

// TestAuditCountsRepeated: an open refused summary line ("repeated": N,
// for N refusals of one path not written one by one) counts as N denials,
// so the exit summary counts refusals, not lines (3,000 refused opens of
// one path read "105 denied" when each line counted once).
func TestAuditCountsRepeated(t *testing.T) {
	a := NewAudit(io.Discard, "s")
	l := a.Logger()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		audit.Event(ctx, l, slog.LevelWarn, audit.KindSession, audit.MsgOpenRefused, slog.String(audit.AttrDecision, "deny"))
	}
	audit.Event(ctx, l, slog.LevelWarn, audit.KindSession, audit.MsgOpenRefused, slog.String(audit.AttrDecision, "deny"), slog.Int(audit.AttrRepeated, 2997))
	audit.Event(ctx, l, slog.LevelWarn, audit.KindSession, audit.MsgOpenRefused, slog.String(audit.AttrDecision, "deny"), slog.String(audit.AttrRepeated, "9"))
	if got := a.Counts()["session"]; got != [2]int64{0, 3001} {
		t.Fatalf("session counts %v, want 3,001 denied (3 lines, one standing for 2,997, one whose repeated is not a number)", got)
	}
}

// TestSummaryByCommand: denials that name the process behind them are
// counted by its command (argv[0]'s base), most first; allowed lines and
// lines without argv are not.
func TestSummaryByCommand(t *testing.T) {
	a, err := OpenAudit("", "sandboxd-test")
	if err != nil {
		t.Fatal(err)
	}
	l := a.Logger()
	deny := func(argv ...string) {
		attrs := []any{audit.AttrKind, "connect", audit.AttrDecision, "deny"}
		if argv != nil {
			attrs = append(attrs, audit.AttrArgv, argv)
		}
		l.Info("proxy decision", attrs...)
	}
	deny("/usr/bin/node", "-e", "x")
	deny("curl", "https://a")
	deny("curl", "https://b")
	deny()
	l.Info("proxy decision", audit.AttrKind, "connect", audit.AttrDecision, "allow", audit.AttrArgv, []string{"wget"})
	if s, want := a.Summary(), "connect 1 allowed 4 denied; denied by command: curl 2, node 1"; s != want {
		t.Errorf("summary %q, want %q", s, want)
	}
}

// TestSummaryCommandsQuoted: a command name with control characters (the
// sandbox chooses argv[0]) is quoted in the summary, and at most
// maxSummaryCommands are named.
func TestSummaryCommandsQuoted(t *testing.T) {
	a, err := OpenAudit("", "sandboxd-test")
	if err != nil {
		t.Fatal(err)
	}
	l := a.Logger()
	l.Info("proxy decision", audit.AttrKind, "connect", audit.AttrDecision, "deny", audit.AttrArgv, []string{"\x1b]0;pwned\x07\nsandboxd: all clear"})
	for i := range 12 {
		l.Info("proxy decision", audit.AttrKind, "connect", audit.AttrDecision, "deny", audit.AttrArgv, []string{fmt.Sprintf("c%02d", i)})
	}
	s := a.Summary()
	if strings.ContainsAny(s, "\x1b\x07\n") || !strings.Contains(s, `"\x1b]0;pwned\a\nsandboxd: all clear" 1`) || !strings.Contains(s, "3 more") {
		t.Errorf("summary %q", s)
	}
}
