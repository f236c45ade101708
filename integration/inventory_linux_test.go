//go:build linux

package integration

import (
	"sort"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// notInCatalog are tools a pinned harness offers that the catalog leaves
// out on purpose (so they stay denied), each with why.
var notInCatalog = map[string]map[string]string{
	"claude-code": {
		"EnterWorktree": "creates a git worktree whose path no input names: no files rule can be checked",
		"ExitWorktree":  "removes that worktree (the same)",
		"LSP":           "language-server queries on paths under keys not yet read",
		// Not a tool the model can call: it stands for the tools loaded on
		// demand through ToolSearch.
		"DeferredToolPlaceholder": "a placeholder for deferred tools, never called",
	},
}

// checkInventory fails for every tool the real harness offered its model
// that the policy's catalog does not know: a harness upgrade that adds one
// would otherwise make it a silent deny (or, were the gate looser, an
// unguarded tool).
func checkInventory(t *testing.T, harness string, offered []string) {
	t.Helper()
	cat := policy.Harnesses()[harness]
	if cat == nil {
		t.Fatalf("%s is not in the policy catalog", harness)
	}
	if len(offered) == 0 {
		t.Fatal("the harness offered no tools (the run did not reach the model?)")
	}
	var unknown []string
	for _, name := range offered {
		// Hosted tools are offered by type ("type:web_search").
		name = strings.TrimPrefix(name, "type:")
		if _, ok := cat.Categories[name]; ok {
			continue
		}
		if _, ok := notInCatalog[harness][name]; ok {
			continue
		}
		if len(name) > 5 && name[:5] == "mcp__" {
			continue
		}
		unknown = append(unknown, name)
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Errorf("%s offers tools the catalog does not know (add each to the catalog in policy/native.go with its reach and input keys): %v", harness, unknown)
	}
}
