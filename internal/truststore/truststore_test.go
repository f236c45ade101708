package truststore

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// testCert makes a self-signed CA certificate named cn (DER).
func testCert(t testing.TB, cn string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func pemOf(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }

// TestParsePEM: what AppendCertsFromPEM would take, nothing else.
func TestParsePEM(t *testing.T) {
	a, b := testCert(t, "a"), testCert(t, "b")
	data := bytes.Join([][]byte{
		pemOf(a),
		[]byte("junk between\n"),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte("k")}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("not DER")}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"X": "y"}, Bytes: b}),
		pemOf(b),
	}, nil)
	got := ParsePEM(data)
	if len(got) != 2 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) {
		t.Fatalf("ParsePEM kept %d certificates, want a and b", len(got))
	}
	if !bytes.Equal(PEM(got), append(pemOf(a), pemOf(b)...)) {
		t.Error("PEM does not round-trip")
	}
}

// TestLinuxRoots: SSL_CERT_FILE alone replaces the bundle list, and the
// files of SSL_CERT_DIR's directories are added, hash links skipped and
// repeats dropped, in reading order.
func TestLinuxRoots(t *testing.T) {
	a, b, c := testCert(t, "a"), testCert(t, "b"), testCert(t, "c")
	dir := t.TempDir()
	file := filepath.Join(dir, "bundle.pem")
	os.WriteFile(file, append(pemOf(a), pemOf(b)...), 0o644)
	d1, d2 := filepath.Join(dir, "d1"), filepath.Join(dir, "d2")
	os.Mkdir(d1, 0o755)
	os.Mkdir(d2, 0o755)
	os.WriteFile(filepath.Join(d1, "c.pem"), pemOf(c), 0o644)
	os.WriteFile(filepath.Join(d1, "a-again.pem"), pemOf(a), 0o644)
	// A same-directory link (c_rehash's) is skipped: its target is read
	// already. One to another directory is read.
	os.Symlink("c.pem", filepath.Join(d1, "1234abcd.0"))
	os.Symlink(file, filepath.Join(d2, "bundle-link.pem"))
	got := LinuxRoots(file, d1+":"+d2+":"+filepath.Join(dir, "missing"))
	if len(got) != 3 || !bytes.Equal(got[0], a) || !bytes.Equal(got[1], b) || !bytes.Equal(got[2], c) {
		t.Fatalf("LinuxRoots read %d certificates, want a, b, c", len(got))
	}
	if got := LinuxRoots(filepath.Join(dir, "missing.pem"), d1); len(got) != 2 {
		t.Errorf("a missing SSL_CERT_FILE: %d certificates, want the directory's 2 (Go tries no other bundle)", len(got))
	}
}

// TestSystemRootsAreGos: with this process's environment, the roots read
// are the pool Go's crypto/x509 verifies with.
func TestSystemRootsAreGos(t *testing.T) {
	testenv.OnlyOn(t, "linux") // Go reads the platform verifier elsewhere
	sys, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	mine := x509.NewCertPool()
	for _, der := range SystemRoots(os.Getenv) {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		mine.AddCert(c)
	}
	if !mine.Equal(sys) {
		t.Errorf("SystemRoots differs from x509.SystemCertPool")
	}
}

// TestJKSKeytool: the JVM's own keytool loads the store with the
// password (so the digest is right), lists every entry as a trusted
// certificate, exports each one's certificate unchanged, and refuses a
// wrong password.
func TestJKSKeytool(t *testing.T) {
	keytool := testenv.NeedCommand(t, "keytool") // CI installs default-jdk-headless
	certs := []Entry{{"Barry-Sandbox-CA", testCert(t, "sandbox")}, {"root-1", testCert(t, "r1")}, {"root-2", testCert(t, "r2")}}
	data, err := JKS(certs, "changeit", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "truststore.jks")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// One JVM start: -rfc lists every entry with its certificate.
	out, err := exec.Command(keytool, "-list", "-rfc", "-keystore", f, "-storepass", "changeit", "-storetype", "JKS").CombinedOutput()
	if err != nil {
		t.Fatalf("keytool -list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Your keystore contains 3 entries") || strings.Count(string(out), "trustedCertEntry") != 3 {
		t.Errorf("keytool -list:\n%s", out)
	}
	got := ParsePEM(out)
	if len(got) != len(certs) {
		t.Fatalf("keytool lists %d certificates, want %d:\n%s", len(got), len(certs), out)
	}
	for _, e := range certs {
		if !strings.Contains(string(out), "Alias name: "+strings.ToLower(e.Alias)+"\n") || !slices.ContainsFunc(got, func(d []byte) bool { return bytes.Equal(d, e.DER) }) {
			t.Errorf("%s: not listed with its certificate:\n%s", e.Alias, out)
		}
	}
	out, err = exec.Command(keytool, "-list", "-keystore", f, "-storepass", "wrongpass").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "password was incorrect") {
		t.Errorf("a wrong password: %v\n%s", err, out)
	}
}

func TestJKSRefuses(t *testing.T) {
	der := testCert(t, "x")
	for _, l := range [][]Entry{{{"", der}}, {{"a", der}, {"A", der}}, {{"a", nil}}, {{"é", der}}} {
		if _, err := JKS(l, "changeit", time.Now()); err == nil {
			t.Errorf("JKS(%v) made a store", l)
		}
	}
}
