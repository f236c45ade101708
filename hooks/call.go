package hooks

import (
	"fmt"
	"slices"
)

// Harness names an agent harness whose hook protocol hookgate speaks.
type Harness string

// The harnesses hookgate supports.
const (
	ClaudeCode Harness = "claude-code"
	Codex      Harness = "codex"
	Cursor     Harness = "cursor"
	Gemini     Harness = "gemini"
	Pi         Harness = "pi"
	Copilot    Harness = "copilot"
)

// Harnesses lists every supported harness.
var Harnesses = []Harness{ClaudeCode, Codex, Copilot, Cursor, Gemini, Pi}

// ParseHarness returns the harness named s, or ErrUnknownHarness.
func ParseHarness(s string) (Harness, error) {
	h := Harness(s)
	if slices.Contains(Harnesses, h) {
		return h, nil
	}
	return "", fmt.Errorf("%w %q (want one of claude-code, codex, copilot, cursor, gemini, pi)", ErrUnknownHarness, s)
}

// Kind says what a hook event asks of hookgate.
type Kind uint8

const (
	// KindOther is an event hookgate does not gate; it gets the harness's
	// "no opinion" answer. It is the zero value only for events the decoder
	// recognized; an unrecognized event is an error, never KindOther.
	KindOther Kind = iota
	// KindTool is a tool call about to run: it is ruled on, allow or deny.
	KindTool
	// KindPermission is a harness about to ask the user for permission
	// (Claude Code and Codex PermissionRequest): a denied call is refused,
	// an allowed one is left to the user (no opinion), so hookgate never
	// approves a prompt on the user's behalf.
	KindPermission
)

// String returns "other", "tool" or "permission".
func (k Kind) String() string {
	switch k {
	case KindTool:
		return "tool"
	case KindPermission:
		return "permission"
	default:
		return "other"
	}
}

// Call is one hook event, normalized across harnesses. For the
// event-specific Cursor hooks the decoder fills Tool and Input as the
// generic hook would (beforeShellExecution → Shell {command}, beforeReadFile
// → Read {file_path}, beforeMCPExecution → MCP tool with MCPServer*). Input
// holds the tool's arguments as decoded JSON (numbers as json.Number).
type Call struct {
	Harness   Harness        `json:"harness"`
	Event     string         `json:"event"`
	Kind      Kind           `json:"kind"`
	Tool      string         `json:"tool,omitempty"`
	Input     map[string]any `json:"input,omitempty"`
	Cwd       string         `json:"cwd,omitempty"`
	SessionID string         `json:"sessionId,omitempty"`
	ToolUseID string         `json:"toolUseId,omitempty"`
	// WorkspaceRoots are Cursor's workspace roots (Cwd falls back to the first).
	WorkspaceRoots []string `json:"workspaceRoots,omitempty"`
	// MCPServerURL and MCPServerCommand identify the server of a Cursor
	// beforeMCPExecution call, which names no server otherwise.
	MCPServerURL     string `json:"mcpServerUrl,omitempty"`
	MCPServerCommand string `json:"mcpServerCommand,omitempty"`
}
