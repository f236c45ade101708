// Package supervisor runs one sandbox session for "sandboxd run": it starts
// the egress proxy, the DNS proxy and (with a policy file) the hook ruling
// server, launches the command in the jail, keeps the policy live (one
// resolution, applied to every enforcer at once), and writes the session's
// audit stream and status file. The command-line wiring is in cmd/sandboxd.
package supervisor
