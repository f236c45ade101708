package shell

import "mvdan.cc/sh/v3/syntax"

// The lookup family: programs that name or document programs without
// running them (which, type, man…); man's pager option is a command.
func lookupPrograms() map[string]*program {
	lookup := &program{run: lookupRun, nonExec: true}
	return map[string]*program{
		"which": lookup, "type": lookup, "whereis": lookup, "help": lookup, "whatis": lookup,
		"apropos": lookup, "tldr": lookup, "info": lookup,
		"man": {run: manRun},
	}
}

// lookupRun records a lookup, which runs nothing.
func lookupRun(a *analyzer, inv invocation, _ stdin, _ int) { a.record(inv) }

// manRun parses the pager man -P runs (and -H's browser) as a shell string.
func manRun(a *analyzer, inv invocation, _ stdin, depth int) {
	a.record(inv)
	o := scanOpts(inv.args, 1, optSpec{short: "MSms", str: "PH", strLong: []string{"pager", "html"}})
	for _, s := range o.strs {
		a.codeString("man -P", s, syntax.LangBash, depth)
	}
}
