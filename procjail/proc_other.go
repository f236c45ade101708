//go:build !linux

package procjail

// ProbeProc says nothing where there is no /proc to choose (macOS's
// sandbox has none of its own).
func ProbeProc() (ProcMode, string) { return "", "" }
