package proxy_test

import (
	"crypto/tls"
	"io"
	"net/http"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// TestTestNetUpstreamInNetns puts the upstream on 203.0.113.10 (TEST-NET-3)
// on a dummy interface of a network namespace this test creates; the proxy
// dials inside it. The dial guard refuses TEST-NET until the operator opens
// it with AllowPrivate.
func TestTestNetUpstreamInNetns(t *testing.T) {
	ns := proxytest.NewNetns(t, "203.0.113.10/24")
	cert := proxytest.NewCert(t, "upstream.test")
	ln := ns.Listen(t, "tcp", "203.0.113.10:443")
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "netns hello "+r.Host)
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert.TLS}}}
	go hs.ServeTLS(ln, "", "")
	t.Cleanup(func() { hs.Close() })
	pln := ns.Listen(t, "tcp", "203.0.113.10:80")
	ps := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "plain "+r.Host) })}
	go ps.Serve(pln)
	t.Cleanup(func() { ps.Close() })

	pol := proxy.Policy{Allow: []string{"upstream.test"}, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}}
	e := newEnv(t, pol, func(c *proxy.Config) { c.Dial = ns.Dial })
	e.dns.Add(t, "upstream.test. 60 IN A 203.0.113.10")
	e.cert = cert
	resp, err := e.client().Get("https://upstream.test/")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); got != "netns hello upstream.test" {
		t.Fatalf("body %q", got)
	}
	resp, err = e.client().Get("http://upstream.test/")
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); got != "plain upstream.test" {
		t.Fatalf("body %q", got)
	}
	if curl, err := exec.LookPath("curl"); err == nil {
		out, err := exec.Command(curl, "-sS", "--max-time", "10", "--proxy", e.url.String(), "--cacert", cert.WritePEM(t), "https://upstream.test/").CombinedOutput()
		if err != nil || string(out) != "netns hello upstream.test" {
			t.Fatalf("curl: %q %v", out, err)
		}
	} else if testenv.Required() {
		t.Fatal("curl is not installed")
	}

	// Without the operator's range, the dial guard refuses TEST-NET.
	pol.AllowPrivate = nil
	if err := e.srv.SetPolicy(pol); err != nil {
		t.Fatal(err)
	}
	_, r := e.connect("upstream.test:443", true)
	if got := r.Header.Get("X-Proxy-Error"); r.StatusCode != 403 || !strings.HasPrefix(got, "private address: 203.0.113.10 is documentation (TEST-NET-3)") {
		t.Fatalf("%d %q", r.StatusCode, got)
	}
}
