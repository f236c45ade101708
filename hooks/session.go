package hooks

import (
	"fmt"
	"maps"
	"slices"

	"github.com/barry-rocks/sandbox/policy"
)

// Session is what the ruling engine needs from a session's resolved policy:
// the seam between policy resolution (package policy) and rulings. It is
// plain data; NewEngine copies what it keeps.
type Session struct {
	// Harness, when set, is the only harness whose calls the session accepts.
	Harness Harness `json:"harness,omitempty"`
	// Mode is the harness mode the native policy was resolved for (display only).
	Mode string `json:"mode,omitempty"`
	// Bound is the session's effective bound; nil means no restriction.
	Bound *policy.Bound `json:"bound,omitempty"`
	// Native is the native-tool policy for the harness and mode.
	Native NativePolicy `json:"native"`
	// MCPTools are the qualified "server:tool" ids the session may call.
	MCPTools []string `json:"mcpTools,omitempty"`
	// MCPServers identify servers by URL or launch command, for Cursor's
	// beforeMCPExecution, which names the tool but not its server.
	MCPServers map[string]MCPServer `json:"mcpServers,omitempty"`
	// Home expands "~/" in file patterns; empty means the current user's.
	Home string `json:"home,omitempty"`
	// AllowEdit are the protected workspace names the policy file's
	// filesystem.allowEdit lets the agent write (policy.FileMatcher).
	AllowEdit []string `json:"allowEdit,omitempty"`
	// Sandboxed says the session's calls run inside sandboxd's egress
	// sandbox (InSandbox, InEgressSandbox), and FilesHeld that its
	// filesystem layer holds files.deny too (InSandbox): never read from a
	// policy file or a wire.
	Sandboxed bool `json:"-"`
	FilesHeld bool `json:"-"`
}

// InSandbox makes s the session of a harness inside sandboxd's sandbox
// (sandboxd run or launch, whose ruling server rules on its calls): its
// bound reads as the proxies read it (policy.InSandbox), a search or a
// directory that merely reaches below where files.deny could match is
// left to the filesystem layer, which hides those files
// (policy.FileMatcher.HeldBelow), and network.enforce: sandbox is met.
// Without it such a session is refused (policy.DecideSandboxed).
func (s *Session) InSandbox() {
	s.InEgressSandbox()
	s.FilesHeld = true
}

// InEgressSandbox makes s the session of a harness whose network only
// sandboxd's proxies carry, with no filesystem layer of sandboxd's (a
// pod's agent container beside "sandboxd proxy --sidecar"): network
// rules as InSandbox, file rules as hooks only.
func (s *Session) InEgressSandbox() {
	s.Bound = policy.InSandbox(s.Bound)
	s.Sandboxed = true
}

// NativePolicy lists the harness's native tools the session may use.
// A tool in Denied is refused; a tool not in Allowed is refused.
type NativePolicy struct {
	Allowed []string `json:"allowed"`
	Denied  []string `json:"denied,omitempty"`
	// Reasons says why each denied tool is denied.
	Reasons map[string]string `json:"reasons,omitempty"`
}

// MCPServer identifies an MCP server as Cursor reports it.
type MCPServer struct {
	URL     string `json:"url,omitempty"`
	Command string `json:"command,omitempty"`
}

// SessionFromResolved is the seam to policy resolution: it takes what the
// engine needs from a session's resolved policy (harness, mode, effective
// bound, native-tool policy, allowed qualified tool ids). A resolution that
// refuses native tools (the session must not launch) is an error.
func SessionFromResolved(r *policy.Resolved) (*Session, error) {
	if r == nil {
		return nil, fmt.Errorf("%w: no resolved policy", ErrNoPolicy)
	}
	h, err := ParseHarness(r.Harness)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPolicy, err)
	}
	if err := r.CheckLaunchable(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPolicy, err)
	}
	var allowEdit []string
	if r.Filesystem != nil {
		allowEdit = slices.Clone(r.Filesystem.AllowEdit)
	}
	return &Session{
		Harness:   h,
		Mode:      r.Mode,
		Bound:     r.Bound.Clone(),
		Native:    NativePolicy{Allowed: slices.Clone(r.Native.Allowed), Denied: slices.Clone(r.Native.Denied), Reasons: maps.Clone(r.Native.Reasons)},
		MCPTools:  r.AllowedToolIDs(),
		AllowEdit: allowEdit,
	}, nil
}

// LoadPolicy reads and resolves a session policy file (the format of
// policy.LoadFile) into a Session. Every failure wraps ErrNoPolicy: an
// unreadable or unresolvable policy is never an empty one.
func LoadPolicy(path string) (*Session, error) {
	// The engine never reads the scope's fingerprint.
	r, err := policy.ResolveFileWith(path, policy.ResolveOptions{NoFingerprint: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoPolicy, path, err)
	}
	s, err := SessionFromResolved(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
