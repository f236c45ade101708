//go:build !linux && !darwin

package hooks

import (
	"context"
	"net"
	"time"
)

// dialRuling connects to a ruling server through the net package.
func dialRuling(ctx context.Context, network, addr string) (rulingConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return netRulingConn{conn}, nil
}

// netRulingConn is a net.Conn whose abort ends its pending and later reads
// and writes.
type netRulingConn struct{ net.Conn }

func (c netRulingConn) abort() { c.SetDeadline(time.Unix(1, 0)) }
