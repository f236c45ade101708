// Package proxy is the sandbox's only way out: an HTTP forward proxy
// (CONNECT tunnels and absolute-form plain HTTP, built on
// github.com/elazarl/goproxy, every handler and the transport ours)
// and a DNS proxy (github.com/miekg/dns) that allow traffic by hostname,
// with a dial guard that checks every resolved address against a
// special-purpose address table and dials exactly the address it checked,
// and one JSON audit line per decision.
//
// Decision order for the HTTP proxy (see Decide): authentication, the host
// canonicalized by policy.ParseHost, the deny list, the allowlist; only an
// allowed name is resolved; every resolved address goes through the dial
// guard (CheckAddr); the tunnel or request dials the first address that
// passed, never resolving again. For a CONNECT tunnel the client's first TLS
// record is then held and its SNI compared with the CONNECT host.
package proxy
