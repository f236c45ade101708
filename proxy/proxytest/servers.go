package proxytest

import (
	"bufio"
	"io"
	"net"
	"sync"
	"testing"
)

// Echo is a TCP server that echoes each connection until EOF, then closes
// its write side; it also counts the connections it accepted.
type Echo struct {
	Addr string
	ln   net.Listener
	mu   sync.Mutex
	n    int
}

// NewEcho starts an echo server on ln (nil: 127.0.0.1:0). If banner is not
// empty it is written first (a server-speaks-first protocol).
func NewEcho(t testing.TB, ln net.Listener, banner string) *Echo {
	t.Helper()
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
	}
	e := &Echo{Addr: ln.Addr().String(), ln: ln}
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.mu.Lock()
			e.n++
			e.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if banner != "" {
					io.WriteString(c, banner)
				}
				io.Copy(c, bufio.NewReader(c))
				if tc, ok := c.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return e
}

// Accepted returns how many connections the server accepted.
func (e *Echo) Accepted() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}
