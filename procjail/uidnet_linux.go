//go:build linux

package procjail

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// The rules of one uid, in each family's table (barry_uid_<uid>, in ip and
// in ip6), in the order the kernel evaluates them:
//
//	chain confine: filter, hook postrouting, priority 0
//	  1. skuid UID, tcp, daddr 127.0.0.1 (::1), dport CapturePort  accept
//	  2. skuid UID, tcp, daddr 127.0.0.1 (::1), dport DNSPort      accept
//	  3. skuid UID, tcp, daddr 127.0.0.1 (::1), dport P            accept, each P of LoopbackTCP
//	  4. skuid UID, udp, daddr 127.0.0.1 (::1), dport DNSPort      accept
//	  5. skuid UID, tcp, daddr 127.0.0.0/8 (::1), ct direction reply accept
//	  6. skuid UID                                                 drop
//	chain redirect: nat, hook output, priority -110
//	  1. skuid UID, udp, dport 53                      redirect to DNSPort
//	  2. skuid UID, tcp, dport 53                      redirect to DNSPort
//	  3. skuid UID, tcp, daddr not 127.0.0.0/8 (::1)   redirect to CapturePort
//
// Why these hooks and priorities:
//
//   - The filter is in postrouting, the last hook a packet the host sends
//     passes: after the output hook's NAT (the NAT core runs every nat
//     chain of the hook at -100, whatever the chain's own number) and
//     after anything else there (IPVS, a route chain's reroute). It judges
//     where a packet really goes: after the redirect, 127.0.0.1 and the
//     capture port; after another table's DNAT, that DNAT's target, which
//     is dropped unless it is an allowed loopback port.
//   - The NAT chain is at -110, before the usual -100: the nat chains of a
//     hook run in priority order (at one priority, the one made last
//     first), and the first that maps a new connection decides it.
//     Docker's DNAT of its resolver 127.0.0.11:53 (iptables-nft, -100)
//     would otherwise take the uid's DNS to the container's resolver once
//     Docker makes its chain again.
//   - Rule 5 lets the uid's own loopback servers answer connections made
//     to them (a test server of the agent's, on a port LoopbackTCP lists
//     so the agent can connect to it; or one another uid connects to): a
//     packet in the reply direction of a connection the other side opened.
//     Replies to addresses that are not loopback stay dropped: the uid
//     serves nothing outside the host.
//   - Packets without a socket (the kernel's resets and ICMP errors) have
//     no owner: no rule matches them.
//
// Install and removal are each one netlink batch, which nf_tables commits
// as one transaction: both families' tables appear (or go) together or
// not at all, and a stale table of a crashed run is deleted in the same
// transaction that adds its replacement (add, delete, add: the first add
// makes the delete valid when there was none). The tables must never be
// owner tables (NFT_TABLE_F_OWNER, which the kernel deletes when the
// netlink socket that made them closes; google/nftables sets no table
// flags): a crashed sandboxd must leave them.

// uidFamily is what the rules of one address family compare.
type uidFamily struct {
	family   nftables.TableFamily
	daddrOff uint32 // destination address in the network header
	listen   []byte // the loopback address redirected traffic goes to
	loopNet  []byte // loopback's prefix, compared byte by byte
}

var uidFamilies = []uidFamily{
	{nftables.TableFamilyIPv4, 16, []byte{127, 0, 0, 1}, []byte{127}},
	{nftables.TableFamilyIPv6, 24, net.IPv6loopback, net.IPv6loopback},
}

const (
	// uidNATPriority orders the redirect before iptables' own NAT.
	uidNATPriority = -110
	// uidCheckTable names the tables CheckUIDRules adds and deletes.
	uidCheckTable = "barry_uid_check"
	// ctDirReply is IP_CT_DIR_REPLY.
	ctDirReply = 1
)

// InstallUIDRules confines r.UID's network in the calling thread's network
// namespace (the process's, unless the caller locked a thread into another
// one): its TCP to addresses that are not loopback goes to r.CapturePort,
// its DNS (port 53 of any address, UDP and TCP) to r.DNSPort, it reaches
// on 127.0.0.1 and ::1 only those ports and r.LoopbackTCP, and everything
// else it sends (UDP, ICMP, any other protocol, replies to what is not
// loopback) is dropped: a datagram's send fails with EPERM, a TCP connect
// times out. Rules of an earlier
// run for the same uid are replaced in the same transaction. Needs
// CAP_NET_ADMIN over the namespace (see CheckUIDRules).
//
// The rules stay until RemoveUIDRules: a crashed caller leaves the uid
// with no network at all (its redirected connections are refused, as
// nothing listens on the ports any more, and the rest is dropped), never
// an open one. The uid's processes must have no capabilities (with
// CAP_NET_ADMIN they could delete the rules) and no sockets another uid
// made (a socket is matched by its creator). Abstract Unix sockets are
// scoped by the network namespace and not filtered here: the process's
// own confinement must refuse them.
//
// Safe for concurrent use: each call is one transaction.
func InstallUIDRules(r UIDRules) error {
	step := "netfilter rules for uid " + strconv.FormatUint(uint64(r.UID), 10)
	if err := r.Validate(); err != nil {
		return &SetupError{Step: step, Err: err}
	}
	c, err := nftables.New()
	if err != nil {
		return &SetupError{Step: step, Err: err}
	}
	for _, f := range uidFamilies {
		// A stale table is replaced in the same transaction; deleting
		// one costs the commit a grace period (about 10 ms here), so
		// only when there is one.
		stale, err := hasTable(c, f.family, uidTable(r.UID))
		if err != nil {
			return &SetupError{Step: step, Err: err}
		}
		addUIDTable(c, uidTable(r.UID), r, f, stale)
	}
	if err := c.Flush(); err != nil {
		return &SetupError{Step: step, Err: err}
	}
	return nil
}

// hasTable says whether the family has a table of that name.
func hasTable(c *nftables.Conn, family nftables.TableFamily, name string) (bool, error) {
	ts, err := c.ListTablesOfFamily(family)
	if err != nil {
		return false, err
	}
	for _, t := range ts {
		if t.Name == name {
			return true, nil
		}
	}
	return false, nil
}

// RemoveUIDRules deletes uid's rules (both families in one transaction) in
// the calling thread's network namespace; none there is no error. It
// refuses with ErrUIDInUse while a process (a thread) of uid other than
// the caller's own, by any of its real, effective, saved or filesystem
// uids, lives in the namespace, as far as this PID namespace sees: the
// rules are what confines it. Kill them first.
//
// Safe for concurrent use.
func RemoveUIDRules(uid uint32) error {
	pids, err := uidProcesses(uid)
	if err != nil {
		return fmt.Errorf("uid network rules for uid %d: processes: %w", uid, err)
	}
	if len(pids) > 0 {
		return fmt.Errorf("uid network rules for uid %d: %w (pid %s)", uid, ErrUIDInUse, joinInts(pids))
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("uid network rules for uid %d: %w", uid, err)
	}
	for _, f := range uidFamilies {
		t := &nftables.Table{Family: f.family, Name: uidTable(uid)}
		c.AddTable(t)
		c.DelTable(t)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("uid network rules for uid %d: %w", uid, err)
	}
	return nil
}

// CheckUIDRules reports whether InstallUIDRules can work in the calling
// thread's network namespace, by installing and deleting a rule set of the
// same kind in one transaction (it changes nothing). When it cannot, the
// *UIDRulesUnavailableError names the missing piece, found in this order:
// CAP_NET_ADMIN in the effective set; CAP_NET_ADMIN over this network
// namespace (a process in a user namespace of its own has the first, not
// the second); nf_tables; its conntrack match; the nat chain type;
// redirect; each for IPv4, then IPv6.
//
// Safe for concurrent use.
func CheckUIDRules() error {
	return checkUIDRules(func() (*nftables.Conn, error) { return nftables.New() })
}

// checkUIDRules is CheckUIDRules with each transaction's connection from
// dial.
func checkUIDRules(dial func() (*nftables.Conn, error)) error {
	if ok, err := effectiveCap(unix.CAP_NET_ADMIN); err != nil || !ok {
		return &UIDRulesUnavailableError{Missing: "CAP_NET_ADMIN", Err: err,
			Fix: "run the container with --cap-add NET_ADMIN (Kubernetes: securityContext.capabilities.add: [NET_ADMIN]) and sandboxd as its root"}
	}
	full := func(c *nftables.Conn, t *nftables.Table, f uidFamily) {
		addUIDRules(c, t, UIDRules{UID: ^uint32(0) - 1, CapturePort: 1, DNSPort: 2, LoopbackTCP: []uint16{3}}, f)
	}
	first := uidCheckBatch(dial, uidFamilies, full)
	if first == nil {
		return nil
	}
	for _, st := range uidCheckStages {
		for _, f := range uidFamilies {
			err := uidCheckBatch(dial, []uidFamily{f}, st.add)
			if err == nil {
				continue
			}
			if errors.Is(err, os.ErrPermission) {
				return &UIDRulesUnavailableError{Missing: "CAP_NET_ADMIN over this network namespace", Err: err,
					Fix: "sandboxd is in a user namespace that does not own the network namespace: run it as the container's root, with --cap-add NET_ADMIN"}
			}
			missing := st.missing
			if f.family == nftables.TableFamilyIPv6 {
				missing += " for IPv6"
			}
			return &UIDRulesUnavailableError{Missing: missing, Fix: st.fix, Err: err}
		}
	}
	return &UIDRulesUnavailableError{Missing: "the uid rule set", Err: first}
}

// uidCheckStages are CheckUIDRules' steps to name what is missing, each
// one more piece of the rule set.
var uidCheckStages = []struct {
	missing, fix string
	add          func(c *nftables.Conn, t *nftables.Table, f uidFamily)
}{
	{"nftables", "the host's kernel needs nf_tables: modprobe nf_tables on the host", func(c *nftables.Conn, t *nftables.Table, f uidFamily) {
		ch := c.AddChain(&nftables.Chain{Name: "confine", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityFilter})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: joinExprs(skuidIs(1), nftVerdict(expr.VerdictDrop))})
	}},
	{"the nftables conntrack match", "the host's kernel needs nft_ct: modprobe nft_ct on the host", func(c *nftables.Conn, t *nftables.Table, f uidFamily) {
		ch := c.AddChain(&nftables.Chain{Name: "confine", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityFilter})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: joinExprs(ctReply(), nftVerdict(expr.VerdictAccept))})
	}},
	{"the nftables nat chain type", "the host's kernel needs nft_chain_nat: modprobe nft_chain_nat on the host", func(c *nftables.Conn, t *nftables.Table, f uidFamily) {
		c.AddChain(&nftables.Chain{Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityRef(uidNATPriority)})
	}},
	{"nftables redirect", "the host's kernel needs nft_redir: modprobe nft_redir on the host", func(c *nftables.Conn, t *nftables.Table, f uidFamily) {
		ch := c.AddChain(&nftables.Chain{Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityRef(uidNATPriority)})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: joinExprs(l4protoIs(unix.IPPROTO_TCP), redirectTo(1))})
	}},
}

// uidCheckBatch adds a check table in each of fams with what add puts in
// it, and deletes it, in one transaction.
func uidCheckBatch(dial func() (*nftables.Conn, error), fams []uidFamily, add func(c *nftables.Conn, t *nftables.Table, f uidFamily)) error {
	c, err := dial()
	if err != nil {
		return err
	}
	for _, f := range fams {
		t := &nftables.Table{Family: f.family, Name: uidCheckTable}
		c.AddTable(t)
		c.DelTable(t)
		c.AddTable(t)
		add(c, t, f)
		c.DelTable(t)
	}
	return c.Flush()
}

// addUIDTable adds to c the table name of family f with r's rules,
// replacing the one of that name that is there when stale (add, delete,
// add: the first add makes the delete valid whatever happened since).
func addUIDTable(c *nftables.Conn, name string, r UIDRules, f uidFamily, stale bool) {
	t := &nftables.Table{Family: f.family, Name: name}
	if stale {
		c.AddTable(t)
		c.DelTable(t)
	}
	c.AddTable(t)
	addUIDRules(c, t, r, f)
}

// addUIDRules adds r's chains to t (the order is at the top of this file).
func addUIDRules(c *nftables.Conn, t *nftables.Table, r UIDRules, f uidFamily) {
	uid := skuidIs(r.UID)
	confine := c.AddChain(&nftables.Chain{Name: "confine", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityFilter})
	toLoopback := func(proto byte, port uint16) []expr.Any {
		return joinExprs(uid, l4protoIs(proto), f.daddr(expr.CmpOpEq, f.listen), dportIs(port), nftVerdict(expr.VerdictAccept))
	}
	for _, p := range append([]uint16{r.CapturePort, r.DNSPort}, r.LoopbackTCP...) {
		c.AddRule(&nftables.Rule{Table: t, Chain: confine, Exprs: toLoopback(unix.IPPROTO_TCP, p)})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: confine, Exprs: toLoopback(unix.IPPROTO_UDP, r.DNSPort)})
	c.AddRule(&nftables.Rule{Table: t, Chain: confine, Exprs: joinExprs(uid, l4protoIs(unix.IPPROTO_TCP),
		f.daddr(expr.CmpOpEq, f.loopNet), ctReply(), nftVerdict(expr.VerdictAccept))})
	c.AddRule(&nftables.Rule{Table: t, Chain: confine, Exprs: joinExprs(uid, nftVerdict(expr.VerdictDrop))})

	nat := c.AddChain(&nftables.Chain{Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityRef(uidNATPriority)})
	for _, proto := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: joinExprs(uid, l4protoIs(proto), dportIs(53), redirectTo(r.DNSPort))})
	}
	c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: joinExprs(uid, l4protoIs(unix.IPPROTO_TCP),
		f.daddr(expr.CmpOpNeq, f.loopNet), redirectTo(r.CapturePort))})
}

// joinExprs joins rules' expressions.
func joinExprs(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// skuidIs matches packets of a socket uid owns (meta skuid, host order).
func skuidIs(uid uint32) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(uid)},
	}
}

// l4protoIs matches the transport protocol proto.
func l4protoIs(proto byte) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
}

// dportIs matches the transport header's destination port (TCP and UDP
// alike; after l4protoIs).
func dportIs(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
	}
}

// daddr compares the first len(addr) bytes of the destination address
// with addr.
func (f uidFamily) daddr(op expr.CmpOp, addr []byte) []expr.Any {
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: f.daddrOff, Len: uint32(len(addr))},
		&expr.Cmp{Op: op, Register: 1, Data: addr},
	}
}

// ctReply matches packets in the reply direction of their connection.
func ctReply() []expr.Any {
	return []expr.Any{
		&expr.Ct{Register: 1, Key: expr.CtKeyDIRECTION},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{ctDirReply}},
	}
}

// redirectTo redirects to port on loopback (127.0.0.1 or ::1 for a packet
// sent by this host).
func redirectTo(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1},
	}
}

// nftVerdict ends a rule with the verdict k.
func nftVerdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }

// effectiveCap reports whether the calling thread has capability c in its
// effective set.
func effectiveCap(c uint) (bool, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, err
	}
	return data[c/32].Effective&(1<<(c%32)) != 0, nil
}

// uidProcesses lists the processes other than this one with a thread that
// has uid among its uids, is not a zombie, and is in the calling thread's
// network namespace (or in one this process cannot read).
func uidProcesses(uid uint32) ([]int, error) {
	self, err := os.Readlink("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	want := strconv.FormatUint(uint64(uid), 10)
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		// This process is never the uid's: a thread of it may hold the
		// uid for a moment (asUID), never a process of the command.
		if err != nil || pid == os.Getpid() {
			continue
		}
		tasks, err := os.ReadDir("/proc/" + e.Name() + "/task")
		if err != nil {
			continue // gone
		}
		for _, task := range tasks {
			dir := "/proc/" + e.Name() + "/task/" + task.Name()
			status, err := os.ReadFile(dir + "/status")
			if err != nil || !statusHasUID(status, want) {
				continue
			}
			ns, err := os.Readlink(dir + "/ns/net")
			if errors.Is(err, fs.ErrNotExist) || err == nil && ns != self {
				continue
			}
			pids = append(pids, pid)
			break
		}
	}
	return pids, nil
}

// statusHasUID reports whether a /proc status file is of a live (not
// zombie, not dead) task with uid among the four of its Uid line.
func statusHasUID(status []byte, uid string) bool {
	has := false
	for _, line := range bytes.Split(status, []byte("\n")) {
		k, v, ok := strings.Cut(string(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "State":
			if f := strings.Fields(v); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				return false // a zombie, or dead
			}
		case "Uid":
			for _, f := range strings.Fields(v) {
				has = has || f == uid
			}
		}
	}
	return has
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// HasNetAdmin says whether this thread has CAP_NET_ADMIN in its effective
// set: container mode's first condition, checked without touching
// netfilter (CheckUIDRules proves the rest, at the cost of a transaction).
func HasNetAdmin() bool {
	ok, err := effectiveCap(unix.CAP_NET_ADMIN)
	return err == nil && ok && ownsNetns()
}

// ownsNetns says whether this thread's network namespace belongs to its
// user namespace: its capabilities then reach the namespace (a process in
// a user namespace of its own has CAP_NET_ADMIN, but not over the network
// namespace it was started in).
func ownsNetns() bool {
	nfd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(nfd)
	ufd, err := unix.IoctlRetInt(nfd, unix.NS_GET_USERNS)
	if err != nil {
		return false
	}
	defer unix.Close(ufd)
	var owner, mine unix.Stat_t
	if unix.Fstat(ufd, &owner) != nil || unix.Stat("/proc/thread-self/ns/user", &mine) != nil {
		return false
	}
	return owner.Dev == mine.Dev && owner.Ino == mine.Ino
}
