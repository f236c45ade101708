//go:build linux

package procjail

import (
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// dnsNames remembers, for the capture, the name each address came from in
// the sandbox's own DNS answers (those the DNS proxy gave, relayed by the
// init), as Cilium's FQDN policy learns addresses: a connection whose
// first bytes name nothing (ssh, a database protocol, a server that
// speaks first) goes to the proxy by that name. The proxy still dials the
// address only if that name's own answer holds it, so a wrong entry
// gains nothing.
type dnsNames struct {
	mu sync.Mutex
	m  map[netip.Addr]learned
}

type learned struct {
	name    string
	expires time.Time
}

const (
	// maxLearned bounds the table; past it, expired entries go first,
	// then new answers are not learned.
	maxLearned = 8192
	// learnedTTL bounds how long an answer is remembered, whatever its
	// TTL (and at least a minute: clients keep addresses past short TTLs).
	minLearnedTTL, maxLearnedTTL = time.Minute, time.Hour
)

func newDNSNames() *dnsNames { return &dnsNames{m: map[netip.Addr]learned{}} }

// learn reads a DNS reply and remembers its A and AAAA answers under the
// question's name.
func (d *dnsNames) learn(reply []byte) {
	if d == nil {
		return
	}
	var m dns.Msg
	if m.Unpack(reply) != nil || !m.Response || m.Rcode != dns.RcodeSuccess || len(m.Question) != 1 {
		return
	}
	name := strings.TrimSuffix(strings.ToLower(m.Question[0].Name), ".")
	if name == "" {
		return
	}
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, rr := range m.Answer {
		var a netip.Addr
		switch r := rr.(type) {
		case *dns.A:
			a, _ = netip.AddrFromSlice(r.A.To4())
		case *dns.AAAA:
			a, _ = netip.AddrFromSlice(r.AAAA)
		default:
			continue
		}
		if !a.IsValid() {
			continue
		}
		ttl := min(max(time.Duration(rr.Header().Ttl)*time.Second, minLearnedTTL), maxLearnedTTL)
		if len(d.m) >= maxLearned {
			for k, v := range d.m {
				if now.After(v.expires) {
					delete(d.m, k)
				}
			}
			if len(d.m) >= maxLearned {
				return
			}
		}
		d.m[a.Unmap()] = learned{name: name, expires: now.Add(ttl)}
	}
}

// lookup is the name a (current) answer gave for a, or "".
func (d *dnsNames) lookup(a netip.Addr) string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.m[a.Unmap()]
	if !ok || time.Now().After(l.expires) {
		return ""
	}
	return l.name
}
