//go:build linux

package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// publishServer serves, inside the sandbox, "hello from PORT" on
// 127.0.0.1:8000 and on 127.0.0.1:8001 until the file named by its first
// argument exists, and writes "ready" to stdout once both listen.
const publishServer = `
import http.server, os, sys, threading, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers()
        self.wfile.write(b"hello from %d" % self.server.server_port)
    def log_message(self, *a): pass
for port in (8000, 8001):
    s = http.server.ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=s.serve_forever, daemon=True).start()
print("ready", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
`

// TestPublish: --publish 127.0.0.1:HOSTPORT:8000 lets the host reach the
// server the command started inside on 127.0.0.1:8000, as root and as uid
// 65534; the other server inside (8001) stays out of reach, and so does
// every other port; a host address of another sandboxd run is refused.
func TestPublish(t *testing.T) {
	testenv.NeedCommand(t, "python3")
	w := newWorld(t)
	for i, u := range users {
		t.Run(u.name, func(t *testing.T) {
			dir := sharedDir(t)
			stop := filepath.Join(dir, "stop")
			hostPort := 18080 + i
			type result struct{ r runResult }
			done := make(chan result, 1)
			go func() {
				r := w.sandboxd(t, runOpts{uid: u.uid, dir: dir, timeout: 60 * time.Second,
					flags: []string{"--publish", fmt.Sprintf("127.0.0.1:%d:8000", hostPort)},
					argv:  []string{"python3", "-c", publishServer, stop}})
				done <- result{r}
			}()
			defer func() {
				os.WriteFile(stop, nil, 0o644)
				res := <-done
				if res.r.code != 0 {
					t.Errorf("sandboxd: exit %d\nstdout %q\nstderr %q", res.r.code, res.r.stdout, res.r.stderr)
				}
			}()
			get := func(addr string) (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				c, err := w.host.Dial(ctx, "tcp", addr)
				if err != nil {
					return "", err
				}
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				return string(b), err
			}
			published := fmt.Sprintf("127.0.0.1:%d", hostPort)
			var body string
			var err error
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if body, err = get(published); err == nil {
					break
				}
			}
			if body != "hello from 8000" {
				t.Fatalf("the published port %s: %q, %v; want the server inside", published, body, err)
			}
			// The unpublished server inside, at its own port and at the
			// published one's neighbours, is out of the host's reach.
			for _, addr := range []string{"127.0.0.1:8001", "127.0.0.1:8000", fmt.Sprintf("127.0.0.1:%d", hostPort+10)} {
				if b, err := get(addr); err == nil {
					t.Errorf("%s answered %q from the host: only the published port may", addr, b)
				}
			}
		})
	}
	// A port that cannot be had refuses the session before the command.
	ln := w.host.Listen(t, "tcp", "127.0.0.1:18090")
	defer ln.Close()
	ran := filepath.Join(sharedDir(t), "ran")
	r := w.sandboxd(t, runOpts{flags: []string{"--publish", "18090:8000"}, argv: []string{"touch", ran}})
	if r.code != 125 || !strings.Contains(r.stderr, "--publish 127.0.0.1:18090:8000") {
		t.Errorf("a taken host port: exit %d, stderr %q; want 125 naming it", r.code, r.stderr)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the command ran although its port could not be published")
	}
	for _, bad := range []string{"8000", "x:8000", "127.0.0.1:0:8000", "127.0.0.1:80:70000", "nothost:80:8000"} {
		r := w.sandboxd(t, runOpts{flags: []string{"--publish", bad}, argv: []string{"true"}})
		if r.code != 125 || !strings.Contains(r.stderr, "--publish") {
			t.Errorf("--publish %s: exit %d, stderr %q", bad, r.code, r.stderr)
		}
	}
}
