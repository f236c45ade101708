package shell

import "testing"

// TestConfusablesAreNotASCII: every lookalike normalizeProgram replaces is
// non-ASCII and maps to one ASCII letter, which is what lets it skip the
// replacer for an ASCII word.
func TestConfusablesAreNotASCII(t *testing.T) {
	if len(confusablePairs)%2 != 0 {
		t.Fatalf("confusablePairs has an odd length %d", len(confusablePairs))
	}
	for i := 0; i < len(confusablePairs); i += 2 {
		from, to := confusablePairs[i], confusablePairs[i+1]
		if isASCII(from) || len(to) != 1 || !isASCII(to) {
			t.Errorf("pair %q → %q: want a non-ASCII lookalike of one ASCII letter", from, to)
		}
	}
	for _, tc := range []struct{ in, want string }{{"gіt", "git"}, {"GIT.exe", "git"}, {"/usr/bin/сurl", "curl"}, {"ls", "ls"}} {
		if got, _ := normalizeProgram(tc.in); got != tc.want {
			t.Errorf("normalizeProgram(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
