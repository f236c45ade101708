// Command fakeupstream is the demo's fake internet: a DNS server answering A
// records from -records (a proxytest.Zone: NXDOMAIN for other names) and a
// plain HTTP server that greets by Host (/blob: -blob bytes, or ?n= fewer;
// /events: a model API's token stream in shape). It is meant to run inside a network
// namespace the demo creates, on TEST-NET addresses; it logs every query and
// request to stderr. With -https it also serves the same handler over TLS
// with a certificate for every -records name, self-signed at start-up and
// written (PEM) to -cert-out for clients to trust.
package main

import (
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/barry-rocks/sandbox/proxy/proxytest"
	"github.com/miekg/dns"
)

func main() {
	dnsAddr := flag.String("dns", "", "DNS `ADDR` (udp and tcp)")
	httpAddrs := flag.String("http", "", "comma-separated HTTP listen `ADDRS`")
	recs := flag.String("records", "", "comma-separated name=ipv4 A records")
	blob := flag.Int64("blob", 0, "serve /blob of this many bytes (benchmarks)")
	httpsAddrs := flag.String("https", "", "comma-separated HTTPS listen `ADDRS` (needs -cert-out)")
	certOut := flag.String("cert-out", "", "write the self-signed HTTPS certificate (PEM) to `FILE`")
	quiet := flag.Bool("quiet", false, "do not log each query and request (benchmarks)")
	token := flag.String("token", "", "serve /whoami: 200 for a request with Authorization: Bearer `TOKEN`, else 401 (the demo's credential)")
	flag.Parse()
	logf := log.New(os.Stderr, "upstream: ", 0).Printf
	if *quiet {
		logf = func(string, ...any) {}
	}
	zone := proxytest.NewZone()
	zone.OnQuestion(func(q string) { logf("dns query %s", q) })
	var names []string
	for _, r := range strings.Split(*recs, ",") {
		if n, ip, ok := strings.Cut(r, "="); ok {
			if err := zone.AddRR(dns.Fqdn(n) + " 5 IN A " + ip); err != nil {
				log.Fatal(err)
			}
			names = append(names, strings.ToLower(strings.TrimSuffix(n, ".")))
		}
	}
	if err := serveDNS(zone, *dnsAddr); err != nil {
		log.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logf("http request %s %s", r.Host, r.URL.Path)
		if r.URL.Path == "/whoami" && *token != "" {
			if r.Header.Get("Authorization") != "Bearer "+*token {
				http.Error(w, "401: not the token this server knows", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, "200: the server got the real token\n")
			return
		}
		if r.URL.Path == "/events" {
			serveEvents(w, r)
			return
		}
		if r.URL.Path == "/blob" && *blob > 0 {
			size := *blob
			if n, err := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64); err == nil && n > 0 && n < size {
				size = n
			}
			w.Header().Set("Content-Length", fmt.Sprint(size))
			buf := make([]byte, 1<<20)
			for left := size; left > 0; left -= int64(len(buf)) {
				n := min(left, int64(len(buf)))
				if _, err := w.Write(buf[:n]); err != nil {
					return
				}
			}
			return
		}
		fmt.Fprintf(w, "hello from %s\n", r.Host)
	})
	for _, a := range strings.Split(*httpAddrs, ",") {
		if a != "" {
			go func() { log.Fatal(http.ListenAndServe(a, handler)) }()
		}
	}
	if *httpsAddrs != "" {
		cert, err := selfSigned(names, *certOut)
		if err != nil {
			log.Fatal(err)
		}
		for _, a := range strings.Split(*httpsAddrs, ",") {
			srv := &http.Server{Addr: a, Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
			if *quiet {
				srv.ErrorLog = log.New(io.Discard, "", 0) // readiness probes end handshakes early
			}
			go func() { log.Fatal(srv.ListenAndServeTLS("", "")) }()
		}
	}
	select {}
}

// serveEvents is a model API's token stream in shape: ?n= (60) events
// of Server-Sent Events, ?gap= (20ms) apart, each flushed on its own, its
// data JSON carrying the send time ("t", unix nanoseconds) for
// scripts/sseclient.
func serveEvents(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n <= 0 || n > 10000 {
		n = 60
	}
	gap, err := time.ParseDuration(r.URL.Query().Get("gap"))
	if err != nil || gap < 0 || gap > time.Second {
		gap = 20 * time.Millisecond
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	f := w.(http.Flusher)
	io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\"}\n\n")
	f.Flush()
	for i := range n {
		time.Sleep(gap)
		fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"token %d \"},\"t\":%d}\n\n", i, time.Now().UnixNano())
		f.Flush()
	}
	io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
}

// serveDNS answers from zone on addr, UDP and TCP.
func serveDNS(zone *proxytest.Zone, addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	_, err = zone.Serve(pc, ln)
	return err
}

// selfSigned makes a certificate for names (proxytest.SelfSigned) and
// writes it as PEM to certOut (the client's trust anchor).
func selfSigned(names []string, certOut string) (tls.Certificate, error) {
	if certOut == "" {
		return tls.Certificate{}, fmt.Errorf("-https needs -cert-out")
	}
	c, err := proxytest.SelfSigned("fakeupstream", names...)
	if err != nil {
		return tls.Certificate{}, err
	}
	if err := os.WriteFile(certOut, c.PEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return c.TLS, nil
}
