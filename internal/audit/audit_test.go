package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

func line(t *testing.T, buf *bytes.Buffer) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("line %q: %v", buf.String(), err)
	}
	buf.Reset()
	return m
}

// TestDecision: every decision line has kind, decision, reason and rule
// (rule even when empty), the kind's message, then the caller's attributes.
func TestDecision(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	ctx := context.Background()
	cases := []struct {
		kind       Kind
		d          policy.Decision
		msg, level string
	}{
		{KindConnect, policy.Decision{Verdict: policy.Allow, Reason: "allowed", Rule: "r"}, MsgProxy, "INFO"},
		{KindHTTP, policy.Decision{Reason: "no"}, MsgProxy, "INFO"},
		{KindConn, policy.Decision{Reason: "too many"}, MsgProxy, "INFO"},
		{KindDNS, policy.Decision{Verdict: policy.Allow, Reason: "allowed"}, MsgDNS, "INFO"},
		{KindHook, policy.Decision{Verdict: policy.Ask, Reason: "ask", Rule: "x"}, MsgHookRuling, "INFO"},
		{KindReload, policy.Decision{Verdict: policy.Allow, Reason: "policy file changed"}, MsgPolicyReload, "INFO"},
		{KindReload, policy.Decision{Reason: "bad"}, MsgPolicyReload, "WARN"},
	}
	for _, c := range cases {
		Decision(ctx, log, c.kind, c.d, slog.String(AttrHost, "h"))
		m := line(t, &buf)
		want := map[string]any{"msg": c.msg, "level": c.level, AttrKind: string(c.kind), AttrDecision: c.d.Verdict.String(),
			AttrReason: c.d.Reason, AttrRule: c.d.Rule, AttrHost: "h"}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s %v: %s = %v, want %v", c.kind, c.d, k, m[k], v)
			}
		}
	}
	Decision(ctx, nil, KindDNS, policy.Decision{}) // a nil log discards
}

// TestEvent: a line that is not a decision has its kind and no decision.
func TestEvent(t *testing.T) {
	var buf bytes.Buffer
	Event(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)), slog.LevelInfo, KindSession, MsgSessionExit, slog.Int(AttrExitStatus, 3))
	m := line(t, &buf)
	if m["msg"] != MsgSessionExit || m[AttrKind] != "session" || m[AttrExitStatus] != float64(3) {
		t.Errorf("line %v", m)
	}
	if _, ok := m[AttrDecision]; ok {
		t.Errorf("an event has a decision: %v", m)
	}
}
