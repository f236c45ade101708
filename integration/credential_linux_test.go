//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// The hosts the credential tests serve on the world, each on its own
// address (inside 192.0.2.0/24, which the runs allow as private).
const (
	credHost    = "api.cred.test" // a credential host: demands the real token, echoes the request
	credAddr    = "192.0.2.71"
	plainHost   = "plain.cred.test" // allowed, not a credential host: stays an opaque tunnel
	plainAddr   = "192.0.2.72"
	badCAHost   = "badca.cred.test" // a credential host whose certificate no root of sandboxd's signed
	badCAAddr   = "192.0.2.73"
	badNameHost = "badname.cred.test" // a credential host whose certificate (the world CA's) is for another name
	badNameAddr = "192.0.2.74"
	// notAllowedHost is in no run's allowlist.
	notAllowedHost = "notallowed.cred.test"

	credVar = "GITHUB_TOKEN"
	// streamPieces is how many copies of the token /stream-* sends, each
	// split across two flushes at a different place.
	streamPieces = 300
)

// basicUsers are the user names the tests put in Basic credentials; the
// leak scan looks for base64("USER:" + real value) too.
var basicUsers = []string{"x-access-token", "u"}

// caVars are the variables that must name the sandbox's CA bundle inside.
var caVars = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT"}

// credReq is one request a credential test server saw.
type credReq struct {
	host, path, query, proto string
	auth, apiKey             string // the Authorization and X-Api-Key headers as they arrived
	how                      string // how the real token came: "bearer", "basic", "key", or "" (it did not)
	basicUser                string // the user of a Basic credential carrying the real token
	token                    string // which real token it was
	body                     string // the request body (at most 64 KiB kept)
	headers                  string // every header, "Name: value" lines
	acceptEncoding           string // the Accept-Encoding header as it arrived
	status                   int    // what the server answered
	wsMsg                    string // a WebSocket's first message
}

// credServer is a TLS test server that records every request. With
// tokens, a request must carry one of them (Authorization: Bearer, Basic
// as its password, or X-Api-Key), else 401 with a Basic challenge (so git
// retries with its credential); it echoes the request (headers, query and
// body, in the body and in the X-Echo header) and the token itself
// (X-Token and the body's "token"), so the scrubbing of responses is put
// to work. Paths: /git/... git's smart HTTP (Basic only), /npm/... an
// npm registry (serveNPM), /ws-* a WebSocket echo, /stream-* the token
// many times over a chunked body, /redirect-* a redirect whose Location
// holds the token, else the echo.
// Without tokens it records and answers 200 to everything.
type credServer struct {
	host   string
	tokens []string
	git    http.Handler

	mu   sync.Mutex
	reqs []credReq
}

func (s *credServer) note(r credReq) {
	s.mu.Lock()
	s.reqs = append(s.reqs, r)
	s.mu.Unlock()
}

// seen returns the requests to path (all with path "").
func (s *credServer) seen(path string) []credReq {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []credReq
	for _, r := range s.reqs {
		if path == "" || r.path == path {
			out = append(out, r)
		}
	}
	return out
}

func (s *credServer) authorize(r *http.Request) (how, user, token string) {
	for _, tok := range s.tokens {
		if r.Header.Get("Authorization") == "Bearer "+tok {
			return "bearer", "", tok
		}
		if u, p, ok := r.BasicAuth(); ok && p == tok {
			return "basic", u, tok
		}
		if r.Header.Get("X-Api-Key") == tok {
			return "key", "", tok
		}
	}
	return "", "", ""
}

func (s *credServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	req := credReq{host: r.Host, path: r.URL.Path, query: r.URL.RawQuery, proto: r.Proto,
		auth: r.Header.Get("Authorization"), apiKey: r.Header.Get("X-Api-Key"), acceptEncoding: r.Header.Get("Accept-Encoding"),
		headers: headerLines(r.Header)}
	req.how, req.basicUser, req.token = s.authorize(r)
	req.body = string(body)
	if len(req.body) > 64<<10 {
		req.body = req.body[:64<<10]
	}
	deny := func(realm string) {
		req.status = http.StatusUnauthorized
		s.note(req)
		rw.Header().Set("WWW-Authenticate", `Basic realm="`+realm+`"`)
		http.Error(rw, "the real token is needed", http.StatusUnauthorized)
	}
	if len(s.tokens) == 0 {
		req.status = http.StatusOK
		s.note(req)
		s.echo(rw, r, req, body)
		return
	}
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/git/"):
		if req.how != "basic" {
			deny("git")
			return
		}
		req.status = http.StatusOK
		s.note(req)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.git.ServeHTTP(rw, r)
	case req.how == "":
		deny("cred")
	case strings.HasPrefix(p, "/npm/"):
		req.status = http.StatusOK
		s.note(req)
		s.serveNPM(rw, p, req.token)
	case strings.HasPrefix(p, "/ws-"):
		s.serveWS(rw, r, req)
	case strings.HasPrefix(p, "/stream-"):
		req.status = http.StatusOK
		s.note(req)
		s.stream(rw, req.token)
	case strings.HasPrefix(p, "/gzip-"):
		// The echo, gzipped when the client asks for it, or (gzip-always-*)
		// whether it asks or not, as some servers do.
		req.status = http.StatusOK
		s.note(req)
		if !strings.HasPrefix(p, "/gzip-always-") && !strings.Contains(req.acceptEncoding, "gzip") {
			s.echo(rw, r, req, body)
			return
		}
		rw.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(rw)
		s.echo(&gzipResponse{rw, gz}, r, req, body)
		gz.Close()
	case strings.HasPrefix(p, "/redirect-"):
		req.status = http.StatusFound
		s.note(req)
		rw.Header().Set("Location", "https://"+plainHost+"/landing?token="+req.token)
		rw.WriteHeader(http.StatusFound)
	default:
		req.status = http.StatusOK
		s.note(req)
		s.echo(rw, r, req, body)
	}
}

func (s *credServer) echo(rw http.ResponseWriter, r *http.Request, req credReq, body []byte) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("X-Echo", strings.ReplaceAll(strings.TrimSpace(req.headers), "\n", " | "))
	if req.token != "" {
		rw.Header().Set("X-Token", req.token)
	}
	json.NewEncoder(rw).Encode(map[string]any{
		"host": s.host, "path": req.path, "query": req.query, "proto": req.proto, "how": req.how,
		"headers": r.Header, "body": string(body), "token": req.token,
	})
}

// npmPkg is the one package of the registry under /npm/.
const npmPkg = "cred-pkg"

// serveNPM answers the npm registry under /npm/ (its URL
// https://credHost/npm/): npm ping's /npm/-/ping, and the packument of
// npmPkg 1.0.0, whose description holds the token (so npm view shows
// what the scrubbing made of it); anything else is 404.
func (s *credServer) serveNPM(rw http.ResponseWriter, path, token string) {
	rw.Header().Set("Content-Type", "application/json")
	switch path {
	case "/npm/-/ping":
		io.WriteString(rw, "{}\n")
	case "/npm/" + npmPkg:
		version := map[string]any{"name": npmPkg, "version": "1.0.0", "description": "token " + token,
			"dist": map[string]any{"tarball": "https://" + s.host + "/npm/" + npmPkg + "/-/" + npmPkg + "-1.0.0.tgz"}}
		json.NewEncoder(rw).Encode(map[string]any{"name": npmPkg, "description": "token " + token,
			"dist-tags": map[string]string{"latest": "1.0.0"}, "versions": map[string]any{"1.0.0": version}})
	default:
		rw.WriteHeader(http.StatusNotFound)
		io.WriteString(rw, `{"error":"not found"}`+"\n")
	}
}

// gzipResponse is a ResponseWriter whose body goes through gz.
type gzipResponse struct {
	http.ResponseWriter
	gz *gzip.Writer
}

func (g *gzipResponse) Write(p []byte) (int, error) { return g.gz.Write(p) }

// stream sends streamPieces copies of token between runs of dots, each
// copy split across two flushes at another offset, so a scrubber that does
// not hold back across reads lets parts through.
func (s *credServer) stream(rw http.ResponseWriter, token string) {
	rw.Header().Set("Content-Type", "text/plain")
	f, _ := rw.(http.Flusher)
	for i := range streamPieces {
		k := i % len(token)
		for _, part := range []string{strings.Repeat(".", streamFill(i)) + token[:k], token[k:]} {
			if _, err := io.WriteString(rw, part); err != nil {
				return
			}
			if f != nil {
				f.Flush()
			}
		}
	}
}

func streamFill(i int) int { return 1 + i*37%997 }

// streamLen is the length of a /stream-* body for a token of n bytes.
func streamLen(n int) int {
	total := 0
	for i := range streamPieces {
		total += streamFill(i) + n
	}
	return total
}

// serveWS answers a WebSocket upgrade (RFC 6455) that carries a token,
// with the token in a header of the 101, reads one message and answers
// "echo MESSAGE token TOKEN", then closes.
func (s *credServer) serveWS(rw http.ResponseWriter, r *http.Request, req credReq) {
	hj, ok := rw.(http.Hijacker)
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !ok {
		req.status = http.StatusBadRequest
		s.note(req)
		http.Error(rw, "not a WebSocket upgrade over HTTP/1.1", http.StatusBadRequest)
		return
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	fmt.Fprintf(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nX-Token: %s\r\n\r\n",
		base64.StdEncoding.EncodeToString(sum[:]), req.token)
	if brw.Flush() != nil {
		return
	}
	msg, err := readWSFrame(brw.Reader)
	req.status = http.StatusSwitchingProtocols
	req.wsMsg = string(msg)
	if err != nil {
		req.wsMsg = "error: " + err.Error()
	}
	s.note(req)
	if err != nil {
		return
	}
	writeWSFrame(brw.Writer, 0x1, []byte("echo "+string(msg)+" token "+req.token))
	writeWSFrame(brw.Writer, 0x8, nil)
	brw.Flush()
}

func readWSFrame(r *bufio.Reader) ([]byte, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	if n > 1<<16 {
		return nil, fmt.Errorf("frame of %d bytes", n)
	}
	var mask [4]byte
	if h[1]&0x80 != 0 {
		if _, err := io.ReadFull(r, mask[:]); err != nil {
			return nil, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	for i := range p {
		p[i] ^= mask[i%4]
	}
	return p, nil
}

func writeWSFrame(w io.Writer, op byte, p []byte) {
	h := []byte{0x80 | op}
	if len(p) < 126 {
		h = append(h, byte(len(p)))
	} else {
		h = append(h, 126, byte(len(p)>>8), byte(len(p)))
	}
	w.Write(append(h, p...))
}

func headerLines(h http.Header) string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(h[k], ", "))
	}
	return b.String()
}

// issue returns a certificate for names signed by the world's CA.
func (w *world) issue(t *testing.T, names ...string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, w.ca.Leaf, &key.PublicKey, w.ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// serveTLS serves h as host on the new world address addr with cert, over
// HTTP/1.1 and HTTP/2 (ALPN), until the test ends; the world's DNS
// answers host with addr, and every request is noted in httpSeen.
func (w *world) serveTLS(t *testing.T, host, addr string, cert tls.Certificate, h http.Handler) {
	t.Helper()
	sh(t, "ip", "-n", w.world.Name, "addr", "add", addr+"/32", "dev", "lo")
	if err := w.dns.AddRR(host + ". 5 IN A " + addr); err != nil {
		t.Fatal(err)
	}
	ln := w.world.Listen(t, "tcp", addr+":443")
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		ErrorLog: log.New(io.Discard, "", 0), // handshakes the proxy or a test client cuts short
		Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.note(&w.httpSeen, host+" "+r.URL.Path)
			h.ServeHTTP(rw, r)
		})}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
}

// credWorld is the fake internet with the credential tests' servers.
type credWorld struct {
	*world
	real                 string // GITHUB_TOKEN's real value, in sandboxd's environment
	fileValue            string // API_KEY's real value, in a file a policy names
	cred, plain          *credServer
	badCA, badName       *credServer
	credCert, plainCert  tls.Certificate // the servers' own certificates
	secrets              map[string]string
	secretNames          []string
	credFlags, allowHost []string
	systemRoots          map[string]bool
}

func newCredWorld(t *testing.T) *credWorld {
	t.Helper()
	w := newWorld(t)
	cw := &credWorld{world: w, real: "ghp_" + randAlnum(t, 36), fileValue: "sk-" + randAlnum(t, 40), systemRoots: systemRoots(t)}
	gitPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	tokens := []string{cw.real, cw.fileValue}
	cw.cred = &credServer{host: credHost, tokens: tokens, git: &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(gitPath)), "git-http-backend"), Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Dir(w.repoDir), "GIT_HTTP_EXPORT_ALL=1"},
	}}
	cw.plain = &credServer{host: plainHost}
	cw.badCA = &credServer{host: badCAHost, tokens: tokens}
	cw.badName = &credServer{host: badNameHost, tokens: tokens}
	cw.credCert, cw.plainCert = w.issue(t, credHost), w.issue(t, plainHost)
	w.serveTLS(t, credHost, credAddr, cw.credCert, cw.cred)
	w.serveTLS(t, plainHost, plainAddr, cw.plainCert, cw.plain)
	plainHTTP := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: cw.plain}
	go plainHTTP.Serve(w.world.Listen(t, "tcp", plainAddr+":80"))
	t.Cleanup(func() { plainHTTP.Close() })
	w.serveTLS(t, badCAHost, badCAAddr, proxytest.NewCert(t, badCAHost).TLS, cw.badCA)
	w.serveTLS(t, badNameHost, badNameAddr, w.issue(t, "other.test"), cw.badName)

	cw.secrets = map[string]string{"the real " + credVar: cw.real, "the real API_KEY (file)": cw.fileValue}
	for _, v := range []string{cw.real, cw.fileValue} {
		for _, u := range basicUsers {
			cw.secrets[fmt.Sprintf("Basic %s:<real value %.6s…>", u, v)] = base64.StdEncoding.EncodeToString([]byte(u + ":" + v))
		}
	}
	for k := range cw.secrets {
		cw.secretNames = append(cw.secretNames, k)
	}
	sort.Strings(cw.secretNames)
	cw.allowHost = []string{"--allow-domain", credHost, "--allow-domain", plainHost, "--allow-domain", badCAHost, "--allow-domain", badNameHost}
	cw.credFlags = append(append([]string(nil), cw.allowHost...), "--credential", credVar+"@"+credHost+","+badCAHost+","+badNameHost)
	return cw
}

func randAlnum(t *testing.T, n int) string {
	t.Helper()
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = chars[int(b[i])%len(chars)]
	}
	return string(b)
}

// credRun is one sandboxd run of a credential test, done.
type credRun struct {
	runResult
	dir         string
	placeholder string // what GITHUB_TOKEN held inside
	lines       []map[string]any
}

// out returns the file out/NAME the command wrote in its workspace ("" if
// there is none).
func (r credRun) out(name string) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, "out", name))
	return string(b)
}

// run runs script with sh inside sandboxd (as uid, with the credential
// flags and GITHUB_TOKEN's real value in sandboxd's environment) in a new
// workspace holding files, after the script has written GITHUB_TOKEN as
// it sees it to out/placeholder. It then scans everything the run left on
// the host for a real value (noLeak).
func (cw *credWorld) run(t *testing.T, uid int, files map[string]string, script string) credRun {
	t.Helper()
	return cw.runWith(t, uid, files, script, cw.credFlags, []string{credVar + "=" + cw.real})
}

// runWith is run with sandboxd flags and extra environment of the caller's.
func (cw *credWorld) runWith(t *testing.T, uid int, files map[string]string, script string, flags, env []string) credRun {
	t.Helper()
	dir := sharedDir(t)
	writeFiles(t, dir, files)
	r := cw.sandboxd(t, runOpts{uid: uid, dir: dir, flags: flags, timeout: 120 * time.Second,
		argv:     []string{"sh", "-c", "mkdir -p out && printf %s \"$" + credVar + "\" > out/placeholder\n" + script},
		extraEnv: append([]string{"PATH=" + toolPath()}, env...)})
	cr := credRun{runResult: r, dir: dir, lines: parseAudit(t, r.audit)}
	cr.placeholder = cr.out("placeholder")
	cw.noLeak(t, cr)
	return cr
}

// noLeak fails t for every place on the host the run left a real value in
// (or the Basic credential made of one): stdout, stderr, the audit, and
// every file in the workspace (what the commands wrote: responses, their
// headers, clones).
func (cw *credWorld) noLeak(t *testing.T, r credRun) {
	t.Helper()
	check := func(where, text string) {
		for _, name := range cw.secretNames {
			if i := strings.Index(text, cw.secrets[name]); i >= 0 {
				lo, hi := max(0, i-80), min(len(text), i+len(cw.secrets[name])+80)
				t.Errorf("%s holds %s: …%q…", where, name, text[lo:hi])
			}
		}
	}
	check("stdout", r.stdout)
	check("stderr", r.stderr)
	check("the audit", r.audit)
	n := 0
	err := filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > 20000 {
			return errors.New("more than 20000 entries")
		}
		if !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			t.Errorf("scanning the workspace: %v", err)
			return nil
		}
		b, _ := io.ReadAll(io.LimitReader(f, 64<<20))
		f.Close()
		rel, _ := filepath.Rel(r.dir, p)
		check("the workspace's "+rel, string(b))
		return nil
	})
	if err != nil {
		t.Errorf("scanning the workspace %s: %v", r.dir, err)
	}
}

// decisions is the audit for a failure message: every line but the
// session start, of which only the credentials.
func decisions(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == audit.MsgSessionStart {
			fmt.Fprintf(&b, "(session start, %s: %v)\n", audit.AttrCredentials, m[audit.AttrCredentials])
		} else if l != "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// parseAudit parses an audit's lines; one that does not parse fails t.
func parseAudit(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("audit line does not parse: %v: %q", err, l)
			continue
		}
		out = append(out, m)
	}
	return out
}

// terminated returns the audit's proxy lines for host that say TLS was
// terminated and name credential among those used (any, for "").
func terminated(lines []map[string]any, host, credential string) []map[string]any {
	var out []map[string]any
	for _, m := range lines {
		if m[audit.AttrHost] == host && m[audit.AttrTerminated] == true && (credential == "" || slices.Contains(asSlice(m[audit.AttrCredentials]), credential)) {
			out = append(out, m)
		}
	}
	return out
}

// wantTerminated fails t unless the audit has a terminated line for host
// with credential (captured: from a connection the capture took).
func wantTerminated(t *testing.T, r credRun, host, credential string, captured bool) {
	t.Helper()
	for _, m := range terminated(r.lines, host, credential) {
		if (m[audit.AttrCaptured] != nil) == captured {
			return
		}
	}
	t.Errorf("no audit line for %s with %q:true and %q:[%s] (captured: %v):\n%s", host, audit.AttrTerminated, audit.AttrCredentials, credential, captured, decisions(r.audit))
}

// wantAuthed fails t unless the server saw a request to path carrying the
// real token as how (and returns those requests).
func wantAuthed(t *testing.T, s *credServer, path, how, token string) []credReq {
	t.Helper()
	var ok []credReq
	for _, q := range s.seen(path) {
		if q.how == how && q.token == token {
			ok = append(ok, q)
		}
	}
	if len(ok) == 0 {
		t.Errorf("%s saw no request to %s with the real token as %s; it saw: %s", s.host, path, how, describe(s.seen(path)))
	}
	return ok
}

// headerHas reports whether the response head text (curl -D's, or raw)
// has a header name (in any case) whose value holds sub.
func headerHas(text, name, sub string) bool {
	for _, l := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), name) && strings.Contains(v, sub) {
			return true
		}
	}
	return false
}

func describe(reqs []credReq) string {
	if len(reqs) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, q := range reqs {
		fmt.Fprintf(&b, "\n  %s %s?%s status %d how %q auth %q x-api-key %q body %.200q", q.proto, q.path, q.query, q.status, q.how, q.auth, q.apiKey, q.body)
	}
	return b.String()
}

// checkPlaceholder fails t unless p looks like a placeholder for real: the
// same length and prefix, another value.
func checkPlaceholder(t *testing.T, p, real, prefix string) {
	t.Helper()
	if len(p) != len(real) || !strings.HasPrefix(p, prefix) || p == real {
		t.Errorf("the variable inside is %q: want a placeholder of %d bytes starting %q, not the real value", p, len(real), prefix)
	}
}

// proxyPy is Python that reads the proxy and its credentials from the
// sandbox's HTTPS_PROXY: P (host, port) and AUTH (the Proxy-Authorization
// header, if any); head(sock) reads a response head byte by byte, and
// tunnel(host) returns a socket CONNECTed to host:443.
const proxyPy = `import os, base64, socket, urllib.parse
_p = urllib.parse.urlsplit(os.environ.get("HTTPS_PROXY") or os.environ["https_proxy"])
P = (_p.hostname, _p.port)
AUTH = {}
if _p.username is not None:
    AUTH["Proxy-Authorization"] = "Basic " + base64.b64encode((urllib.parse.unquote(_p.username) + ":" + urllib.parse.unquote(_p.password or "")).encode()).decode()
def head(sock):
    b = b""
    while not b.endswith(b"\r\n\r\n"):
        c = sock.recv(1)
        if not c or len(b) > 65536:
            raise SystemExit("no head: %r" % b)
        b += c
    return b
def tunnel(host):
    s = socket.create_connection(P, timeout=20)
    s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n" % (host, host) + "".join("%s: %s\r\n" % kv for kv in AUTH.items()) + "\r\n").encode())
    h = head(s)
    if b" 200" not in h.split(b"\r\n")[0]:
        raise SystemExit("CONNECT: %r" % h)
    return s
`

// wsPy is a WebSocket client through the proxy (CONNECT, then TLS with
// the default context, so SSL_CERT_FILE): it upgrades argv[2] of host
// argv[1] with Authorization: Bearer $GITHUB_TOKEN, sends "hello ws" and
// writes the 101's head to out/ws-head and the answer to out/ws-msg.
const wsPy = proxyPy + `import ssl, sys
host, path = sys.argv[1], sys.argv[2]
s = tunnel(host)
ctx = ssl.create_default_context()
ctx.set_alpn_protocols(["http/1.1"])
t = ctx.wrap_socket(s, server_hostname=host)
key = base64.b64encode(os.urandom(16)).decode()
t.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n" % (path, host, key, os.environ["GITHUB_TOKEN"])).encode())
h = head(t)
open("out/ws-head", "wb").write(h)
if b" 101 " not in h.split(b"\r\n")[0]:
    raise SystemExit("upgrade: %r" % h)
msg = b"hello ws"
mask = os.urandom(4)
t.sendall(bytes([0x81, 0x80 | len(msg)]) + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(msg)))
def readn(n):
    b = b""
    while len(b) < n:
        c = t.recv(n - len(b))
        if not c:
            raise SystemExit("short frame")
        b += c
    return b
b0, b1 = readn(2)
n = b1 & 0x7f
if n == 126:
    n = int.from_bytes(readn(2), "big")
elif n == 127:
    n = int.from_bytes(readn(8), "big")
payload = readn(n)
open("out/ws-msg", "wb").write(payload)
print("ws", h.split(b"\r\n")[0].decode(), payload.decode(errors="replace"))
`

// certPy writes, for each HOST OUT pair of its arguments, the DER of the
// certificate the proxy's CONNECT tunnel to HOST:443 shows (no
// verification: the host compares).
const certPy = proxyPy + `import http.client, ssl, sys
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
args = sys.argv[1:]
for host, out in zip(args[0::2], args[1::2]):
    c = http.client.HTTPSConnection(P[0], P[1], context=ctx, timeout=20)
    c.set_tunnel(host, 443, headers=AUTH)
    c.connect()
    open(out, "wb").write(c.sock.getpeercert(True))
    c.close()
`

// sniPy CONNECTs to argv[1] and starts TLS with the server name argv[2]
// (no verification), then sends GET argv[3] for Host argv[1] with
// Authorization: Bearer $GITHUB_TOKEN; it prints "sni" and the answer's
// status line, or "sni refused" and why.
const sniPy = proxyPy + `import ssl, sys
host, sni, path = sys.argv[1], sys.argv[2], sys.argv[3]
s = tunnel(host)
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname=sni)
    t.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % (path, host, os.environ["GITHUB_TOKEN"])).encode())
    print("sni", t.recv(4096).split(b"\r\n")[0].decode(errors="replace") or "closed")
except (OSError, ssl.SSLError) as e:
    print("sni refused", type(e).__name__, e)
`

// TestCredentialInjection: sandboxd run --credential GITHUB_TOKEN@HOSTS on
// the fake internet, as root and as uid 65534. Inside, GITHUB_TOKEN holds a
// placeholder of the real value's shape, in no process the real value;
// curl, git, Python (requests, urllib), Node (fetch, https: captured),
// Java (HttpClient and HttpsURLConnection, captured and through the
// proxy, trusting the truststore of JAVA_TOOL_OPTIONS alone), npm (view
// and ping, trusting NPM_CONFIG_CAFILE alone) and a WebSocket client
// reach a server that demands the real token (Bearer, Basic as git sends
// it, X-Api-Key) with the placeholder, over HTTP/1.1 keep-alive and
// HTTP/2; the server sees the real token; its echo of the
// request and of the token comes back with the placeholder in its place;
// an allowed host that is no credential host gets the placeholder and
// shows its own certificate (an opaque tunnel), the credential host the
// sandbox CA's; a credential host whose certificate does not verify gets
// 502 and no request. Every outcome is checked on the host: what the
// servers saw, the files the commands wrote, the audit; and every run's
// output, audit and workspace is scanned for the real value.
func TestCredentialInjection(t *testing.T) {
	for _, c := range []string{"curl", "git", "python3", "node", "openssl"} {
		testenv.NeedCommand(t, c)
	}
	cw := newCredWorld(t)
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			cw.testEnvironment(t, u.uid)
			cw.testCurl(t, u.name, u.uid)
			cw.testKeepAliveHTTP2(t, u.name, u.uid)
			cw.testStream(t, u.name, u.uid)
			cw.testEdges(t, u.name, u.uid)
			cw.testGit(t, u.name, u.uid)
			cw.testPython(t, u.name, u.uid)
			cw.testNode(t, u.name, u.uid)
			cw.testJava(t, u.name, u.uid)
			cw.testNPM(t, u.name, u.uid)
			cw.testWebSocket(t, u.name, u.uid)
			cw.testOpaque(t, u.name, u.uid)
			cw.testBadUpstream(t, u.name, u.uid)
		})
	}
}

// testEnvironment: every process inside (a background one too) has the
// placeholder, none the real value; the CA variables name a bundle of
// sandboxd's roots (the world's CA) and the sandbox CA, with no key; the
// session start line names the credential.
func (cw *credWorld) testEnvironment(t *testing.T, uid int) {
	t.Run("environment", func(t *testing.T) {
		r := cw.run(t, uid, nil, `sleep 30 &
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' > out/environ
env > out/env
for v in `+strings.Join(caVars, " ")+`; do
	eval "f=\${$v:-}"
	[ -n "$f" ] && cat "$f" > "out/ca-$v.pem"
done
rt=$(dirname "$(dirname "$SSL_CERT_FILE")")
cp -r "$rt" out/runtime 2>/dev/null
echo "$rt" > out/runtime-path
kill $!`)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
		// noLeak has scanned the copy of what the sandbox sees of the
		// runtime directory (the bundle's directory's parent).
		if n := countFiles(filepath.Join(r.dir, "out", "runtime")); n == 0 {
			t.Errorf("no file of the runtime directory %q was copied from inside to be scanned", strings.TrimSpace(r.out("runtime-path")))
		} else {
			t.Logf("scanned %d files of the runtime directory %s as seen inside", n, strings.TrimSpace(r.out("runtime-path")))
		}
		checkPlaceholder(t, r.placeholder, cw.real, "ghp_")
		if n := strings.Count(r.out("environ"), credVar+"="+r.placeholder+"\n"); n < 2 {
			t.Errorf("%d processes' environments hold %s=<placeholder>, want both (sh and sleep):\n%s", n, credVar, r.out("environ"))
		}
		if strings.Count(r.out("env"), credVar+"=") != 1 {
			t.Errorf("env inside has not one %s:\n%s", credVar, r.out("env"))
		}
		var sandboxCA *x509.Certificate
		for _, v := range caVars {
			if !strings.Contains(r.out("env"), v+"=") {
				t.Errorf("%s is not set inside", v)
				continue
			}
			pemText := r.out("ca-" + v + ".pem")
			if strings.Contains(pemText, "PRIVATE KEY") {
				t.Errorf("%s's file holds a private key", v)
			}
			world := slices.ContainsFunc(pemCerts(pemText), cw.ca.Leaf.Equal)
			if !world {
				t.Errorf("%s's file (%d bytes) does not hold the roots sandboxd trusts (the world's CA)", v, len(pemText))
			}
			others := cw.sandboxCAs(pemText)
			if len(others) != 1 || !others[0].IsCA {
				t.Errorf("%s's file holds %d certificates besides sandboxd's roots (the world's CA and the system's), want the sandbox CA alone", v, len(others))
				continue
			}
			if sandboxCA == nil {
				sandboxCA = others[0]
			} else if !sandboxCA.Equal(others[0]) {
				t.Errorf("%s names another sandbox CA (%s) than the others (%s)", v, others[0].Subject, sandboxCA.Subject)
			}
		}
		starts := 0
		for _, m := range r.lines {
			if m["msg"] == audit.MsgSessionStart {
				starts++
				if got := asSlice(m[audit.AttrCredentials]); !slices.Equal(got, []string{credVar}) {
					t.Errorf("the session start line's %q is %q, want [%s]", audit.AttrCredentials, got, credVar)
				}
			}
		}
		if starts != 1 {
			t.Errorf("%d session start lines in the audit:\n%s", starts, decisions(r.audit))
		}
	})
}

// sandboxCAs returns the certificates of the PEM bundle that are not
// among the roots sandboxd trusts: the world's CA (its SSL_CERT_FILE) and
// the system's (Go reads the system's directories too).
func (cw *credWorld) sandboxCAs(bundle string) []*x509.Certificate {
	var out []*x509.Certificate
	for _, c := range pemCerts(bundle) {
		if !c.Equal(cw.ca.Leaf) && !cw.systemRoots[string(c.Raw)] {
			out = append(out, c)
		}
	}
	return out
}

// systemRoots returns (by DER) the certificates in the files and
// directories Go's crypto/x509 reads for the system roots on Linux.
func systemRoots(t *testing.T) map[string]bool {
	t.Helper()
	roots := map[string]bool{}
	var files []string
	for _, d := range []string{"/etc/ssl/certs", "/etc/pki/tls/certs", "/system/etc/security/cacerts"} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			files = append(files, filepath.Join(d, e.Name()))
		}
	}
	files = append(files, "/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem")
	if len(files) > 10000 {
		t.Fatalf("%d system root files", len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, c := range pemCerts(string(b)) {
			roots[string(c.Raw)] = true
		}
	}
	return roots
}

// countFiles counts the regular files below dir (at most 10000).
func countFiles(dir string) int {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		if n >= 10000 {
			return fs.SkipAll
		}
		return nil
	})
	return n
}

func pemCerts(s string) []*x509.Certificate {
	var out []*x509.Certificate
	rest := []byte(s)
	for range 1000 {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" {
			out = append(out, c)
		}
	}
	return out
}

// testCurl: curl (through the proxy variables) with the placeholder as
// Bearer, Basic and X-Api-Key: the server sees the real token each time;
// the echo comes back with the placeholder where the token was, in the
// body and in the headers; a redirect's Location is scrubbed too.
func (cw *credWorld) testCurl(t *testing.T, user string, uid int) {
	t.Run("curl", func(t *testing.T) {
		base := "https://" + credHost + "/curl-"
		r := cw.run(t, uid, nil, `T="$GITHUB_TOKEN"
c() { name=$1; shift; curl -sS --max-time 20 -D out/$name.head -o out/$name.body -w "$name %{http_code}\n" "$@"; }
c bearer -H "Authorization: Bearer $T" `+base+`bearer-`+user+`
c basic -u "u:$T" `+base+`basic-`+user+`
c key -H "X-Api-Key: $T" `+base+`key-`+user+`
c none `+base+`none-`+user+`
c redirect -H "Authorization: Bearer $T" https://`+credHost+`/redirect-curl-`+user)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		checkPlaceholder(t, r.placeholder, cw.real, "ghp_")
		for _, c := range []struct{ name, path, how, status string }{
			{"bearer", "/curl-bearer-", "bearer", "200"}, {"basic", "/curl-basic-", "basic", "200"}, {"key", "/curl-key-", "key", "200"},
			{"redirect", "/redirect-curl-", "bearer", "302"},
		} {
			if !strings.Contains(r.stdout, c.name+" "+c.status+"\n") {
				t.Errorf("curl %s: want HTTP %s; stdout %q, stderr %q", c.name, c.status, r.stdout, r.stderr)
			}
			reqs := wantAuthed(t, cw.cred, c.path+user, c.how, cw.real)
			for _, q := range reqs {
				if c.how == "basic" && q.basicUser != "u" {
					t.Errorf("curl basic: the server got user %q, want u", q.basicUser)
				}
				if strings.Contains(q.headers, r.placeholder) {
					t.Errorf("curl %s: the credential host got the placeholder:\n%s", c.name, q.headers)
				}
			}
		}
		// No token, no injection: the server's 401 comes back.
		if !strings.Contains(r.stdout, "none 401\n") {
			t.Errorf("curl without a credential: want 401; stdout %q", r.stdout)
		}
		// The echoes: the placeholder where the server put the real value.
		if b := r.out("bearer.body"); !strings.Contains(b, `"token":"`+r.placeholder+`"`) || !strings.Contains(b, "Bearer "+r.placeholder) {
			t.Errorf("the bearer echo's body has not the placeholder where the token was:\n%s", b)
		}
		for _, name := range []string{"bearer", "basic", "key"} {
			h := r.out(name + ".head")
			if !headerHas(h, "X-Token", r.placeholder) {
				t.Errorf("curl %s: the response's X-Token header is not the placeholder:\n%s", name, h)
			}
			if !headerHas(h, "X-Echo", "") {
				t.Errorf("curl %s: no X-Echo header in the response:\n%s", name, h)
			}
		}
		if h := r.out("key.head"); !headerHas(h, "X-Echo", "X-Api-Key: "+r.placeholder) {
			t.Errorf("the key echo's X-Echo header has not the placeholder:\n%s", h)
		}
		if h := r.out("redirect.head"); !headerHas(h, "Location", "https://"+plainHost+"/landing?token="+r.placeholder) {
			t.Errorf("the redirect's Location is not scrubbed to the placeholder:\n%s", h)
		}
		wantTerminated(t, r, credHost, credVar, false)
	})
}

// testKeepAliveHTTP2: two requests over one HTTP/1.1 keep-alive
// connection, and two over one HTTP/2 connection, each reaching the
// server with the real token.
func (cw *credWorld) testKeepAliveHTTP2(t *testing.T, user string, uid int) {
	t.Run("keep-alive and http2", func(t *testing.T) {
		base := "https://" + credHost + "/"
		r := cw.run(t, uid, nil, `T="$GITHUB_TOKEN"
curl -sS --max-time 20 --http1.1 -H "Authorization: Bearer $T" -w 'h1 %{http_version} %{num_connects} %{http_code}\n' \
	-o out/ka1 `+base+`ka1-`+user+` -o out/ka2 `+base+`ka2-`+user+`
curl -sS --max-time 20 --http2 -H "Authorization: Bearer $T" -w 'h2 %{http_version} %{num_connects} %{http_code}\n' \
	-o out/h2a `+base+`h2a-`+user+` -o out/h2b `+base+`h2b-`+user)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		if want := "h1 1.1 1 200\nh1 1.1 0 200\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("HTTP/1.1: want two 200s over one connection (%q); curl printed %q, stderr %q", want, r.stdout, r.stderr)
		}
		if want := "h2 2 1 200\nh2 2 0 200\n"; !strings.Contains(r.stdout, want) {
			t.Errorf("HTTP/2: want two 200s over one HTTP/2 connection (%q); curl printed %q, stderr %q", want, r.stdout, r.stderr)
		}
		for _, p := range []string{"ka1", "ka2", "h2a", "h2b"} {
			wantAuthed(t, cw.cred, "/"+p+"-"+user, "bearer", cw.real)
			if b := r.out(p); !strings.Contains(b, "Bearer "+r.placeholder) {
				t.Errorf("%s: the echo has not the placeholder: %q", p, b)
			}
		}
		wantTerminated(t, r, credHost, credVar, false)
	})
}

// testStream: a chunked response holding the token streamPieces times,
// each split across writes, comes back the same length with the
// placeholder at every place.
func (cw *credWorld) testStream(t *testing.T, user string, uid int) {
	t.Run("streamed body", func(t *testing.T) {
		r := cw.run(t, uid, nil, `for v in 1.1 2; do
	curl -sS --max-time 30 --http$v -H "Authorization: Bearer $GITHUB_TOKEN" -o out/stream-$v -w '%{http_version} %{http_code}\n' https://`+credHost+`/stream-$v-`+user+`
done`)
		if r.code != 0 || r.stdout != "1.1 200\n2 200\n" {
			t.Fatalf("exit %d, stdout %q (want 200 over HTTP/1.1 and HTTP/2), stderr %s", r.code, r.stdout, r.stderr)
		}
		for _, v := range []string{"1.1", "2"} {
			wantAuthed(t, cw.cred, "/stream-"+v+"-"+user, "bearer", cw.real)
			b := r.out("stream-" + v)
			if len(b) != streamLen(len(cw.real)) {
				t.Errorf("HTTP/%s: the streamed body is %d bytes, want %d", v, len(b), streamLen(len(cw.real)))
			}
			if n := strings.Count(b, r.placeholder); n != streamPieces {
				t.Errorf("HTTP/%s: the streamed body holds the placeholder %d times, want %d", v, n, streamPieces)
			}
			if rest := strings.Trim(strings.ReplaceAll(b, r.placeholder, ""), "."); rest != "" {
				t.Errorf("HTTP/%s: the streamed body holds more than dots and placeholders: %.300q", v, rest)
			}
		}
	})
}

// testEdges: a gzipped answer (asked for, and not) never brings the real
// value in; a request inside a terminated tunnel for another Host, and a
// ClientHello for another name, are refused and reach no server; the
// placeholder sent to a host that is no credential host over plain HTTP
// arrives as it is and is audited as such.
func (cw *credWorld) testEdges(t *testing.T, user string, uid int) {
	t.Run("edge cases", func(t *testing.T) {
		script := `T="$GITHUB_TOKEN"
c() { name=$1; shift; curl -sS --max-time 20 -D out/$name.head -o out/$name.body -w "$name %{http_code}\n" "$@"; }
c gzip --compressed -H "Authorization: Bearer $T" https://` + credHost + `/gzip-asked-` + user + `
c gzipalways --compressed -H "Authorization: Bearer $T" https://` + credHost + `/gzip-always-` + user + `
c host -H "Host: ` + plainHost + `" -H "Authorization: Bearer $T" https://` + credHost + `/host-mismatch-` + user + `
c plainhttp -H "Authorization: Bearer $T" http://` + plainHost + `/plain-http-` + user + `
python3 sni.py ` + credHost + ` ` + plainHost + ` /sni-mismatch-` + user
		r := cw.run(t, uid, map[string]string{"sni.py": sniPy}, script)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		status := func(name string) string {
			for _, l := range strings.Split(r.stdout, "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == name {
					return f[1]
				}
			}
			return ""
		}
		// Asked for gzip: the answer comes back scrubbed, decoded or not.
		if st := status("gzip"); st != "200" || !strings.Contains(r.out("gzip.body"), `"token":"`+r.placeholder+`"`) {
			t.Errorf("gzip asked for: HTTP %s, body %.300q; want 200 and the placeholder where the token was", st, r.out("gzip.body"))
		}
		wantAuthed(t, cw.cred, "/gzip-asked-"+user, "bearer", cw.real)
		// Gzipped unasked: scrubbed or refused, never passed (noLeak
		// looks at what curl decoded).
		switch st := status("gzipalways"); {
		case st == "502":
			t.Logf("gzip unasked: 502, %q", r.out("gzipalways.body"))
		case st == "200" && strings.Contains(r.out("gzipalways.body"), `"token":"`+r.placeholder+`"`):
			t.Logf("gzip unasked: scrubbed")
		default:
			t.Errorf("gzip unasked: HTTP %s, body %.300q; want 502 or the placeholder where the token was", st, r.out("gzipalways.body"))
		}
		// Another Host inside the credential host's tunnel.
		if st := status("host"); len(st) != 3 || st[0] != '4' {
			t.Errorf("a request for Host %s inside the tunnel to %s: HTTP %q, want a 4xx refusal", plainHost, credHost, st)
		}
		for _, s := range []*credServer{cw.cred, cw.plain} {
			if got := s.seen("/host-mismatch-" + user); len(got) != 0 {
				t.Errorf("a request for another Host inside the tunnel to %s reached %s: %s", credHost, s.host, describe(got))
			}
			if got := s.seen("/sni-mismatch-" + user); len(got) != 0 {
				t.Errorf("a ClientHello for %s inside the tunnel to %s reached %s: %s", plainHost, credHost, s.host, describe(got))
			}
		}
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "sni ") {
				t.Logf("a ClientHello for %s in the tunnel to %s: %s", plainHost, credHost, l)
			}
		}
		// The placeholder to another host, over plain HTTP.
		got := cw.plain.seen("/plain-http-" + user)
		if len(got) != 1 || got[0].auth != "Bearer "+r.placeholder {
			t.Errorf("%s over plain HTTP must get the placeholder as sent; it saw: %s", plainHost, describe(got))
		}
		audited := slices.ContainsFunc(r.lines, func(m map[string]any) bool {
			return m[audit.AttrHost] == plainHost && m[audit.AttrKind] == string(audit.KindHTTP) &&
				slices.Contains(asSlice(m[audit.AttrPlaceholder]), credVar) && len(asSlice(m[audit.AttrCredentials])) == 0
		})
		if !audited {
			t.Errorf("no http audit line for %s with %q:[%s] (the placeholder sent to a host it is not for) and no credentials:\n%s",
				plainHost, audit.AttrPlaceholder, credVar, decisions(r.audit))
		}
	})
}

// testGit: git clones over HTTPS from a smart-HTTP server that demands
// Basic with the real token: its first request is refused with a Basic
// challenge, and git retries with the credential its helper gives (the
// placeholder).
func (cw *credWorld) testGit(t *testing.T, user string, uid int) {
	t.Run("git clone", func(t *testing.T) {
		r := cw.run(t, uid, nil, `set -e
git -c credential.helper='!f() { if [ "$1" = get ]; then printf "username=x-access-token\npassword=%s\n" "$GITHUB_TOKEN"; fi; }; f' \
	clone -q https://`+credHost+`/git/repo.git r
git -C r log --format=%s > out/git-log`)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s\nthe server saw: %s", r.code, r.stdout, r.stderr, decisions(r.audit), describe(cw.cred.seen("/git/repo.git/info/refs")))
		}
		if got := strings.TrimSpace(r.out("git-log")); got != "fake internet" {
			t.Errorf("the clone's log is %q, want the served history", got)
		}
		refs := cw.cred.seen("/git/repo.git/info/refs")
		challenged := slices.ContainsFunc(refs, func(q credReq) bool { return q.status == http.StatusUnauthorized && q.auth == "" })
		if !challenged {
			t.Errorf("git's first request was not refused with a challenge: %s", describe(refs))
		}
		for _, p := range []string{"/git/repo.git/info/refs", "/git/repo.git/git-upload-pack"} {
			for _, q := range wantAuthed(t, cw.cred, p, "basic", cw.real) {
				if q.basicUser != "x-access-token" {
					t.Errorf("%s: Basic user %q, want x-access-token", p, q.basicUser)
				}
			}
		}
		wantTerminated(t, r, credHost, credVar, false)
	})
}

// testPython: requests (a session: keep-alive; Bearer and Basic) and
// urllib (X-Api-Key; the placeholder also in the URL and the body, where
// it stays the placeholder).
func (cw *credWorld) testPython(t *testing.T, user string, uid int) {
	t.Run("python", func(t *testing.T) {
		files := map[string]string{
			"req.py": `import json, os, sys, requests
t = os.environ["GITHUB_TOKEN"]
s = requests.Session()
codes = []
for name, kw in [("bearer", {"headers": {"Authorization": "Bearer " + t}}), ("basic", {"auth": ("u", t)})]:
    r = s.get("https://` + credHost + `/requests-%s-` + user + `" % name, timeout=20, **kw)
    open("out/requests-%s.body" % name, "w").write(r.text)
    open("out/requests-%s.head" % name, "w").write(json.dumps(dict(r.headers)))
    codes.append(r.status_code)
print("requests", codes)
sys.exit(0 if codes == [200, 200] else 1)
`,
			"url.py": `import os, sys, urllib.request
t = os.environ["GITHUB_TOKEN"]
q = urllib.request.Request("https://` + credHost + `/urllib-` + user + `?note=" + t, data=("note=" + t).encode(), headers={"X-Api-Key": t}, method="POST")
with urllib.request.urlopen(q, timeout=20) as r:
    open("out/urllib.body", "wb").write(r.read())
    open("out/urllib.head", "w").write(str(r.headers))
    print("urllib", r.status)
`,
		}
		r := cw.run(t, uid, files, `python3 req.py; a=$?; python3 url.py; b=$?; exit $((a + b))`)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		wantAuthed(t, cw.cred, "/requests-bearer-"+user, "bearer", cw.real)
		wantAuthed(t, cw.cred, "/requests-basic-"+user, "basic", cw.real)
		for _, q := range wantAuthed(t, cw.cred, "/urllib-"+user, "key", cw.real) {
			// The placeholder in a URL or a body is passed as it is.
			if q.query != "note="+r.placeholder || q.body != "note="+r.placeholder {
				t.Errorf("urllib: the server got query %q and body %q; want the placeholder, as sent, in both", q.query, q.body)
			}
		}
		for _, f := range []string{"requests-bearer.head", "requests-basic.head", "urllib.head"} {
			if !strings.Contains(r.out(f), r.placeholder) {
				t.Errorf("%s: the response's headers have not the placeholder: %s", f, r.out(f))
			}
		}
		wantTerminated(t, r, credHost, credVar, false)
		passed := slices.ContainsFunc(r.lines, func(m map[string]any) bool {
			return m[audit.AttrHost] == credHost && slices.Contains(asSlice(m[audit.AttrPlaceholder]), credVar)
		})
		if !passed {
			t.Errorf("no audit line for %s with %q:[%s] (the placeholder passed in urllib's URL and body):\n%s", credHost, audit.AttrPlaceholder, credVar, decisions(r.audit))
		}
	})
}

// testNode: Node's fetch and https module, which ignore the proxy
// variables (their connections are captured), with NODE_EXTRA_CA_CERTS.
func (cw *credWorld) testNode(t *testing.T, user string, uid int) {
	t.Run("node", func(t *testing.T) {
		files := map[string]string{"n.js": `const fs = require("fs"), https = require("https");
const t = process.env.GITHUB_TOKEN;
function get(path, opts, name) {
  return new Promise((resolve, reject) => {
    const q = https.request({host: "` + credHost + `", path, timeout: 20000, ...opts}, r => {
      let b = "";
      r.setEncoding("utf8");
      r.on("data", d => b += d);
      r.on("end", () => { fs.writeFileSync("out/" + name + ".body", b); fs.writeFileSync("out/" + name + ".head", JSON.stringify(r.headers)); resolve(r.statusCode); });
    });
    q.on("error", reject);
    q.on("timeout", () => q.destroy(new Error("timeout")));
    q.end();
  });
}
(async () => {
  const r = await fetch("https://` + credHost + `/node-fetch-` + user + `", {headers: {authorization: "Bearer " + t}, signal: AbortSignal.timeout(20000)});
  fs.writeFileSync("out/fetch.body", await r.text());
  fs.writeFileSync("out/fetch.head", JSON.stringify([...r.headers]));
  const key = await get("/node-https-key-` + user + `", {headers: {"x-api-key": t}}, "https-key");
  const basic = await get("/node-https-basic-` + user + `", {auth: "x-access-token:" + t}, "https-basic");
  console.log("node", r.status, key, basic);
  process.exit(r.status === 200 && key === 200 && basic === 200 ? 0 : 1);
})().catch(e => { console.error("node:", e, e.cause); process.exit(2); });
`}
		r := cw.run(t, uid, files, `node n.js`)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		wantAuthed(t, cw.cred, "/node-fetch-"+user, "bearer", cw.real)
		wantAuthed(t, cw.cred, "/node-https-key-"+user, "key", cw.real)
		wantAuthed(t, cw.cred, "/node-https-basic-"+user, "basic", cw.real)
		for _, f := range []string{"fetch.head", "https-key.head", "https-basic.head"} {
			if !strings.Contains(r.out(f), r.placeholder) {
				t.Errorf("%s: the response's headers have not the placeholder: %s", f, r.out(f))
			}
		}
		wantTerminated(t, r, credHost, credVar, true)
	})
}

// javaProg is a single-file Java program (java Prog.java, JDK 11+) that
// sets no trust of its own: the JVM's default trust is what sandboxd's
// JAVA_TOOL_OPTIONS names. It takes the user's name and the path of the
// JDK's own cacerts. It sends GITHUB_TOKEN (the placeholder) to the
// credential host three ways: java.net.http.HttpClient with no proxy as
// Bearer (captured), HttpsURLConnection with no proxy as Basic
// (captured), and HttpClient through the proxy the JVM's properties name
// (https.proxyHost, with its user and password from https.proxyUser and
// https.proxyPassword, as X-Api-Key); each answer's body and headers go to
// out/java-NAME.body and .head. Then, as a control, it tries the first
// request again trusting only the JDK's cacerts, which must fail its
// handshake (out/java-control). It writes its trust properties to
// out/java-props and exits 0 only if all three got 200 and the control
// was refused.
const javaProg = `import java.io.*;
import java.net.*;
import java.net.http.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.security.KeyStore;
import java.time.Duration;
import java.util.*;
import javax.net.ssl.*;

public class Prog {
    static final String HOST = "` + credHost + `";
    static final String T = System.getenv("GITHUB_TOKEN");
    static String user;

    static void save(String name, String body, Map<String, List<String>> headers) throws IOException {
        StringBuilder h = new StringBuilder();
        for (Map.Entry<String, List<String>> e : headers.entrySet()) {
            if (e.getKey() != null) {
                h.append(e.getKey()).append(": ").append(String.join(", ", e.getValue())).append("\n");
            }
        }
        Files.writeString(Path.of("out", "java-" + name + ".body"), body);
        Files.writeString(Path.of("out", "java-" + name + ".head"), h.toString());
    }

    static int client(HttpClient c, String name, String header, String value) throws Exception {
        HttpRequest q = HttpRequest.newBuilder(URI.create("https://" + HOST + "/java-" + name + "-" + user))
            .header(header, value).timeout(Duration.ofSeconds(20)).build();
        HttpResponse<String> r = c.send(q, HttpResponse.BodyHandlers.ofString());
        save(name, r.body(), r.headers().map());
        return r.statusCode();
    }

    static int urlConnection(String name) throws Exception {
        URL u = new URL("https://" + HOST + "/java-" + name + "-" + user);
        HttpsURLConnection c = (HttpsURLConnection) u.openConnection(Proxy.NO_PROXY);
        c.setConnectTimeout(20000);
        c.setReadTimeout(20000);
        c.setRequestProperty("Authorization", "Basic " + Base64.getEncoder().encodeToString(("x-access-token:" + T).getBytes(StandardCharsets.UTF_8)));
        int code = c.getResponseCode();
        try (InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream()) {
            save(name, in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8), c.getHeaderFields());
        }
        return code;
    }

    public static void main(String[] a) throws Exception {
        user = a[0];
        Files.writeString(Path.of("out", "java-props"), "trustStore=" + System.getProperty("javax.net.ssl.trustStore") +
            "\ntrustStoreType=" + System.getProperty("javax.net.ssl.trustStoreType") + "\nproxy=" + System.getProperty("https.proxyHost") +
            ":" + System.getProperty("https.proxyPort") + "\n");
        HttpClient direct = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).connectTimeout(Duration.ofSeconds(20)).build();
        int captured = client(direct, "captured", "Authorization", "Bearer " + T);
        int urlconn = urlConnection("urlconn");
        HttpClient proxied = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(20)).authenticator(new Authenticator() {
            @Override
            protected PasswordAuthentication getPasswordAuthentication() {
                if (getRequestorType() != RequestorType.PROXY) {
                    return null;
                }
                return new PasswordAuthentication(System.getProperty("https.proxyUser"), System.getProperty("https.proxyPassword", "").toCharArray());
            }
        }).build();
        int proxy = client(proxied, "proxy", "X-Api-Key", T);

        KeyStore jdk = KeyStore.getInstance(new File(a[1]), (char[]) null);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(jdk);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        String control;
        try {
            HttpClient c = HttpClient.newBuilder().proxy(HttpClient.Builder.NO_PROXY).sslContext(ctx).connectTimeout(Duration.ofSeconds(20)).build();
            control = "accepted " + client(c, "control", "Authorization", "Bearer " + T);
        } catch (SSLHandshakeException e) {
            control = "refused " + e;
        } catch (IOException e) {
            control = (e.getCause() instanceof SSLHandshakeException ? "refused " : "error ") + e;
        }
        Files.writeString(Path.of("out", "java-control"), control + "\n");
        System.out.println("java " + captured + " " + urlconn + " " + proxy + " control " + control);
        System.exit(captured == 200 && urlconn == 200 && proxy == 200 && control.startsWith("refused ") ? 0 : 1);
    }
}
`

// testJava: a single-file Java program (java Prog.java) that trusts the
// sandbox CA only through the truststore of the JAVA_TOOL_OPTIONS sandboxd
// sets: HttpClient and HttpsURLConnection, which read no proxy variable
// (told to use no proxy: their connections are captured), and HttpClient
// through the proxy of the JVM's properties, reach the credential host
// with the placeholder (Bearer, Basic, X-Api-Key); the server sees the
// real token; the echoes come back with the placeholder; the same request
// trusting only the JDK's own cacerts is refused its handshake, so the
// trust came from the truststore.
func (cw *credWorld) testJava(t *testing.T, user string, uid int) {
	t.Run("java", func(t *testing.T) {
		java := testenv.NeedCommand(t, "java")
		if !onToolPath("java") {
			testenv.SkipOrFail(t, "java is not on the sandbox's PATH ("+toolPath()+")")
		}
		cacerts := jdkCacerts(t, java)
		start := time.Now()
		r := cw.run(t, uid, map[string]string{"Prog.java": javaProg}, `printf '%s\n' "$JAVA_TOOL_OPTIONS" > out/java-tool-options
printf '%s\n' "$SSL_CERT_FILE" > out/ssl-cert-file
java Prog.java `+user+` `+cacerts)
		t.Logf("the Java run took %v", time.Since(start).Round(time.Millisecond))
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s\nthe server saw: %s", r.code, r.stdout, r.stderr, decisions(r.audit), describe(cw.cred.seen("")))
		}
		// Java took the truststore sandboxd named, the one beside the
		// bundle of SSL_CERT_FILE.
		opts := strings.Fields(r.out("java-tool-options"))
		var store string
		for _, o := range opts {
			if v, ok := strings.CutPrefix(o, "-Djavax.net.ssl.trustStore="); ok {
				store = v
			}
		}
		bundle := strings.TrimSpace(r.out("ssl-cert-file"))
		if store == "" || filepath.Dir(store) != filepath.Dir(bundle) {
			t.Errorf("JAVA_TOOL_OPTIONS %q names no truststore beside SSL_CERT_FILE's bundle %q", opts, bundle)
		}
		if props := r.out("java-props"); !strings.Contains(props, "trustStore="+store+"\n") || !strings.Contains(props, "trustStoreType=JKS\n") {
			t.Errorf("the JVM's trust properties are not JAVA_TOOL_OPTIONS' truststore %q:\n%s", store, props)
		}
		for _, c := range []struct{ name, how string }{{"captured", "bearer"}, {"urlconn", "basic"}, {"proxy", "key"}} {
			for _, q := range wantAuthed(t, cw.cred, "/java-"+c.name+"-"+user, c.how, cw.real) {
				if c.how == "basic" && q.basicUser != "x-access-token" {
					t.Errorf("java %s: the server got Basic user %q, want x-access-token", c.name, q.basicUser)
				}
				if strings.Contains(q.headers, r.placeholder) {
					t.Errorf("java %s: the credential host got the placeholder:\n%s", c.name, q.headers)
				}
			}
			if b := r.out("java-" + c.name + ".body"); !strings.Contains(b, `"token":"`+r.placeholder+`"`) {
				t.Errorf("java %s: the echo's body has not the placeholder where the token was:\n%s", c.name, b)
			}
			if h := r.out("java-" + c.name + ".head"); !headerHas(h, "X-Token", r.placeholder) {
				t.Errorf("java %s: the response's X-Token header is not the placeholder:\n%s", c.name, h)
			}
		}
		if b := r.out("java-captured.body"); !strings.Contains(b, "Bearer "+r.placeholder) {
			t.Errorf("java captured: the echo has not the Authorization it sent (Bearer <placeholder>):\n%s", b)
		}
		// The control: without the truststore, the sandbox CA is not
		// trusted and nothing reaches the server.
		if c := r.out("java-control"); !strings.HasPrefix(c, "refused ") {
			t.Errorf("java trusting only the JDK's cacerts (%s): %q, want its handshake refused", cacerts, c)
		}
		if got := cw.cred.seen("/java-control-" + user); len(got) != 0 {
			t.Errorf("the control request (JDK cacerts only) reached %s: %s", credHost, describe(got))
		}
		wantTerminated(t, r, credHost, credVar, true)
		wantTerminated(t, r, credHost, credVar, false)
	})
}

// jdkCacerts returns the JDK's own trust store (java.home's
// lib/security/cacerts), which must exist.
func jdkCacerts(t *testing.T, java string) string {
	t.Helper()
	real, err := filepath.EvalSymlinks(java)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(filepath.Dir(filepath.Dir(real)), "lib", "security", "cacerts")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the JDK's cacerts: %v", err)
	}
	return p
}

// testNPM: npm, through the proxy variables (npm_config_https_proxy), with
// NODE_EXTRA_CA_CERTS unset so that only NPM_CONFIG_CAFILE trusts the
// sandbox CA, against the registry at https://credHost/npm/ with the
// placeholder as its token: npm view with a project .npmrc holding
// _authToken=${GITHUB_TOKEN} (as for GitHub Packages), and npm ping with
// the token in an npm_config_//HOST/npm/:_authToken variable (in a
// directory with no .npmrc). The
// registry sees the real token as Bearer; npm view shows the description
// (which holds the token) with the placeholder. The control, npm view with
// cafile the world's CA (the server's own issuer), is refused: the
// connection is terminated, and only the sandbox's bundle makes it work.
func (cw *credWorld) testNPM(t *testing.T, user string, uid int) {
	t.Run("npm", func(t *testing.T) {
		testenv.NeedCommand(t, "npm")
		if !onToolPath("npm") || !onToolPath("node") {
			testenv.SkipOrFail(t, "npm or node is not on the sandbox's PATH ("+toolPath()+")")
		}
		registry := "https://" + credHost + "/npm/"
		nerf := "//" + credHost + "/npm/:_authToken"
		rc := "registry=" + registry + "\n" + nerf + "=${" + credVar + "}\naudit=false\nfund=false\nupdate-notifier=false\n"
		files := map[string]string{"view/.npmrc": rc, "control/.npmrc": rc, "ping/.keep": ""}
		start := time.Now()
		r := cw.run(t, uid, files, `export npm_config_cache="$PWD/out/npm-cache" npm_config_update_notifier=false npm_config_fetch_retries=0 npm_config_fetch_timeout=20000
printf '%s\n' "$NPM_CONFIG_CAFILE" > out/npm-cafile
printf '%s\n' "$SSL_CERT_FILE" > out/ssl-cert-file
n() { name=$1; dir=$2; shift 2; (cd $dir && env -u NODE_EXTRA_CA_CERTS "$@" >../out/npm-$name.out 2>../out/npm-$name.err); echo "$name $?"; }
n view view npm view `+npmPkg+` description version --json
n ping ping "npm_config_`+nerf+`=$`+credVar+`" npm ping --registry `+registry+`
n control control npm view control-pkg --cafile `+cw.caFile)
		t.Logf("the npm runs took %v", time.Since(start).Round(time.Millisecond))
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		if got, want := strings.TrimSpace(r.out("npm-cafile")), strings.TrimSpace(r.out("ssl-cert-file")); got == "" || got != want {
			t.Errorf("NPM_CONFIG_CAFILE is %q, want the sandbox's bundle %q", got, want)
		}
		for _, c := range []struct{ name, path, command string }{{"view", "/npm/" + npmPkg, "view"}, {"ping", "/npm/-/ping", "ping"}} {
			if !strings.Contains(r.stdout, c.name+" 0\n") {
				t.Errorf("npm %s failed: stdout %q\nits stderr: %s\naudit %s", c.name, r.stdout, r.out("npm-"+c.name+".err"), decisions(r.audit))
			}
			for _, q := range wantAuthed(t, cw.cred, c.path, "bearer", cw.real) {
				if !headerHas(q.headers, "Npm-Command", c.command) {
					t.Errorf("npm %s: the request is not npm's (no Npm-Command: %s):\n%s", c.name, c.command, q.headers)
				}
			}
		}
		var view struct{ Description, Version string }
		if err := json.Unmarshal([]byte(r.out("npm-view.out")), &view); err != nil || view.Version != "1.0.0" || view.Description != "token "+r.placeholder {
			t.Errorf("npm view printed %q (%v); want version 1.0.0 and the description with the placeholder where the token was", r.out("npm-view.out"), err)
		}
		if !strings.Contains(r.stdout, "control ") || strings.Contains(r.stdout, "control 0\n") || !strings.Contains(r.out("npm-control.err"), "certificate") {
			t.Errorf("npm with cafile the world's CA must be refused for a certificate: stdout %q, stderr %s", r.stdout, r.out("npm-control.err"))
		}
		if got := cw.cred.seen("/npm/control-pkg"); len(got) != 0 {
			t.Errorf("the control request (cafile the world's CA) reached %s: %s", credHost, describe(got))
		}
		wantTerminated(t, r, credHost, credVar, false)
	})
}

// testWebSocket: a WebSocket upgrade through the proxy with the
// placeholder as Bearer: the server gets the real token and the message,
// and its answer (which holds the token, as does a header of its 101)
// comes back with the placeholder.
func (cw *credWorld) testWebSocket(t *testing.T, user string, uid int) {
	t.Run("websocket", func(t *testing.T) {
		r := cw.run(t, uid, map[string]string{"ws.py": wsPy}, `python3 ws.py `+credHost+` /ws-`+user)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		for _, q := range wantAuthed(t, cw.cred, "/ws-"+user, "bearer", cw.real) {
			if q.wsMsg != "hello ws" {
				t.Errorf("the server's WebSocket got %q, want \"hello ws\"", q.wsMsg)
			}
		}
		if h := r.out("ws-head"); !strings.Contains(h, " 101 ") || !headerHas(h, "X-Token", r.placeholder) {
			t.Errorf("the 101's head has not the placeholder in X-Token: %q", h)
		}
		if got, want := r.out("ws-msg"), "echo hello ws token "+r.placeholder; got != want {
			t.Errorf("the WebSocket answer is %q, want %q", got, want)
		}
		wantTerminated(t, r, credHost, credVar, false)
	})
}

// testOpaque: an allowed host that is no credential host gets the
// placeholder, not the real token, and shows its own certificate through a
// CONNECT tunnel and a captured connection (same SHA-256 fingerprint);
// the credential host shows one the sandbox CA signed.
func (cw *credWorld) testOpaque(t *testing.T, user string, uid int) {
	t.Run("other host opaque", func(t *testing.T) {
		script := `T="$GITHUB_TOKEN"
curl -sS --max-time 20 -H "Authorization: Bearer $T" -H "X-Api-Key: $T" -o out/plain.body -w 'plain %{http_code}\n' https://` + plainHost + `/plain-` + user + `
python3 cert.py ` + plainHost + ` out/plain-connect.der ` + credHost + ` out/cred-connect.der
for h in ` + plainHost + ` ` + credHost + `; do
	timeout 20 openssl s_client -connect $h:443 -servername $h </dev/null 2>out/$h.s_client | openssl x509 -outform DER -out out/$h-captured.der
done
cat "$SSL_CERT_FILE" > out/bundle.pem`
		r := cw.run(t, uid, map[string]string{"cert.py": certPy}, script)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
		}
		if !strings.Contains(r.stdout, "plain 200\n") {
			t.Errorf("curl to %s: stdout %q, stderr %q", plainHost, r.stdout, r.stderr)
		}
		got := cw.plain.seen("/plain-" + user)
		if len(got) != 1 || got[0].auth != "Bearer "+r.placeholder || got[0].apiKey != r.placeholder {
			t.Errorf("%s (no credential host) must get the placeholder as sent; it saw: %s", plainHost, describe(got))
		}
		fp := func(der []byte) string { s := sha256.Sum256(der); return hex.EncodeToString(s[:]) }
		own := fp(cw.plainCert.Certificate[0])
		for _, f := range []string{"plain-connect.der", plainHost + "-captured.der"} {
			if g := fp([]byte(r.out(f))); g != own {
				t.Errorf("%s: %s shows a certificate of SHA-256 %s (%d bytes), want its own, %s (s_client: %.500s)", f, plainHost, g, len(r.out(f)), own, r.out(plainHost+".s_client"))
			}
		}
		bundle := cw.sandboxCAs(r.out("bundle.pem"))
		sandboxPool, worldPool := x509.NewCertPool(), x509.NewCertPool()
		for _, c := range bundle {
			sandboxPool.AddCert(c)
		}
		worldPool.AddCert(cw.ca.Leaf)
		for _, f := range []string{"cred-connect.der", credHost + "-captured.der"} {
			c, err := x509.ParseCertificate([]byte(r.out(f)))
			if err != nil {
				t.Errorf("%s: %s showed no certificate: %v (s_client: %.500s)", f, credHost, err, r.out(credHost+".s_client"))
				continue
			}
			if bytes.Equal(c.Raw, cw.credCert.Certificate[0]) || bytes.Equal(c.RawIssuer, cw.ca.Leaf.RawSubject) {
				t.Errorf("%s: %s shows the server's own certificate (issuer %s): the connection was not terminated", f, credHost, c.Issuer)
			}
			if _, err := c.Verify(x509.VerifyOptions{DNSName: credHost, Roots: sandboxPool}); err != nil {
				t.Errorf("%s: %s's certificate (issuer %s) does not verify with the sandbox CA of SSL_CERT_FILE (%d certificates): %v", f, credHost, c.Issuer, len(bundle), err)
			}
			if _, err := c.Verify(x509.VerifyOptions{DNSName: credHost, Roots: worldPool}); err == nil {
				t.Errorf("%s: %s's certificate verifies with the world's CA", f, credHost)
			}
		}
		var plainLines int
		for _, m := range r.lines {
			if m[audit.AttrHost] != plainHost {
				continue
			}
			plainLines++
			if m[audit.AttrTerminated] == true || len(asSlice(m[audit.AttrCredentials])) > 0 {
				t.Errorf("an audit line says %s was terminated or given a credential: %v", plainHost, m)
			}
		}
		if plainLines == 0 || !auditHasTunnel(r.audit, plainHost) {
			t.Errorf("no allowed CONNECT tunnel to %s in the audit:\n%s", plainHost, decisions(r.audit))
		}
		// Only certificates were fetched: no credential was used.
		wantTerminated(t, r, credHost, "", false)
		wantTerminated(t, r, credHost, "", true)
	})
}

// testBadUpstream: a credential host whose certificate no root of
// sandboxd's signed, and one whose certificate is for another name: curl
// gets 502, the audit says why, and the server never gets a request (so
// never the token).
func (cw *credWorld) testBadUpstream(t *testing.T, user string, uid int) {
	t.Run("bad upstream certificate", func(t *testing.T) {
		script := ""
		for _, h := range []string{badCAHost, badNameHost} {
			script += `curl -sS --max-time 20 -D out/` + h + `.head -o out/` + h + `.body -w '` + h + ` %{http_code} %{http_connect}\n' -H "Authorization: Bearer $GITHUB_TOKEN" https://` + h + `/bad-` + user + "\n"
		}
		r := cw.run(t, uid, nil, script)
		for _, c := range []struct {
			host string
			srv  *credServer
		}{{badCAHost, cw.badCA}, {badNameHost, cw.badName}} {
			var line string
			for _, l := range strings.Split(r.stdout, "\n") {
				if strings.HasPrefix(l, c.host+" ") {
					line = l
				}
			}
			f := strings.Fields(line)
			if len(f) != 3 || (f[1] != "502" && f[2] != "502") {
				t.Errorf("curl to %s: want HTTP 502; curl printed %q (http_code http_connect), stderr %q, body %q", c.host, line, r.stderr, r.out(c.host+".body"))
			} else {
				t.Logf("%s: http_code %s, http_connect %s, body %q", c.host, f[1], f[2], r.out(c.host+".body"))
			}
			if got := c.srv.seen(""); len(got) != 0 {
				t.Errorf("%s (a certificate that does not verify) got requests: %s", c.host, describe(got))
			}
			why := slices.ContainsFunc(r.lines, func(m map[string]any) bool {
				reason, _ := m[audit.AttrReason].(string)
				return m[audit.AttrHost] == c.host && strings.Contains(strings.ToLower(reason), "certificate")
			})
			if !why {
				t.Errorf("no audit line for %s whose reason names the certificate:\n%s", c.host, decisions(r.audit))
			}
		}
	})
}

// TestCredentialRefusals: a credential the sandbox cannot have refuses
// the start (exit 125, one line on stderr) and the command never runs: a
// host the network policy does not allow (by flag or in a policy file's
// credentials section), a variable sandboxd's environment lacks, a file
// that does not exist.
func TestCredentialRefusals(t *testing.T) {
	w := newWorld(t)
	real := "ghp_" + randAlnum(t, 36)
	polDir := sharedDir(t)
	os.Chmod(polDir, 0o755)
	policy := func(name, body string) string {
		p := filepath.Join(polDir, name+".yaml")
		if err := os.WriteFile(p, []byte("version: 1\nharness: claude-code\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	allow := []string{"--allow-domain", credHost}
	cases := []struct {
		name  string
		flags []string
	}{
		{"host not allowed", []string{"--credential", credVar + "@" + notAllowedHost}},
		{"one host of two not allowed", append(allow, "--credential", credVar+"@"+credHost+","+notAllowedHost)},
		{"variable missing", append(allow, "--credential", "NO_SUCH_TOKEN@"+credHost)},
		{"policy: host not allowed", append(allow, "--policy", policy("host", "credentials:\n  - env: "+credVar+"\n    hosts: ["+notAllowedHost+"]\n"))},
		{"policy: variable missing", append(allow, "--policy", policy("env", "credentials:\n  - env: NO_SUCH_TOKEN\n    hosts: ["+credHost+"]\n"))},
		{"policy: file missing", append(allow, "--policy", policy("file", "credentials:\n  - env: API_KEY\n    hosts: ["+credHost+"]\n    file: "+filepath.Join(polDir, "no-such-file")+"\n"))},
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					dir := sharedDir(t)
					r := w.sandboxd(t, runOpts{uid: u.uid, dir: dir, flags: c.flags, extraEnv: []string{credVar + "=" + real},
						argv: []string{"sh", "-c", "touch marker; echo the command ran"}})
					_, err := os.Stat(filepath.Join(dir, "marker"))
					if r.code != 125 || err == nil || strings.Contains(r.stdout, "the command ran") {
						t.Errorf("exit %d (want 125), marker made: %v, stdout %q, stderr %.300q", r.code, err == nil, r.stdout, r.stderr)
					}
					if !strings.HasPrefix(r.stderr, "sandboxd: sandbox could not start: ") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
						t.Errorf("stderr is not one line \"sandboxd: sandbox could not start: ...\": %.300q", r.stderr)
					}
					if strings.Contains(r.stderr+r.audit, real) {
						t.Errorf("the refusal shows the real value:\nstderr %q\naudit %s", r.stderr, decisions(r.audit))
					}
				})
			}
		})
	}
}

// TestCredentialPolicyFile: the policy file's credentials section, the
// value read from the file it names: inside, API_KEY holds a placeholder
// (prefix sk- kept); curl reaches the credential host with it as
// X-Api-Key, and the server gets the file's value.
func TestCredentialPolicyFile(t *testing.T) {
	testenv.NeedCommand(t, "curl")
	cw := newCredWorld(t)
	keyDir := sharedDir(t)
	os.Chmod(keyDir, 0o755)
	keyFile := filepath.Join(keyDir, "api-key")
	if err := os.WriteFile(keyFile, []byte(cw.fileValue), 0o644); err != nil {
		t.Fatal(err)
	}
	polDir := sharedDir(t)
	os.Chmod(polDir, 0o755)
	pol := filepath.Join(polDir, "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nharness: claude-code\ncredentials:\n  - env: API_KEY\n    hosts: ["+credHost+"]\n    file: "+keyFile+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := cw.runWith(t, u.uid, nil, `printf %s "$API_KEY" > out/api-key
curl -sS --max-time 20 -H "X-Api-Key: $API_KEY" -D out/head -o out/body -w '%{http_code}\n' https://`+credHost+`/file-`+u.name,
				append(append([]string(nil), cw.allowHost...), "--policy", pol), nil)
			if r.code != 0 || strings.TrimSpace(r.stdout) != "200" {
				t.Fatalf("exit %d, stdout %q\nstderr %s\naudit %s\nthe server saw: %s", r.code, r.stdout, r.stderr, decisions(r.audit), describe(cw.cred.seen("/file-"+u.name)))
			}
			p := r.out("api-key")
			checkPlaceholder(t, p, cw.fileValue, "sk-")
			wantAuthed(t, cw.cred, "/file-"+u.name, "key", cw.fileValue)
			if h := r.out("head"); !headerHas(h, "X-Token", p) {
				t.Errorf("the response's X-Token is not the placeholder:\n%s", h)
			}
			for _, m := range r.lines {
				if m["msg"] == audit.MsgSessionStart {
					if got := asSlice(m[audit.AttrCredentials]); !slices.Equal(got, []string{"API_KEY"}) {
						t.Errorf("the session start line's %q is %q, want [API_KEY]", audit.AttrCredentials, got)
					}
				}
			}
			wantTerminated(t, r, credHost, "API_KEY", false)
		})
	}
}
