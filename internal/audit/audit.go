// Package audit is the audit line's schema: its one job is to say what a
// line of the session's JSON-lines audit stream holds. It names the kinds of
// line, the attribute keys and the messages, and it has the one call every
// enforcer (the CONNECT/HTTP proxy, the DNS proxy, the hook ruling server,
// the live policy applier) uses to log a decision, so every decision line
// carries the same four keys: kind, decision, reason and rule.
//
// A line is one slog JSON object: slog's "time", "level" and "msg", then
// kind, then for a decision decision/reason/rule, then the kind's own keys.
// The stream's writer (internal/supervisor) adds sandbox and policy to lines
// that lack them and counts decisions by kind and decision alone.
package audit

import (
	"context"
	"log/slog"

	"github.com/barry-rocks/sandbox/policy"
)

// Kind is what a line is about. Decisions are counted by kind.
type Kind string

// The kinds of line.
const (
	KindConnect Kind = "connect" // a CONNECT tunnel (proxy)
	KindHTTP    Kind = "http"    // a plain-HTTP request (proxy)
	KindConn    Kind = "conn"    // a client connection refused before any request (proxy, past MaxConns)
	KindDNS     Kind = "dns"     // a DNS question (DNS proxy)
	KindHook    Kind = "hook"    // a hook ruling, or a refused ruling connection
	KindReload  Kind = "reload"  // a live policy reload, applied or refused
	// KindSession is the session's own lines: start, exit, and the file
	// layer's (the kernel layer kept fixed on reload, a protected path
	// created during the session). None is a decision.
	KindSession Kind = "session"
)

// Messages ("msg") of the lines. A decision's message follows from its kind.
const (
	MsgProxy            = "proxy decision" // connect, http, conn
	MsgDNS              = "dns decision"
	MsgHookRuling       = "hooks: ruling"
	MsgHookRefused      = "hooks: connection refused"
	MsgPolicyReload     = "policy reload"
	MsgSessionStart     = "session start"
	MsgSessionExit      = "session exit"
	MsgFileLayerFixed   = "file layer fixed"       // a reload changed file rules the kernel layer keeps as at start
	MsgEnvFixed         = "environment fixed"      // a reload changed environment.unset or the credentials: the command keeps the environment it started with
	MsgProtectedCreated = "protected path created" // a protected path appeared during the session
	MsgCreateRefused    = "create refused"         // the create gate refused creating a name (a plant, a files.deny match) at the time
	MsgGitConfigChanged = "git config changed"     // a repository's config in a write root appeared or changed during the session and names programs git runs
	MsgOpenRefused      = "open refused"           // the open gate refused opening a files.deny match that appeared after the start, or another name of a hidden file
)

// Attribute keys. Every line has AttrKind, AttrSandbox and AttrPolicy; every
// decision line AttrDecision, AttrReason and AttrRule.
const (
	AttrKind     = "kind"
	AttrSandbox  = "sandbox"  // sandbox id
	AttrPolicy   = "policy"   // fingerprint of the policy in force (that decided)
	AttrDecision = "decision" // "allow", "deny" or "ask" (policy.Verdict.String)
	AttrReason   = "reason"   // one-line reason; on a session line, what happened
	AttrRule     = "rule"     // the policy entry that decided, "" when none
	AttrExclude  = "exclude"  // an allow's exclusion globs the call is rewritten to carry

	// A pod's sidecar (sandboxd proxy --sidecar): on every line, the
	// pod's identity from the downward API, so that a cluster's log
	// pipeline can tell sessions apart.
	AttrPod         = "pod"          // the pod's name
	AttrNamespace   = "namespace"    // its namespace
	AttrPodUID      = "pod_uid"      // its uid
	AttrSessionName = "session_name" // its session (the barry.rocks/session label)

	// Proxy and DNS lines.
	AttrClient     = "client"      // client address
	AttrHost       = "host"        // requested host, canonical when valid
	AttrPort       = "port"        // requested port
	AttrAddr       = "addr"        // resolved and dialed address; DNS: the answered A/AAAA addresses, comma-separated
	AttrSNI        = "sni"         // CONNECT: the ClientHello server name, "none", "not-tls", "ech" or "malformed"
	AttrCaptured   = "captured"    // a connection sandboxd captured (its client ignored the proxy variables): the address it dialed
	AttrPID        = "pid"         // proxy and DNS: the process inside the sandbox behind the connection or query (its PID there)
	AttrArgv       = "argv"        // proxy and DNS: that process's command line (at most 16 arguments, 512 bytes)
	AttrBytesUp    = "bytes_up"    // client to server; DNS: the query's size
	AttrBytesDown  = "bytes_down"  // server to client; DNS: the answer's size
	AttrDurationMS = "duration_ms" // from request to close
	AttrClose      = "close"       // why an allowed connection ended
	AttrQType      = "qtype"       // DNS question type
	AttrRcode      = "rcode"       // DNS response code
	AttrStripped   = "stripped"    // DNS: address records removed by the dial guard

	// Hook lines.
	AttrHarness    = "harness"
	AttrEvent      = "event"
	AttrTool       = "tool"
	AttrSession    = "session" // the harness's session id
	AttrDurationUS = "duration_us"

	// Reload lines.
	AttrOldPolicy  = "old_policy" // the fingerprint before
	AttrNewPolicy  = "new_policy" // the fingerprint after
	AttrPolicyFile = "policy_file"

	// Session lines.
	AttrCommand     = "command"
	AttrExitStatus  = "status"
	AttrWriteRoots  = "write_roots"
	AttrProtected   = "protected"
	AttrWatched     = "protected_missing" // protected paths absent at start, checked at exit
	AttrHidden      = "hidden"
	AttrHomeOverlay = "home_overlay"
	AttrLandlock    = "landlock_abi"
	AttrProc        = "proc"         // session start: the sandbox's /proc, "fresh" or "container" (procjail.ProcMode)
	AttrSandboxMode = "sandbox_mode" // session start: "nested" (namespaces of its own) or "container" (supervisor.ModeContainer)
	AttrAgentUID    = "agent_uid"    // session start, container mode: the command's uid
	AttrNotCovered  = "not_covered"
	AttrOpenGate    = "open_gate"    // session start: "on", or "off: " and why (supervisor's openGate)
	AttrPath        = "path"         // create refused, open refused: the name refused
	AttrOp          = "op"           // create refused: open, mkdir, mknod, rename, link or symlink
	AttrComm        = "comm"         // create refused, open refused: the process's name (/proc/PID/comm)
	AttrRepeated    = "repeated"     // open refused: a summary line, for this many refusals of the path not written one by one (the last one's pid, comm and reason)
	AttrEnvRemoved  = "env_removed"  // session start: the variables --unset-env and environment.unset left out (names only)
	AttrCredentials = "credentials"  // session start: the credentials the proxy injects (variable names only); proxy: those put into this connection's requests
	AttrPlaceholder = "placeholders" // proxy: credentials whose placeholder was seen and passed as it is (another host, a URL, a body)
	AttrTerminated  = "terminated"   // proxy CONNECT: TLS was terminated (a credential host)
)

// AttrOpenGateDecided is the session exit line's count of the opens the
// fanotify open gate decided (with the gate on only).
const AttrOpenGateDecided = "open_gate_decided"

// Message returns the message of a decision line of kind k.
func (k Kind) Message() string {
	switch k {
	case KindDNS:
		return MsgDNS
	case KindHook:
		return MsgHookRuling
	case KindReload:
		return MsgPolicyReload
	default:
		return MsgProxy
	}
}

// Decision logs decision d of kind k to log: the line's message follows
// from k, and it carries kind, decision, reason and rule, then attrs. It is
// at level Info, except a refused reload (the operator's edit did not take),
// which is a warning. A nil log discards.
func Decision(ctx context.Context, log *slog.Logger, k Kind, d policy.Decision, attrs ...slog.Attr) {
	level := slog.LevelInfo
	if k == KindReload && !d.Allowed() {
		level = slog.LevelWarn
	}
	if log == nil || !log.Enabled(ctx, level) {
		return
	}
	all := make([]slog.Attr, 0, 4+len(attrs))
	all = append(all,
		slog.String(AttrKind, string(k)),
		slog.String(AttrDecision, d.Verdict.String()),
		slog.String(AttrReason, d.Reason),
		slog.String(AttrRule, d.Rule))
	if d.Exclude != "" {
		all = append(all, slog.String(AttrExclude, d.Exclude))
	}
	log.LogAttrs(ctx, level, k.Message(), append(all, attrs...)...)
}

// Event logs a line of kind k that is not a decision (a session's start and
// exit, the file layer's notes, a refused ruling connection): msg, kind,
// then attrs. A nil log discards.
func Event(ctx context.Context, log *slog.Logger, level slog.Level, k Kind, msg string, attrs ...slog.Attr) {
	if log == nil || !log.Enabled(ctx, level) {
		return
	}
	all := make([]slog.Attr, 0, 1+len(attrs))
	all = append(all, slog.String(AttrKind, string(k)))
	log.LogAttrs(ctx, level, msg, append(all, attrs...)...)
}
