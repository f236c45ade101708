package shell

import (
	"regexp"
	"testing"
)

// TestLazyRegexpsCompile compiles every lazily compiled pattern, so a bad
// one fails here rather than on the first command line that needs it.
func TestLazyRegexpsCompile(t *testing.T) {
	if len(allLazyRegexps) < 20 {
		t.Fatalf("only %d lazy patterns registered", len(allLazyRegexps))
	}
	for _, l := range allLazyRegexps {
		if _, err := regexp.Compile(l.pattern); err != nil {
			t.Errorf("pattern %q: %v", l.pattern, err)
		}
	}
}
