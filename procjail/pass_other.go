//go:build !linux

package procjail

import (
	"errors"
	"net"
	"os"
)

// PassListener is Linux's (see pass_linux.go); elsewhere none can be made.
type PassListener struct{}

// NewPassListener fails: pass forwards are Linux's.
func NewPassListener() (*PassListener, error) {
	return nil, errors.New("pass forwards are not supported on this system")
}

func (l *PassListener) childEnd() *os.File { return nil }

// Accept fails.
func (l *PassListener) Accept() (net.Conn, error) { return nil, net.ErrClosed }

// Close does nothing.
func (l *PassListener) Close() error { return nil }

// Addr names nothing.
func (l *PassListener) Addr() net.Addr { return nil }
