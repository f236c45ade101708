//go:build darwin

package procjail

// Darwin integration tests: run on a Mac with `go test ./procjail/`.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDarwinOnlyProxyPort(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "proxy.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "via proxy") })}
	go srv.Serve(ln)
	defer srv.Close()
	// Another loopback service the profile must not reach.
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := 20000 + os.Getpid()%20000
	var out bytes.Buffer
	outW, outR := pipe(t, &out)
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", fmt.Sprintf(
		"curl -sS --max-time 5 http://127.0.0.1:%d/x; echo; curl -sS --max-time 5 http://%s/ ; echo code=$?", port, other.Addr())},
		Env: []string{"PATH=/usr/bin:/bin"}, Stdout: outW, Stderr: outW,
		Forwards: []Forward{{InsidePort: uint16(port), Network: "tcp", Target: sock}}}
	sb, err := Start(context.Background(), spec)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, _ := sb.Wait()
	<-outR
	if code != 0 || !strings.Contains(out.String(), "via proxy") || strings.Contains(out.String(), "code=0") {
		t.Fatalf("exit %d, output %q", code, out.String())
	}
}

func pipe(t *testing.T, into *bytes.Buffer) (*os.File, chan struct{}) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { into.ReadFrom(r); close(done) }()
	go func() { time.Sleep(time.Minute); r.Close() }()
	return w, done
}
