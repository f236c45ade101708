package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/elazarl/goproxy"

	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// TestUpstreamTLSIsOurs: the TLS client configuration goproxy would use
// for a session of its own to a server (its Tr's, the one its HTTPS_PROXY
// dialer and its MITM round trips take) is the proxy's explicit, verifying
// one, whatever the library's default is; and goproxy dials nothing itself.
func TestUpstreamTLSIsOurs(t *testing.T) {
	for _, roots := range []*x509.CertPool{nil, x509.NewCertPool()} {
		s, err := New(Config{Policy: Policy{Allow: []string{"allowed.test"}}, Secret: "s", UpstreamRoots: roots})
		if err != nil {
			t.Fatal(err)
		}
		if s.gp.Tr != s.tr {
			t.Fatal("goproxy's transport is not the proxy's own")
		}
		if s.gp.ConnectDial != nil || s.gp.ConnectDialWithReq != nil {
			t.Error("goproxy keeps a CONNECT dialer of its own (HTTPS_PROXY)")
		}
		for what, c := range map[string]*tls.Config{"plain transport": s.tr.TLSClientConfig, "terminated host": s.upstreamTLS("allowed.test")} {
			if c == nil || c.InsecureSkipVerify || c.VerifyPeerCertificate != nil || c.RootCAs != roots || c.MinVersion < tls.VersionTLS12 {
				t.Errorf("%s: TLS client config %+v, want verification with the configured roots, TLS 1.2 or later", what, c)
			}
		}
	}
}

// TestGoproxyRoundTripRefusesUntrustedUpstream: a request goproxy sends
// itself (ProxyCtx.RoundTrip with no RoundTripper of ours, as for a MITM'd
// connection) to an https server whose certificate the proxy's roots do not
// hold fails the handshake, with the system roots (nil) and with roots
// given; the same server with its certificate among the roots answers.
func TestGoproxyRoundTripRefusesUntrustedUpstream(t *testing.T) {
	cert := proxytest.NewCert(t, "127.0.0.1")
	upstream := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "reached")
	}))
	upstream.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	upstream.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	upstream.StartTLS()
	defer upstream.Close()
	ap := netip.MustParseAddrPort(upstream.Listener.Addr().String())

	for _, tc := range []struct {
		name  string
		roots *x509.CertPool
		ok    bool
	}{
		{"system roots", nil, false},
		{"another server's root", proxytest.NewCert(t, "127.0.0.1").Pool, false},
		{"the server's root", cert.Pool, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Policy: Policy{Allow: []string{"127.0.0.1"}}, Secret: "s", UpstreamRoots: tc.roots})
			if err != nil {
				t.Fatal(err)
			}
			defer s.tr.CloseIdleConnections()
			req, err := http.NewRequestWithContext(context.WithValue(context.Background(), pinKey{}, ap), http.MethodGet, "https://"+ap.String()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := (&goproxy.ProxyCtx{Proxy: s.gp, Req: req}).RoundTrip(req)
			if !tc.ok {
				var ve *tls.CertificateVerificationError
				if err == nil {
					resp.Body.Close()
					t.Fatal("an upstream with an untrusted certificate answered")
				}
				if !errors.As(err, &ve) {
					t.Fatalf("error %v, want a certificate verification error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if b, _ := io.ReadAll(resp.Body); string(b) != "reached" {
				t.Fatalf("body %q", b)
			}
		})
	}
}
