package shell

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Worst-case lines near MaxLineBytes must finish (these once took minutes:
// an unknown wrapper's arguments were tried as commands recursively). The
// deadline is a generous hang detector, not a performance assertion.
func TestWorstCaseLinesFinish(t *testing.T) {
	var chains strings.Builder
	for i := 0; chains.Len() < MaxLineBytes-20; i++ {
		fmt.Fprintf(&chains, "git a%d;", i)
	}
	cases := []struct {
		name, line, reason string
	}{
		{"many distinct chains", chains.String(), ""},
		{"nested substitutions", strings.Repeat("$(", 2000) + "x" + strings.Repeat(")", 2000), "program name $($("},
		{"eval chain", strings.Repeat("eval ", 10000) + "x", "nesting deeper than 8 levels"},
		{"nested groups with here-strings", strings.Repeat("{ ", 6000) + "a" + strings.Repeat(" ;} <<<x", 6000), ""},
		{"long pipeline", strings.Repeat("a|", 20000) + "a", ""},
		{"unknown wrapper with many arguments", "mywrap " + strings.Repeat("git push ", 7000), ""},
		{"many code strings", strings.Repeat("bash -c 'true'; ", 3000), "more than 64 nested code strings"},
		{"many exec calls", "python3 -c '" + strings.Repeat(`os.system("x");`, 3000) + "'", "more than 64 nested code strings"},
	}
	for _, tc := range cases {
		done := make(chan Classification, 1)
		go func() { done <- Classify(tc.line) }()
		select {
		case c := <-done:
			if c.Unparseable != (tc.reason != "") || !strings.HasPrefix(c.Reason, tc.reason) {
				t.Errorf("%s: Unparseable %v, Reason %.80q; want %q", tc.name, c.Unparseable, c.Reason, tc.reason)
			}
			if len(c.Reason) > maxReason+len("…") {
				t.Errorf("%s: Reason is %d bytes long", tc.name, len(c.Reason))
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: Classify did not finish in 60s", tc.name)
		}
	}
	if rule, ok := IsProgramDenied("mywrap "+strings.Repeat("git push ", 7000), []string{"git:push"}); !ok || rule != "git:push" {
		t.Errorf("unknown wrapper: IsProgramDenied = %q, %v", rule, ok)
	}
}
