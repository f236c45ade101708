package hooks

import (
	"slices"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// TestHarnessesInCatalog: every harness hookgate speaks has a native tool
// inventory in the policy's catalog, and the catalog has no harness
// hookgate cannot gate.
func TestHarnessesInCatalog(t *testing.T) {
	cat := policy.Harnesses()
	for _, h := range Harnesses {
		if cat[string(h)] == nil {
			t.Errorf("%s: no inventory in the policy catalog", h)
		}
	}
	for id := range cat {
		if !slices.Contains(Harnesses, Harness(id)) {
			t.Errorf("catalog harness %s: hookgate has no protocol for it", id)
		}
	}
}
