package shell

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzClassify checks that Classify never panics and that a line it reports
// as running no program (and not Unparseable) holds no command at all. It
// is seeded from the case tables, the inline-code aliasing rows
// (inlineTable) among them.
func FuzzClassify(f *testing.F) {
	for _, rows := range [][]tcase{table, bypassTable, inlineTable} {
		for _, tc := range rows {
			f.Add(tc.line)
		}
	}
	f.Fuzz(func(t *testing.T, line string) {
		if len(line) > 4096 {
			return
		}
		c := Classify(line)
		_, _ = IsProgramDenied(line, stdRules)
		_ = ClassifyNetworkActions(c, line)
		_ = ExtractDomainsFromCommand(line)
		_ = ClassifyFileWrite(line)
		if c.Unparseable {
			if c.Reason == "" {
				t.Fatalf("Unparseable without a reason: %q", line)
			}
			return
		}
		if len(c.Programs) > 0 {
			return
		}
		f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
		if err != nil {
			t.Fatalf("parse error %v, yet Classify reports a parseable line: %q", err, line)
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.CallExpr:
				if len(n.Args) > 0 {
					t.Fatalf("no programs reported, but the line runs %q: %q", nodeText(n), line)
				}
			case *syntax.DeclClause, *syntax.LetClause:
				t.Fatalf("no programs reported, but the line runs a builtin: %q", line)
			}
			return true
		})
	})
}
