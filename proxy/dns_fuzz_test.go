package proxy

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/barry-rocks/sandbox/policy"
)

type nopWriter struct{ dns.ResponseWriter }

func (nopWriter) RemoteAddr() net.Addr    { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353} }
func (nopWriter) WriteMsg(*dns.Msg) error { return nil }

func FuzzDNSQuestion(f *testing.F) {
	for _, s := range []string{"allowed.test.", "x.allowed.test.", `a\.b.allowed.test.`, "0x7f.1.", "ALLOWED.test.", "xn--bcher-kva.test.", "a..b."} {
		f.Add(s, uint16(dns.TypeA))
	}
	f.Add("allowed.test.", uint16(dns.TypeHTTPS))
	d, err := NewDNS(DNSConfig{
		Policy:   Policy{Allow: []string{"allowed.test"}},
		Upstream: "127.0.0.1:9", // discard port: nothing answers
		Timeout:  time.Millisecond,
		Audit:    slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string, qtype uint16) {
		r := new(dns.Msg)
		r.Question = []dns.Question{{Name: name, Qtype: qtype, Qclass: dns.ClassINET}}
		var v dnsVerdict
		d.answer(r, d.pol.Load(), &v)
		if v.rcode == dns.RcodeRefused {
			return
		}
		// Property: only a question for exactly allowed.test, of a type
		// that is not refused, gets past the policy.
		h, err := policy.ParseHost(name)
		if err != nil || h.Name != "allowed.test" {
			t.Fatalf("%q (%d) got past the policy: %+v", name, qtype, v)
		}
		switch qtype {
		case dns.TypeANY, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeAXFR, dns.TypeIXFR:
			t.Fatalf("type %d got past the policy", qtype)
		}
	})
}
