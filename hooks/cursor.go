package hooks

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Cursor: hooks.json (user: ~/.cursor; project: .cursor/) with version 1
// and a flat list of handlers per event; failClosed: true makes Cursor
// deny when a hook fails. Specific events (beforeShellExecution,
// beforeReadFile, beforeMCPExecution, subagentStart) carry their own
// fields; preToolUse carries tool_name and tool_input. The answer is
// {"permission": ...}; ask is enforced on the shell and MCP events.

func cursorEvents() map[string]Kind {
	return kinds(map[string]Kind{"preToolUse": KindTool, "beforeShellExecution": KindTool,
		"beforeMCPExecution": KindTool, "beforeReadFile": KindTool, "subagentStart": KindTool},
		"sessionStart", "sessionEnd", "postToolUse", "postToolUseFailure", "subagentStop",
		"afterShellExecution", "afterMCPExecution", "afterFileEdit", "beforeSubmitPrompt",
		"preCompact", "stop", "afterAgentResponse", "afterAgentThought", "beforeTabFileRead",
		"afterTabFileEdit", "workspaceOpen")
}

func cursorProtocol() *protocol {
	return &protocol{
		events: cursorEvents(),
		decode: decodeCursor,
		mcpIDs: cursorMCPIDs,
		// preToolUse accepts ask but does not enforce it.
		canAsk: func(c Call) bool { return c.Event == "beforeShellExecution" || c.Event == "beforeMCPExecution" },
		encode: encodeCursor,
		failStdout: func(reason string) []byte {
			return encodeJSON(cursorReply{Permission: "deny", UserMessage: reason, AgentMessage: reason})
		},
		answerShapes: []string{`'{}'`, `'{"permission":"allow"}'`, `'{"permission":"deny",'*'}'`, `'{"permission":"ask",'*'}'`},
		denyShapes:   []string{`''`, `'{"permission":"deny",'*'}'`},
		install: installer{
			path: func(a InstallArgs, base string, _ bool) string {
				return filepath.Join(base, ".cursor", "hooks.json")
			},
			events: []string{"beforeShellExecution", "beforeMCPExecution", "beforeReadFile", "preToolUse", "subagentStart"},
			flat:   true,
			handler: func(a InstallArgs, _, cmd string) *object {
				h := newObject()
				h.set("command", cmd)
				h.set("timeout", json.Number(fmt.Sprint(hookTimeout)))
				h.set("failClosed", true)
				return h
			},
			prepare: func(root *object) {
				if _, ok := root.get("version"); !ok {
					root.keys = append([]string{"version"}, root.keys...)
					root.vals["version"] = json.Number("1")
				}
			},
		},
	}
}

func encodeCursor(c Call, rp Reply, reason, agent string) Output {
	if c.Kind == KindOther {
		return Output{Stdout: emptyObject}
	}
	r := cursorReply{}
	switch rp {
	case ReplyAllow, ReplyPass:
		return Output{Stdout: encodeJSON(cursorReply{Permission: "allow"})}
	case ReplyAsk:
		r.Permission = "ask"
	default:
		r.Permission = "deny"
	}
	r.UserMessage = reason
	// beforeReadFile and subagentStart document only permission + user_message.
	if c.Event != "beforeReadFile" && c.Event != "subagentStart" {
		r.AgentMessage = agent
	}
	return Output{Stdout: encodeJSON(r)}
}

// cursorMCPIDs reads Cursor's MCP:tool names: beforeMCPExecution names
// the server only by its URL or command.
func cursorMCPIDs(c Call, s *Session, granted map[string]bool) ([]string, bool) {
	tool, ok := strings.CutPrefix(c.Tool, "MCP:")
	if !ok || tool == "" {
		return nil, false
	}
	var ids []string
	for name, srv := range s.MCPServers {
		if (srv.URL != "" && srv.URL == c.MCPServerURL) || (srv.Command != "" && srv.Command == c.MCPServerCommand) {
			ids = append(ids, name+":"+tool)
		}
	}
	if ns := barryNamespace(c.MCPServerURL); ns != "" && len(ids) == 0 {
		ids = append(ids, ns+":"+tool)
	}
	if len(ids) == 0 && c.Event == "preToolUse" && c.MCPServerURL == "" && c.MCPServerCommand == "" {
		// Cursor's generic preToolUse names the tool but not its server.
		// Rule on every granted tool of that name (all must pass the
		// guards); beforeMCPExecution, which hookgate also gates, then
		// checks the server itself.
		for id := range granted {
			if _, t, ok := splitQualified(id); ok && t == tool {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
	}
	return ids, len(ids) > 0
}

type cursorReply struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
}

func decodeCursor(f *fields, c *Call) {
	if c.SessionID == "" {
		c.SessionID = f.str("conversation_id", false)
	}
	c.WorkspaceRoots = f.strList("workspace_roots")
	switch c.Event {
	case "beforeShellExecution":
		c.Tool = "Shell"
		c.Input = map[string]any{"command": f.str("command", true)}
	case "beforeReadFile":
		c.Tool = "Read"
		c.Input = map[string]any{"file_path": f.str("file_path", true)}
	case "beforeMCPExecution":
		c.Tool = "MCP:" + f.str("tool_name", true)
		c.Input = f.objectOrJSONString("tool_input")
		c.MCPServerURL = f.str("url", false)
		c.MCPServerCommand = f.str("command", false)
	case "subagentStart":
		c.Tool = "Task"
		c.Input = map[string]any{"subagent_type": f.str("subagent_type", false), "task": f.str("task", false)}
	default: // preToolUse
		c.Tool = f.str("tool_name", true)
		c.Input = f.object("tool_input", true)
		c.ToolUseID = f.str("tool_use_id", false)
	}
	if c.Cwd == "" && len(c.WorkspaceRoots) > 0 {
		c.Cwd = c.WorkspaceRoots[0]
	}
}
