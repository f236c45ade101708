package proxytest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// DNS is a fake upstream resolver on 127.0.0.1 (UDP and TCP on the same
// port) that answers from a table and records every question it sees.
type DNS struct {
	Addr string

	mu      sync.Mutex
	records map[string][]dns.RR // "name.|TYPE"
	seen    map[string]int      // lower-case name without trailing dot
	total   int
	delay   time.Duration
	servers []*dns.Server
}

// NewDNS starts a fake upstream; it stops when the test ends.
func NewDNS(t testing.TB) *DNS {
	t.Helper()
	d := &DNS{records: map[string][]dns.RR{}, seen: map[string]int{}}
	pc, ln := ListenUDPTCP(t)
	d.Addr = pc.LocalAddr().String()
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: d}, {Listener: ln, Handler: d}} {
		started := make(chan struct{})
		s.NotifyStartedFunc = func() { close(started) }
		d.servers = append(d.servers, s)
		go s.ActivateAndServe()
		<-started
	}
	t.Cleanup(func() {
		for _, s := range d.servers {
			s.Shutdown()
		}
	})
	return d
}

// Add adds records in zone-file form ("a.test. 60 IN A 127.0.0.1").
func (d *DNS) Add(t testing.TB, rrs ...string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatalf("proxytest: bad record %q: %v", s, err)
		}
		k := strings.ToLower(rr.Header().Name) + "|" + dns.TypeToString[rr.Header().Rrtype]
		d.records[k] = append(d.records[k], rr)
	}
}

// SetDelay makes every answer wait d.
func (d *DNS) SetDelay(delay time.Duration) {
	d.mu.Lock()
	d.delay = delay
	d.mu.Unlock()
}

// Seen returns how many questions for name (any type) arrived.
func (d *DNS) Seen(name string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seen[strings.TrimSuffix(strings.ToLower(name), ".")]
}

// Total returns how many questions arrived.
func (d *DNS) Total() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total
}

// ServeDNS answers from the table: NXDOMAIN for unknown names, NODATA for
// known names without the type.
func (d *DNS) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.RecursionAvailable = true
	if len(r.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		w.WriteMsg(m)
		return
	}
	q := r.Question[0]
	name := strings.ToLower(q.Name)
	d.mu.Lock()
	d.seen[strings.TrimSuffix(name, ".")]++
	d.total++
	delay := d.delay
	ans := d.records[name+"|"+dns.TypeToString[q.Qtype]]
	known := false
	for k := range d.records {
		if strings.HasPrefix(k, name+"|") {
			known = true
			break
		}
	}
	// Follow one CNAME.
	if cn := d.records[name+"|CNAME"]; len(cn) > 0 && q.Qtype != dns.TypeCNAME {
		ans = append(ans, cn...)
		target := strings.ToLower(cn[0].(*dns.CNAME).Target)
		ans = append(ans, d.records[target+"|"+dns.TypeToString[q.Qtype]]...)
	}
	d.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	m.Answer = ans
	w.WriteMsg(m)
}

// ListenUDPTCP listens on one loopback port for both UDP and TCP, retrying
// when the kernel's free UDP port is taken for TCP. The caller closes both.
func ListenUDPTCP(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	for i := 0; ; i++ {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		pc.Close()
		if i == 50 {
			t.Fatal(err)
		}
	}
}
