// Command fakeupstream is the demo's fake internet: a DNS server answering A
// records from -records and a plain HTTP server that greets by Host. It is
// meant to run inside a network namespace the demo creates, on TEST-NET
// addresses; it logs every query and request to stderr.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/miekg/dns"
)

func main() {
	dnsAddr := flag.String("dns", "", "DNS `ADDR` (udp and tcp)")
	httpAddrs := flag.String("http", "", "comma-separated HTTP listen `ADDRS`")
	recs := flag.String("records", "", "comma-separated name=ipv4 A records")
	blob := flag.Int64("blob", 0, "serve /blob of this many bytes (benchmarks)")
	flag.Parse()
	records := map[string]string{}
	for _, r := range strings.Split(*recs, ",") {
		if n, ip, ok := strings.Cut(r, "="); ok {
			records[dns.Fqdn(strings.ToLower(n))] = ip
		}
	}
	logf := log.New(os.Stderr, "upstream: ", 0).Printf
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		for _, q := range r.Question {
			logf("dns query %s %s", q.Name, dns.TypeToString[q.Qtype])
			if ip, ok := records[strings.ToLower(q.Name)]; ok && q.Qtype == dns.TypeA {
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: net.ParseIP(ip)})
			}
		}
		w.WriteMsg(m)
	})
	for _, n := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: *dnsAddr, Net: n, Handler: h}
		go func() { log.Fatal(srv.ListenAndServe()) }()
	}
	for _, a := range strings.Split(*httpAddrs, ",") {
		go func(a string) {
			log.Fatal(http.ListenAndServe(a, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				logf("http request %s %s", r.Host, r.URL.Path)
				if r.URL.Path == "/blob" && *blob > 0 {
					w.Header().Set("Content-Length", fmt.Sprint(*blob))
					buf := make([]byte, 1<<20)
					for left := *blob; left > 0; left -= int64(len(buf)) {
						n := min(left, int64(len(buf)))
						if _, err := w.Write(buf[:n]); err != nil {
							return
						}
					}
					return
				}
				fmt.Fprintf(w, "hello from %s\n", r.Host)
			})))
		}(a)
	}
	select {}
}
