// Package proxytest holds helpers for testing the proxy package and its
// users: self-signed certificates for chosen names, a fake upstream DNS
// server that counts the queries it sees, echo and banner servers, and
// network namespaces with TEST-NET addresses on a dummy interface.
package proxytest
