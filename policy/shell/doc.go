// Package shell classifies a shell command line statically: which programs
// it runs (through wrappers, nested shells, substitutions and code strings),
// their subcommand chains, the network actions and domains it touches, and
// whether it writes files. Anything it cannot resolve exactly makes the line
// Unparseable, so callers fail closed.
//
// Decide is the one ruling on a line under a bound (bash, network and file
// rules, deniedAccess): hookgate's shell guard and "sandboxd policy
// classify" both call it, so the explanation names the rule the gate
// applied.
//
// Programs are moving into a registry keyed by program (registry.go): one
// entry per program holds its options and its answers to every question
// the classifier asks (what it runs, network actions, hosts, writes, its
// aliases and known subcommands), in one file per family (prog_net.go:
// curl, wget, httpie/xh, netcat, telnet, socat; prog_remote.go: ssh, scp,
// sftp, rsync; prog_vcs.go: git, gh; prog_dns.go: the DNS lookup tools,
// resolvectl, getent; prog_proto.go: other-protocol clients and openssl;
// prog_cloud.go: the cloud and Kubernetes CLIs; prog_pkg.go: the package
// managers and their registries; prog_builtin.go: the shell builtins with
// a grammar of their own; prog_editor.go: vim, ed and gdb; prog_exec.go:
// env, sudo, xargs, find, su and the other programs that run a command;
// prog_file.go: the programs that write files, and sort, rg and tar;
// prog_lookup.go: which, man and the other lookups). The walks ask the
// registry first; the programs not yet moved (the interpreters, the
// runners, the other package managers) are still rows of the generic
// tables in programs.go, interp.go and network.go.
//
// It parses with mvdan.cc/sh/v3/syntax (bash dialect; zsh for zsh -c
// strings) and never runs or expands anything. Every function is pure and
// safe for concurrent use, except that Decide looks at the filesystem
// (symlinks, and which arguments are directories) through its
// policy.FileMatcher, and for the package managers' configuration files
// (toolconfig.go). It never reads its own process's environment.
package shell
