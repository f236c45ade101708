package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/policywatch"
	"github.com/barry-rocks/sandbox/policy"
)

const serveHooksUsage = `sandboxd serve-hooks --policy FILE --socket ADDR

Serve hookgate rulings for the session policy FILE on ADDR (a socket PATH,
unix:PATH or tcp:127.0.0.1:PORT), for harnesses not launched under
sandboxd run. The socket is created mode 0600 in a private directory and
only this user or root may use it. FILE is watched: a change applies to the
next call. An edit that does not decode or resolve, or a deleted file,
keeps the last good policy and logs the error with its field path, as
sandboxd run does; to revoke, write a policy that denies, or stop the
server (every hookgate call then denies: nothing answers). SIGHUP reloads
FILE at once. Logs are JSON on stderr.`

func serveHooksCommand() *cli.Command {
	return &cli.Command{
		Name:    "serve-hooks",
		Summary: "serve hookgate rulings for a session policy on a socket",
		Run: func(ctx context.Context, io cli.IO, args []string) int {
			fs := cli.NewFlagSet(io, "serve-hooks", serveHooksUsage)
			policyPath := new(string)
			fs.Var(&onceString{p: policyPath}, "policy", "session policy file")
			addr := fs.String("socket", "", "listen address: PATH, unix:PATH or tcp:127.0.0.1:PORT")
			if code, stop := cli.Parse(fs, args); stop {
				return code
			}
			if *policyPath == "" || *addr == "" || fs.NArg() > 0 {
				fmt.Fprintln(io.Err, "sandboxd serve-hooks: --policy and --socket are required (see --help)")
				return 2
			}
			log := slog.New(slog.NewJSONHandler(io.Err, nil))
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			srv := hooks.NewServer(nil, log)
			live, err := serveHooksPolicy(ctx, srv, *policyPath, log)
			if err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %s\n", policy.OneLine(err.Error()))
				return 1
			}
			defer live.Close()
			ln, err := hooks.Listen(*addr)
			if err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %s\n", policy.OneLine(err.Error()))
				return 1
			}
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-hup:
						live.Reload()
					}
				}
			}()
			go live.Serve(ctx)
			log.Info("hooks: serving", "addr", ln.Addr().String(), "policy", *policyPath)
			if err := srv.Serve(ctx, ln); err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %s\n", policy.OneLine(err.Error()))
				return 1
			}
			return 0
		},
	}
}

// hookPolicy is one version of the served policy: its ruling engine.
type hookPolicy struct {
	rulings     hooks.Engine
	fingerprint string
}

// Fingerprint is the resolved policy's fingerprint.
func (p *hookPolicy) Fingerprint() string { return p.fingerprint }

// compileHookPolicy builds the ruling engine of a resolved session policy.
func compileHookPolicy(r *policy.Resolved) (*hookPolicy, error) {
	s, err := hooks.SessionFromResolved(r)
	if err != nil {
		return nil, err
	}
	e, err := hooks.NewEngine(s, nil)
	if err != nil {
		return nil, err
	}
	return &hookPolicy{rulings: e, fingerprint: r.Fingerprint}, nil
}

// serveHooksPolicy resolves the session policy file at path into srv's
// engine and keeps it live (the applier "sandboxd run" uses): every change
// that resolves takes effect for the next request once Serve runs; an edit
// that does not decode or resolve, and a deleted file, keep the last good
// policy, so the proxy and the rulings never disagree. Each outcome is an
// audit line of kind reload on log. The first resolution's error is
// returned.
func serveHooksPolicy(ctx context.Context, srv *hooks.Server, path string, log *slog.Logger) (*policywatch.Live[*hookPolicy], error) {
	live := &policywatch.Live[*hookPolicy]{
		Log:       log,
		Compile:   compileHookPolicy,
		Enforcers: []func(*hookPolicy) error{func(p *hookPolicy) error { srv.SetPolicy(p.rulings); return nil }},
	}
	r, err := live.Watch(ctx, path, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", hooks.ErrNoPolicy, path, err)
	}
	first, err := compileHookPolicy(r)
	if err != nil {
		live.Close()
		return nil, err
	}
	live.Set(first)
	srv.SetPolicy(first.rulings)
	return live, nil
}
