package policy

import (
	"fmt"
	"strings"
)

// Verdict is the outcome of a decision. Its zero value is Deny, so a decision
// that was never made denies.
type Verdict uint8

const (
	// Deny refuses the action.
	Deny Verdict = iota
	// Allow permits the action.
	Allow
	// Ask defers the action to a person, where the caller supports it.
	Ask
)

// String returns "deny", "allow" or "ask".
func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	default:
		return "deny"
	}
}

// Decision is a verdict with the one-line reason for it and the rule that
// decided it (empty when no rule matched). The zero Decision is a denial with
// no reason; deciders always set Reason.
type Decision struct {
	Verdict Verdict
	Reason  string
	Rule    string
	// Exclude, on an Allow, are exclusion globs, separated by spaces, the
	// call does not carry yet and holds only with
	// (FileMatcher.DecideSearchExcluding): the harness runs it rewritten
	// to leave them out (NativeTool.ExcludeKey), and one that cannot
	// rewrite it denies it.
	Exclude string
}

// Allowed reports whether the decision permits the action.
func (d Decision) Allowed() bool { return d.Verdict == Allow }

// Denied returns a denying decision with a reason and the rule that decided it.
func Denied(reason, rule string) Decision { return Decision{Verdict: Deny, Reason: reason, Rule: rule} }

// Allowed returns an allowing decision with a reason and the rule that decided it.
func AllowedBy(reason, rule string) Decision {
	return Decision{Verdict: Allow, Reason: reason, Rule: rule}
}

// Rule codes: a decision's Rule is one of these, or RuleAt(field, entry)
// for the bound entry that decided it, so grepping a rule from an audit
// line lands on its decider. Each package's deciders add their own
// (network.go, access.go, shell.RuleUnparseable).
const (
	// RuleInput: the call's input cannot be checked (a missing, mistyped
	// or unreadable argument).
	RuleInput = "input"
	// RuleDeadline: no ruling before the deadline.
	RuleDeadline = "deadline"
	// RuleSessionHarness: a call from another harness than the session's.
	RuleSessionHarness = "session.harness"
	// RuleNativeAllowed: a native tool the native policy does not grant
	// (or, with an entry, the grant that allowed it).
	RuleNativeAllowed = "native.allowed"
	// RuleNativeDenied: a native tool the native policy denies.
	RuleNativeDenied = "native.denied"
	// RuleMCPTools: an MCP tool outside the session's tools.
	RuleMCPTools = "mcpTools"
	// RuleMCP: an MCP tool name that names no server the session knows.
	RuleMCP = "mcp"
	// RuleShellUnclassified: a shell the classifier cannot read
	// (PowerShell) under shell rules.
	RuleShellUnclassified = "shell:unclassified"
	// RuleShellInteractive: a command that reads commands from its input
	// where a tool could type into it without a hook.
	RuleShellInteractive = "shell:interactive"
	// RuleApplyPatch: a patch whose paths cannot be read.
	RuleApplyPatch = "apply_patch"
	// Bound fields, for RuleAt.
	RuleFilesDeny        = "files.deny"
	RuleFilesAllowOnly   = "files.allowOnly"
	RuleBashDeny         = "bash.deny"
	RuleBashDenyPrograms = "bash.denyPrograms"
	// RuleFiles: a call whose paths cannot be checked against the files
	// rules (an expansion, an unnamed write, another process's view).
	RuleFiles = "files"
	// RuleServer: the ruling server failed (no policy, a panic).
	RuleServer = "server"
)

// Reasons of RuleInput denials: a reason is the phrase, then ": " and the
// details (the tool, the key, the value), so grepping the phrase of an
// audit line lands here.
const (
	ReasonInputMissing      = "tool input missing"
	ReasonInputEmpty        = "tool input empty"
	ReasonInputNotString    = "tool input not a string"
	ReasonInputNotStrings   = "tool input not a list of strings"
	ReasonInputDisagree     = "tool input keys disagree"
	ReasonInputNUL          = "tool input path holds NUL"
	ReasonInputBackslash    = "tool input path has a backslash"
	ReasonInputTooMany      = "tool input has too many values to check"
	ReasonNoPath            = "tool names no path"
	ReasonNoSearchRoot      = "tool names no search root"
	ReasonNoURL             = "tool names no URL to check"
	ReasonNotHTTPURL        = "not an http(s) URL with a host"
	ReasonRelativeNoCwd     = "relative path with no cwd"
	ReasonShellNoCwd        = "shell command has no absolute working directory under files rules"
	ReasonProcessView       = "path through another process's view of the filesystem (/proc/<pid>, /proc/self, /dev/fd) under files rules"
	ReasonSearchReachesDeny = "search root reaches denied files"
	ReasonUnconfinedSearch  = "web search not confined to allowed_domains under domain rules"
	ReasonNoSandbox         = "network.enforce: sandbox, and this session runs without sandboxd's sandbox"
	ReasonProtectedWrite    = "write to a protected path (it runs or loads outside the session)"
)

// Reasons of hookgate's rulings (package hooks and its ruling server):
// the phrase, then ": " and the details (a phrase alone where there are
// none).
const (
	ReasonDeadline          = "no ruling before the deadline"
	ReasonServerDeadline    = "no ruling before the server's deadline"
	ReasonServerNoPolicy    = "ruling server has no policy"
	ReasonServerPanic       = "internal error"
	ReasonServerNoReason    = "engine gave no reason"
	ReasonNotGated          = "event not gated"
	ReasonOtherHarness      = "call from another harness"
	ReasonUnknownMCPServer  = "MCP tool names no server this session knows"
	ReasonMCPNotInTools     = "MCP tool not in the session's tools"
	ReasonMCPInTools        = "MCP tool in the session's tools"
	ReasonNativeDenied      = "native tool denied"
	ReasonNativeNotGranted  = "native tool not granted"
	ReasonNativeNotKnown    = "native tool not in the harness's catalog"
	ReasonNativeGranted     = "native tool granted"
	ReasonUnknownReach      = "unknown tool category"
	ReasonShellUnclassified = "shell command cannot be classified"
	ReasonShellAllowed      = "shell command allowed"
	ReasonShellInteractive  = "shell command starts a program that reads commands from its input"
	ReasonSearchAllowed     = "search roots allowed"
	ReasonSearchExcludes    = "search leaves out what files.deny matches below its root"
	ReasonWebSearchAllowed  = "web search allowed"
	ReasonNoDestination     = "tool names no destination"
)

// Because is a reason: the fixed phrase, then ": " and the details
// formatted as fmt.Sprintf does.
func Because(phrase, format string, args ...any) string {
	return phrase + ": " + fmt.Sprintf(format, args...)
}

// OneLine makes s fit one line of an answer, a header or a log: every
// control character (newlines included) becomes a space. Reasons shown to
// a harness, a client or a terminal go through it.
func OneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
