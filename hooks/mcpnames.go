package hooks

import (
	"strings"
)

// splitQualified splits "server:tool".
func splitQualified(id string) (server, tool string, ok bool) {
	server, tool, ok = strings.Cut(id, ":")
	return server, tool, ok && server != "" && tool != "" && !strings.Contains(tool, ":")
}

// MCPQualifiedIDs returns every reading of a harness MCP tool name
// "mcp__server__tool" as a qualified "server:tool" id: one per "__" the
// rest could split at, since server and tool names may both contain "__"
// (Claude Code plugin servers are "plugin_<plugin>_<server>"). ok is false
// when the name is not an MCP tool name.
func MCPQualifiedIDs(name string) (ids []string, ok bool) {
	rest, found := strings.CutPrefix(name, "mcp__")
	if !found || rest == "" {
		return nil, false
	}
	for i := 0; i+2 < len(rest); i++ {
		if rest[i:i+2] != "__" {
			continue
		}
		server, tool := rest[:i], rest[i+2:]
		if server != "" && tool != "" {
			ids = append(ids, server+":"+tool)
		}
	}
	return ids, len(ids) > 0
}
