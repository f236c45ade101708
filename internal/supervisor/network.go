package supervisor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"

	"github.com/barry-rocks/sandbox/proxy"
)

// Ports inside the sandbox.
const (
	ProxyInsidePort = 3128 // the CONNECT/HTTP proxy forwarder
	HookInsidePort  = 3129 // the hook ruling server forwarder
	// CaptureInsidePort is where the capture receives the connections
	// of programs that ignore the proxy variables (Linux).
	CaptureInsidePort = 3130
)

// proxies are the session's egress and DNS proxies, once up.
type proxies struct {
	px  *proxy.Server
	dns *proxy.DNSServer
	err error
}

// startProxies opens the proxies' listeners and starts the proxies. The
// listeners exist before the sandbox starts (its forwarders check them); the
// proxies themselves come up while the namespaces are being set up, and the
// command starts only once they are (awaitProxies in ready).
func (s *session) startProxies() (func(), error) {
	var cleanup []func()
	undo := func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	s.proxySock, s.dnsSock = filepath.Join(s.dir, "proxy.sock"), filepath.Join(s.dir, "dns.sock")
	pln, err := net.Listen("unix", s.proxySock)
	if err != nil {
		return nil, fmt.Errorf("proxy listener: %w", err)
	}
	cleanup = append(cleanup, func() { pln.Close() })
	dln, err := net.Listen("unix", s.dnsSock)
	if err != nil {
		return undo, fmt.Errorf("dns proxy listener: %w", err)
	}
	cleanup = append(cleanup, func() { dln.Close() })
	s.pln, s.dln = pln, dln
	if s.secret = randomSecret(); s.secret == "" {
		return undo, errors.New("proxy credentials: no randomness")
	}
	pp := s.live.Current().proxy
	s.upc = make(chan proxies, 1)
	go func() {
		px, err := proxy.New(proxy.Config{SandboxID: s.id, Policy: pp, User: s.id, Secret: s.secret,
			DNSUpstream: s.opts.DNSUpstream, Audit: s.log, Credentials: s.cred.proxyCredentials(), CA: s.cred.proxyCA()})
		if err != nil {
			s.upc <- proxies{err: fmt.Errorf("proxy: %w", err)}
			return
		}
		dnsSrv, err := proxy.NewDNS(proxy.DNSConfig{SandboxID: s.id, Policy: pp, Upstream: s.opts.DNSUpstream, Audit: s.log})
		if err != nil {
			px.Close()
			s.upc <- proxies{err: fmt.Errorf("dns proxy: %w", err)}
			return
		}
		go px.Serve(pln)
		if s.pass != nil {
			go px.Serve(s.pass)
		}
		go dnsSrv.ServeTCP(dln)
		s.upc <- proxies{px: px, dns: dnsSrv}
	}()
	cleanup = append(cleanup, s.closeProxies)
	return undo, nil
}

// closeProxies stops the proxies once they are up (once: wait and the
// cleanup both call it). Their last lines are on the audit when it returns.
func (s *session) closeProxies() {
	if s.proxiesClosed {
		return
	}
	s.proxiesClosed = true
	s.awaitProxies()
	if s.up.px != nil {
		s.up.px.Close()
		s.up.dns.Close()
	}
}

// awaitProxies waits for the proxies to be up (once) and says whether they
// are. It is called only from Run's goroutine and the ones it waits for in
// turn (ready, the apply loop).
func (s *session) awaitProxies() error {
	if !s.upDone {
		s.up, s.upDone = <-s.upc, true
	}
	return s.up.err
}

// randomSecret returns 32 random bytes in hex ("" if randomness fails).
func randomSecret() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return ""
	}
	return hex.EncodeToString(b[:])
}
