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
)

const serveHooksUsage = `sandboxd serve-hooks --policy FILE --socket ADDR

Serve hookgate rulings for the session policy FILE on ADDR (a socket PATH,
unix:PATH or tcp:127.0.0.1:PORT), for harnesses not launched under
sandboxd run. The socket is created mode 0600 in a private directory and
only this user or root may use it. SIGHUP reloads FILE; a reload that fails
denies every call until a good one. Logs are JSON on stderr.`

func serveHooksCommand() *cli.Command {
	return &cli.Command{
		Name:    "serve-hooks",
		Summary: "serve hookgate rulings for a session policy on a socket",
		Run: func(ctx context.Context, io cli.IO, args []string) int {
			fs := cli.NewFlagSet(io, "serve-hooks", serveHooksUsage)
			policyPath := fs.String("policy", "", "session policy file")
			addr := fs.String("socket", "", "listen address: PATH, unix:PATH or tcp:127.0.0.1:PORT")
			if code, stop := cli.Parse(fs, args); stop {
				return code
			}
			if *policyPath == "" || *addr == "" || fs.NArg() > 0 {
				fmt.Fprintln(io.Err, "sandboxd serve-hooks: --policy and --socket are required (see --help)")
				return 2
			}
			log := slog.New(slog.NewJSONHandler(io.Err, nil))
			load := func() (hooks.Engine, error) {
				s, err := hooks.LoadPolicy(*policyPath)
				if err != nil {
					return nil, err
				}
				return hooks.NewEngine(s, nil)
			}
			e, err := load()
			if err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %v\n", err)
				return 1
			}
			ln, err := hooks.Listen(*addr)
			if err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %v\n", err)
				return 1
			}
			srv := hooks.NewServer(e, log)
			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-hup:
						e, err := load()
						if err != nil {
							srv.SetPolicy(nil)
							log.Error("hooks: policy reload failed; denying every call", "policy", *policyPath, "error", err.Error())
							continue
						}
						srv.SetPolicy(e)
						log.Info("hooks: policy reloaded", "policy", *policyPath)
					}
				}
			}()
			log.Info("hooks: serving", "addr", ln.Addr().String(), "policy", *policyPath)
			if err := srv.Serve(ctx, ln); err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %v\n", err)
				return 1
			}
			return 0
		},
	}
}
