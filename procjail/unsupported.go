//go:build !linux && !darwin

package procjail

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// Sandbox is a running sandboxed command; on this platform none can start.
type Sandbox struct{}

// Start refuses: there is no sandbox for this platform, and the command is
// never run bare.
func Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	return nil, &SetupError{Step: runtime.GOOS, Err: ErrUnsupported}
}

// RunInit refuses: nothing re-executes on this platform.
func RunInit() int {
	fmt.Fprintln(os.Stderr, "sandboxd: sandbox could not start: "+ErrUnsupported.Error())
	return 125
}

// Wait never returns a status: no Sandbox is ever started.
func (s *Sandbox) Wait() (int, error) { return 125, ErrUnsupported }

// Close does nothing: no Sandbox is ever started.
func (s *Sandbox) Close() {}

// Signal reports ErrUnsupported.
func (s *Sandbox) Signal(os.Signal) error { return ErrUnsupported }
