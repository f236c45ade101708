package supervisor

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/policywatch"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy"
)

// sessionPolicy is one resolved state of the session: what every enforcer
// reads, computed once per policy version so they cannot disagree.
type sessionPolicy struct {
	resolved *policy.Resolved // nil without a policy file
	bound    *policy.Bound
	proxy    proxy.Policy
	rulings  hooks.Engine // nil without a policy file
	// fingerprint is the session's one fingerprint of this version: the
	// proxies', the audit stream's, the status file's and the reload lines'.
	fingerprint string
	// filesHeld: the sandbox's filesystem layer holds the file rules
	// (not in a sidecar's pod); home is the agent's ("" sandboxd's).
	filesHeld bool
	home      string
}

// Fingerprint is the session's fingerprint of this policy version.
func (sp *sessionPolicy) Fingerprint() string { return sp.fingerprint }

// resolve watches the policy file (its changes queue until livePolicy) and
// computes the first session policy.
func (s *session) resolve() (func(), error) {
	s.live = &policywatch.Live[*sessionPolicy]{Compile: s.opts.compileReload}
	var first *policy.Resolved
	wctx, wcancel := context.WithCancel(context.Background())
	cleanup := wcancel
	if s.opts.PolicyFile != "" {
		r, err := s.live.Watch(wctx, s.opts.PolicyFile, s.opts.Debounce)
		if err != nil {
			return cleanup, err
		}
		cleanup = func() { s.live.Close(); wcancel() }
		first = r
	}
	cur, err := s.opts.compute(first)
	if err != nil {
		return cleanup, err
	}
	s.live.Set(cur)
	// The environment is fixed at start: the launch's configuration and
	// the command's environment read this one filtering.
	s.envPatterns = s.opts.unsetPatterns(cur.resolved)
	s.hostEnv, s.envRemoved = s.opts.hostEnv(cur.resolved)
	for _, p := range s.opts.AllowUnixSockets {
		a, err := filepath.Abs(p)
		if err != nil {
			return cleanup, err
		}
		s.allowUnix = append(s.allowUnix, a)
	}
	return cleanup, nil
}

// compute merges the flags' bound into the resolved policy's and derives
// the proxy policy and the session fingerprint.
func (o *Options) compute(r *policy.Resolved) (*sessionPolicy, error) {
	var b *policy.Bound
	fp := ""
	if o.Launch != nil {
		var err error
		if r, err = o.Launch.resolve(r); err != nil {
			return nil, err
		}
	}
	if r != nil {
		b, fp = r.Bound, r.Fingerprint
		if err := r.CheckLaunchable(); err != nil {
			return nil, err
		}
	}
	if len(o.AllowDomains) > 0 || len(o.DenyDomains) > 0 {
		// Only --allow-domain makes an allowlist. A deny-only flag set must
		// not say enforce: sandbox, under which an absent allowlist is the
		// empty one and would intersect the policy's allowlist to nothing.
		nr := &policy.NetworkRules{Domains: o.DenyDomains}
		if len(o.AllowDomains) > 0 {
			nr.AllowDomains = o.AllowDomains
			nr.Enforce = policy.EnforceSandbox
		}
		b = policy.MergeBounds(b, &policy.Bound{Network: nr})
	}
	if o.Launch != nil {
		var err error
		if b, err = o.Launch.withAPIHosts(b); err != nil {
			return nil, err
		}
	}
	if err := policy.CheckSandboxEnforceable(b); err != nil {
		return nil, err
	}
	pp, err := proxy.PolicyFromBound(b, o.AllowPrivate)
	if err != nil {
		return nil, err
	}
	creds, err := o.credentialSpecs(r)
	if err != nil {
		return nil, err
	}
	sp := &sessionPolicy{resolved: r, bound: b, proxy: pp, filesHeld: !o.noFileLayer, home: o.agentHome}
	scope := map[string]any{"policy": fp, "bound": b, "allowPrivate": fmt.Sprint(o.AllowPrivate), "write": o.writeRoots(r), "unsetEnv": o.unsetPatterns(r)}
	if len(creds) > 0 {
		// Names, hosts and files: never a value.
		scope["credentials"] = creds
	}
	sp.fingerprint = policy.ScopeFingerprint(scope)
	sp.proxy.Fingerprint = sp.fingerprint
	return sp, nil
}

// compileReload derives a reloaded policy version: the session policy and
// its ruling engine.
func (o *Options) compileReload(r *policy.Resolved) (*sessionPolicy, error) {
	sp, err := o.compute(r)
	if err != nil {
		return nil, err
	}
	if sp.rulings, err = sp.engine(); err != nil {
		return nil, err
	}
	return sp, nil
}

// engine builds the hook ruling engine of a session policy.
func (sp *sessionPolicy) engine() (hooks.Engine, error) {
	s, err := hooks.SessionFromResolved(sp.resolved)
	if err != nil {
		return nil, err
	}
	// The session runs inside the sandbox: its rulings read the network
	// rules as the proxies do (an absent allowDomains is the empty
	// allowlist), so a tool and the proxy cannot disagree about a host,
	// and lean on the filesystem layer where there is one.
	s.Bound, s.Home = sp.bound, sp.home
	if sp.filesHeld {
		s.InSandbox()
	} else {
		s.InEgressSandbox()
	}
	return hooks.NewEngine(s, nil)
}

// livePolicy applies policy changes and refreshes the status until the
// command exits. Every change that resolves is applied to the proxy, the
// DNS proxy and the ruling server at once, and to the audit stream's policy
// label; one that does not keeps the last good policy. Both are audited.
func (s *session) livePolicy() (func(), error) {
	l := s.live
	l.Log = s.log
	l.Enforcers = []func(*sessionPolicy) error{
		func(next *sessionPolicy) error {
			if err := s.awaitProxies(); err != nil {
				return err
			}
			if err := s.up.px.SetPolicy(next.proxy); err != nil {
				return err
			}
			return s.up.dns.SetPolicy(next.proxy)
		},
		func(next *sessionPolicy) error { s.hsrv.SetPolicy(next.rulings); return nil },
		func(next *sessionPolicy) error {
			if s.fsPlan == nil {
				return nil // no filesystem layer (Sidecar)
			}
			if note := s.fsPlan.reloadNote(next); note != "" {
				s.keptAtStart(audit.MsgFileLayerFixed, note)
			}
			return nil
		},
		func(next *sessionPolicy) error {
			if slices.Equal(s.opts.unsetPatterns(next.resolved), s.envPatterns) {
				return nil
			}
			s.keptAtStart(audit.MsgEnvFixed, "environment.unset changed: the command keeps the environment it started with (restart the sandbox to change it)")
			return nil
		},
		s.credentialsFixed,
		func(next *sessionPolicy) error { s.stream.SetPolicy(next.fingerprint); return nil },
	}
	l.Refused = func(err error) {
		fmt.Fprintf(s.stderr, "sandboxd: policy %s: %s; keeping the last good policy\n", s.status.PolicyFile, policy.OneLine(err.Error()))
	}
	l.Applied = func(_, _ *sessionPolicy) { s.saveStatus() }

	loopDone := make(chan struct{})
	stopLoop := make(chan struct{})
	go func() {
		defer close(loopDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case c := <-l.Changes():
				l.Apply(c)
			case <-tick.C:
				s.saveStatus()
			case <-stopLoop:
				return
			}
		}
	}()
	var once sync.Once
	s.stopLive = func() { once.Do(func() { close(stopLoop); <-loopDone }) }
	return s.stopLive, nil
}

// keptAtStart audits and says on stderr, as msg, a reload's change that
// the session keeps as it was at start (note says which and why).
func (s *session) keptAtStart(msg, note string) {
	audit.Event(context.Background(), s.log, slog.LevelWarn, audit.KindSession, msg,
		slog.String(audit.AttrReason, note), slog.String(audit.AttrPolicyFile, s.status.PolicyFile))
	fmt.Fprintf(s.stderr, "sandboxd: policy %s: %s\n", s.status.PolicyFile, note)
}
