package proxytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a self-signed certificate and a pool that trusts it.
type Cert struct {
	TLS  tls.Certificate
	Pool *x509.CertPool
	PEM  []byte // the certificate, PEM encoded
}

// NewCert returns a self-signed certificate valid for names (DNS names or
// IP addresses).
func NewCert(t testing.TB, names ...string) *Cert {
	t.Helper()
	c, err := SelfSigned("proxytest", names...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// SelfSigned makes an ECDSA P-256 certificate for names (DNS names or IP
// addresses), valid for a day and its own CA, for test servers: the one
// certificate maker of the tests, scripts/fakeupstream and the integration
// fake network.
func SelfSigned(commonName string, names ...string) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &Cert{
		TLS:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Pool: pool,
		PEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

// WritePEM writes the certificate to a file in t's temp dir (for curl
// --cacert) and returns its path.
func (c *Cert) WritePEM(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(p, c.PEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
