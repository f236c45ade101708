package procjail

import (
	"errors"
	"fmt"
	"strconv"
)

// Uid-matched network rules ("container mode"): where sandboxd
// cannot make a network namespace of its own (a Docker container without
// user namespaces) but is root there with CAP_NET_ADMIN, the agent runs
// under a uid of its own in the container's network namespace, and
// netfilter rules matched on the sockets' owner (as a service mesh's init
// does with "-m owner --uid-owner") give that uid exactly what the
// sandbox's own namespace gives the command: its TCP to the capture
// listener, its DNS to the DNS proxy, a few loopback ports, nothing else.
// The rule set and its order are in uidnet_linux.go (uidRuleSet); this
// file holds what every platform can check.

// UIDRules is the confinement of one uid's network in the current network
// namespace (InstallUIDRules). The listeners it names are on 127.0.0.1 and
// ::1 of that namespace: redirected IPv4 arrives on 127.0.0.1, IPv6 on
// ::1 (sandboxd's capture listens on both; its other forwards on
// 127.0.0.1 only, so IPv6 there fails closed). A UIDRules is a plain value, safe
// to copy and to share.
type UIDRules struct {
	// UID is the agent's uid: every socket it owns (by the kernel's
	// record of the socket's creator, not of the process using it) is
	// confined. It must not be 0 (root could remove the rules, and
	// sandboxd's own sockets would be confined) nor 4294967295.
	UID uint32
	// CapturePort receives, redirected, every TCP connection of UID to an
	// address that is not loopback (the capture listener reads the dialed
	// address with SO_ORIGINAL_DST).
	CapturePort uint16
	// DNSPort receives, redirected, every UDP datagram and TCP connection
	// of UID to port 53 of any address, loopback included (Docker's
	// 127.0.0.11, systemd-resolved's 127.0.0.53): the DNS proxy, on UDP
	// and TCP.
	DNSPort uint16
	// LoopbackTCP are the other TCP ports of 127.0.0.1 and ::1 UID may
	// connect to: the HTTP proxy's, a hook ruling port, a port of the
	// agent's own server it should reach. Every other loopback port is
	// dropped, so the agent cannot reach sandboxd's control sockets or
	// other services of the container that listen on loopback trusting
	// it. UDP on loopback reaches only DNSPort.
	LoopbackTCP []uint16
}

// ErrUIDInUse is returned by RemoveUIDRules while a process of the uid is
// alive in the network namespace: removing the rules would give it an open
// network. Kill every process of the uid first.
var ErrUIDInUse = errors.New("processes of the uid are still running")

// UIDRulesUnavailableError is CheckUIDRules' answer where the rules cannot
// be installed: Missing names the missing piece, Fix what gives it.
type UIDRulesUnavailableError struct {
	Missing string // "CAP_NET_ADMIN", "nftables nat chains", ...
	Fix     string // "run the container with --cap-add NET_ADMIN", ...
	Err     error  // what the kernel said
}

func (e *UIDRulesUnavailableError) Error() string {
	s := "uid network rules: " + e.Missing + " is unavailable"
	if e.Fix != "" {
		s += " (" + e.Fix + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *UIDRulesUnavailableError) Unwrap() error { return e.Err }

// uidTablePrefix begins the name of the tables of one uid's rules.
const uidTablePrefix = "barry_uid_"

// uidTable is the name of uid's tables (one in family ip, one in ip6).
func uidTable(uid uint32) string { return uidTablePrefix + strconv.FormatUint(uint64(uid), 10) }

// Validate reports the first field of r that cannot be installed, checked
// in the order UID, CapturePort, DNSPort, LoopbackTCP (InstallUIDRules
// names the step before it).
func (r UIDRules) Validate() error {
	switch {
	case r.UID == 0:
		return errors.New("uid 0 cannot be confined (root could remove the rules, and sandboxd's own sockets would match)")
	case r.UID == ^uint32(0):
		return errors.New("uid 4294967295 is no uid")
	case r.CapturePort == 0:
		return errors.New("capture port 0")
	case r.DNSPort == 0:
		return errors.New("dns port 0")
	case r.DNSPort == r.CapturePort:
		return fmt.Errorf("dns port %d is the capture port", r.DNSPort)
	}
	for i, p := range r.LoopbackTCP {
		if p == 0 {
			return fmt.Errorf("loopbackTCP[%d]: port 0", i)
		}
	}
	return nil
}
