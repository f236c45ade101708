//go:build !linux

package procjail

import (
	"errors"
	"runtime"
)

// OpenGate is Linux's (fanotify); elsewhere none can be made.
type OpenGate struct {
	// Marked is how many mounts Mark marked.
	Marked int
}

// OpenGateAvailable says why there is no open gate on this system.
func OpenGateAvailable() error {
	return errors.New("the open gate needs Linux's fanotify, and this system is " + runtime.GOOS)
}

// NewOpenGate fails: the open gate is Linux's.
func NewOpenGate(OpenGateOptions) (*OpenGate, error) { return nil, OpenGateAvailable() }

// Mark fails: no open gate is ever made here.
func (g *OpenGate) Mark(int) error { return OpenGateAvailable() }

// Close does nothing.
func (g *OpenGate) Close() {}

// Failed is never closed: no open gate runs here.
func (g *OpenGate) Failed() <-chan struct{} { return nil }

// Err is nil: no open gate runs here.
func (g *OpenGate) Err() error { return nil }

// Decided is 0: there is no gate here.
func (g *OpenGate) Decided() int { return 0 }
