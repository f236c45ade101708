package proxy_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestCurl drives the proxy with curl --proxy: HTTPS over CONNECT, plain
// HTTP, and a denial whose reason curl reports.
func TestCurl(t *testing.T) {
	curl := testenv.NeedCommand(t, "curl")
	e := newEnv(t, defaultPolicy())
	ca := e.cert.WritePEM(t)
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(curl, append([]string{"-sS", "--max-time", "10", "--noproxy", "", "--proxy", e.url.String()}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, stderr, err := run("--cacert", ca, "https://allowed.test:"+e.port+"/")
	if err != nil || out != "tls hello allowed.test:"+e.port {
		t.Fatalf("https: %q %q %v", out, stderr, err)
	}
	out, stderr, err = run("http://allowed.test:" + e.hport + "/c")
	if err != nil || !strings.HasPrefix(out, "http hello host=allowed.test:"+e.hport) {
		t.Fatalf("http: %q %q %v", out, stderr, err)
	}
	out, _, err = run("-D", "-", "http://unlisted.test:"+e.hport+"/")
	if err != nil || !strings.Contains(out, "403 Forbidden") || !strings.Contains(out, "X-Proxy-Error: not in allowlist: unlisted.test") {
		t.Fatalf("http deny: %q %v", out, err)
	}
	_, stderr, err = run("--cacert", ca, "https://denied.test:"+e.port+"/")
	if err == nil || !strings.Contains(stderr, "403") {
		t.Fatalf("https deny: %q %v", stderr, err)
	}
	_, stderr, err = run("--cacert", ca, "https://meta.test/")
	if err == nil || !strings.Contains(stderr, "403") {
		t.Fatalf("metadata: %q %v", stderr, err)
	}
	// curl's --resolve cannot help: the proxy resolves, and SNI must match.
	if e.dns.Seen("denied.test") != 0 || e.dns.Seen("unlisted.test") != 0 {
		t.Fatal("a refused name reached the resolver")
	}
}
