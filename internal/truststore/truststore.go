// Package truststore reads the TLS roots this process trusts, the way Go's
// crypto/x509 reads them, and writes certificates in the forms programs
// read their trust from: a PEM bundle (OpenSSL, curl, git, Python, Node)
// and a Java KeyStore (JKS), which every JVM reads without a dependency.
//
// sandboxd uses it to give a sandbox whose proxy terminates TLS for
// credential hosts a trust that is its own roots plus the sandbox's CA.
package truststore

import (
	"bytes"
	"crypto/sha1"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unicode/utf16"
)

// linuxCertFiles are the bundles Go's crypto/x509 tries on Linux, in its
// order; it reads the first that exists (root_linux.go).
var linuxCertFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian/Ubuntu/Gentoo etc.
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora/RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // OpenSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS/RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine Linux
}

// linuxCertDirs are the directories Go reads every file of on Linux when
// SSL_CERT_DIR is unset.
var linuxCertDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}

// darwinCertFile is the bundle read on macOS, where Go itself asks the
// platform verifier: the system's roots as OpenSSL-style tools read them.
const darwinCertFile = "/etc/ssl/cert.pem"

// SystemRoots returns the DER certificates of the roots this process
// trusts (getenv reads its environment: os.Getenv), deduplicated, in the
// order they were read: on Linux as Go's crypto/x509 loads them
// (LinuxRoots), elsewhere /etc/ssl/cert.pem.
func SystemRoots(getenv func(string) string) [][]byte {
	if runtime.GOOS == "linux" {
		return LinuxRoots(getenv("SSL_CERT_FILE"), getenv("SSL_CERT_DIR"))
	}
	data, _ := os.ReadFile(darwinCertFile)
	return ParsePEM(data)
}

// LinuxRoots reads the roots as Go's crypto/x509 does on Linux, given the
// values of SSL_CERT_FILE and SSL_CERT_DIR ("" for unset): the file, or
// else the first of Go's bundles that can be read; then every file of the
// directories (SSL_CERT_DIR split at ':', or Go's), less symlinks to a
// name in the same directory (c_rehash's hash links).
func LinuxRoots(certFile, certDir string) [][]byte {
	files := linuxCertFiles
	if certFile != "" {
		files = []string{certFile}
	}
	var c collector
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			c.add(data)
			break
		}
	}
	dirs := linuxCertDirs
	if certDir != "" {
		dirs = strings.Split(certDir, ":")
	}
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if sameDirLink(d, e) {
				continue
			}
			if data, err := os.ReadFile(d + "/" + e.Name()); err == nil {
				c.add(data)
			}
		}
	}
	return c.certs
}

// sameDirLink is Go's isSameDirSymlink: a symlink whose target has no '/'.
func sameDirLink(dir string, e fs.DirEntry) bool {
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	target, err := os.Readlink(filepath.Join(dir, e.Name()))
	return err == nil && !strings.Contains(target, "/")
}

// ParsePEM returns the DER of every certificate in data that Go would
// trust from it (x509.CertPool.AppendCertsFromPEM's rule: CERTIFICATE
// blocks without headers that parse); anything else is skipped, and so
// are repeats.
func ParsePEM(data []byte) [][]byte {
	var c collector
	c.add(data)
	return c.certs
}

// collector gathers certificates from PEM data, each once: a repeat is
// not parsed again (a system's directory of roots repeats its bundle, and
// parsing is most of the cost).
type collector struct {
	seen  map[string]bool
	certs [][]byte
}

func (c *collector) add(data []byte) {
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	for len(data) > 0 {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" || len(b.Headers) != 0 || c.seen[string(b.Bytes)] {
			continue
		}
		c.seen[string(b.Bytes)] = true
		if _, err := x509.ParseCertificate(b.Bytes); err == nil {
			c.certs = append(c.certs, b.Bytes)
		}
	}
}

// Dedupe drops the repeats of certs (by their bytes), keeping the first.
func Dedupe(certs [][]byte) [][]byte {
	seen := map[string]bool{}
	out := certs[:0:0]
	for _, c := range certs {
		if !seen[string(c)] {
			seen[string(c)] = true
			out = append(out, c)
		}
	}
	return out
}

// PEM encodes certs (DER) as one PEM bundle, in order.
func PEM(certs [][]byte) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c})
	}
	return b.Bytes()
}

// Entry is one trusted certificate of a KeyStore.
type Entry struct {
	// Alias names the entry; JKS aliases are case-insensitive, so it must
	// be unique in lower case (JKS lowers it).
	Alias string
	DER   []byte
}

// JKS magic, version and tag values (sun.security.provider.JavaKeyStore).
const (
	jksMagic       = 0xFEEDFEED
	jksVersion     = 2
	jksTrustedCert = 2
	// jksWhitener is the string JKS mixes into its integrity digest.
	jksWhitener = "Mighty Aphrodite"
)

// JKS returns a Java KeyStore (JKS, version 2) holding entries as trusted
// certificates, each stamped with created, and sealed with password the
// way the JVM checks it on load (SHA-1 over the password as UTF-16BE,
// "Mighty Aphrodite" and everything before). A truststore holds no
// secret: the password only guards its integrity (Java's default is
// "changeit").
func JKS(entries []Entry, password string, created time.Time) ([]byte, error) {
	var b bytes.Buffer
	put := func(v any) { binary.Write(&b, binary.BigEndian, v) }
	put(uint32(jksMagic))
	put(uint32(jksVersion))
	put(uint32(len(entries)))
	seen := map[string]bool{}
	for _, e := range entries {
		a := strings.ToLower(e.Alias)
		switch {
		case a == "" || !isASCII(a):
			return nil, fmt.Errorf("truststore: alias %q: an alias is non-empty ASCII", e.Alias)
		case seen[a]:
			return nil, fmt.Errorf("truststore: alias %q given twice", a)
		case len(e.DER) == 0:
			return nil, fmt.Errorf("truststore: alias %q: no certificate", a)
		}
		seen[a] = true
		put(uint32(jksTrustedCert))
		putUTF(&b, a)
		put(created.UnixMilli())
		putUTF(&b, "X.509")
		put(uint32(len(e.DER)))
		b.Write(e.DER)
	}
	h := sha1.New()
	for _, u := range utf16.Encode([]rune(password)) {
		h.Write([]byte{byte(u >> 8), byte(u)})
	}
	h.Write([]byte(jksWhitener))
	h.Write(b.Bytes())
	b.Write(h.Sum(nil))
	return b.Bytes(), nil
}

// putUTF writes s as Java's DataOutputStream.writeUTF does for ASCII: a
// big-endian uint16 length, then the bytes.
func putUTF(b *bytes.Buffer, s string) {
	binary.Write(b, binary.BigEndian, uint16(len(s)))
	b.WriteString(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return len(s) <= 0xffff
}

// BundleVars name the PEM bundle a program trusts (OpenSSL and Go, Node's
// extra roots, Python requests, curl, git, pip, npm, the AWS CLI and SDKs,
// Deno, Codex, gRPC's C core, Nix-built programs): a sandbox whose proxy
// terminates TLS sets each to its bundle.
var BundleVars = []string{
	"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
	"PIP_CERT", "NPM_CONFIG_CAFILE", "AWS_CA_BUNDLE", "DENO_CERT", "CODEX_CA_CERTIFICATE",
	"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "NIX_SSL_CERT_FILE",
}

// JKSPassword is the JVM's default truststore password: a truststore holds
// no secret, the password only seals its integrity.
const JKSPassword = "changeit"

// JVMOptions are the JVM options (JAVA_TOOL_OPTIONS) that make jks, a
// truststore JKS wrote with JKSPassword, the JVM's trust.
func JVMOptions(jks string) string {
	return "-Djavax.net.ssl.trustStore=" + jks + " -Djavax.net.ssl.trustStorePassword=" + JKSPassword + " -Djavax.net.ssl.trustStoreType=JKS"
}
