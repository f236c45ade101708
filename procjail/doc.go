// Package procjail launches a command with its whole process tree inside a
// sandbox whose only network path is a set of forwarders that sandboxd
// supplies (the egress proxy, the DNS proxy, optionally a hook ruling
// socket), and tears the whole tree down when the command exits.
//
// On Linux the sandbox is a set of new namespaces (user, network, PID,
// mount, IPC, UTS) entered by re-executing the calling binary through a
// hidden internal subcommand (InitCommand) that must be dispatched before
// any flag parsing (see RunInit). The re-executed process is the sandbox's
// PID 1: it brings up loopback, starts the forwarders on 127.0.0.1,
// bind-mounts a generated /etc/resolv.conf, and starts the command with no
// new privileges, no capabilities and a seccomp filter (seccomp_bpf.go).
// Host Unix sockets are unreachable unless allowed by path, through the
// init's seccomp user-notification gate (unixgate_linux.go), and with
// FileSystem.CreateGuard the same init decides (CreateDecider) and makes
// every creation of a name on the command's behalf (creategate_linux.go);
// with FileSystem.OpenGuard too, every open (OpenGuardDecider: the open
// gate's seccomp route, openroute_linux.go; as root sandboxd has the
// fanotify open gate instead, opengate_linux.go). See
// jail_linux.go (parent side), init_linux.go (child side) and messages.go
// (the numbered parent/child message sequence). The command starts only
// after the caller's own setup has succeeded too (Spec.Ready); every
// failure before it is a *SetupError naming its step.
//
// On macOS the command runs under /usr/bin/sandbox-exec with a Seatbelt
// profile produced by SeatbeltProfile (pure Go, tested on every platform).
// Elsewhere Start refuses with ErrUnsupported: never run bare.
//
// procjail does not depend on the proxy package: a Forward names the
// host-side Unix socket to relay to.
package procjail
