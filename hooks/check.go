package hooks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

// DefaultDeadline is hookgate's own deadline for one ruling, far below every
// harness's hook timeout (Claude Code and Codex 600 s, Gemini 60 s).
const DefaultDeadline = 2 * time.Second

// Source opens where rulings come from: a local engine for a policy file,
// or a client of a ruling server. Open runs under the check's deadline.
type Source interface {
	Open(ctx context.Context) (Ruling, error)
}

// Ruling rules on calls; an error is a deny.
type Ruling interface {
	Rule(ctx context.Context, c Call) (policy.Decision, error)
}

// CheckArgs are the inputs of one hook check.
type CheckArgs struct {
	// Harness is the --harness flag as given.
	Harness string
	// Payload is the hook's stdin.
	Payload io.Reader
	// Source gives rulings; nil is a deny (no policy configured).
	Source Source
	// Deadline bounds the whole check, reading stdin included; 0 means
	// DefaultDeadline.
	Deadline time.Duration
	// Fault injects a failure ("panic@start", "hang@decoded", …); it has
	// an effect only in binaries built with the hookgate_faults tag.
	Fault string
}

// Check answers one hook call: it reads the payload, decodes it, rules on
// it and encodes the answer, all under the deadline. Every failure is a
// deny in the harness's protocol that names the failure: an unknown
// harness, a payload that is oversized, malformed or of an unknown event, no
// policy source, a source that cannot open, a ruling error, a panic, and
// the deadline. Events that are not gated get the harness's "no opinion"
// answer without consulting the source. Check always returns, by the
// deadline plus the time to encode a deny.
func Check(ctx context.Context, a CheckArgs) Output {
	h, err := ParseHarness(a.Harness)
	if err != nil {
		return Fail(Harness(a.Harness), "hookgate: "+err.Error())
	}
	deadline := a.Deadline
	if deadline <= 0 {
		deadline = DefaultDeadline
	}
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()

	st := &checkState{h: h}
	done := make(chan Output, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- st.deny(fmt.Sprintf("hookgate: internal error (panic: %v); denied", p))
			}
		}()
		done <- st.run(ctx, a)
	}()
	select {
	case out := <-done:
		return out
	case <-ctx.Done():
		return st.deny(fmt.Sprintf("hookgate: no ruling within %s (%v); denied", deadline, context.Cause(ctx)))
	}
}

// checkState remembers the decoded call so that a deny after decoding uses
// the event's own answer.
type checkState struct {
	h    Harness
	mu   sync.Mutex
	call *Call
}

func (st *checkState) setCall(c Call) {
	st.mu.Lock()
	st.call = &c
	st.mu.Unlock()
}

func (st *checkState) deny(reason string) Output {
	st.mu.Lock()
	c := st.call
	st.mu.Unlock()
	if c == nil || c.Kind == KindOther {
		return Fail(st.h, reason)
	}
	out := Encode(*c, Answer{Reply: ReplyDeny, Reason: reason})
	if len(out.Stdout) == 0 {
		// An encoder with no deny for this event: fall back to exit 2.
		return Fail(st.h, reason)
	}
	return out
}

func (st *checkState) run(ctx context.Context, a CheckArgs) Output {
	injectFault(a.Fault, "start")
	if a.Payload == nil {
		return Fail(st.h, "hookgate: no payload")
	}
	data, err := ReadPayload(a.Payload)
	if err != nil {
		return Fail(st.h, "hookgate: "+err.Error()+"; denied")
	}
	c, err := Decode(st.h, data)
	if err != nil {
		return Fail(st.h, "hookgate: "+err.Error()+"; denied")
	}
	if c.Kind == KindOther {
		return Encode(c, Answer{Reply: ReplyPass, Reason: "hookgate: " + policy.Because(policy.ReasonNotGated, "%s", c.Event)})
	}
	st.setCall(c)
	injectFault(a.Fault, "decoded")
	if a.Source == nil {
		return st.deny("hookgate: no policy (set --policy/BARRY_POLICY or --socket/BARRY_HOOK_SOCKET); denied")
	}
	r, err := a.Source.Open(ctx)
	if err != nil {
		return st.deny("hookgate: " + policy.OneLine(err.Error()) + "; denied")
	}
	d, err := r.Rule(ctx, c)
	if err != nil {
		return st.deny("hookgate: " + policy.OneLine(err.Error()) + "; denied")
	}
	if ctx.Err() != nil {
		return st.deny("hookgate: ruling arrived after the deadline; denied")
	}
	return Encode(c, AnswerFor(d))
}

// LocalSource rules with an engine built from a session policy file, loaded
// when the check opens it.
type LocalSource struct {
	Path  string
	Shell ShellRuler
	// InSandbox rules as a sandboxd session's ruling server does
	// (Session.InSandbox): sandboxd explain --in-sandbox. hookgate never
	// sets it: with a policy file it rules for a harness outside the
	// sandbox.
	InSandbox bool
}

// Open implements Source.
func (s LocalSource) Open(ctx context.Context) (Ruling, error) {
	if s.Path == "" {
		return nil, fmt.Errorf("%w: empty policy path", ErrNoPolicy)
	}
	sess, err := LoadPolicy(s.Path)
	if err != nil {
		return nil, err
	}
	if s.InSandbox {
		sess.InSandbox()
	}
	e, err := NewEngine(sess, s.Shell)
	if err != nil {
		return nil, err
	}
	return EngineRuling{e}, nil
}

// EngineRuling adapts an Engine to Ruling.
type EngineRuling struct{ Engine Engine }

// Rule implements Ruling.
func (e EngineRuling) Rule(ctx context.Context, c Call) (policy.Decision, error) {
	if e.Engine == nil {
		return policy.Decision{}, errors.New("no engine")
	}
	return e.Engine.Rule(ctx, c), nil
}
