// Package policywatch keeps a session policy file live, its one job: the
// Watcher sees the file change (fsnotify on its directory, held open) and
// re-resolves it, and Live applies each good version to the session's
// enforcers, keeping the last good one when an edit is broken, and logs
// each outcome in the audit schema. It is the I/O that package policy, which
// only decides, leaves out. "sandboxd run" (internal/supervisor) and
// "sandboxd serve-hooks" (cmd/sandboxd) use it; it imports neither hooks
// nor proxy (Live is generic over the compiled policy), so both can.
package policywatch
