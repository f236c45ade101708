// Package policy is Barry's policy model in Go: bounds and their strict decoding
// and merging, traits and tool grants, execution scopes, the native-tool policy
// of each harness, host and file matching, and the resolution of a session's
// policy file into one effective policy.
//
// Everything that enforces (the egress proxy, the process jail and the hook
// gate) decides with this package, so the rules live here once. Every function
// in the package is pure and safe for concurrent use unless its comment says
// otherwise; decisions are values whose zero value is a denial.
package policy
