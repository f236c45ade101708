package supervisor

import (
	"os"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// TestMain lets the test binary serve as the sandbox's init, as sandboxd
// does, so that tests can call Run: the internal subcommand is dispatched
// before anything else.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == procjail.InitCommand {
		// The create gate decides by policy (procjail does not import it).
		procjail.CreateDecider = policy.CreateDeciderFor
		procjail.OpenGuardDecider = policy.OpenDeciderFor
		os.Exit(procjail.RunInit())
	}
	os.Exit(m.Run())
}
