package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/kube"
	"github.com/barry-rocks/sandbox/internal/supervisor"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/proxy"
)

const proxyUsage = `sandboxd proxy --listen ADDR [--dns-listen ADDR] [--policy FILE | --allow-domain D... --deny-domain D...]
       [--dns-upstream ADDR] [--allow-private CIDR...] [--audit FILE] [--id ID]
sandboxd proxy --sidecar --policy FILE --agent-uid UID --capture-listen 127.0.0.1:PORT --dns-listen 127.0.0.1:PORT
       --hook-socket PATH [--agent-home DIR] [--health-listen ADDR] [--dns-upstream ADDR] [--allow-private CIDR...] [--audit -|FILE]
       [--credential-dir DIR --run-dir DIR]

Run the egress proxy (CONNECT and plain HTTP) and, with --dns-listen, the DNS
proxy, alone. ADDR is host:port (port 0 picks one) or unix:PATH. The first
line on stdout is the proxy URL with its credentials, the second "dns
HOST:PORT" ("dns off" without --dns-listen); both are printed once every
server listens. SIGINT or SIGTERM stops it cleanly.

With --sidecar: a pod's sandbox beside "sandboxd netinit" (docs/kubernetes.md):
the capture and the DNS proxy on the loopback ports netinit redirects the
agent's uid to, the agent's hook rulings on the Unix socket PATH (a volume
the agent mounts), /readyz and /livez on --health-listen, the policy file
kept live (a ConfigMap's swap applies within a second), the audit as JSON
lines on stdout ("-", the default) carrying POD_NAME, POD_NAMESPACE,
POD_UID and BARRY_SESSION from the environment. A policy's credentials are read from
--credential-dir (the mounted Secret, one file per key) and never from an
environment; their placeholders (placeholders/VARIABLE) and the trust the
agent needs for the sidecar's TLS termination (trust/ca-bundle.pem,
trust/truststore.jks) are written under --run-dir, the directory the agent
mounts read-only, before /readyz answers.`

// proxyCommand is "sandboxd proxy".
func proxyCommand() *cli.Command {
	return &cli.Command{Name: "proxy", Summary: "run the egress CONNECT/HTTP proxy and DNS proxy alone", Run: runProxy}
}

func runProxy(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "proxy", proxyUsage)
	listen := fs.String("listen", "", "proxy listen address: host:port or unix:PATH (required)")
	dnsListen := fs.String("dns-listen", "", "DNS proxy listen address host:port (UDP and TCP)")
	policyFile := new(string)
	fs.Var(&onceString{p: policyFile}, "policy", "policy file; its resolved effective bound's network rules apply")
	var allow, deny, private cli.Strings
	fs.Var(&allow, "allow-domain", "allowlist entry (repeatable)")
	fs.Var(&deny, "deny-domain", "deny list entry (repeatable)")
	fs.Var(&private, "allow-private", "CIDR opened past the dial guard (repeatable)")
	upstream := fs.String("dns-upstream", "", "DNS server host:port for resolution and the DNS proxy (default: the system's)")
	auditFile := fs.String("audit", "", "append audit JSON lines to FILE (default: stderr)")
	id := fs.String("id", "proxy", "sandbox id in audit lines and the proxy user name")
	sidecar := fs.Bool("sidecar", false, "serve a pod's sandbox beside sandboxd netinit (see below)")
	captureListen := fs.String("capture-listen", "", "with --sidecar: the capture's loopback `ADDR` (127.0.0.1:PORT)")
	hookSocket := fs.String("hook-socket", "", "with --sidecar: the hook ruling server's Unix socket `PATH`")
	healthListen := fs.String("health-listen", "", "with --sidecar: /readyz and /livez on `ADDR`")
	agentUID := fs.Uint("agent-uid", 0, "with --sidecar: the agent's `UID` (netinit's), whose hook calls it rules on")
	credDir := fs.String("credential-dir", "", "with --sidecar: the mounted credential Secret `DIR` (one file per key)")
	runDir := fs.String("run-dir", "", "with --sidecar: the `DIR` the agent mounts read-only, where the placeholders and the trust are written")
	agentHome := fs.String("agent-home", "", "with --sidecar: the agent's `HOME` (~/ in file rules); the agent's workspace and home are mounted here at the same paths")
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if *sidecar {
		if fs.NArg() > 0 || *listen != "" || len(allow) > 0 || len(deny) > 0 {
			fmt.Fprintln(io.Err, "sandboxd proxy: --sidecar takes its rules from --policy, and serves the capture, not --listen")
			return 2
		}
		return runSidecar(ctx, io, sidecarArgs{policy: *policyFile, capture: *captureListen, dns: *dnsListen, hooks: *hookSocket,
			health: *healthListen, upstream: *upstream, private: private, audit: *auditFile, home: *agentHome, uid: *agentUID,
			credDir: *credDir, runDir: *runDir})
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(io.Err, "sandboxd proxy: %s\n", policy.OneLine(fmt.Sprintf(format, a...)))
		return 1
	}
	if fs.NArg() > 0 || *listen == "" {
		fs.Usage()
		return 2
	}
	if *policyFile != "" && (len(allow) > 0 || len(deny) > 0) {
		return fail("--policy and --allow-domain/--deny-domain exclude each other")
	}
	var prefixes []netip.Prefix
	for _, c := range private {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			a, aerr := netip.ParseAddr(c)
			if aerr != nil {
				return fail("--allow-private %q: not a CIDR", c)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		prefixes = append(prefixes, p.Masked())
	}
	var pol proxy.Policy
	if *policyFile != "" {
		r, err := policy.ResolveFile(*policyFile)
		if err != nil {
			return fail("%s: %v", *policyFile, err)
		}
		pol, err = proxy.PolicyFromBound(r.Bound, prefixes)
		if err != nil {
			return fail("%s: %v", *policyFile, err)
		}
		pol.Fingerprint = r.Fingerprint
	} else {
		pol = proxy.Policy{Allow: allow, Deny: deny, AllowPrivate: prefixes}
	}

	audit := slog.New(slog.NewJSONHandler(io.Err, nil))
	if *auditFile != "" {
		f, err := os.OpenFile(*auditFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fail("audit: %v", err)
		}
		defer f.Close()
		audit = slog.New(slog.NewJSONHandler(f, nil))
	}

	srv, err := proxy.New(proxy.Config{SandboxID: *id, Policy: pol, DNSUpstream: *upstream, Audit: audit})
	if err != nil {
		return fail("%v", err)
	}
	ln, err := listenProxy(*listen)
	if err != nil {
		return fail("listen %s: %v", *listen, err)
	}
	var wg sync.WaitGroup
	errc := make(chan error, 3)
	wg.Add(1)
	go func() { defer wg.Done(); errc <- srv.Serve(ln) }()
	defer func() { srv.Close(); wg.Wait() }()

	dnsLine := "dns off"
	if *dnsListen != "" {
		ds, err := proxy.NewDNS(proxy.DNSConfig{SandboxID: *id, Policy: pol, Upstream: *upstream, Audit: audit})
		if err != nil {
			return fail("%v", err)
		}
		pc, tl, err := listenDNS(*dnsListen)
		if err != nil {
			return fail("dns listen %s: %v", *dnsListen, err)
		}
		dnsLine = "dns " + pc.LocalAddr().String()
		wg.Add(2)
		go func() { defer wg.Done(); errc <- ds.ServeUDP(pc) }()
		go func() { defer wg.Done(); errc <- ds.ServeTCP(tl) }()
		defer ds.Close()
	}

	w := bufio.NewWriter(io.Out)
	fmt.Fprintln(w, proxyURL(srv, ln))
	fmt.Fprintln(w, dnsLine)
	if err := w.Flush(); err != nil {
		return fail("stdout: %v", err)
	}
	select {
	case <-ctx.Done():
		return 0
	case err := <-errc:
		if err == nil {
			err = errors.New("server stopped")
		}
		return fail("%v", err)
	}
}

func listenProxy(addr string) (net.Listener, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		return net.Listen("unix", path)
	}
	return net.Listen("tcp", addr)
}

// listenDNS binds UDP and TCP on the same port; with port 0 it retries
// until the port UDP got is free for TCP too.
func listenDNS(addr string) (net.PacketConn, net.Listener, error) {
	for i := 0; ; i++ {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, err
		}
		tl, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, tl, nil
		}
		pc.Close()
		if _, port, _ := net.SplitHostPort(addr); port != "0" || i == 20 {
			return nil, nil, err
		}
	}
}

// proxyURL is the URL clients use: http://USER:SECRET@HOST:PORT, or for a
// Unix socket http+unix://USER:SECRET@ENCODED-PATH (the requests-unixsocket
// convention).
func proxyURL(srv *proxy.Server, ln net.Listener) string {
	if ln.Addr().Network() == "unix" {
		u := url.URL{Scheme: "http+unix", User: url.UserPassword(srv.User(), srv.Secret()), Host: url.PathEscape(ln.Addr().String())}
		return u.String()
	}
	return srv.URL(ln.Addr().String())
}

// sidecarArgs are --sidecar's flags.
type sidecarArgs struct {
	policy, capture, dns, hooks, health, upstream, audit, home string
	credDir, runDir                                            string
	private                                                    []string
	uid                                                        uint
}

// runSidecar is "sandboxd proxy --sidecar" (supervisor.Sidecar).
func runSidecar(ctx context.Context, io cli.IO, a sidecarArgs) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(io.Err, "sandboxd proxy: %s\n", policy.OneLine(fmt.Sprintf(format, args...)))
		return code
	}
	if a.uid == 0 || a.uid > 1<<32-2 {
		return fail(2, "--agent-uid: the agent's uid, not 0")
	}
	o := supervisor.SidecarOptions{AgentUID: uint32(a.uid), CaptureListen: a.capture, DNSListen: a.dns, HookSocket: a.hooks, HealthListen: a.health, AgentHome: a.home, Audit: os.Stdout,
		CredentialDir: a.credDir, RunDir: a.runDir}
	o.PolicyFile, o.DNSUpstream = a.policy, a.upstream
	for _, c := range a.private {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return fail(2, "--allow-private %q: not a CIDR", c)
		}
		o.AllowPrivate = append(o.AllowPrivate, p.Masked())
	}
	if a.audit != "" && a.audit != "-" {
		f, err := os.OpenFile(a.audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fail(125, "audit: %v", err)
		}
		defer f.Close()
		o.Audit = f
	}
	for _, kv := range [][2]string{{audit.AttrPod, kube.EnvPodName}, {audit.AttrNamespace, kube.EnvPodNamespace},
		{audit.AttrPodUID, kube.EnvPodUID}, {audit.AttrSessionName, kube.EnvSession}} {
		if v := os.Getenv(kv[1]); v != "" {
			o.Fleet = append(o.Fleet, slog.String(kv[0], v))
		}
	}
	if err := supervisor.Sidecar(ctx, o); err != nil {
		return fail(125, "%v", err)
	}
	return 0
}
