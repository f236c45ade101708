// Command sseclient reads a Server-Sent-Events stream over HTTP(S) and
// prints, for each event whose data carries the server's send time ("t":
// unix nanoseconds, as fakeupstream's /events sends), the microseconds from
// that send to this read, one a line. scripts/bench times streams with it
// directly, inside `sandboxd run` and as the harness of `sandboxd launch`
// (which passes it a harness's arguments: it reads only its environment).
//
//	SSE_URL       the stream (default $ANTHROPIC_BASE_URL/events)
//	SSE_CACERT    a PEM file to trust instead of the system roots
//	SSE_KEY_ENV   a variable whose value goes into the header SSE_KEY_HEADER
//	              (default Authorization, as "Bearer VALUE")
//
// It follows the proxy variables (HTTPS_PROXY), speaks HTTP/1.1 and
// exits 1 when the stream ends with no timed event.
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("sseclient: ")
	url := os.Getenv("SSE_URL")
	if url == "" {
		url = strings.TrimSuffix(os.Getenv("ANTHROPIC_BASE_URL"), "/") + "/events"
	}
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: &tls.Config{}}
	if f := os.Getenv("SSE_CACERT"); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			log.Fatalf("%s: no certificate", f)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		log.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if env := os.Getenv("SSE_KEY_ENV"); env != "" {
		if h := os.Getenv("SSE_KEY_HEADER"); h != "" {
			req.Header.Set(h, os.Getenv(env))
		} else {
			req.Header.Set("Authorization", "Bearer "+os.Getenv(env))
		}
	}
	resp, err := (&http.Client{Transport: tr, Timeout: 5 * time.Minute}).Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("%s: %s", url, resp.Status)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	n := 0
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		now := time.Now().UnixNano()
		if i := strings.Index(line, `"t":`); i >= 0 && strings.HasPrefix(line, "data: ") {
			v := line[i+4:]
			v = v[:strings.IndexAny(v, ",}")]
			sent, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				log.Fatalf("event %q: %v", line, perr)
			}
			fmt.Fprintf(out, "%.1f\n", float64(now-sent)/1e3)
			n++
		}
		if err != nil {
			break
		}
	}
	if n == 0 {
		out.Flush()
		log.Fatal("no timed event")
	}
}
