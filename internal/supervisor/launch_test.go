package supervisor

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
	"github.com/barry-rocks/sandbox/proxy"
)

// TestForwardLoopback: an MCP server on the host's loopback is relayed
// from a Unix socket in the runtime directory, forwarded inside at its own
// port; a server elsewhere is not forwarded, and the sandbox's own ports
// are refused.
func TestForwardLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "mcp %s %s", r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	s := &session{dir: t.TempDir()}
	f, stop, err := s.forwardLoopback(srv.URL + "/mcp?sessionId=s1")
	if err != nil || stop == nil {
		t.Fatalf("forwardLoopback: %v", err)
	}
	defer stop()
	if want := srv.Listener.Addr().(*net.TCPAddr).Port; int(f.InsidePort) != want || f.Network != "tcp" {
		t.Fatalf("forward %+v, want tcp port %d", f, want)
	}
	c, err := net.Dial("unix", f.Target)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	bufio.NewReader(resp.Body).WriteTo(&b)
	if b.String() != "mcp /mcp Bearer k" {
		t.Errorf("through the relay: %q", b.String())
	}
	if _, stop, err := s.forwardLoopback("https://mcp.example.com/mcp"); err != nil || stop != nil {
		t.Errorf("a remote server: stop %v, err %v; want no forward", stop != nil, err)
	}
	for _, u := range []string{"http://127.0.0.1:3128/mcp", "http://127.0.0.1/mcp", "http:///mcp"} {
		if _, _, err := s.forwardLoopback(u); err == nil {
			t.Errorf("%s: forwarded", u)
		}
	}
}

// TestLaunchAPIHosts: the model API host joins the allowlist (an absent
// one too: under the sandbox it is empty), and a host the bound denies
// refuses the launch.
func TestLaunchAPIHosts(t *testing.T) {
	l := &LaunchSpec{Harness: hooks.ClaudeCode}
	b, err := l.withAPIHosts(nil)
	if err != nil || b.Network.AllowDomains == nil || b.Network.AllowDomains[0] != "api.anthropic.com" {
		t.Fatalf("no bound: %+v, %v", b, err)
	}
	l.APIHosts = []string{"gw.example.com"}
	b, err = l.withAPIHosts(&policy.Bound{Network: &policy.NetworkRules{Enforce: policy.EnforceSandbox, AllowDomains: []string{"*.example.com"}}})
	if err != nil || len(b.Network.AllowDomains) != 1 {
		t.Errorf("an allowed gateway was added again: %+v, %v", b.Network, err)
	}
	if _, err := l.withAPIHosts(&policy.Bound{Network: &policy.NetworkRules{Domains: []string{"gw.example.com"}}}); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("a denied API host: %v", err)
	}
}

// TestHeadersAgree: the names the init writes are the ones the proxy
// reads (neither package imports the other).
func TestHeadersAgree(t *testing.T) {
	if procjail.CaptureHeader != proxy.OriginalDestinationHeader || procjail.PeerHeader != proxy.PeerHeader || procjail.PeerFrame != proxy.PeerFrame {
		t.Errorf("procjail's headers %q, %q; the proxy's %q, %q", procjail.CaptureHeader, procjail.PeerHeader,
			proxy.OriginalDestinationHeader, proxy.PeerHeader)
	}
}
