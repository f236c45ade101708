package goproxy

import (
	"crypto/x509"
	"testing"
)

// TestBuiltinCALazy: the built-in CA is not parsed when the package is
// loaded (the fork's one change), and signs host certificates on first use.
func TestBuiltinCALazy(t *testing.T) {
	if len(GoproxyCa.Certificate) != 0 {
		t.Fatal("the built-in CA was parsed before first use")
	}
	cfg, err := MitmConnect.TLSConfig("example.test:443", &ProxyCtx{Proxy: NewProxyHttpServer()})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(GoproxyCa.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil || leaf.DNSNames[0] != "example.test" {
		t.Errorf("host certificate %v not signed by the built-in CA: %v", leaf.DNSNames, err)
	}
}
