//go:build !linux && !darwin

package hooks

import (
	"errors"
	"net"
)

// peerUID refuses: without a peer credential check the server would rule
// for any local user, so it serves no Unix socket on this platform.
func peerUID(*net.UnixConn) (int, error) {
	return -1, errors.New("peer credentials are not supported on this platform")
}
