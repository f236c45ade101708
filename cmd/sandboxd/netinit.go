package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/procjail"
)

const netinitUsage = `sandboxd netinit --agent-uid UID --capture-port PORT --dns-port PORT [--loopback-port PORT]...

Confine one uid's network in this network namespace and exit: the init
container of a pod whose agent runs as UID beside a "sandboxd proxy
--sidecar" (docs/kubernetes.md). Every TCP connection of UID to an address
that is not loopback goes to the sidecar's capture on 127.0.0.1:PORT, its
DNS (UDP and TCP port 53 of any address) to the sidecar's DNS proxy, TCP to
the --loopback-port ports of loopback passes, and the rest is dropped. The
rules outlive this process: while no sidecar listens, UID has no network.
Needs root with CAP_NET_ADMIN; exit 125 when the rules cannot be installed.`

func netinitCommand() *cli.Command {
	return &cli.Command{Name: "netinit", Summary: "confine an agent uid's network in this namespace (a pod's init container) and exit", Run: runNetinit}
}

func runNetinit(_ context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "netinit", netinitUsage)
	uid := fs.String("agent-uid", "", "the agent's `UID`")
	capture := fs.Uint("capture-port", 0, "the sidecar's capture `PORT` on loopback")
	dns := fs.Uint("dns-port", 0, "the sidecar's DNS proxy `PORT` on loopback (UDP and TCP)")
	var loopback cli.Strings
	fs.Var(&loopback, "loopback-port", "a loopback TCP `PORT` the agent may reach (repeatable)")
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 || *uid == "" {
		fs.Usage()
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(io.Err, "sandboxd netinit: %s\n", fmt.Sprintf(format, a...))
		return code
	}
	u, err := strconv.ParseUint(*uid, 10, 32)
	if err != nil {
		return fail(2, "--agent-uid %q: not a uid", *uid)
	}
	r := procjail.UIDRules{UID: uint32(u), CapturePort: port16(*capture), DNSPort: port16(*dns)}
	for _, p := range loopback {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil {
			return fail(2, "--loopback-port %q: not a port", p)
		}
		r.LoopbackTCP = append(r.LoopbackTCP, uint16(n))
	}
	if *capture > 65535 || *dns > 65535 {
		return fail(2, "a port is above 65535")
	}
	if err := procjail.InstallUIDRules(r); err != nil {
		return fail(125, "%v", err)
	}
	fmt.Fprintf(io.Out, "sandboxd netinit: uid %d confined: TCP to 127.0.0.1:%d, DNS to port %d, loopback TCP %v, the rest dropped\n", r.UID, r.CapturePort, r.DNSPort, r.LoopbackTCP)
	return 0
}

// port16 is p as a port, 0 (refused by the rules' Validate) when it is
// not one.
func port16(p uint) uint16 {
	if p > 65535 {
		return 0
	}
	return uint16(p)
}
