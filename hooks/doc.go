// Package hooks rules on the native tool calls of agent harnesses (Claude
// Code, Codex, Cursor, Gemini CLI, Pi) and speaks each harness's hook
// protocol.
//
// Its one job is the path from a harness's hook payload to the harness's
// answer: Decode turns a payload into a normalized Call, an Engine rules on
// the Call under a session's resolved policy (zero value: deny), and Encode
// writes the verdict as exactly the stdout, stderr and exit code that
// harness honours. Check ties the three together under a deadline and turns
// every failure (malformed or oversized input, an unknown harness or event,
// a missing policy, a panic, an unreachable or slow ruling server, the
// deadline) into a deny in the harness's own protocol. Server and Client
// carry rulings over a small newline-delimited JSON protocol (see wire.go)
// so that a long-lived daemon resolves the policy once and a revocation
// applies to the next call. Install merges hookgate's entry into each
// harness's configuration file, and Verify checks that the harness will
// run it.
//
// Each harness is one file (claude.go, codex.go, cursor.go, gemini.go,
// pi.go) building its protocol (harness.go): events, decoding, how it
// reads paths and URLs, answers, install, trust and verify. The native
// tools and what each reaches are policy's catalog (policy.NativeToolOf),
// shared with the native policy.
package hooks
