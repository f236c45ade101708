package proxy

import (
	"bufio"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRefuseUnparsedClipsTheReason: net/http's messages are short today,
// but one that quoted the offending request (as net/textproto's errors do)
// must not put kilobytes of client bytes into the header and audit line.
func TestRefuseUnparsedClipsTheReason(t *testing.T) {
	s, err := New(Config{Policy: Policy{Allow: []string{"a.test"}}, Audit: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	client, server := net.Pipe()
	defer client.Close()
	tap := &tapConn{Conn: server, refuse: s.refuseUnparsed}
	long := strings.Repeat("b", 5000)
	go func() {
		tap.Write([]byte("HTTP/1.1 400 Bad Request: malformed " + long + "\r\nConnection: close\r\n\r\n400 Bad Request: malformed " + long))
		server.Close()
	}()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatal(err)
	}
	reason := resp.Header.Get("X-Proxy-Error")
	if resp.StatusCode != http.StatusForbidden || !strings.HasPrefix(reason, "bad request: the request could not be parsed (bad request: malformed bbb") {
		t.Fatalf("got %d %q", resp.StatusCode, reason)
	}
	if len(reason) > 300 {
		t.Fatalf("reason of %d bytes; it quotes too much of the request", len(reason))
	}
}
