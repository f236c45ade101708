package shell

import (
	"regexp"
	"sync"
)

// The package's lookup tables (programs, wrappers, options, subcommands) are
// sync.OnceValue functions for the same reason as the regexps below: built
// at init they cost every process that links the package ~0.2 ms and 99 KB
// of heap (hookgate starts once per tool call, and in socket mode never
// classifies), while a command line touches a few of them.

// lazyRegexp is a regular expression compiled on first use, like the
// standard library's internal/lazyregexp. Compiling every pattern of this
// package at init cost ~0.6–0.9 ms of CPU in each process that links it
// (hookgate on every tool call, sandboxd and its init twice per start),
// while a typical command line needs a few of them or none. Safe for
// concurrent use.
type lazyRegexp struct {
	pattern string
	re      func() *regexp.Regexp
}

// allLazyRegexps lists every pattern so a test can compile them all; it is
// only appended to during package initialisation.
var allLazyRegexps []*lazyRegexp

func newLazyRegexp(pattern string) *lazyRegexp {
	l := &lazyRegexp{pattern: pattern, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })}
	allLazyRegexps = append(allLazyRegexps, l)
	return l
}

func (l *lazyRegexp) MatchString(s string) bool { return l.re().MatchString(s) }

func (l *lazyRegexp) FindStringSubmatch(s string) []string { return l.re().FindStringSubmatch(s) }

func (l *lazyRegexp) FindAllString(s string, n int) []string { return l.re().FindAllString(s, n) }

func (l *lazyRegexp) FindAllStringIndex(s string, n int) [][]int {
	return l.re().FindAllStringIndex(s, n)
}

func (l *lazyRegexp) ReplaceAllString(src, repl string) string {
	return l.re().ReplaceAllString(src, repl)
}

func (l *lazyRegexp) ReplaceAllLiteralString(src, repl string) string {
	return l.re().ReplaceAllLiteralString(src, repl)
}
