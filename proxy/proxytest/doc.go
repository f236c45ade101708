// Package proxytest holds the fake internet for testing the proxy package
// and its users: self-signed certificates for chosen names, a fake DNS zone
// that records the questions it sees (served on loopback for a test by
// NewDNS, or on any sockets by Zone.Serve, as scripts/fakeupstream does),
// echo and banner servers, and network namespaces, bare or with TEST-NET
// addresses on a dummy interface.
package proxytest
