package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"

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
}

// NativePolicy lists the harness's native tools the session may use.
// A tool in Denied is refused; a tool not in Allowed is refused.
type NativePolicy struct {
	Allowed []string `json:"allowed"`
	Denied  []string `json:"denied,omitempty"`
}

// MCPServer identifies an MCP server as Cursor reports it.
type MCPServer struct {
	URL     string `json:"url,omitempty" yaml:"url"`
	Command string `json:"command,omitempty" yaml:"command"`
}

// maxSessionBytes caps a session policy file.
const maxSessionBytes = 4 << 20

// sessionFile is the strict on-disk mirror of Session (version 1).
type sessionFile struct {
	Version    int                  `yaml:"version"`
	Harness    string               `yaml:"harness"`
	Mode       string               `yaml:"mode"`
	Bound      yaml.Node            `yaml:"bound"`
	Native     nativeFile           `yaml:"native"`
	MCPTools   []string             `yaml:"mcpTools"`
	MCPServers map[string]MCPServer `yaml:"mcpServers"`
	Home       string               `yaml:"home"`
}

type nativeFile struct {
	Allowed []string `yaml:"allowed"`
	Denied  []string `yaml:"denied"`
}

// LoadSessionFile reads a resolved session policy (YAML or JSON, version 1):
//
//	version: 1
//	harness: claude-code          # optional: calls from other harnesses are denied
//	mode: hosted                  # optional, for display
//	bound: {files: {deny: ["**/.env*"]}, network: {actions: [write]}}
//	native: {allowed: [Bash, Read, Grep], denied: [Write]}
//	mcpTools: ["github:create_pull_request"]
//	mcpServers: {github: {url: "http://127.0.0.1:8931/mcp"}}
//
// Unknown fields, a wrong version, a bound that does not decode, a native
// section without allowed, or a tool id that is not "server:tool" are
// errors wrapping ErrNoPolicy: an unreadable policy is never an empty one.
func LoadSessionFile(path string) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPolicy, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSessionBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoPolicy, path, err)
	}
	if len(data) > maxSessionBytes {
		return nil, fmt.Errorf("%w: %s: larger than %d bytes", ErrNoPolicy, path, maxSessionBytes)
	}
	s, err := ParseSession(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoPolicy, path, err)
	}
	return s, nil
}

// ParseSession decodes a session policy document (see LoadSessionFile).
func ParseSession(data []byte) (*Session, error) {
	var sf sessionFile
	d := yaml.NewDecoder(bytes.NewReader(data))
	d.KnownFields(true)
	if err := d.Decode(&sf); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty document")
		}
		return nil, err
	}
	if sf.Version != 1 {
		return nil, fmt.Errorf("version: want 1, got %d", sf.Version)
	}
	s := &Session{Mode: sf.Mode, MCPServers: sf.MCPServers, Home: sf.Home}
	if sf.Harness != "" {
		h, err := ParseHarness(sf.Harness)
		if err != nil {
			return nil, fmt.Errorf("harness: %v", err)
		}
		s.Harness = h
	}
	if sf.Bound.Kind != 0 {
		raw, err := yaml.Marshal(&sf.Bound)
		if err != nil {
			return nil, fmt.Errorf("bound: %v", err)
		}
		b, err := policy.DecodeBound(raw, policy.FormatYAML, "bound")
		if err != nil {
			return nil, err
		}
		s.Bound = b
	}
	if sf.Native.Allowed == nil {
		return nil, errors.New("native.allowed: missing (an empty list allows no native tool)")
	}
	s.Native = NativePolicy{Allowed: slices.Clone(sf.Native.Allowed), Denied: slices.Clone(sf.Native.Denied)}
	for i, id := range sf.MCPTools {
		if _, _, ok := splitQualified(id); !ok {
			return nil, fmt.Errorf("mcpTools[%d]: %q is not a qualified server:tool id", i, id)
		}
	}
	s.MCPTools = slices.Clone(sf.MCPTools)
	return s, nil
}
