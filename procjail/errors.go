package procjail

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned by Start on a platform without a sandbox
// implementation. The command is never run unsandboxed.
var ErrUnsupported = errors.New("sandbox is not supported on this platform")

// ErrUserNamespaces is wrapped by the setup error when the kernel refuses to
// create a user namespace; the message names the setting that blocks it.
var ErrUserNamespaces = errors.New("user namespaces are unavailable")

// ErrContainerModeNeedsRoot: container mode's init installs netfilter
// rules and runs the command under another uid, which only root can.
var ErrContainerModeNeedsRoot = errors.New("container mode needs sandboxd to run as root in the container")

// SetupError reports a sandbox setup step that failed before the command
// ran. Step names the step ("mount /proc", "seccomp filter", ...).
type SetupError struct {
	Step string
	Err  error
}

func (e *SetupError) Error() string {
	if e.Step == "" {
		return e.Err.Error()
	}
	if e.Err == nil {
		return e.Step
	}
	return e.Step + ": " + e.Err.Error()
}

func (e *SetupError) Unwrap() error { return e.Err }

func stepErr(step string, err error) error {
	if err == nil {
		return nil
	}
	return &SetupError{Step: step, Err: err}
}

func stepErrf(step, format string, args ...any) error {
	return &SetupError{Step: step, Err: fmt.Errorf(format, args...)}
}

// IsSetupError reports whether err is a failure to set up the sandbox (as
// opposed to an error of the command). sandboxd exits 125 on these.
func IsSetupError(err error) bool {
	var se *SetupError
	return errors.As(err, &se) || errors.Is(err, ErrUnsupported)
}

// CommandError reports that the sandbox was set up but the command itself
// could not be executed (not found, not executable). ExitCode is 127 when
// the command was not found and 126 otherwise, as a shell would say.
type CommandError struct {
	Command  string
	Reason   string
	ExitCode int
}

func (e *CommandError) Error() string { return e.Command + ": " + e.Reason }
