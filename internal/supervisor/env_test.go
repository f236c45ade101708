package supervisor

import "testing"

// TestEnvLookup: what a launch copies from the environment is looked up in
// what the sandbox gets (hostEnv): a removed variable reads as unset.
func TestEnvLookup(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "https://u:tok@gateway.test/")
	t.Setenv("OPENAI_BASE_URL", "https://api.test/")
	o := &Options{UnsetEnv: []string{"ANTHROPIC_*"}}
	kept, _ := o.hostEnv(nil)
	get := envLookup(kept)
	if v := get("ANTHROPIC_BASE_URL"); v != "" {
		t.Errorf("a removed variable reads %q", v)
	}
	if v := get("OPENAI_BASE_URL"); v != "https://api.test/" {
		t.Errorf("a kept variable reads %q", v)
	}
	all, _ := (&Options{}).hostEnv(nil)
	if v := envLookup(all)("ANTHROPIC_BASE_URL"); v != "https://u:tok@gateway.test/" {
		t.Errorf("without patterns: %q", v)
	}
}
