package shell

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLazyRegexpsCompile compiles every lazily compiled pattern, so a bad
// one fails here rather than on the first command line that needs it. The
// patterns are read from the package's source: every &lazyRegexp{...}
// literal, whose pattern must be a constant string (a literal or a sum of
// literals), which is also what lets the compiler lay it out statically.
func TestLazyRegexpsCompile(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(node ast.Node) bool {
			lit, ok := node.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "lazyRegexp" {
				return true
			}
			pos := fset.Position(lit.Pos())
			if len(lit.Elts) != 1 {
				t.Errorf("%s: a lazyRegexp literal sets only its pattern", pos)
				return false
			}
			kv, ok := lit.Elts[0].(*ast.KeyValueExpr)
			if id, isID := kv.Key.(*ast.Ident); !ok || !isID || id.Name != "pattern" {
				t.Errorf("%s: a lazyRegexp literal sets only its pattern", pos)
				return false
			}
			pattern, ok := constString(kv.Value)
			if !ok {
				t.Errorf("%s: pattern is not a constant string", pos)
				return false
			}
			n++
			if _, err := regexp.Compile(pattern); err != nil {
				t.Errorf("%s: pattern %q: %v", pos, pattern, err)
			}
			return false
		})
	}
	if n < 20 {
		t.Fatalf("only %d lazy patterns found", n)
	}
}

// constString evaluates a string literal or a sum of them.
func constString(e ast.Expr) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(e.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", false
		}
		x, ok := constString(e.X)
		y, ok2 := constString(e.Y)
		return x + y, ok && ok2
	case *ast.ParenExpr:
		return constString(e.X)
	}
	return "", false
}
