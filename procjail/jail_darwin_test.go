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

// TestDarwinConfinedFileSystem: with FileSystem.Confine a write inside a
// write root succeeds, one outside fails, a protected file inside the root
// can be neither written nor moved, a hidden file is unreadable, and TMPDIR
// is the sandbox's own directory, removed when it ends.
func TestDarwinConfinedFileSystem(t *testing.T) {
	resolved := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	root, outside, hidden := resolved(t.TempDir()), resolved(t.TempDir()), resolved(t.TempDir())
	secret := filepath.Join(hidden, "secret")
	protected := filepath.Join(root, "protected")
	for f, content := range map[string]string{secret: "s3cret", protected: "keep"} {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	port := 20000 + (os.Getpid()+1)%20000
	var out bytes.Buffer
	outW, outR := pipe(t, &out)
	script := `echo in > "$ROOT/in" && echo in-ok
echo out > "$OUT/out" && echo out-written
cat "$SECRET" && echo secret-read
echo x > "$PROT" && echo protected-written
mv "$PROT" "$ROOT/moved" && echo protected-moved
echo t > "$TMPDIR/t" && echo tmp-ok
echo "tmpdir=$TMPDIR"`
	spec := Spec{Command: "/bin/sh", Args: []string{"-c", script},
		Env:    []string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp", "ROOT=" + root, "OUT=" + outside, "SECRET=" + secret, "PROT=" + protected},
		Stdout: outW, Stderr: outW,
		Forwards:   []Forward{{InsidePort: uint16(port), Network: "tcp", Target: filepath.Join(root, "proxy.sock")}},
		FileSystem: FileSystem{Confine: true, WriteRoots: []string{root}, Protected: []string{protected}, Hidden: []string{hidden}}}
	sb, err := Start(context.Background(), spec)
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, _ := sb.Wait()
	<-outR
	got := out.String()
	for _, want := range []string{"in-ok", "tmp-ok"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q (exit %d): %q", want, code, got)
		}
	}
	for _, bad := range []string{"out-written", "secret-read", "s3cret", "protected-written", "protected-moved", "tmpdir=/tmp\n"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q (exit %d): %q", bad, code, got)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "out")); err == nil {
		t.Error("the write outside the roots landed")
	}
	if b, err := os.ReadFile(protected); err != nil || string(b) != "keep" {
		t.Errorf("protected file: %q, %v", b, err)
	}
	if i := strings.Index(got, "tmpdir="); i >= 0 {
		dir := strings.TrimSpace(got[i+len("tmpdir="):])
		if !strings.HasPrefix(dir, resolved(os.TempDir())) {
			t.Errorf("TMPDIR %q is not under %s", dir, os.TempDir())
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("TMPDIR %s left behind", dir)
		}
	} else {
		t.Errorf("no TMPDIR printed: %q", got)
	}
}
