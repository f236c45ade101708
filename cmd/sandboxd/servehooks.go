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
			reload, err := hooks.ServePolicyFile(ctx, srv, *policyPath, log)
			if err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %s\n", policy.OneLine(err.Error()))
				return 1
			}
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
						reload()
					}
				}
			}()
			log.Info("hooks: serving", "addr", ln.Addr().String(), "policy", *policyPath)
			if err := srv.Serve(ctx, ln); err != nil {
				fmt.Fprintf(io.Err, "sandboxd serve-hooks: %s\n", policy.OneLine(err.Error()))
				return 1
			}
			return 0
		},
	}
}
