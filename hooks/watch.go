package hooks

import (
	"context"
	"log/slog"

	"github.com/barry-rocks/sandbox/policy"
)

// ServePolicyFile resolves the session policy file at path into srv's
// engine and keeps it current until ctx ends: every change the policy
// watcher applies takes effect for the next request. An edit that does not
// decode or resolve, and a deleted file, keep the last good policy and are
// logged, as "sandboxd run" does, so the proxy and the rulings never
// disagree. The first resolution's error is returned. Reload re-reads the
// file at once (for SIGHUP).
func ServePolicyFile(ctx context.Context, srv *Server, path string, log *slog.Logger) (reload func(), err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	apply := func(r *policy.Resolved, err error, how string) {
		if err == nil {
			var s *Session
			if s, err = SessionFromResolved(r); err == nil {
				var e *Ruler
				if e, err = NewEngine(s, nil); err == nil {
					srv.SetPolicy(e)
					log.Info("hooks: policy loaded", "policy", path, "how", how)
					return
				}
			}
		}
		log.Error("hooks: policy reload refused; keeping the last good policy", "policy", path, "how", how, "error", err.Error())
	}
	s, err := LoadPolicy(path)
	if err != nil {
		return nil, err
	}
	e, err := NewEngine(s, nil)
	if err != nil {
		return nil, err
	}
	srv.SetPolicy(e)
	w, err := policy.WatchFile(ctx, path, 0, func(c policy.Change) { apply(c.New, c.Err, "watch") })
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, func() { w.Close() })
	return func() {
		r, err := policy.ResolveFile(path)
		apply(r, err, "reload")
	}, nil
}
