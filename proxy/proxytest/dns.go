package proxytest

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Zone is a fake DNS zone: it answers from a table of records and records
// every question it sees. It needs no testing.TB, so a command (the
// scripts' fakeupstream) can serve one as well as a test.
type Zone struct {
	mu        sync.Mutex
	records   map[string][]dns.RR // "name.|TYPE"
	questions []string            // "name. TYPE", in arrival order
	delay     time.Duration
	notify    func(string)
}

// NewZone returns an empty zone: every name is unknown (NXDOMAIN).
func NewZone() *Zone {
	return &Zone{records: map[string][]dns.RR{}}
}

// AddRR adds records in zone-file form ("a.test. 60 IN A 127.0.0.1"). On
// a bad record it adds none of them.
func (z *Zone) AddRR(rrs ...string) error {
	parsed := make([]dns.RR, 0, len(rrs))
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			return fmt.Errorf("bad record %q: %w", s, err)
		}
		if rr == nil {
			return fmt.Errorf("bad record %q: empty", s)
		}
		parsed = append(parsed, rr)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, rr := range parsed {
		k := rrKey(rr.Header().Name, rr.Header().Rrtype)
		z.records[k] = append(z.records[k], rr)
	}
	return nil
}

func rrKey(name string, t uint16) string {
	return strings.ToLower(name) + "|" + dns.Type(t).String()
}

// SetDelay makes every answer wait d.
func (z *Zone) SetDelay(d time.Duration) {
	z.mu.Lock()
	z.delay = d
	z.mu.Unlock()
}

// OnQuestion makes the zone call f with each question ("name. TYPE", as
// Questions lists it) as it arrives, before answering.
func (z *Zone) OnQuestion(f func(question string)) {
	z.mu.Lock()
	z.notify = f
	z.mu.Unlock()
}

// Questions returns the questions seen so far, in order, each as the
// lower-case name with its trailing dot, a space and the type
// ("allowed.test. A").
func (z *Zone) Questions() []string {
	z.mu.Lock()
	defer z.mu.Unlock()
	return append([]string(nil), z.questions...)
}

// Seen returns how many questions for name (any type; case and a trailing
// dot do not matter) arrived.
func (z *Zone) Seen(name string) int {
	prefix := dns.Fqdn(strings.ToLower(name)) + " "
	n := 0
	for _, q := range z.Questions() {
		if strings.HasPrefix(q, prefix) {
			n++
		}
	}
	return n
}

// Total returns how many questions arrived.
func (z *Zone) Total() int {
	z.mu.Lock()
	defer z.mu.Unlock()
	return len(z.questions)
}

// ServeDNS answers from the table: NXDOMAIN for unknown names, NODATA for
// known names without the type; one CNAME is followed. A message without
// exactly one question gets FORMERR.
func (z *Zone) ServeDNS(w dns.ResponseWriter, r *dns.Msg) {
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
	question := name + " " + dns.Type(q.Qtype).String()
	z.mu.Lock()
	z.questions = append(z.questions, question)
	delay, notify := z.delay, z.notify
	ans := z.records[rrKey(name, q.Qtype)]
	known := false
	for k := range z.records {
		if strings.HasPrefix(k, name+"|") {
			known = true
			break
		}
	}
	if cn := z.records[rrKey(name, dns.TypeCNAME)]; len(cn) > 0 && q.Qtype != dns.TypeCNAME {
		ans = append(ans, cn...)
		ans = append(ans, z.records[rrKey(cn[0].(*dns.CNAME).Target, q.Qtype)]...)
	}
	z.mu.Unlock()
	if notify != nil {
		notify(question)
	}
	if delay > 0 {
		time.Sleep(delay)
	}
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	m.Answer = ans
	w.WriteMsg(m)
}

// Serve answers on pc (UDP) and ln (TCP); either may be nil. It returns
// once both serve; stop shuts them down and closes pc and ln.
func (z *Zone) Serve(pc net.PacketConn, ln net.Listener) (stop func(), err error) {
	var servers []*dns.Server
	stop = func() {
		for _, s := range servers {
			s.Shutdown()
		}
	}
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: z}, {Listener: ln, Handler: z}} {
		if s.PacketConn == nil && s.Listener == nil {
			continue
		}
		started := make(chan struct{})
		failed := make(chan error, 1)
		s.NotifyStartedFunc = func() { close(started) }
		go func() { failed <- s.ActivateAndServe() }()
		select {
		case <-started:
			servers = append(servers, s)
		case err := <-failed:
			stop()
			return nil, fmt.Errorf("proxytest: serving DNS: %w", err)
		}
	}
	return stop, nil
}

// DNS is a Zone served on 127.0.0.1 (UDP and TCP on the same port) for
// one test: a fake upstream resolver.
type DNS struct {
	*Zone
	// Addr is the "127.0.0.1:PORT" it answers on.
	Addr string
}

// NewDNS starts a fake upstream with an empty zone; it stops when the
// test ends.
func NewDNS(t testing.TB) *DNS {
	t.Helper()
	z := NewZone()
	pc, ln := ListenUDPTCP(t)
	stop, err := z.Serve(pc, ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &DNS{Zone: z, Addr: pc.LocalAddr().String()}
}

// Add is AddRR, failing the test on a bad record.
func (d *DNS) Add(t testing.TB, rrs ...string) {
	t.Helper()
	if err := d.AddRR(rrs...); err != nil {
		t.Fatalf("proxytest: %v", err)
	}
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
