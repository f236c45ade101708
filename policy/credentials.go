package policy

import (
	"errors"
	"fmt"
	"net/textproto"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CredentialSpec is one secret the sandbox gets only as a placeholder:
// the proxy, outside, puts the real value into the requests to Hosts
// (sandboxd run --credential, and the policy file's top-level credentials
// section, outside the SDK's Bound like filesystem and environment). It
// names where the value is; it never holds one.
type CredentialSpec struct {
	// Env is the variable the sandbox's command finds the placeholder in.
	Env string `json:"env"`
	// Hosts are canonical hosts (ParseHost: names or IP literals; no
	// wildcard, no port): every port of them that the policy allows is
	// covered, and the policy must allow each.
	Hosts []string `json:"hosts"`
	// File, when set, holds the real value (trailing line breaks trimmed)
	// in place of sandboxd's own variable Env: absolute, "~/..." or
	// relative to the policy file's directory. The sandbox does not see
	// it (it is a hidden path inside).
	File string `json:"file,omitempty"`
	// Headers are request header names (CredentialHeader's canonical
	// form), beside the proxy's defaults, that the value may be put into;
	// the proxy puts it into no other header (one a server stores and
	// shows back, such as S3's x-amz-meta-*, would carry it out). nil:
	// the defaults alone (--credential has no headers).
	Headers []string `json:"headers,omitempty"`
}

// RuleCredentialFile is the rule of a path hidden because a credential's
// value is read from it.
const RuleCredentialFile = "credentials.file"

// CheckEnvName reports why s is not a variable name a credential can use
// (letters, digits and '_', not starting with a digit: what shells can
// set and read).
func CheckEnvName(s string) error {
	if s == "" {
		return errors.New("empty variable name")
	}
	for i, c := range s {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return fmt.Errorf("%q is not a variable name (letters, digits and '_', not starting with a digit)", s)
		}
	}
	return nil
}

// CredentialHost canonicalizes one host of a credential. A wildcard or a
// port is refused: the value goes to exactly the hosts named, on every
// port the policy allows.
func CredentialHost(h string) (string, error) {
	if strings.Contains(h, "*") {
		return "", fmt.Errorf("%q: a credential host is exact, not a pattern", h)
	}
	ph, err := ParseHost(h)
	if err != nil {
		return "", err
	}
	if _, port, _ := SplitHostPort(h); port != "" {
		return "", fmt.Errorf("%q: a credential host has no port (it covers every port the policy allows)", h)
	}
	return ph.String(), nil
}

// CredentialHeader canonicalizes one header a credential's value may be
// put into (textproto.CanonicalMIMEHeaderKey). It must be an HTTP field
// name (RFC 9110 token characters), and not one that frames or routes the
// request (Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive,
// Upgrade, TE, Trailer, Proxy-*): a value there would change where or how
// the request goes, not authenticate it, and hop-by-hop ones are dropped
// before the server anyway.
func CredentialHeader(h string) (string, error) {
	if h == "" {
		return "", errors.New("empty header name")
	}
	for i := 0; i < len(h); i++ {
		if !isTokenChar(h[i]) {
			return "", fmt.Errorf("%q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~)", h)
		}
	}
	c := textproto.CanonicalMIMEHeaderKey(h)
	switch {
	case c == "Host", c == "Content-Length", c == "Transfer-Encoding", c == "Connection", c == "Keep-Alive",
		c == "Upgrade", c == "Te", c == "Trailer", strings.HasPrefix(c, "Proxy-"):
		return "", fmt.Errorf("%s: a header that frames or routes the request cannot carry a credential", c)
	}
	return c, nil
}

// isTokenChar reports whether b may be in an HTTP field name (RFC 9110
// tchar).
func isTokenChar(b byte) bool {
	switch {
	case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// ParseCredentialFlag reads --credential ENV@HOST[,HOST...].
func ParseCredentialFlag(v string) (CredentialSpec, error) {
	env, hosts, ok := strings.Cut(v, "@")
	if !ok {
		return CredentialSpec{}, fmt.Errorf("%q: want ENV@HOST[,HOST...]", v)
	}
	if err := CheckEnvName(env); err != nil {
		return CredentialSpec{}, err
	}
	c := CredentialSpec{Env: env}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return CredentialSpec{}, fmt.Errorf("%q: empty host (want ENV@HOST[,HOST...])", v)
		}
		ch, err := CredentialHost(h)
		if err != nil {
			return CredentialSpec{}, err
		}
		if hasPath(c.Hosts, ch) {
			return CredentialSpec{}, fmt.Errorf("%q: host %s given twice", v, ch)
		}
		c.Hosts = append(c.Hosts, ch)
	}
	return c, nil
}

// CheckCredentialFile reports why f cannot name a credential's file.
func CheckCredentialFile(f string) error {
	switch {
	case f == "":
		return errors.New("empty path")
	case strings.ContainsAny(f, "\x00\r\n"):
		return fmt.Errorf("%q: control character in path", f)
	case strings.HasPrefix(f, "~") && f != "~" && !strings.HasPrefix(f, "~/"):
		return fmt.Errorf("%q: only ~/ (the current user's home) is supported", f)
	case f == "~":
		return errors.New(`"~" is a directory, not a file`)
	}
	return nil
}

// FilePath is where the value of c is read: File made absolute against
// the policy file's directory (policyDir), "~/" against home; "" when c
// reads sandboxd's environment.
func (c CredentialSpec) FilePath(policyDir, home string) string {
	switch f := c.File; {
	case f == "":
		return ""
	case strings.HasPrefix(f, "~/"):
		return filepath.Join(home, f[2:])
	case filepath.IsAbs(f):
		return filepath.Clean(f)
	default:
		return filepath.Join(policyDir, f)
	}
}

// DecideCredential decides every host of c with d, the session's network
// decider as the proxy compiles it (CompileNetwork(..., true)): the first
// host d does not allow denies the credential (the sandbox must refuse to
// start: the value would be for a host it cannot reach, or one the policy
// denies).
func (d *NetworkDecider) DecideCredential(c CredentialSpec) Decision {
	for _, h := range c.Hosts {
		if hd := d.DecideHostName(h); !hd.Allowed() {
			return Denied(fmt.Sprintf("credential %s: host %s is not allowed by the session's network policy: %s", c.Env, h, hd.Reason), hd.Rule)
		}
	}
	return AllowedBy(fmt.Sprintf("credential %s: every host is allowed", c.Env), "")
}

// credentials decodes the policy file's credentials section: a list of
// {env, hosts, file?, headers?}, each variable at most once.
func (d *decoder) credentials(n *yaml.Node, path string) []CredentialSpec {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "must be a list of credentials ({env, hosts, file, headers}), got %s", kindName(n))
		return nil
	}
	out := []CredentialSpec{}
	seen := map[string]bool{}
	for i, e := range n.Content {
		p := index(path, i)
		c, ok := d.credential(e, p)
		if !ok {
			continue
		}
		if seen[c.Env] {
			d.errf(e, join(p, "env"), "%s is declared twice", c.Env)
			continue
		}
		seen[c.Env] = true
		out = append(out, c)
	}
	return out
}

// credential decodes one entry of the credentials section; false when it
// is missing a required field.
func (d *decoder) credential(n *yaml.Node, p string) (CredentialSpec, bool) {
	var c CredentialSpec
	got := map[string]bool{}
	if !d.fields(n, p, map[string]func(*yaml.Node, string){
		"env": func(v *yaml.Node, p string) {
			got["env"] = true
			c.Env = d.str(v, p)
			if err := CheckEnvName(c.Env); err != nil && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "%v", err)
			}
		},
		"hosts": func(v *yaml.Node, p string) { got["hosts"] = true; c.Hosts = d.credentialHosts(v, p) },
		"file": func(v *yaml.Node, p string) {
			c.File = d.str(v, p)
			if err := CheckCredentialFile(c.File); err != nil && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "%v", err)
			}
		},
		"headers": func(v *yaml.Node, p string) { c.Headers = d.credentialHeaders(v, p) },
	}) {
		return c, false
	}
	for _, f := range []string{"env", "hosts"} {
		if !got[f] {
			d.errf(n, join(p, f), "missing required field")
		}
	}
	return c, got["env"] && got["hosts"]
}

// credentialHosts decodes a credential's hosts: at least one, each exact
// and canonicalized, none twice.
func (d *decoder) credentialHosts(n *yaml.Node, path string) []string {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "must be a list of hosts, got %s", kindName(n))
		return nil
	}
	if len(n.Content) == 0 {
		d.errf(n, path, "at least one host is needed")
	}
	out := []string{}
	for i, e := range n.Content {
		p := index(path, i)
		if v := resolveAlias(e); v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			d.errf(e, p, "must be a string, got %s", kindName(e))
			continue
		}
		ch, err := CredentialHost(resolveAlias(e).Value)
		switch {
		case err != nil:
			d.errf(e, p, "%v", err)
		case hasPath(out, ch):
			d.errf(e, p, "host %s is listed twice", ch)
		default:
			out = append(out, ch)
		}
	}
	return out
}

// credentialHeaders decodes a credential's headers: each a header name
// CredentialHeader accepts, canonicalized, none twice (whatever its case).
// An empty list is the defaults alone, as an absent one.
func (d *decoder) credentialHeaders(n *yaml.Node, path string) []string {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "must be a list of header names, got %s", kindName(n))
		return nil
	}
	var out []string
	for i, e := range n.Content {
		p := index(path, i)
		if v := resolveAlias(e); v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
			d.errf(e, p, "must be a string, got %s", kindName(e))
			continue
		}
		ch, err := CredentialHeader(resolveAlias(e).Value)
		switch {
		case err != nil:
			d.errf(e, p, "%v", err)
		case hasPath(out, ch):
			d.errf(e, p, "header %s is listed twice", ch)
		default:
			out = append(out, ch)
		}
	}
	return out
}
