package testenv

import (
	"runtime"
	"testing"
)

// TestNeverFailingSkips: the helpers that never fail skip exactly when
// their condition says so, also under BARRY_REQUIRE_PRIVILEGED=1.
func TestNeverFailingSkips(t *testing.T) {
	const env = "BARRY_TESTENV_TEST"
	for _, required := range []string{"", "1"} {
		t.Setenv(RequirePrivilegedEnv, required)
		for _, c := range []struct {
			name     string
			set      string // env's value
			run      func(testing.TB)
			wantSkip bool
		}{
			{"OnlyOn this", "", func(t testing.TB) { OnlyOn(t, runtime.GOOS) }, false},
			{"OnlyOn other", "", func(t testing.TB) { OnlyOn(t, "plan9-not-"+runtime.GOOS) }, true},
			{"OptIn unset", "", func(t testing.TB) { OptIn(t, env, "scripts/x") }, true},
			{"OptIn 0", "0", func(t testing.TB) { OptIn(t, env, "scripts/x") }, true},
			{"OptIn 1", "1", func(t testing.TB) { OptIn(t, env, "scripts/x") }, false},
			{"Child unset", "", func(t testing.TB) { Child(t, env, "TestParent") }, true},
			{"Child set", "s", func(t testing.TB) {
				if v := Child(t, env, "TestParent"); v != "s" {
					t.Errorf("Child = %q, want s", v)
				}
			}, false},
			{"NotInChild unset", "", func(t testing.TB) { NotInChild(t, env, "the child") }, false},
			{"NotInChild set", "1", func(t testing.TB) { NotInChild(t, env, "the child") }, true},
		} {
			t.Run(c.name+"/required="+required, func(t *testing.T) {
				t.Setenv(env, c.set)
				var skipped bool
				t.Run("inner", func(t *testing.T) {
					defer func() { skipped = t.Skipped() }()
					c.run(t)
				})
				if skipped != c.wantSkip {
					t.Errorf("skipped = %v, want %v", skipped, c.wantSkip)
				}
			})
		}
	}
}
