package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

// Credential is one secret the proxy puts into requests to its hosts: the
// sandbox holds Placeholder, and only the proxy, outside, holds Value.
type Credential struct {
	// Name is the variable's name; audit lines carry it, never a value.
	Name string
	// Hosts are the hosts the value is for (policy.ParseHost form:
	// canonical names or IP literals). Every port of them that the policy
	// allows is covered.
	Hosts []string
	// Value is the real secret; Placeholder is what the sandbox sees in
	// its place (NewPlaceholder), of the same length. Two credentials may
	// share a value (GEMINI_API_KEY and GOOGLE_API_KEY), then with the
	// same placeholder.
	Value, Placeholder string
	// Headers are the request headers, beside defaultInjectHeaders, that the
	// value is put into (canonical or not: compared without case). Only
	// these: a header a server stores (object metadata, a content type)
	// would otherwise carry the value to wherever it is read back.
	Headers []string
}

// defaultInjectHeaders are the request headers every credential's value may be
// put into: the ones APIs read keys from.
var defaultInjectHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "X-Auth-Token", "Private-Token", "X-Access-Token"}

// MinCredentialLen is the shortest secret that is injected: a shorter one
// would be found (and scrubbed) in ordinary text.
const MinCredentialLen = 8

// CheckCredentials reports why creds cannot be injected: a name, a host or
// a value missing, a value too short, a placeholder not of the value's
// length, or two values where one holds the other (scrubbing would be
// ambiguous).
func CheckCredentials(creds []Credential) error {
	for i, c := range creds {
		switch {
		case c.Name == "":
			return fmt.Errorf("credential %d: no name", i)
		case len(c.Hosts) == 0:
			return fmt.Errorf("credential %s: no hosts", c.Name)
		case len(c.Value) < MinCredentialLen:
			return fmt.Errorf("credential %s: the value is %d bytes; at least %d are needed to find it in traffic", c.Name, len(c.Value), MinCredentialLen)
		case len(c.Placeholder) != len(c.Value) || c.Placeholder == c.Value:
			return fmt.Errorf("credential %s: the placeholder is not a different value of the same length", c.Name)
		case strings.ContainsAny(c.Value, "\r\n\x00"):
			return fmt.Errorf("credential %s: the value holds a line break or NUL", c.Name)
		}
		for _, h := range c.Hosts {
			ph, err := policy.ParseHost(h)
			if err != nil || ph.String() != h {
				return fmt.Errorf("credential %s: host %q is not a canonical host", c.Name, h)
			}
		}
		for j, o := range creds {
			switch {
			case j == i:
			case o.Value == c.Value:
				if o.Placeholder != c.Placeholder {
					return fmt.Errorf("credentials %s and %s: one value, two placeholders", c.Name, o.Name)
				}
			case strings.Contains(o.Value, c.Value) || strings.Contains(o.Placeholder, c.Value) || strings.Contains(o.Value, c.Placeholder):
				return fmt.Errorf("credentials %s and %s: one value holds the other", c.Name, o.Name)
			}
		}
	}
	return nil
}

// placeholderPrefixes are the known token prefixes a placeholder keeps, so
// a client that checks a token's shape (gh, the Slack and OpenAI SDKs)
// accepts it. The longest match wins.
var placeholderPrefixes = []string{
	"github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
	"sk-ant-api03-", "sk-ant-", "sk-proj-", "sk-",
	"xoxb-", "xoxp-", "xapp-", "glpat-", "AKIA", "ASIA", "AIza", "npm_", "pypi-",
}

// NewPlaceholder returns a random stand-in for value of its shape: the
// known prefix kept, then position by position a random character of the
// same class (lower case, upper case, digit; any other byte kept), so its
// length and punctuation are the value's. An Anthropic key (sk-ant-) also
// keeps its last claudeKeySuffix characters: Claude Code uses an
// ANTHROPIC_API_KEY the user approved, and knows it by those (what it
// stores and shows), so a random one would be refused, or asked about in
// every session. It fails for a value shorter than MinCredentialLen.
func NewPlaceholder(value string) (string, error) {
	if len(value) < MinCredentialLen {
		return "", fmt.Errorf("the value is %d bytes; at least %d are needed", len(value), MinCredentialLen)
	}
	prefix, suffix := publicParts(value)
	for range 8 {
		b := []byte(value)
		rnd := make([]byte, len(b))
		if _, err := rand.Read(rnd); err != nil {
			return "", err
		}
		for i := prefix; i < len(b)-suffix; i++ {
			r := int(rnd[i])
			switch c := b[i]; {
			case c >= 'a' && c <= 'z':
				b[i] = 'a' + byte(r%26)
			case c >= 'A' && c <= 'Z':
				b[i] = 'A' + byte(r%26)
			case c >= '0' && c <= '9':
				b[i] = '0' + byte(r%10)
			}
		}
		if p := string(b); p != value && !strings.Contains(p, value[prefix:]) {
			return p, nil
		}
	}
	return "", errors.New("no placeholder differs from the value (too few characters to vary)")
}

// claudeKeySuffix is how much of an Anthropic key Claude Code knows it by
// (its approved custom keys: the trimmed key's last 20 characters).
const claudeKeySuffix = 20

// CA is a sandbox's own certificate authority: it signs the certificates
// the proxy shows for the hosts it terminates TLS for (credential hosts),
// and is trusted inside the sandbox only. Its key lives in this process's
// memory and nowhere else; its certificate is name-constrained to those
// hosts (and their subdomains: a permitted name's), so even a copy of its
// key could sign for no other name.
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey
	hosts   map[string]bool

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// caValidity is how long a sandbox CA and its certificates are valid.
const caValidity = 90 * 24 * time.Hour

// NewCA makes a CA for hosts (canonical names or IP literals).
func NewCA(hosts []string) (*CA, error) {
	if len(hosts) == 0 {
		return nil, errors.New("sandbox CA: no hosts")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	c := &CA{key: key, leafKey: leafKey, hosts: map[string]bool{}, leaves: map[string]*tls.Certificate{}}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "Barry sandbox CA", Organization: []string{"Barry sandbox (this sandbox only)"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(caValidity),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
	}
	for _, h := range hosts {
		ph, err := policy.ParseHost(h)
		if err != nil {
			return nil, fmt.Errorf("sandbox CA: host %q: %w", h, err)
		}
		c.hosts[ph.String()] = true
		if ph.IsIP() {
			bits := 32
			if ph.IP.Is6() {
				bits = 128
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ph.IP.AsSlice(), Mask: net.CIDRMask(bits, bits)})
		} else {
			// A leading dot would permit subdomains only; the bare name
			// permits the name and its subdomains. Certificates are
			// issued for the exact hosts alone (Leaf).
			tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, ph.Name)
		}
	}
	if len(tmpl.PermittedDNSDomains) == 0 {
		// No name at all may be signed: an empty permitted list would
		// permit every name, so permit one that cannot exist.
		tmpl.PermittedDNSDomains = []string{"no-names.invalid"}
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.PermittedIPRanges = []*net.IPNet{{IP: net.IPv4(0, 0, 0, 0).To4(), Mask: net.CIDRMask(32, 32)}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	if c.cert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	return c, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return big.NewInt(time.Now().UnixNano())
	}
	return n
}

// Certificate returns the CA's certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// PEM returns the CA's certificate, PEM-encoded (never its key).
func (c *CA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

// Leaf returns the certificate the proxy shows for host (canonical), made
// on first use; a host the CA was not made for gets an error.
func (c *CA) Leaf(host string) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.leaves[host]; l != nil {
		return l, nil
	}
	if !c.hosts[host] {
		return nil, fmt.Errorf("sandbox CA: %s is not a credential host", host)
	}
	ph, err := policy.ParseHost(host)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    c.cert.NotBefore,
		NotAfter:     c.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ph.IsIP() {
		tmpl.IPAddresses = []net.IP{ph.IP.AsSlice()}
	} else {
		tmpl.DNSNames = []string{ph.Name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &c.leafKey.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	l := &tls.Certificate{Certificate: [][]byte{der, c.cert.Raw}, PrivateKey: c.leafKey, Leaf: leaf}
	c.leaves[host] = l
	return l, nil
}
