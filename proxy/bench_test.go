package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy"
)

// sink accepts connections, discards what it reads and closes at EOF.
func sink(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	testenv.Serve(b, ln, func(c net.Conn) { io.Copy(io.Discard, c) })
	return ln.Addr().String()
}

// BenchmarkThroughput4 is BenchmarkThroughput with 4 concurrent streams,
// each writing 64 KiB per op.
func BenchmarkThroughput4(b *testing.B) {
	const streams, chunk = 4, 64 << 10
	run := func(b *testing.B, conns []net.Conn) {
		b.SetBytes(streams * chunk)
		b.ResetTimer()
		done := make(chan error, streams)
		for _, c := range conns {
			go func(c net.Conn) {
				buf := make([]byte, chunk)
				for i := 0; i < b.N; i++ {
					if _, err := c.Write(buf); err != nil {
						done <- err
						return
					}
				}
				c.(interface{ CloseWrite() error }).CloseWrite()
				io.Copy(io.Discard, c)
				done <- nil
			}(c)
		}
		for range conns {
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		for _, c := range conns {
			c.Close()
		}
	}
	b.Run("direct", func(b *testing.B) {
		addr := sink(b)
		var conns []net.Conn
		for i := 0; i < streams; i++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		run(b, conns)
	})
	b.Run("connect-splice", func(b *testing.B) {
		e := newEnv(b, defaultPolicy(), quietAudit)
		_, port := splitPort(sink(b))
		var conns []net.Conn
		for i := 0; i < streams; i++ {
			c, resp := e.connect("allowed.test:"+port, true)
			if resp.StatusCode != 200 {
				b.Fatal(resp.Status)
			}
			conns = append(conns, c)
		}
		run(b, conns)
	})
}

// BenchmarkThroughput writes 256 KiB per op over one connection, directly
// to a sink on loopback and through a CONNECT tunnel to the same sink.
func BenchmarkThroughput(b *testing.B) {
	const chunk = 256 << 10
	buf := make([]byte, chunk)
	run := func(b *testing.B, c net.Conn) {
		b.SetBytes(chunk)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
		c.(interface{ CloseWrite() error }).CloseWrite()
		io.Copy(io.Discard, c) // returns when the sink has read everything
		b.StopTimer()
		c.Close()
	}
	b.Run("direct", func(b *testing.B) {
		c, err := net.Dial("tcp", sink(b))
		if err != nil {
			b.Fatal(err)
		}
		run(b, c)
	})
	b.Run("connect-splice", func(b *testing.B) {
		e := newEnv(b, defaultPolicy(), quietAudit)
		_, port := splitPort(sink(b))
		c, resp := e.connect("allowed.test:"+port, true)
		if resp.StatusCode != 200 {
			b.Fatal(resp.Status)
		}
		run(b, c)
	})
	for _, size := range []int{32 << 10, 256 << 10} {
		b.Run(fmt.Sprintf("connect-buffer-%dKiB", size>>10), func(b *testing.B) {
			e := newEnv(b, defaultPolicy(), quietAudit, func(c *proxy.Config) { c.CopyBuffer = size })
			_, port := splitPort(sink(b))
			c, resp := e.connect("allowed.test:"+port, true)
			if resp.StatusCode != 200 {
				b.Fatal(resp.Status)
			}
			run(b, c)
		})
	}
}

func quietAudit(c *proxy.Config) { c.Audit = discardLogger() }

// BenchmarkHTTPSSetup is one fresh connection and a GET of a 1 KiB body,
// directly, through the proxy (CONNECT, name decision, resolution through a
// DNS server on loopback with the default lookup cache, dial guard, SNI
// check), through the proxy without a lookup cache, and through
// minimalProxy (the floor of any relay). One op runs all four in turn, so
// drift on a shared machine hits them alike. It reports each one's median
// and 99th percentile, and each relay's median minus the direct median.
func BenchmarkHTTPSSetup(b *testing.B) {
	payload := strings.Repeat("x", 1024)
	e := newEnv(b, defaultPolicy(), quietAudit)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, payload) }))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{e.cert.TLS}}
	ts.StartTLS()
	b.Cleanup(ts.Close)
	_, port := splitPort(ts.Listener.Addr().String())
	url := "https://allowed.test:" + port + "/"
	tlsCfg := &tls.Config{RootCAs: e.cert.Pool, ClientSessionCache: nil}
	nocache := newEnv(b, defaultPolicy(), quietAudit, func(c *proxy.Config) { c.ResolveCacheTTL = -1 })
	ways := []struct {
		name string
		tr   *http.Transport
	}{
		{"direct", &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsCfg,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "tcp", ts.Listener.Addr().String())
			}}},
		{"proxy", &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsCfg, Proxy: http.ProxyURL(e.url)}},
		{"proxy-nocache", &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsCfg, Proxy: http.ProxyURL(nocache.url)}},
		{"minimal-proxy", &http.Transport{DisableKeepAlives: true, TLSClientConfig: tlsCfg, Proxy: http.ProxyURL(minimalProxy(b, ts.Listener.Addr().String()))}},
	}
	lat := make([][]time.Duration, len(ways))
	b.ResetTimer()
	for b.Loop() {
		for i, w := range ways {
			c := &http.Client{Transport: w.tr}
			t0 := time.Now()
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(w.name, err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n != 1024 {
				b.Fatalf("%s: read %d", w.name, n)
			}
			lat[i] = append(lat[i], time.Since(t0))
		}
	}
	b.StopTimer()
	p50 := make([]float64, len(ways))
	for i, w := range ways {
		slices.Sort(lat[i])
		p50[i] = float64(lat[i][len(lat[i])/2].Microseconds())
		b.ReportMetric(p50[i], w.name+"-p50-µs")
		b.ReportMetric(float64(lat[i][len(lat[i])*99/100].Microseconds()), w.name+"-p99-µs")
		if i > 0 {
			b.ReportMetric(p50[i]-p50[0], w.name+"-added-p50-µs")
		}
	}
}

// BenchmarkDNS is one A query per op over a reused UDP socket: to the fake
// upstream directly, and through the DNS proxy (policy, forward, filter).
func BenchmarkDNS(b *testing.B) {
	e := newDNSEnvB(b)
	q := new(dns.Msg)
	q.SetQuestion("allowed.test.", dns.TypeA)
	run := func(b *testing.B, addr string) {
		conn, err := net.Dial("udp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		c := &dns.Client{Timeout: 5 * time.Second}
		dc := &dns.Conn{Conn: conn}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			r, _, err := c.ExchangeWithConn(q, dc)
			if err != nil || len(r.Answer) != 1 {
				b.Fatal(r, err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "answers/s")
	}
	b.Run("direct", func(b *testing.B) { run(b, e.upstream.Addr) })
	b.Run("proxy", func(b *testing.B) { run(b, e.addr) })
}

// BenchmarkIdleTunnelMemory runs the real sandboxd binary, opens 500 idle
// tunnels through it and reports its resident memory and thread-stack
// growth per tunnel (VmRSS from /proc), against a baseline of 500 idle
// client connections to the proxy that never CONNECT.
func BenchmarkIdleTunnelMemory(b *testing.B) {
	const n = 500
	bin := filepath.Join(b.TempDir(), "sandboxd")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/sandboxd").CombinedOutput(); err != nil {
		b.Fatalf("build: %v: %s", err, out)
	}
	e := newEnv(b, defaultPolicy(), quietAudit) // for its DNS upstream
	echo := sink(b)
	_, port := splitPort(echo)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "proxy", "--listen", "127.0.0.1:0", "--allow-domain", "allowed.test",
			"--allow-private", "127.0.0.0/8", "--dns-upstream", e.dns.Addr, "--audit", os.DevNull)
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		addr := strings.TrimSpace(line[strings.LastIndex(line, "@")+1:])
		auth := strings.TrimPrefix(strings.Split(line, "@")[0], "http://")
		user, secret, _ := strings.Cut(auth, ":")
		rss := func() int {
			time.Sleep(200 * time.Millisecond)
			runtime.GC()
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
			for _, l := range strings.Split(string(st), "\n") {
				if strings.HasPrefix(l, "VmRSS:") {
					v, _ := strconv.Atoi(strings.Fields(l)[1])
					return v
				}
			}
			return 0
		}
		var conns []net.Conn
		base := rss()
		for j := 0; j < n; j++ { // baseline: idle authenticated-nothing conns
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			conns = append(conns, c)
		}
		idleConns := rss()
		for _, c := range conns {
			c.Close()
		}
		conns = conns[:0]
		time.Sleep(300 * time.Millisecond)
		before := rss()
		for j := 0; j < n; j++ {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(c, "CONNECT allowed.test:%s HTTP/1.1\r\nProxy-Authorization: %s\r\n\r\n", port, basic(user, secret))
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				b.Fatal(resp, err)
			}
			conns = append(conns, c)
		}
		after := rss()
		b.ReportMetric(float64(after-before)/n, "KiB-rss/tunnel")
		b.ReportMetric(float64(idleConns-base)/n, "KiB-rss/idle-conn")
		for _, c := range conns {
			c.Close()
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}
