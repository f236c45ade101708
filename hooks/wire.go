package hooks

import "bytes"

// The ruling protocol, version 1.
//
// A client connects to the ruling server (a Unix socket, or a loopback TCP
// port forwarded to it) and writes one request per line; the server answers
// each with one line, in order. Every line is one JSON object terminated by
// "\n", at most MaxRequestBytes long; a longer line closes the connection.
//
//	→ {"v":1,"op":"rule","call":{"harness":"claude-code","event":"PreToolUse","kind":1,"tool":"Bash","input":{"command":"ls"},"cwd":"/w"},"deadlineMs":1500}
//	← {"v":1,"verdict":"deny","reason":"…","rule":"…"}
//
// "rule" is the only operation: nothing on this protocol can change the
// policy, which the server's owner sets (Server.SetPolicy). deadlineMs,
// optional, shortens the server's own per-request deadline
// (Server.RequestTimeout, default 2 s); a ruling not made in time is a deny.
// A request the server cannot read or does not understand gets
// {"v":1,"error":"…"}, which the client turns into a deny; so does a
// version other than 1, a verdict other than allow, deny or ask, or a
// response line that does not arrive before the client's deadline.

// ProtocolVersion is the ruling protocol's version.
const ProtocolVersion = 1

// MaxRequestBytes caps one protocol line (the payload cap plus room).
const MaxRequestBytes = MaxPayloadBytes + 64<<10

// Request is one protocol request.
type Request struct {
	V          int    `json:"v"`
	Op         string `json:"op"`
	Call       *Call  `json:"call,omitempty"`
	DeadlineMs int64  `json:"deadlineMs,omitempty"`
}

// Response is one protocol response: a ruling or an error.
type Response struct {
	V       int    `json:"v"`
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Rule    string `json:"rule,omitempty"`
	Error   string `json:"error,omitempty"`
	// Exclude: an allow that holds only with these exclusion globs
	// (policy.Decision.Exclude).
	Exclude string `json:"exclude,omitempty"`
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
