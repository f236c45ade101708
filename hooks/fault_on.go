//go:build hookgate_faults

package hooks

import (
	"os"
	"time"
)

// injectFault, compiled only with the hookgate_faults tag (tests of the
// built binary), panics or hangs at a named point so that the fail-closed
// paths a correct hookgate never takes can still be proven.
func injectFault(fault, at string) {
	switch fault {
	case "panic@" + at:
		panic("injected fault")
	case "hang@" + at:
		time.Sleep(time.Hour)
	}
}

// FaultFromEnv reads HOOKGATE_FAULT (test builds only).
func FaultFromEnv() string { return os.Getenv("HOOKGATE_FAULT") }
