package hooks

import "github.com/barry-rocks/sandbox/policy/shell"

// PatchPaths returns every path a Codex apply_patch text adds, updates,
// deletes or moves to: shell.PatchPaths, which the shell ruling reads too.
func PatchPaths(text string) ([]string, error) { return shell.PatchPaths(text) }

func clipField(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
