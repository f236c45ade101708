package proxy_test

import (
	"bufio"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
)

// echKeys builds one X25519 / HKDF-SHA256 / AES-128-GCM ECHConfig (RFC 9849
// draft-25 wire form, version 0xfe0d) with the given public name, and
// returns the server key and the client's ECHConfigList.
func echKeys(t *testing.T, publicName string) (tls.EncryptedClientHelloKey, []byte) {
	t.Helper()
	k, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pub := k.PublicKey().Bytes()
	var c []byte
	c = append(c, 7)                           // config_id
	c = binary.BigEndian.AppendUint16(c, 0x20) // DHKEM(X25519, HKDF-SHA256)
	c = binary.BigEndian.AppendUint16(c, uint16(len(pub)))
	c = append(c, pub...)
	c = binary.BigEndian.AppendUint16(c, 4) // cipher suites
	c = binary.BigEndian.AppendUint16(c, 1) // HKDF-SHA256
	c = binary.BigEndian.AppendUint16(c, 1) // AES-128-GCM
	c = append(c, 0)                        // maximum_name_length
	c = append(c, byte(len(publicName)))
	c = append(c, publicName...)
	c = binary.BigEndian.AppendUint16(c, 0) // extensions
	var cfg []byte
	cfg = binary.BigEndian.AppendUint16(cfg, 0xfe0d)
	cfg = binary.BigEndian.AppendUint16(cfg, uint16(len(c)))
	cfg = append(cfg, c...)
	list := binary.BigEndian.AppendUint16(nil, uint16(len(cfg)))
	list = append(list, cfg...)
	return tls.EncryptedClientHelloKey{Config: cfg, PrivateKey: k.Bytes()}, list
}

// TestECHFrontingRefused: a ClientHello with an encrypted_client_hello
// extension shows the proxy only its outer name; a shared server (a CDN's
// client-facing server) decrypts the inner one and serves that host. An
// outer name equal to the CONNECT host must not carry the tunnel to another
// host: the proxy refuses a ClientHello that carries ECH.
func TestECHFrontingRefused(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	key, list := echKeys(t, "allowed.test")
	// A "CDN" on loopback that serves allowed.test and other.test and
	// accepts ECH, like a client-facing server.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srvCfg := &tls.Config{
		Certificates:             []tls.Certificate{e.cert.TLS},
		EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{key},
		MinVersion:               tls.VersionTLS13,
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "served %s", r.TLS.ServerName)
	}), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(tls.NewListener(ln, srvCfg))
	t.Cleanup(func() { hs.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	c, resp := e.connect("allowed.test:"+port, true)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d %s", resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	tc := tls.Client(c, &tls.Config{
		ServerName:                     "other.test",
		RootCAs:                        e.cert.Pool,
		EncryptedClientHelloConfigList: list,
		MinVersion:                     tls.VersionTLS13,
	})
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err == nil {
		fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
		got, _ := io.ReadAll(tc)
		tc.Close()
		t.Fatalf("an ECH ClientHello (outer allowed.test, inner other.test) went through; ECH accepted=%v; server said %q",
			tc.ConnectionState().ECHAccepted, got)
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	want := "sni mismatch: ClientHello carries encrypted_client_hello (the server name the server sees is hidden)"
	if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != want {
		t.Fatalf("audit = %v\nwant reason %q", rec, want)
	}
}

// pgSSLRequest is PostgreSQL's SSLRequest: length 8, code 80877103.
var pgSSLRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// pgServer is a PostgreSQL-style front end on loopback that routes by SNI,
// as multi-tenant poolers do: it answers an SSLRequest with 'S' and then
// serves the TLS handshake for whichever name the ClientHello asks for,
// writing that name back.
func pgServer(t *testing.T, e *env) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for i := 0; i < 8; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				req := make([]byte, 8)
				if _, err := io.ReadFull(c, req); err != nil || string(req) != string(pgSSLRequest) {
					return
				}
				c.Write([]byte{'S'})
				tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{e.cert.TLS}})
				if tc.Handshake() != nil {
					return
				}
				io.WriteString(tc, "tenant "+tc.ConnectionState().ServerName)
				tc.Close()
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// pgTLS opens a tunnel to target, sends an SSLRequest, and on 'S' does a
// TLS handshake for serverName; it returns what the server wrote.
func pgTLS(t *testing.T, e *env, target, serverName string) (string, error) {
	t.Helper()
	c, resp := e.connect(target, true)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT %s: %d %s", target, resp.StatusCode, resp.Header.Get("X-Proxy-Error"))
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(pgSSLRequest); err != nil {
		return "", err
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'S' {
		return "", fmt.Errorf("SSLRequest answer %q: %v", b, err)
	}
	tc := tls.Client(c, &tls.Config{ServerName: serverName, RootCAs: e.cert.Pool})
	if err := tc.Handshake(); err != nil {
		return "", err
	}
	got, err := io.ReadAll(tc)
	return string(got), err
}

// TestPostgresSSLRequestThenMismatchedSNIRefused: PostgreSQL clients send
// an 8-byte SSLRequest in clear and only then the ClientHello. The first
// flight is not TLS, so the SNI check used to pass the tunnel and never see
// the ClientHello; a front end that routes by SNI then served another
// tenant than the CONNECT host. The ClientHello behind an SSLRequest is now
// checked like a first one.
func TestPostgresSSLRequestThenMismatchedSNIRefused(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	port := pgServer(t, e)
	if got, err := pgTLS(t, e, "also.test:"+port, "also.test"); err != nil || got != "tenant also.test" {
		t.Fatalf("matching SNI behind an SSLRequest: %q, %v", got, err)
	}
	if got, err := pgTLS(t, e, "allowed.test:"+port, "other.test"); err == nil {
		t.Fatalf("a ClientHello for other.test behind an SSLRequest went through a tunnel to allowed.test: server said %q", got)
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	want := "sni mismatch: ClientHello names other.test but CONNECT named allowed.test"
	if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != want {
		t.Fatalf("audit = %v\nwant reason %q", rec, want)
	}
}

// TestUnrequestedSwitchingProtocolsRefused: an upstream that answers a
// plain request with 101 and websocket headers made goproxy hijack the
// client connection and leave it hanging, outside the connection count,
// SetPolicy and Close. The proxy now answers 502 with the reason and closes.
func TestUnrequestedSwitchingProtocolsRefused(t *testing.T) {
	e := newEnv(t, defaultPolicy())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil || l == "\r\n" {
				break
			}
		}
		io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nFROM-UPSTREAM")
		io.Copy(io.Discard, c)
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	c, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test:%s\r\nProxy-Authorization: %s\r\n\r\n", port, port, basic(e.srv.User(), e.srv.Secret()))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	want := "upstream failure: 127.0.0.1:" + port + ": answered 101 Switching Protocols to a request without an upgrade"
	if resp.StatusCode != http.StatusBadGateway || resp.Header.Get("X-Proxy-Error") != want {
		t.Fatalf("answer %d %q body %q, want 502 %q", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), got, want)
	}
	rec := e.audit.waitAudit(t, "allowed.test")
	if rec[audit.AttrDecision] != "deny" || rec[audit.AttrReason] != want {
		t.Fatalf("audit = %v", rec)
	}
}
