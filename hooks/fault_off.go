//go:build !hookgate_faults

package hooks

// injectFault does nothing in normal builds; tests build hookgate with the
// hookgate_faults tag to inject a panic or a hang (see fault_on.go).
func injectFault(string, string) {}

// FaultFromEnv is empty in normal builds.
func FaultFromEnv() string { return "" }
