package shell

import (
	"regexp"
	"sync"
)

// The package's lookup tables (programs, wrappers, options, subcommands) are
// built on first use for the same reason as the regexps below: built at init
// they cost every process that links the package ~0.2 ms and 99 KB of heap
// (hookgate starts once per tool call, and in socket mode never classifies),
// while a command line touches a few of them.

// lazyRegexp is a regular expression compiled on first use, like the
// standard library's internal/lazyregexp. Compiling every pattern of this
// package at init cost ~0.6–0.9 ms of CPU in each process that links it
// (hookgate on every tool call, sandboxd and its init twice per start),
// while a typical command line needs a few of them or none. Declare one as
// a package-level &lazyRegexp{pattern: `...`} with a constant pattern: the
// compiler lays that out as static data, so it costs nothing at init,
// and TestLazyRegexpsCompile finds and compiles every such
// pattern. Safe for concurrent use.
type lazyRegexp struct {
	pattern string
	once    sync.Once
	rx      *regexp.Regexp
}

func (l *lazyRegexp) re() *regexp.Regexp {
	l.once.Do(func() { l.rx = regexp.MustCompile(l.pattern) })
	return l.rx
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

func (l *lazyRegexp) FindString(s string) string { return l.re().FindString(s) }

func (l *lazyRegexp) FindStringIndex(s string) []int { return l.re().FindStringIndex(s) }

func (l *lazyRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.re().FindAllStringSubmatch(s, n)
}

func (l *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return l.re().FindAllStringSubmatchIndex(s, n)
}

func (l *lazyRegexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return l.re().ReplaceAllStringFunc(src, repl)
}
