package proxy_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// minimalProxy is the floor for BenchmarkHTTPSSetup: parse CONNECT, dial
// the target (from a fixed map, no policy, no DNS), answer 200, relay.
func minimalProxy(b *testing.B, target string) *url.URL {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	testenv.Serve(b, ln, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		t, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		defer t.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
		go func() { io.Copy(t, c); t.(*net.TCPConn).CloseWrite() }()
		io.Copy(c, t)
	})
	u, _ := url.Parse("http://" + ln.Addr().String())
	return u
}
