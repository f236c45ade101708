package supervisor

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
	"github.com/barry-rocks/sandbox/proxy"
)

// HostExplanation is what the egress proxy would do with a connection.
type HostExplanation struct {
	Target      string          `json:"target"`
	Decision    policy.Decision `json:"-"`
	Verdict     string          `json:"verdict"`
	Reason      string          `json:"reason"`
	Rule        string          `json:"rule,omitempty"`
	Addr        string          `json:"addr,omitempty"`
	Fingerprint string          `json:"fingerprint"`
}

// ExplainHost decides target ("host" or "host:port") the way "sandboxd run"
// with the same options would decide a CONNECT to it now: the same policy
// resolution, the same proxy decision code (name, resolution of an allowed
// name, dial guard), without dialing.
func ExplainHost(ctx context.Context, opts Options, target string) (*HostExplanation, error) {
	sp, err := opts.resolveNow()
	if err != nil {
		return nil, err
	}
	px, err := proxy.New(proxy.Config{SandboxID: "explain", Policy: sp.proxy, DNSUpstream: opts.DNSUpstream,
		Audit: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer px.Close()
	d, ap := px.Explain(ctx, target)
	e := &HostExplanation{Target: target, Decision: d, Verdict: d.Verdict.String(), Reason: d.Reason, Rule: d.Rule, Fingerprint: sp.fingerprint}
	if ap.IsValid() {
		e.Addr = ap.String()
	}
	return e, nil
}

// PathExplanation is what the sandbox's filesystem layer would do with a
// path.
type PathExplanation struct {
	Path     string          `json:"path"`
	Write    bool            `json:"write"`
	Decision policy.Decision `json:"-"`
	Verdict  string          `json:"verdict"`
	Reason   string          `json:"reason"`
	Rule     string          `json:"rule,omitempty"`
	Plan     *policy.FSPlan  `json:"plan"`
}

// ExplainPath plans the filesystem the way "sandboxd run" with the same
// options would (the same policy resolution and policy.PlanFilesystem) and
// decides path with the plan.
func ExplainPath(opts Options, path string, write bool) (*PathExplanation, error) {
	sp, err := opts.resolveNow()
	if err != nil {
		return nil, err
	}
	var always []string
	if opts.PolicyFile != "" {
		if abs, err := filepath.Abs(opts.PolicyFile); err == nil {
			always = append(always, filepath.Dir(abs))
		}
	}
	fs, err := planFilesystem(context.Background(), &opts, sp, append(always, resolverFiles...))
	if err != nil {
		return nil, err
	}
	if (procjail.OpenGateAvailable() == nil || fs.openGateMode == policy.OpenGateAlways) && fs.OpenGateRoots() != nil {
		// As "sandboxd run" would have it (openGate): a match that
		// appears later is refused at open time, by the fanotify gate
		// or, under filesystem.openGate: always, the seccomp route (in
		// container mode without the create gate's machinery, run would
		// not start at all).
		fs.GateOpens()
	}
	d := fs.Explain(path, write)
	return &PathExplanation{Path: path, Write: write, Decision: d, Verdict: d.Verdict.String(), Reason: d.Reason, Rule: d.Rule, Plan: fs.FSPlan}, nil
}

// resolveNow resolves the policy file (if any) and merges the flags, as
// sandboxd run would at start.
func (o *Options) resolveNow() (*sessionPolicy, error) {
	var r *policy.Resolved
	if o.PolicyFile != "" {
		var err error
		if r, err = policy.ResolveFile(o.PolicyFile); err != nil {
			return nil, err
		}
	}
	return o.compute(r)
}

// CallExplanation is what hookgate would answer for a tool call.
type CallExplanation struct {
	Harness string `json:"harness"`
	Event   string `json:"event,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Verdict string `json:"verdict"`
	Reason  string `json:"reason"`
	Rule    string `json:"rule,omitempty"`
	// Exclude: an allow that holds with the call rewritten to carry these
	// exclusion globs (the answer's rewritten input).
	Exclude  string `json:"exclude,omitempty"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exitCode"`
}

// ExplainCall rules on a harness payload with the policy file exactly as
// "hookgate check --policy FILE" does (the same decode, engine and answer
// encoding), or with inSandbox as the ruling server of a sandboxd session
// with that policy does (hooks.Session.InSandbox), and reports the
// decision beside the answer.
func ExplainCall(ctx context.Context, policyFile, harness string, inSandbox bool, payload io.Reader) *CallExplanation {
	data, readErr := hooks.ReadPayload(payload)
	src := hooks.LocalSource{Path: policyFile, InSandbox: inSandbox}
	out := hooks.Check(ctx, hooks.CheckArgs{Harness: harness, Payload: bytes.NewReader(data), Source: src})
	e := &CallExplanation{Harness: harness, Verdict: "deny", Stdout: string(out.Stdout), Stderr: string(out.Stderr), ExitCode: out.Code}
	h, err := hooks.ParseHarness(harness)
	if err != nil || readErr != nil {
		e.Reason = "the payload or harness is refused; see the answer"
		return e
	}
	c, err := hooks.Decode(h, data)
	if err != nil {
		e.Reason = err.Error()
		return e
	}
	e.Event, e.Tool = c.Event, c.Tool
	if c.Kind == hooks.KindOther {
		e.Verdict, e.Reason = "pass", policy.Because(policy.ReasonNotGated, "%s", c.Event)
		return e
	}
	r, err := src.Open(ctx)
	if err != nil {
		e.Reason = err.Error()
		return e
	}
	d, err := r.Rule(ctx, c)
	if err != nil {
		e.Reason = err.Error()
		return e
	}
	e.Verdict, e.Reason, e.Rule, e.Exclude = d.Verdict.String(), d.Reason, d.Rule, d.Exclude
	return e
}
