package publicsuffix

import (
	"testing"

	upstream "golang.org/x/net/publicsuffix"
)

// rules walks the compiled tree and returns every name it holds (each rule,
// with "*" for a wildcard level), so the comparison below covers the whole
// list rather than a sample.
func rules() []string {
	var out []string
	var walk func(suffix string, lo, hi uint32)
	walk = func(suffix string, lo, hi uint32) {
		for f := lo; f < hi; f++ {
			name := nodeLabel(f)
			if suffix != "" {
				name += "." + suffix
			}
			out = append(out, name)
			u := uint32(nodes.get(f) >> (nodesBitsTextOffset + nodesBitsTextLength))
			u >>= nodesBitsICANN
			u = children.get(u & (1<<nodesBitsChildren - 1))
			clo := u & (1<<childrenBitsLo - 1)
			u >>= childrenBitsLo
			chi := u & (1<<childrenBitsHi - 1)
			u >>= childrenBitsHi + childrenBitsNodeType
			if u&(1<<childrenBitsWildcard-1) != 0 {
				out = append(out, "*."+name)
			}
			walk(name, clo, chi)
		}
	}
	walk("", 0, numTLD)
	return out
}

func TestAgreesWithUpstream(t *testing.T) {
	names := []string{"", "com", "example.com", "co.uk", "foo.co.uk", "cromulent", "a.cromulent",
		"github.io", "foo.github.io", "kawasaki.jp", "x.kawasaki.jp", "city.kawasaki.jp",
		"a.city.kawasaki.jp", "127.0.0.1", "::1", "xn--p1ai", "a.b.c.d.e"}
	all := rules()
	if len(all) < 8000 {
		t.Fatalf("walked %d rules; the list has about 10,000", len(all))
	}
	for _, r := range all {
		names = append(names, r, "x."+r, "y.x."+r)
	}
	for _, n := range names {
		gotS, gotI := PublicSuffix(n)
		wantS, wantI := upstream.PublicSuffix(n)
		if gotS != wantS || gotI != wantI {
			t.Errorf("PublicSuffix(%q) = %q, %v; upstream says %q, %v", n, gotS, gotI, wantS, wantI)
		}
	}
}
