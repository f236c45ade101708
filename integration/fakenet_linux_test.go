//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// The fake internet: two network namespaces the test creates. "host" is
// where sandboxd runs; "world" holds the servers, on TEST-NET addresses,
// reached from host through a veth pair. Nothing outside these namespaces
// is touched.
const (
	hostAddr    = "198.51.100.1"
	worldAddr   = "198.51.100.2"
	webAddr     = "192.0.2.10" // allowed.test, git.test
	deniedAddr  = "192.0.2.20" // denied.test
	dnsAddr     = "192.0.2.53"
	web6Addr    = "2001:db8:2::10"
	hostOwnAddr = "192.0.2.99" // an address of sandboxd's own namespace, inside the opened range
	udpEchoPort = "9999"
)

type world struct {
	host, world *proxytest.Netns
	caFile      string
	ca          tls.Certificate // the world's CA (caFile): the certificate of its web servers, and serveHTTPS's signer
	repoDir     string
	dns         *proxytest.Zone // the world's resolver, on dnsAddr:53

	mu       sync.Mutex
	httpSeen []string       // "host path" of every request the web servers saw
	tcpSeen  int            // raw TCP connections to the echo port
	udpSeen  int            // UDP datagrams to the echo port
	slowEnd  chan time.Time // when a /slow download's client went away
}

func sh(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// newWorld builds the namespaces and starts the servers; everything is
// removed when the test ends.
func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldAround(t, proxytest.NewNetns(t), true)
}

// newWorldAround builds the world's namespace and servers around host, the
// namespace sandboxd runs in: one the test made (NewNetns, or a container's
// through AttachNetns). Without ipv6 (a container's namespace, where Docker
// turns IPv6 off) the host side gets only the IPv4 link and route; the world
// still serves on web6Addr.
func newWorldAround(t *testing.T, hostNS *proxytest.Netns, ipv6 bool) *world {
	t.Helper()
	w := &world{host: hostNS, world: proxytest.NewNetns(t), slowEnd: make(chan time.Time, 8)}
	host, wld := w.host.Name, w.world.Name
	for _, c := range [][]string{
		{"link", "add", "name", "vh", "netns", host, "type", "veth", "peer", "name", "vw", "netns", wld},
		{"-n", host, "addr", "add", hostAddr + "/24", "dev", "vh"},
		{"-n", host, "addr", "add", "2001:db8:1::1/64", "dev", "vh", "nodad"},
		{"-n", host, "link", "set", "vh", "up"},
		{"-n", wld, "addr", "add", worldAddr + "/24", "dev", "vw"},
		{"-n", wld, "addr", "add", "2001:db8:1::2/64", "dev", "vw", "nodad"},
		{"-n", wld, "link", "set", "vw", "up"},
		{"-n", wld, "addr", "add", webAddr + "/32", "dev", "lo"},
		{"-n", wld, "addr", "add", deniedAddr + "/32", "dev", "lo"},
		{"-n", wld, "addr", "add", dnsAddr + "/32", "dev", "lo"},
		{"-n", wld, "addr", "add", web6Addr + "/128", "dev", "lo", "nodad"},
		{"-n", host, "route", "add", "192.0.2.0/24", "via", worldAddr},
		{"-n", host, "addr", "add", hostOwnAddr + "/32", "dev", "lo"},
		{"-n", host, "-6", "route", "add", "2001:db8:2::/64", "via", "2001:db8:1::2"},
	} {
		if !ipv6 && c[0] == "-n" && c[1] == host && strings.Contains(strings.Join(c, " "), "2001:db8") {
			continue
		}
		sh(t, "ip", c...)
	}
	w.startServers(t)
	return w
}

func (w *world) note(list *[]string, s string) {
	w.mu.Lock()
	*list = append(*list, s)
	w.mu.Unlock()
}

// seen returns copies of what the world's servers saw.
func (w *world) seen() (dnsQ, httpR []string, tcp, udp int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dns.Questions(), append([]string(nil), w.httpSeen...), w.tcpSeen, w.udpSeen
}

func (w *world) startServers(t *testing.T) {
	t.Helper()
	dir := sharedDir(t)
	caPEM, cert := makeCerts(t)
	w.ca = cert
	w.caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(w.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	w.repoDir = makeRepo(t, dir)

	// DNS: NXDOMAIN for other names.
	w.dns = proxytest.NewZone()
	if err := w.dns.AddRR(
		"allowed.test. 5 IN A "+webAddr, "allowed.test. 5 IN AAAA "+web6Addr,
		"git.test. 5 IN A "+webAddr, "denied.test. 5 IN A "+deniedAddr,
		"rebind.test. 5 IN A 127.0.0.1", "hostaddr.test. 5 IN A "+hostOwnAddr,
	); err != nil {
		t.Fatal(err)
	}
	stop, err := w.dns.Serve(w.world.ListenPacket(t, "udp", dnsAddr+":53"), w.world.Listen(t, "tcp", dnsAddr+":53"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)

	// Web: plain HTTP on :80, HTTPS on :443, git smart HTTP for git.test.
	gitPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	git := &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(gitPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + filepath.Dir(w.repoDir), "GIT_HTTP_EXPORT_ALL=1"},
	}
	web := http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		w.note(&w.httpSeen, host+" "+r.URL.Path)
		if host == "git.test" {
			git.ServeHTTP(rw, r)
			return
		}
		if r.URL.Path == "/slow" {
			w.serveSlow(rw, r)
			return
		}
		fmt.Fprintf(rw, "hello from %s", host)
	})
	var lns []net.Listener
	for _, a := range []string{webAddr + ":80", deniedAddr + ":80", "[" + web6Addr + "]:80"} {
		lns = append(lns, w.world.Listen(t, "tcp", a))
	}
	for _, a := range []string{webAddr + ":443", deniedAddr + ":443", "[" + web6Addr + "]:443"} {
		lns = append(lns, tls.NewListener(w.world.Listen(t, "tcp", a), &tls.Config{Certificates: []tls.Certificate{cert}}))
	}
	echo := w.world.Listen(t, "tcp", webAddr+":"+udpEchoPort)
	udp := w.world.ListenPacket(t, "udp", webAddr+":"+udpEchoPort)
	for _, ln := range lns {
		srv := &http.Server{Handler: web, ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			w.mu.Lock()
			w.tcpSeen++
			w.mu.Unlock()
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			w.mu.Lock()
			w.udpSeen++
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { echo.Close(); udp.Close() })
}

// serveHTTPS serves h over HTTPS as host on a new world address addr (in
// 192.0.2.0/24, which the host namespace routes to the world and the
// sandboxd runs allow as private), until the test ends: the world's DNS
// answers host with addr, the certificate is signed by the world's CA
// (caFile), and every request is noted in httpSeen like the web servers'.
func (w *world) serveHTTPS(t *testing.T, host, addr string, h http.Handler) {
	t.Helper()
	sh(t, "ip", "-n", w.world.Name, "addr", "add", addr+"/32", "dev", "lo")
	if err := w.dns.AddRR(host + ". 5 IN A " + addr); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, w.ca.Leaf, &key.PublicKey, w.ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	ln := tls.NewListener(w.world.Listen(t, "tcp", addr+":443"), &tls.Config{Certificates: []tls.Certificate{cert}})
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.note(&w.httpSeen, host+" "+r.URL.Path)
		h.ServeHTTP(rw, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// makeCerts returns the test servers' certificate (its own CA, as PEM)
// for the test names.
func makeCerts(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	c := proxytest.NewCert(t, "allowed.test", "git.test", "denied.test", "rebind.test")
	return c.PEM, c.TLS
}

// makeRepo makes a bare repository repo.git with one commit.
func makeRepo(t *testing.T, dir string) string {
	t.Helper()
	work := filepath.Join(dir, "work")
	bare := filepath.Join(dir, "git", "repo.git")
	env := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	for _, c := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", "fake internet"},
		{"clone", "-q", "--bare", work, bare},
	} {
		cmd := exec.Command("git", c...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", c, err, out)
		}
	}
	return bare
}

// runOpts is one sandboxd invocation in the host namespace.
type runOpts struct {
	sub      []string // sandboxd's subcommand and its first arguments (default: run)
	uid      int      // 0: root; otherwise run as this uid (65534)
	flags    []string // extra sandboxd run flags
	noAllow  bool     // no default allow flags
	argv     []string // COMMAND ARGS
	dir      string
	timeout  time.Duration
	stdin    string
	extraEnv []string
	wrap     []string // a command sandboxd's "ip netns exec" runs under (it execs its arguments)
	audit    string   // audit file (default: a new one per run)
}

type runResult struct {
	code           int
	stdout, stderr string
	audit          string
}

func (w *world) sandboxd(t *testing.T, o runOpts) runResult {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 60 * time.Second
	}
	audit := o.audit
	if audit == "" {
		audit = filepath.Join(sharedDir(t), "audit.jsonl")
	}
	args := w.sandboxdArgs(o, audit)
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	argv := append(append(append([]string(nil), o.wrap...), "ip"), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	dir := o.dir
	if dir == "" {
		dir = sharedDir(t)
	}
	cmd.Dir = dir
	cmd.Env = w.env(dir, o.extraEnv)
	cmd.Stdin = strings.NewReader(o.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &unix.SysProcAttr{Pdeathsig: unix.SIGKILL, Setpgid: true}
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("sandboxd: %v", err)
	}
	a, _ := os.ReadFile(audit)
	return runResult{code: code, stdout: out.String(), stderr: errb.String(), audit: string(a)}
}

// env is sandboxd's environment for a run from dir, then extra.
func (w *world) env(dir string, extra []string) []string {
	return append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir,
		"SSL_CERT_FILE=" + w.caFile, "CURL_CA_BUNDLE=" + w.caFile, "GIT_SSL_CAINFO=" + w.caFile,
		"GIT_TERMINAL_PROMPT=0", "LANG=C"}, extra...)
}

// sandboxdArgs returns the arguments of "ip" that run sandboxd as o says
// in the host namespace, auditing to audit.
func (w *world) sandboxdArgs(o runOpts, audit string) []string {
	args := []string{"netns", "exec", w.host.Name}
	if o.uid != 0 {
		args = append(args, "setpriv", fmt.Sprintf("--reuid=%d", o.uid), fmt.Sprintf("--regid=%d", o.uid), "--clear-groups", "--")
	}
	return append(args, w.sandboxdCommand(sandboxdBin, o, audit)...)
}

// sandboxdCommand returns the command line of sandboxd (the binary bin) as
// o says, auditing to audit: its subcommand, the world's flags, o's flags,
// "--" and o's command.
func (w *world) sandboxdCommand(bin string, o runOpts, audit string) []string {
	sub := o.sub
	if sub == nil {
		sub = []string{"run"}
	}
	args := append([]string{bin}, sub...)
	args = append(args, "--dns-upstream", dnsAddr+":53", "--audit", audit,
		"--allow-private", "192.0.2.0/24", "--allow-private", "2001:db8::/32")
	if !o.noAllow {
		args = append(args, "--allow-domain", "allowed.test", "--allow-domain", "git.test", "--allow-domain", "rebind.test")
	}
	args = append(args, o.flags...)
	args = append(args, "--")
	args = append(args, o.argv...)
	return args
}

// sharedDir returns a new directory that every uid can use (the tests run
// sandboxd as uid 65534 too), removed when the test ends.
func sharedDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp(shareRoot, "t-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o777)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// serveSlow streams 1 KiB every 10 ms for at most 60 s and reports on
// w.slowEnd when the client went away (a write failed) before that.
func (w *world) serveSlow(rw http.ResponseWriter, r *http.Request) {
	f, _ := rw.(http.Flusher)
	chunk := bytes.Repeat([]byte("x"), 1024)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := rw.Write(chunk); err != nil {
			break
		}
		if f != nil {
			f.Flush()
		}
		select {
		case <-r.Context().Done():
			w.slowEnd <- time.Now()
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
	if time.Now().Before(deadline) {
		w.slowEnd <- time.Now()
	}
}
