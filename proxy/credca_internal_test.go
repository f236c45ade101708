package proxy

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"testing"
	"time"
)

// The CA's constraint holds against its own key: a certificate it signs
// for another name does not verify (what a copy of the key could do).
func TestCAKeyCannotSignOtherNames(t *testing.T) {
	ca, err := NewCA([]string{"allowed.test"})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"allowed.test", true}, {"api.allowed.test", true}, {"other.test", false}, {"allowed.test.evil", false}} {
		tmpl := &x509.Certificate{
			SerialNumber: serial(), Subject: pkix.Name{CommonName: tc.name}, DNSNames: []string{tc.name},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
		if err != nil {
			t.Fatal(err)
		}
		leaf, _ := x509.ParseCertificate(der)
		_, err = leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.name})
		if (err == nil) != tc.ok {
			t.Errorf("%s signed with the CA's key: verify error %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
