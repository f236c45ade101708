package policywatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// Compiled is one version of a policy as its enforcers read it, compiled
// once per version so they cannot disagree. Its fingerprint is the one every
// line about it carries.
type Compiled interface {
	Fingerprint() string
}

// Live is the one live policy applier: it keeps a watched policy file's
// last good version applied to its enforcers. Each change the Watcher
// reports (an edit, or a Reload for SIGHUP) is compiled once and handed to
// every enforcer in order; an edit that does not decode, resolve or compile,
// or that an enforcer refuses, keeps the last good policy. Each outcome is
// one audit line of kind reload: allowed with the old and new fingerprints,
// or denied (a warning) with the reason and the fingerprint kept.
//
// Set the exported fields, then Watch (or only Set, for a policy that is not
// a file: Current then stays put), Set the first compiled policy, and apply
// changes with Serve or, in a loop of one's own, Apply on Changes.
type Live[P Compiled] struct {
	// Log takes the reload lines (nil: discard).
	Log *slog.Logger
	// Compile derives a policy version from a resolution.
	Compile func(*policy.Resolved) (P, error)
	// Enforcers take a compiled version, in order; the first error refuses
	// the change (the enforcers before it keep what they took).
	Enforcers []func(P) error
	// Refused, if set, is called after a refusal's line.
	Refused func(err error)
	// Applied, if set, is called after an applied change's line.
	Applied func(old, cur P)

	watcher *Watcher
	changes chan Change

	applyMu sync.Mutex // one change at a time, in order
	mu      sync.Mutex
	cur     P
}

// Watch starts watching the policy file at path (see WatchFile) and returns
// its first resolution, which the caller compiles and Sets. Changes queue
// until they are applied; the watcher waits when the queue is full. It stops
// when ctx ends or at Close.
func (l *Live[P]) Watch(ctx context.Context, path string, debounce time.Duration) (*policy.Resolved, error) {
	l.changes = make(chan Change, 16)
	w, err := WatchFile(ctx, path, debounce, func(c Change) {
		select {
		case l.changes <- c:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return nil, err
	}
	l.watcher = w
	return w.Current(), nil
}

// Path is the absolute path of the watched file ("" when none).
func (l *Live[P]) Path() string {
	if l.watcher == nil {
		return ""
	}
	return l.watcher.Path()
}

// Set makes p the policy in force without applying it: the enforcers were
// built with it.
func (l *Live[P]) Set(p P) {
	l.mu.Lock()
	l.cur = p
	l.mu.Unlock()
}

// Current returns the policy in force.
func (l *Live[P]) Current() P {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cur
}

// Changes are the watcher's reports waiting to be applied (nil, which never
// delivers, without Watch).
func (l *Live[P]) Changes() <-chan Change { return l.changes }

// Reload re-reads the file at once and reports the outcome even when it did
// not change (SIGHUP). Without Watch it does nothing.
func (l *Live[P]) Reload() {
	if l.watcher != nil {
		l.watcher.Reload()
	}
}

// Serve applies every change until ctx ends.
func (l *Live[P]) Serve(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-l.changes:
			l.Apply(c)
		}
	}
}

// Close stops watching.
func (l *Live[P]) Close() error {
	if l.watcher == nil {
		return nil
	}
	return l.watcher.Close()
}

// Apply applies one change: compiled, handed to every enforcer, and logged;
// or refused, keeping the last good policy, and logged.
func (l *Live[P]) Apply(c Change) {
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	err := c.Err
	var next P
	if err == nil {
		next, err = l.Compile(c.New)
	}
	for _, set := range l.Enforcers {
		if err != nil {
			break
		}
		err = set(next)
	}
	if err != nil {
		l.refuse(err)
		return
	}
	l.mu.Lock()
	old := l.cur
	l.cur = next
	l.mu.Unlock()
	why := "policy file changed"
	if old.Fingerprint() == next.Fingerprint() {
		why = "policy reloaded, unchanged"
	}
	audit.Decision(context.Background(), l.Log, audit.KindReload, policy.Decision{Verdict: policy.Allow, Reason: why},
		slog.String(audit.AttrOldPolicy, old.Fingerprint()), slog.String(audit.AttrNewPolicy, next.Fingerprint()),
		slog.String(audit.AttrPolicyFile, l.Path()))
	if l.Applied != nil {
		l.Applied(old, next)
	}
}

func (l *Live[P]) refuse(err error) {
	audit.Decision(context.Background(), l.Log, audit.KindReload, policy.Decision{Verdict: policy.Deny, Reason: policy.OneLine(err.Error())},
		slog.String(audit.AttrOldPolicy, l.Current().Fingerprint()), slog.String(audit.AttrPolicyFile, l.Path()))
	if l.Refused != nil {
		l.Refused(err)
	}
}
