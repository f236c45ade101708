// Package supervisor runs one sandbox session for "sandboxd run": it starts
// the egress proxy, the DNS proxy and (with a policy file) the hook ruling
// server, launches the command in the jail, keeps the policy live (one
// resolution, applied to every enforcer at once), and writes the session's
// audit stream and status file. The command-line wiring is in cmd/sandboxd.
//
// A session is one type, session, set up in steps that Run calls in order
// (Sidecar calls some of them too); each step returns its cleanup, which
// runs in reverse order when the session ends. run.go holds Options, Run,
// the session, and how the command starts and ends (start, ready, wait);
// the other steps live in files by concern: sandbox.go (the init, /proc),
// policy.go (the session policy, its resolution and live reloads),
// status.go (the runtime directory, the status file), container.go
// (container mode), credentials.go, launch.go (a launched harness's
// configuration), publish.go (published ports), network.go (the proxies),
// jail.go (the jail's spec), hooks.go (the hook ruling server) and
// filesystem.go (the filesystem plan).
package supervisor
