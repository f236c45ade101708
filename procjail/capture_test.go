//go:build linux

package procjail

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"time"

	"github.com/miekg/dns"
)

// clientHello is the first flight of Go's TLS client for serverName.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	c, s := net.Pipe()
	defer c.Close()
	defer s.Close()
	go tls.Client(c, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
	s.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf bytes.Buffer
	b := make([]byte, 64<<10)
	for {
		n, err := s.Read(b)
		buf.Write(b[:n])
		if err != nil || buf.Len() >= 5 && buf.Len() >= 5+int(buf.Bytes()[3])<<8|int(buf.Bytes()[4]) {
			return buf.Bytes()
		}
	}
}

// TestSniff: the capture reads a ClientHello's server name (also split
// over records by length, whatever the low bits of its length), a plain
// HTTP request, and nothing from other bytes.
func TestSniff(t *testing.T) {
	hello := clientHello(t, "allowed.test")
	for _, c := range []struct {
		name   string
		in     []byte
		sni    string
		isHTTP bool
	}{
		{"go hello", hello, "allowed.test", false},
		{"hello and more", append(append([]byte{}, hello...), "GET"...), "allowed.test", false},
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), "", true},
		{"lowercase method", []byte("get / HTTP/1.1\r\n\r\n"), "", false},
		{"ssh", []byte("SSH-2.0-OpenSSH_9.6\r\n"), "", false},
		{"truncated hello", hello[:len(hello)-1], "", false},
		{"empty", nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			sni, isHTTP := sniff(bufio.NewReaderSize(bytes.NewReader(c.in), 64<<10))
			if sni != c.sni || isHTTP != c.isHTTP {
				t.Errorf("sniff = %q, %v; want %q, %v", sni, isHTTP, c.sni, c.isHTTP)
			}
		})
	}
	// A server name with bytes no host name has (CR, LF) would go into
	// the CONNECT head: read as none (bypass hunt F3).
	evil := bytes.Replace(hello, []byte("allowed.test"), []byte("al\r\nX: y.tst"), 1)
	if sni, isHTTP := sniff(bufio.NewReaderSize(bytes.NewReader(evil), 64<<10)); sni != "" || isHTTP {
		t.Errorf("sniff of a hello naming %q = %q, %v; want none", "al\r\nX: y.tst", sni, isHTTP)
	}
	// Every length of the record header's low byte (the bug: 5+L read as
	// (5+hi<<8)|lo).
	for _, name := range []string{"a.test", "ab.test", "abc.test", strings.Repeat("x", 40) + ".test"} {
		if sni, _ := sniff(bufio.NewReaderSize(bytes.NewReader(clientHello(t, name)), 64<<10)); sni != name {
			t.Errorf("sniff of a hello for %s = %q", name, sni)
		}
	}
}

// FuzzSniff: whatever a client sends first, sniff returns without reading
// past the capture's buffer, and a name only from a ClientHello.
func FuzzSniff(f *testing.F) {
	f.Add(clientHello(f, "allowed.test"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{0x16, 3, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		sni, isHTTP := sniff(bufio.NewReaderSize(bytes.NewReader(in), 64<<10))
		if sni != "" && (isHTTP || len(in) == 0 || in[0] != 0x16) {
			t.Errorf("sniff(%q) = %q, %v", in, sni, isHTTP)
		}
	})
}

// TestDNSNames: A and AAAA answers of a successful reply are remembered
// under the question's name (lowercase, no final dot); an error reply, a
// query and other records are not.
func TestDNSNames(t *testing.T) {
	reply := func(rcode int, response bool, rrs ...string) []byte {
		m := new(dns.Msg)
		m.SetQuestion("Allowed.TEST.", dns.TypeA)
		m.Response, m.Rcode = response, rcode
		for _, s := range rrs {
			rr, err := dns.NewRR(s)
			if err != nil {
				t.Fatal(err)
			}
			m.Answer = append(m.Answer, rr)
		}
		b, err := m.Pack()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	n := newDNSNames()
	n.learn(reply(dns.RcodeSuccess, true, "allowed.test. 5 IN CNAME web.test.", "web.test. 5 IN A 192.0.2.10", "web.test. 5 IN AAAA 2001:db8::10"))
	n.learn(reply(dns.RcodeNameError, true, "x.test. 5 IN A 192.0.2.11"))
	n.learn(reply(dns.RcodeSuccess, false, "x.test. 5 IN A 192.0.2.12"))
	n.learn([]byte("not dns"))
	for addr, want := range map[string]string{"192.0.2.10": "allowed.test", "2001:db8::10": "allowed.test", "192.0.2.11": "", "192.0.2.12": "", "192.0.2.99": ""} {
		if got := n.lookup(netip.MustParseAddr(addr)); got != want {
			t.Errorf("lookup(%s) = %q, want %q", addr, got, want)
		}
	}
}

// TestCaptureSetupFailsClosed: a capture that cannot be set up (here its
// port is another forward's) stops the sandbox before the command, with
// the step named: never a sandbox whose other programs would find no
// route and whose user was told nothing.
func TestCaptureSetupFailsClosed(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "p.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	marker := filepath.Join(dir, "ran")
	spec := sh("touch " + marker)
	spec.Forwards = []Forward{{InsidePort: 3130, Network: "tcp", Target: sock}, {InsidePort: 3130, Network: "capture", Target: sock}}
	sb, err := Start(context.Background(), spec)
	if err == nil {
		sb.Wait()
		t.Fatal("the sandbox started although its capture could not listen")
	}
	var se *SetupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "forward capture/3130") {
		t.Errorf("got %v, want a setup error at the capture's forward", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}
