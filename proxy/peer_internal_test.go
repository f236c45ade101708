package proxy

import (
	"io"
	"net"
	"slices"
	"testing"
)

// TestPeerConn: a first frame that is PeerFrame names the peer and is not
// read as a query; any other first frame is the query, read whole.
func TestPeerConn(t *testing.T) {
	frame := func(b string) []byte { return append([]byte{byte(len(b) >> 8), byte(len(b))}, b...) }
	for _, c := range []struct {
		name   string
		in     []byte
		pid    int
		argv   []string
		passed []byte
	}{
		{"peer then query", append(frame(PeerFrame+`pid=7 argv=["dig","x"]`), frame("query")...), 7, []string{"dig", "x"}, frame("query")},
		{"query only", frame("query"), 0, nil, frame("query")},
		{"malformed peer", append(frame(PeerFrame+"pid=x"), frame("q")...), 0, nil, frame("q")},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := net.Pipe()
			go func() { a.Write(c.in); a.Close() }()
			pc := &peerConn{Conn: b}
			got, err := io.ReadAll(pc)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.passed) {
				t.Errorf("read %q, want %q", got, c.passed)
			}
			p, ok := pc.RemoteAddr().(peerAddr)
			if ok != (c.pid > 0) || ok && (p.pid != c.pid || !slices.Equal(p.argv, c.argv)) {
				t.Errorf("RemoteAddr %#v, want pid %d argv %q", pc.RemoteAddr(), c.pid, c.argv)
			}
		})
	}
}
