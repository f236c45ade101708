package proxy_test

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/barry-rocks/sandbox/proxy"
)

// Example wires both servers the way sandboxd does: one policy, a proxy
// on TCP and a DNS proxy on UDP and TCP.
func Example() {
	pol := proxy.Policy{
		Allow:        []string{"api.github.com", "*.pypi.org"},
		Deny:         []string{"gist.github.com"},
		AllowPrivate: []netip.Prefix{},
	}
	srv, err := proxy.New(proxy.Config{SandboxID: "sbx-1", Policy: pol})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	go srv.Serve(ln)
	dns, err := proxy.NewDNS(proxy.DNSConfig{SandboxID: "sbx-1", Policy: pol, Upstream: "127.0.0.1:53"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dns.Close()
	fmt.Println(srv.User(), len(srv.Secret()))
	// Output: sbx-1 64
}
