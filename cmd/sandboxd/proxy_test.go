package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// startProxyCmd runs "sandboxd proxy ARGS" in-process and returns the two
// lines it prints and a stop function that returns the exit code.
func startProxyCmd(t *testing.T, args ...string) (string, string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{proxyCommand()}}
		done <- app.Main(ctx, cli.IO{In: strings.NewReader(""), Out: pw, Err: io.Discard}, append([]string{"proxy"}, args...))
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	l1, err := br.ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("no first line: %v (exit %d)", err, <-done)
	}
	l2, _ := br.ReadString('\n')
	go io.Copy(io.Discard, br)
	stop := func() int {
		cancel()
		select {
		case c := <-done:
			return c
		case <-time.After(10 * time.Second):
			t.Fatal("proxy command did not stop")
			return -1
		}
	}
	t.Cleanup(func() { cancel() })
	return strings.TrimSpace(l1), strings.TrimSpace(l2), stop
}

func TestProxyCommand(t *testing.T) {
	up := proxytest.NewDNS(t)
	up.Add(t, "allowed.test. 60 IN A 127.0.0.1", "allowed.test. 60 IN TXT \"t\"", "other.test. 60 IN A 127.0.0.1")
	cert := proxytest.NewCert(t, "allowed.test")
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	ts.StartTLS()
	defer ts.Close()
	_, port, _ := net.SplitHostPort(ts.Listener.Addr().String())
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")

	line1, line2, stop := startProxyCmd(t, "--listen", "127.0.0.1:0", "--dns-listen", "127.0.0.1:0",
		"--allow-domain", "allowed.test", "--deny-domain", "other.test", "--allow-private", "127.0.0.0/8",
		"--dns-upstream", up.Addr, "--audit", auditPath)
	pu, err := url.Parse(line1)
	if err != nil || pu.User == nil || !strings.HasPrefix(line1, "http://proxy:") {
		t.Fatalf("first line %q", line1)
	}
	if !strings.HasPrefix(line2, "dns 127.0.0.1:") || strings.HasSuffix(line2, ":0") {
		t.Fatalf("second line %q", line2)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: cert.Pool}}, Timeout: 10 * time.Second}
	resp, err := c.Get("https://allowed.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
	c.CloseIdleConnections()

	m := new(dns.Msg)
	m.SetQuestion("allowed.test.", dns.TypeTXT)
	r, _, err := (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, strings.TrimPrefix(line2, "dns "))
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("dns: %v %v", r, err)
	}
	m.SetQuestion("other.test.", dns.TypeA)
	r, _, err = (&dns.Client{Timeout: 5 * time.Second}).Exchange(m, strings.TrimPrefix(line2, "dns "))
	if err != nil || r.Rcode != dns.RcodeRefused {
		t.Fatalf("dns deny: %v %v", r, err)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	audit, _ := os.ReadFile(auditPath)
	for _, want := range []string{`"host":"allowed.test","port":"` + port, `"kind":"dns"`, `"decision":"deny"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("audit lacks %s:\n%s", want, audit)
		}
	}
}

func TestProxyCommandPolicyFile(t *testing.T) {
	dir := t.TempDir()
	pf := filepath.Join(dir, "p.yaml")
	os.WriteFile(pf, []byte(`version: 1
harness: claude-code
mode: hosted
bags: {}
tools: []
traits: {}
bounds:
  egress: {network: {enforce: sandbox, allowDomains: [allowed.test], domains: [bad.allowed.test]}}
identity:
  name: ops
  bounds: [egress]
`), 0o600)
	up := proxytest.NewDNS(t)
	up.Add(t, "allowed.test. 60 IN A 127.0.0.1")
	echo := proxytest.NewEcho(t, nil, "")
	_, port, _ := net.SplitHostPort(echo.Addr)
	line1, _, stop := startProxyCmd(t, "--listen", "127.0.0.1:0", "--policy", pf, "--allow-private", "127.0.0.1", "--dns-upstream", up.Addr)
	pu, _ := url.Parse(line1)
	for target, want := range map[string]int{"allowed.test:" + port: 200, "bad.allowed.test:" + port: 403, "unlisted.test:" + port: 403} {
		conn, err := net.Dial("tcp", pu.Host)
		if err != nil {
			t.Fatal(err)
		}
		pw, _ := pu.User.Password()
		req, _ := http.NewRequest(http.MethodConnect, "http://"+target, nil)
		req.Host = target
		req.URL = &url.URL{Host: target}
		req.SetBasicAuth(pu.User.Username(), pw)
		req.Header.Set("Proxy-Authorization", req.Header.Get("Authorization"))
		req.Header.Del("Authorization")
		req.Write(conn)
		resp, err := http.ReadResponse(bufio.NewReader(conn), req)
		conn.Close()
		if err != nil || resp.StatusCode != want {
			t.Fatalf("CONNECT %s: %v %v, want %d", target, resp, err, want)
		}
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestProxyCommandErrors(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--listen", "127.0.0.1:0", "--allow-domain", "*.com"},
		{"proxy", "--listen", "127.0.0.1:0", "--allow-private", "nope"},
		{"proxy", "--listen", "127.0.0.1:0", "--policy", "/nonexistent.yaml"},
		{"proxy", "--listen", "256.0.0.1:0", "--allow-domain", "a.test"},
	} {
		var errb strings.Builder
		app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{proxyCommand()}}
		code := app.Main(context.Background(), cli.IO{In: strings.NewReader(""), Out: io.Discard, Err: &errb}, args)
		if code != 1 || strings.Count(strings.TrimSpace(errb.String()), "\n") != 0 || !strings.HasPrefix(errb.String(), "sandboxd proxy: ") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and one line", args, code, errb.String())
		}
	}
}

// TestProxyCommandSignal runs the real binary and stops it with SIGTERM.
func TestProxyCommandSignal(t *testing.T) {
	testenv.SkipIfShort(t, "builds the binary")
	bin := filepath.Join(t.TempDir(), "sandboxd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v: %s", err, out)
	}
	sock := filepath.Join(t.TempDir(), "p.sock")
	cmd := exec.Command(bin, "proxy", "--listen", "unix:"+sock, "--allow-domain", "a.test")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	br := bufio.NewReader(out)
	l1, _ := br.ReadString('\n')
	l2, _ := br.ReadString('\n')
	if !strings.HasPrefix(l1, "http+unix://proxy:") || l2 != "dns off\n" {
		t.Fatalf("lines %q %q", l1, l2)
	}
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("socket: %v", err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	errc := make(chan error, 1)
	go func() { errc <- cmd.Wait() }()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
}
