// Command goclient fetches a URL with Go's net/http defaults (proxy from
// the environment, roots from SSL_CERT_FILE) and prints the status and body;
// "goclient -direct URL" uses a transport of its own that reads no proxy
// variable, as many programs do.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	c := &http.Client{Timeout: 20 * time.Second}
	url := os.Args[1]
	if url == "-direct" {
		c.Transport = &http.Transport{Proxy: nil}
		url = os.Args[2]
	}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, b)
	if resp.StatusCode != 200 {
		os.Exit(1)
	}
}
