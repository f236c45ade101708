package hooks

import (
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// TestInventoriesAgree: every native tool hookgate knows how to read is in
// the policy's catalog for that harness, and every catalog tool in a file
// or shell category has a reader here (one the hook gate would otherwise
// let through as CatOther, unguarded).
func TestInventoriesAgree(t *testing.T) {
	cat := policy.Harnesses()
	for h, tools := range NativeTools {
		ph := cat[string(h)]
		if ph == nil {
			t.Errorf("%s: not in the policy catalog", h)
			continue
		}
		for name := range tools {
			if _, ok := ph.Categories[name]; !ok {
				t.Errorf("%s %s: read by hookgate, missing from the policy catalog", h, name)
			}
		}
		for name, cats := range ph.Categories {
			for _, c := range cats {
				if c != policy.CategoryFileReads && c != policy.CategoryFileWrites {
					continue
				}
				if _, ok := tools[name]; !ok {
					t.Errorf("%s %s: a %s tool in the policy catalog that hookgate has no path reader for", h, name, c)
				}
			}
		}
	}
}
