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
// It parses with mvdan.cc/sh/v3/syntax (bash dialect; zsh for zsh -c
// strings) and never runs or expands anything. Every function is pure and
// safe for concurrent use, except that Decide looks at the filesystem
// (symlinks, and which arguments are directories) through its
// policy.FileMatcher.
package shell
