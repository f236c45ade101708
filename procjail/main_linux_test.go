//go:build linux

package procjail

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the sandbox's init, as sandboxd
// does: the internal subcommand is dispatched before anything else.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == InitCommand {
		os.Exit(RunInit())
	}
	os.Exit(m.Run())
}
