package hooks

import (
	"context"
	"fmt"
	"sync"
)

// protocol is everything hookgate knows about one harness's hooks: its
// events, how a gated event's payload reads, how the harness itself reads
// the paths and URLs it is given, its answers, and where and how hookgate
// is installed, trusted and verified. Each harness is one file
// (claude.go, codex.go, copilot.go, cursor.go, gemini.go, pi.go) that
// builds its protocol; adding a harness is adding a file, its constant and
// its case in protocolOf, and its native tools in policy's catalog.
//
// The Engine never branches on a harness's name: where a harness differs
// it asks the harness's protocol.
type protocol struct {
	// events maps every event the harness defines to its Kind: the gated
	// ones to KindTool or KindPermission, the others to KindOther.
	events map[string]Kind
	// event reads the event's name; nil reads hook_event_name.
	event func(f *fields) string
	// decode reads a gated event's tool, input and ids into c; nil reads
	// tool_name, tool_input and tool_use_id.
	decode func(f *fields, c *Call)
	// paths rewrites path arguments the way the harness reads them before
	// use; nil keeps them.
	paths func([]string) []string
	// extraURLs returns what the harness fetches instead of or beside the
	// URLs a fetch names; nil: only those.
	extraURLs func([]string) []string
	// typedShells is true when a running command can be typed into by a
	// tool no hook sees (Codex's write_stdin): under shell rules a command
	// that reads commands from its input is then denied.
	typedShells bool
	// mcpIDs reads the harness's own MCP tool names into qualified ids;
	// nil reads mcp__server__tool (MCPQualifiedIDs).
	mcpIDs func(c Call, s *Session, granted map[string]bool) ([]string, bool)
	// canAsk reports whether tool event c enforces an ask; nil: none does.
	canAsk func(c Call) bool
	// encode writes reply r (an ask only where canAsk) with its reasons
	// for event c.
	encode func(c Call, r Reply, reason, agent string) Output
	// rewrite writes a tool event's allow of c with input in place of
	// the call's own (no opinion on the permission otherwise); nil: the
	// harness cannot rewrite a call, and one that must be is denied.
	rewrite func(c Call, input map[string]any, reason string) Output
	// failStdout is the JSON deny written beside exit 2 when the payload
	// was not understood; nil writes none (stderr alone).
	failStdout func(reason string) []byte
	// answerShapes are shell case patterns every answer hookgate writes on
	// stdout matches; denyShapes match its deny answers (what may come
	// with exit 2). The fail-closed wrapper passes only those through.
	answerShapes, denyShapes []string
	install                  installer
	// launch returns how "sandboxd launch" starts the harness; nil: it
	// does not. A function, so that the protocols hookgate builds on every
	// call do not build the launcher too.
	launch func() *launcher
}

// installer is where and how hookgate's entry goes into a harness's
// configuration.
type installer struct {
	// path is the file edited, under base (the home or project directory;
	// user is true for the user scope).
	path func(a InstallArgs, base string, user bool) string
	// events are the events hookgate installs itself on.
	events []string
	// flat is true when an event's list holds handlers, not matcher groups.
	flat bool
	// matcher is the matcher group's pattern that matches every tool.
	matcher string
	// handler is hookgate's handler for event ev running cmd.
	handler func(a InstallArgs, ev, cmd string) *object
	// prepare adjusts the file's top level before hooks are merged.
	prepare func(root *object)
	// projectTrust makes a project install effective (or says why not)
	// for harnesses that ignore an untrusted project's configuration.
	projectTrust func(a InstallArgs, path string) error
	// trust records trust of the entries just written (Codex).
	trust func(a InstallArgs, path string) error
	// verify checks what the harness reads beyond the entry itself
	// (settings that switch hooks off, trust).
	verify func(ctx context.Context, a VerifyArgs, path string, data []byte) error
	// edit, when set, replaces the JSON merge (Pi's extension file), and
	// verifyFile replaces Verify's checks of the entry.
	edit       func(a InstallArgs, path string, install bool) (string, bool, error)
	verifyFile func(path string) error
}

// protocols holds each harness's protocol, each built on the first use of
// that harness and never changed after (a hookgate check speaks one
// harness: building all six cost it ~20 µs). They are filled
// lazily, not by an initializer: install entries are rendered through Fail,
// which reads the table, so an initializer would be an initialization
// cycle.
var protocols [len(protocolHarnesses)]struct {
	once sync.Once
	p    *protocol
}

// protocolHarnesses are the harnesses with a protocol, in protocols' order.
var protocolHarnesses = [...]Harness{ClaudeCode, Codex, Cursor, Gemini, Pi, Copilot}

// protocolOf returns h's protocol (shared: callers must not change it).
func protocolOf(h Harness) (*protocol, error) {
	for i, ph := range protocolHarnesses {
		if ph != h {
			continue
		}
		l := &protocols[i]
		l.once.Do(func() {
			p, err := buildProtocol(h)
			if err != nil {
				panic(err)
			}
			l.p = p
		})
		return l.p, nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownHarness, h)
}

// buildProtocol builds h's protocol.
func buildProtocol(h Harness) (*protocol, error) {
	switch h {
	case ClaudeCode:
		return claudeProtocol(), nil
	case Codex:
		return codexProtocol(), nil
	case Cursor:
		return cursorProtocol(), nil
	case Gemini:
		return geminiProtocol(), nil
	case Pi:
		return piProtocol(), nil
	case Copilot:
		return copilotProtocol(), nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownHarness, h)
}

// mustProtocol is protocolOf for a harness already parsed; an unknown one
// gets a protocol that defines no event, so every payload is refused.
func mustProtocol(h Harness) *protocol {
	p, err := protocolOf(h)
	if err != nil {
		return &protocol{encode: func(_ Call, _ Reply, reason, _ string) Output {
			return Output{Stderr: []byte("hookgate: unknown harness; denied: " + reason + "\n"), Code: 2}
		}}
	}
	return p
}
