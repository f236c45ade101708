package hooks

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/barry-rocks/sandbox/policy"
)

// Reply is what hookgate tells a harness. Its zero value is ReplyDeny.
type Reply uint8

const (
	// ReplyDeny blocks the call.
	ReplyDeny Reply = iota
	// ReplyAllow approves the call explicitly (Claude Code then skips its
	// permission prompt; deny and ask rules still apply).
	ReplyAllow
	// ReplyAsk asks the user, where the event supports it; elsewhere it is
	// a deny whose reason says approval was needed.
	ReplyAsk
	// ReplyPass has no opinion: the harness's own permission flow decides.
	// Harnesses without a "no opinion" answer for a gated event (Cursor,
	// Pi) get their allow.
	ReplyPass
)

// String returns "deny", "allow", "ask" or "pass".
func (r Reply) String() string {
	switch r {
	case ReplyAllow:
		return "allow"
	case ReplyAsk:
		return "ask"
	case ReplyPass:
		return "pass"
	default:
		return "deny"
	}
}

// Answer is a reply with its reasons. Reason is shown to the user (and to
// the model where the harness has only one message); AgentMessage, when
// set, is Cursor's separate agent_message. The zero Answer denies.
type Answer struct {
	Reply        Reply
	Reason       string
	AgentMessage string
	// Exclude are exclusion globs an allow holds only with
	// (policy.Decision.Exclude): Encode rewrites the call to carry them,
	// or denies it where the harness cannot.
	Exclude string
}

// AnswerFor turns a ruling into the reply check sends: a policy allow is a
// pass (hookgate restricts, it never grants past the harness's own
// permission flow), a deny a deny, an ask an ask.
func AnswerFor(d policy.Decision) Answer {
	reason := "hookgate: " + d.Reason
	switch d.Verdict {
	case policy.Allow:
		return Answer{Reply: ReplyPass, Reason: reason, Exclude: d.Exclude}
	case policy.Ask:
		return Answer{Reply: ReplyAsk, Reason: reason}
	default:
		if d.Reason == "" {
			reason = "hookgate: denied (no reason given)"
		}
		return Answer{Reply: ReplyDeny, Reason: reason}
	}
}

// Output is a hook's whole answer: what it prints and how it exits.
type Output struct {
	Stdout []byte
	Stderr []byte
	Code   int
}

// maxReasonBytes caps reason strings (Claude Code caps hook output strings
// at 10,000 characters and saves the rest to a file).
const maxReasonBytes = 2000

func clip(s string) string {
	if len(s) <= maxReasonBytes {
		return s
	}
	s = s[:maxReasonBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// encodeJSON writes v as one line of JSON without HTML escaping. Struct
// field order fixes key order, so the bytes are stable.
func encodeJSON(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		// Only strings and fixed structs are encoded; this cannot happen.
		panic("hooks: encoding answer: " + err.Error())
	}
	return b.Bytes()
}

var emptyObject = []byte("{}\n")

// askDenied is the reason of an ask sent as a deny because the event
// cannot ask (or does not enforce an ask): it says approval was needed and
// how to let the call through.
func askDenied(c Call, reason string) string {
	return reason + "; needs a person's approval, which " + string(c.Harness) + " cannot ask for in " + c.Event +
		": denied (grant it in the session policy to allow it)"
}

// Encode writes a for the event c in c.Harness's protocol. Events hookgate
// does not gate get the harness's "no opinion" answer whatever a says. An
// ask is an ask where the event enforces one (canAsk), no opinion on a
// permission request (the harness then asks), and elsewhere a deny whose
// reason says approval was needed. An allow with Exclude is the call
// rewritten to carry them (the tool's ExcludeKey), where the harness lets
// a hook rewrite it, and a deny elsewhere.
func Encode(c Call, a Answer) Output {
	reason := clip(a.Reason)
	agent := clip(a.AgentMessage)
	if agent == "" {
		agent = reason
	}
	if a.Exclude != "" && c.Kind == KindTool && (a.Reply == ReplyPass || a.Reply == ReplyAllow) {
		p := mustProtocol(c.Harness)
		t, _ := policy.NativeToolOf(string(c.Harness), c.Tool)
		if p.rewrite == nil || t.ExcludeKey == "" {
			return p.encode(c, ReplyDeny, clip(reason+"; the call must leave out "+a.Exclude+", which "+string(c.Harness)+"'s "+c.Tool+" cannot be made to: denied"), agent)
		}
		return p.rewrite(c, t.WithExcludes(c.Input, a.Exclude), reason)
	}
	if p := mustProtocol(c.Harness); a.Reply == ReplyAsk && c.Kind == KindTool && (p.canAsk == nil || !p.canAsk(c)) {
		a.Reply = ReplyDeny
		reason, agent = askDenied(c, reason), askDenied(c, agent)
	}
	return mustProtocol(c.Harness).encode(c, a.Reply, reason, agent)
}

// Fail is the deny for a failure before the payload was understood (bad
// input, unknown event): the harness's blocking exit code 2 with the reason
// on stderr, which every harness honours for its tool hooks (Codex only with
// stderr non-empty, which it always is here), plus the JSON deny on stdout
// where the harness reads it alongside exit 2.
func Fail(h Harness, reason string) Output {
	reason = clip(reason)
	if reason == "" {
		reason = "hookgate: denied"
	}
	out := Output{Stderr: []byte(reason + "\n"), Code: 2}
	if p := mustProtocol(h); p.failStdout != nil {
		out.Stdout = p.failStdout(reason)
	}
	return out
}
