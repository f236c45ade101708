//go:build linux

package procjail

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"github.com/miekg/dns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// The uid network tests run real processes under a uid of their own in a
// network namespace the test made, with the addresses below on its own
// interface (never an outside address), and compare what each probe got
// with a table.

const (
	// uidProbeEnv makes this test binary a helper (uidHelper): "probe"
	// runs uidProbes and prints what each got; "serve" installs the rules
	// of uidRulesEnv, serves the supervisor's listeners, says "ready" and
	// waits to be killed (a crashed sandboxd); "check" prints
	// CheckUIDRules' answer; "sleep" sleeps a minute.
	uidProbeEnv = "BARRY_UIDNET_HELPER"
	uidRulesEnv = "BARRY_UIDNET_RULES"
	// The supervisor's ports in the test namespace.
	uidCapturePort = 3130
	uidDNSPort     = 5353
	uidProxyPort   = 3128
	// uidSelfPort is a port of the agent's own server it may reach
	// (LoopbackTCP); uidSelfOtherPort one it may not.
	uidSelfPort      = 3000
	uidSelfOtherPort = 3001
	// uidProbeWait bounds each probe's wait for an answer.
	uidProbeWait = 1500 * time.Millisecond
	// uidBase is the first of the tests' uids (each test has its own; all
	// within ping_group_range's limit).
	uidBase = 1_900_000_000
)

// The test namespace's own addresses: the target servers (root's, as any
// server the agent would want to reach) listen on them; uidFarV4 is in
// no one's, routed out through lo (where it comes back to no one).
var (
	uidAddrs  = []string{"203.0.113.10/24", "2001:db8::10/64"}
	uidFarV4  = "198.51.100.53"
	uidTarget = map[string]string{"4": "203.0.113.10", "6": "2001:db8::10"}
)

// uidRules are the tests' rules for uid.
func uidRules(uid uint32) UIDRules {
	return UIDRules{UID: uid, CapturePort: uidCapturePort, DNSPort: uidDNSPort, LoopbackTCP: []uint16{uidProxyPort, uidSelfPort}}
}

// uidProbes are what the tests' processes try: each gives what the server
// answered (its name; the capture adds the address SO_ORIGINAL_DST gave
// when that is not its own) or how the call failed ("dropped",
// "refused").
var uidProbes = []struct {
	name string
	run  func() string
}{
	{"tcp4", func() string { return tcpLine(net.JoinHostPort(uidTarget["4"], "80")) }},
	{"tcp6", func() string { return tcpLine(net.JoinHostPort(uidTarget["6"], "80")) }},
	{"tcp4-far", func() string { return tcpLine(net.JoinHostPort(uidFarV4, "443")) }},
	{"dns4-udp", func() string { return dnsQuery("udp", net.JoinHostPort(uidTarget["4"], "53")) }},
	{"dns6-udp", func() string { return dnsQuery("udp", net.JoinHostPort(uidTarget["6"], "53")) }},
	{"dns4-tcp", func() string { return dnsQuery("tcp", net.JoinHostPort(uidTarget["4"], "53")) }},
	{"dns6-tcp", func() string { return dnsQuery("tcp", net.JoinHostPort(uidTarget["6"], "53")) }},
	{"dns4-far", func() string { return dnsQuery("udp", net.JoinHostPort(uidFarV4, "53")) }},
	{"dns4-docker", func() string { return dnsQuery("udp", "127.0.0.11:53") }},
	{"udp4", func() string { return udpLine(net.JoinHostPort(uidTarget["4"], "9999")) }},
	{"udp6", func() string { return udpLine(net.JoinHostPort(uidTarget["6"], "9999")) }},
	{"icmp4", func() string { return icmpEcho("udp4", uidTarget["4"]) }},
	{"icmp6", func() string { return icmpEcho("udp6", uidTarget["6"]) }},
	{"lo4-other", func() string { return tcpLine("127.0.0.1:8080") }},
	{"lo6-other", func() string { return tcpLine("[::1]:8080") }},
	{"lo4-udp", func() string { return udpLine("127.0.0.1:9999") }},
	{"lo4-alias", func() string { return tcpLine("127.0.0.2:" + strconv.Itoa(uidProxyPort)) }},
	{"lo4-proxy", func() string { return tcpLine("127.0.0.1:" + strconv.Itoa(uidProxyPort)) }},
	{"lo6-proxy", func() string { return tcpLine("[::1]:" + strconv.Itoa(uidProxyPort)) }},
	{"lo4-capture", func() string { return tcpLine("127.0.0.1:" + strconv.Itoa(uidCapturePort)) }},
	{"lo4-dns", func() string { return dnsQuery("udp", "127.0.0.1:"+strconv.Itoa(uidDNSPort)) }},
	{"self-listed", func() string { return selfServe(uidSelfPort) }},
	{"self-other", func() string { return selfServe(uidSelfOtherPort) }},
}

// uidUntouched is what every probe gets with no rules: what root gets
// (the far address is no one's, and the namespace forwards nothing).
var uidUntouched = map[string]string{
	"tcp4": "target", "tcp6": "target", "tcp4-far": "dropped",
	"dns4-udp": "target", "dns6-udp": "target", "dns4-tcp": "target", "dns6-tcp": "target",
	"dns4-far": "dropped", "dns4-docker": "refused",
	"udp4": "target", "udp6": "target", "icmp4": "reply", "icmp6": "reply",
	"lo4-other": "loopback", "lo6-other": "loopback", "lo4-udp": "loopback", "lo4-alias": "alias",
	"lo4-proxy": "proxy", "lo6-proxy": "proxy", "lo4-capture": "capture", "lo4-dns": "dnsproxy",
	"self-listed": "self", "self-other": "self",
}

// uidConfined is what the confined uid gets while the supervisor serves.
var uidConfined = map[string]string{
	"tcp4": "capture 203.0.113.10:80", "tcp6": "capture [2001:db8::10]:80", "tcp4-far": "capture 198.51.100.53:443",
	"dns4-udp": "dnsproxy", "dns6-udp": "dnsproxy", "dns4-tcp": "dnsproxy", "dns6-tcp": "dnsproxy",
	"dns4-far": "dnsproxy", "dns4-docker": "dnsproxy",
	"udp4": "dropped", "udp6": "dropped", "icmp4": "dropped", "icmp6": "dropped",
	"lo4-other": "dropped", "lo6-other": "dropped", "lo4-udp": "dropped", "lo4-alias": "dropped",
	"lo4-proxy": "proxy", "lo6-proxy": "proxy", "lo4-capture": "capture", "lo4-dns": "dnsproxy",
	"self-listed": "self", "self-other": "dropped",
}

// uidCrashed is what the confined uid gets after the supervisor died
// without removing the rules: refused where it was redirected or allowed,
// dropped elsewhere, never the target.
var uidCrashed = map[string]string{
	"tcp4": "refused", "tcp6": "refused", "tcp4-far": "refused",
	"dns4-udp": "refused", "dns6-udp": "refused", "dns4-tcp": "refused", "dns6-tcp": "refused",
	"dns4-far": "refused", "dns4-docker": "refused",
	"udp4": "dropped", "udp6": "dropped", "icmp4": "dropped", "icmp6": "dropped",
	"lo4-other": "dropped", "lo6-other": "dropped", "lo4-udp": "dropped", "lo4-alias": "dropped",
	"lo4-proxy": "refused", "lo6-proxy": "refused", "lo4-capture": "refused", "lo4-dns": "refused",
	"self-listed": "self", "self-other": "dropped",
}

func init() {
	// A helper process of these tests (before TestMain: no flags).
	if mode := os.Getenv(uidProbeEnv); mode != "" {
		os.Exit(uidHelper(mode))
	}
}

// uidHelper runs one helper mode (uidProbeEnv) and returns its exit code.
func uidHelper(mode string) int {
	// setpriv's change of uid cleared the parent-death signal exec.Cmd set.
	unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	if os.Getppid() == 1 {
		return 1 // the test is gone already
	}
	switch mode {
	case "probe":
		got := make([]string, len(uidProbes))
		var wg sync.WaitGroup
		for i, p := range uidProbes {
			wg.Go(func() { got[i] = p.name + "\t" + p.run() })
		}
		wg.Wait()
		fmt.Println(strings.Join(got, "\n"))
		return 0
	case "serve":
		var r UIDRules
		if err := json.Unmarshal([]byte(os.Getenv(uidRulesEnv)), &r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := InstallUIDRules(r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := serveSupervisor(net.Listen, net.ListenPacket); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		select {} // until killed
	case "check":
		fmt.Println(CheckUIDRules())
		return 0
	case "sleep":
		time.Sleep(time.Minute)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// classify names how a probe's call failed.
func classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.EPERM) || errors.As(err, &ne) && ne.Timeout():
		// EPERM: netfilter dropped the packet on the way out and the
		// kernel said so (UDP, ICMP over IPv4); TCP retries a dropped SYN
		// silently, and ICMPv6 reports nothing. Every server of these
		// tests answers, so silence is a drop too.
		return "dropped"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	}
	return "error " + err.Error()
}

// tcpLine dials addr and reads what the server says.
func tcpLine(addr string) string {
	c, err := net.DialTimeout("tcp", addr, uidProbeWait)
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(uidProbeWait))
	b, err := io.ReadAll(io.LimitReader(c, 256))
	if err != nil {
		return classify(err)
	}
	return strings.TrimSpace(string(b))
}

// udpLine sends a datagram to addr and reads the answer.
func udpLine(addr string) string {
	c, err := net.Dial("udp", addr)
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(uidProbeWait))
	if _, err := c.Write([]byte("ping")); err != nil {
		return classify(err)
	}
	b := make([]byte, 256)
	n, err := c.Read(b)
	if err != nil {
		return classify(err)
	}
	return string(b[:n])
}

// dnsQuery asks addr over network (udp, tcp) for probe.test's TXT record
// and returns its text: who answered.
func dnsQuery(network, addr string) string {
	q := new(dns.Msg)
	q.SetQuestion("probe.test.", dns.TypeTXT)
	b, err := q.Pack()
	if err != nil {
		return classify(err)
	}
	c, err := net.DialTimeout(network, addr, uidProbeWait)
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(uidProbeWait))
	var reply []byte
	if network == "tcp" {
		if _, err := c.Write(binary.BigEndian.AppendUint16(nil, uint16(len(b)))); err != nil {
			return classify(err)
		}
		if _, err := c.Write(b); err != nil {
			return classify(err)
		}
		var l [2]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return classify(err)
		}
		reply = make([]byte, binary.BigEndian.Uint16(l[:]))
		if _, err := io.ReadFull(c, reply); err != nil {
			return classify(err)
		}
	} else {
		if _, err := c.Write(b); err != nil {
			return classify(err)
		}
		reply = make([]byte, 1500)
		n, err := c.Read(reply)
		if err != nil {
			return classify(err)
		}
		reply = reply[:n]
	}
	m := new(dns.Msg)
	if err := m.Unpack(reply); err != nil || len(m.Answer) != 1 {
		return fmt.Sprintf("bad reply %v", err)
	}
	txt, ok := m.Answer[0].(*dns.TXT)
	if !ok || len(txt.Txt) != 1 {
		return "bad reply " + m.Answer[0].String()
	}
	return txt.Txt[0]
}

// icmpEcho sends an echo request to addr over a ping socket (network udp4
// or udp6) and waits for the reply.
func icmpEcho(network, addr string) string {
	c, err := icmp.ListenPacket(network, "")
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	m := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 1, Seq: 1, Data: []byte("ping")}}
	if network == "udp6" {
		m.Type = ipv6.ICMPTypeEchoRequest
	}
	b, err := m.Marshal(nil)
	if err != nil {
		return classify(err)
	}
	c.SetDeadline(time.Now().Add(uidProbeWait))
	if _, err := c.WriteTo(b, &net.UDPAddr{IP: net.ParseIP(addr)}); err != nil {
		return classify(err)
	}
	if _, _, err := c.ReadFrom(make([]byte, 1500)); err != nil {
		return classify(err)
	}
	return "reply"
}

// selfServe listens on 127.0.0.1:port (its own server) and connects to it.
func selfServe(port int) string {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return classify(err)
	}
	defer ln.Close()
	go serveTCP(ln, nil, func(*net.TCPConn) string { return "self" })
	return tcpLine(ln.Addr().String())
}

// serveTCP answers each connection on ln with what answer says of it,
// counting them in n (if not nil), until ln is closed.
func serveTCP(ln net.Listener, n *atomic.Int64, answer func(*net.TCPConn) string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if n != nil {
			n.Add(1)
		}
		go func() {
			defer c.Close()
			io.WriteString(c, answer(c.(*net.TCPConn))+"\n")
		}()
	}
}

// serveUDP answers each datagram on pc with answer.
func serveUDP(pc net.PacketConn, n *atomic.Int64, answer string) {
	b := make([]byte, 1500)
	for {
		_, from, err := pc.ReadFrom(b)
		if err != nil {
			return
		}
		if n != nil {
			n.Add(1)
		}
		pc.WriteTo([]byte(answer), from)
	}
}

// dnsAnswer is the reply to query q: one TXT record, who.
func dnsAnswer(q []byte, who string) []byte {
	m := new(dns.Msg)
	if err := m.Unpack(q); err != nil || len(m.Question) != 1 {
		return nil
	}
	r := new(dns.Msg)
	r.SetReply(m)
	r.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: m.Question[0].Name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 5}, Txt: []string{who}}}
	b, _ := r.Pack()
	return b
}

// serveDNSUDP answers each query on pc with a TXT record, who.
func serveDNSUDP(pc net.PacketConn, n *atomic.Int64, who string) {
	b := make([]byte, 1500)
	for {
		l, from, err := pc.ReadFrom(b)
		if err != nil {
			return
		}
		if n != nil {
			n.Add(1)
		}
		pc.WriteTo(dnsAnswer(b[:l], who), from)
	}
}

// serveDNSTCP answers one query on each connection to ln.
func serveDNSTCP(ln net.Listener, n *atomic.Int64, who string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if n != nil {
			n.Add(1)
		}
		go func() {
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			var l [2]byte
			if _, err := io.ReadFull(c, l[:]); err != nil {
				return
			}
			q := make([]byte, binary.BigEndian.Uint16(l[:]))
			if _, err := io.ReadFull(c, q); err != nil {
				return
			}
			a := dnsAnswer(q, who)
			c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(a))), a...))
		}()
	}
}

// serveSupervisor serves what sandboxd serves in container mode, on
// 127.0.0.1 and ::1 of the namespace listen and listenPacket make their
// sockets in: the capture listener (which answers with the address
// SO_ORIGINAL_DST gives, by capture_linux.go's originalDst), the DNS proxy
// (UDP and TCP) and the HTTP proxy. It returns what to close.
func serveSupervisor(listen func(network, addr string) (net.Listener, error),
	listenPacket func(network, addr string) (net.PacketConn, error)) ([]io.Closer, error) {
	var cl []io.Closer
	fail := func(err error) ([]io.Closer, error) {
		for _, c := range cl {
			c.Close()
		}
		return nil, err
	}
	for _, host := range []string{"127.0.0.1", "::1"} {
		tcp := map[int]func(net.Listener){
			uidCapturePort: func(ln net.Listener) {
				serveTCP(ln, nil, func(c *net.TCPConn) string {
					// A connection made to the port itself has no
					// original destination (or its own, when conntrack
					// runs in the namespace).
					orig, err := originalDst(c)
					if err != nil || orig == c.LocalAddr().(*net.TCPAddr).AddrPort() {
						return "capture"
					}
					return "capture " + orig.String()
				})
			},
			uidDNSPort:   func(ln net.Listener) { serveDNSTCP(ln, nil, "dnsproxy") },
			uidProxyPort: func(ln net.Listener) { serveTCP(ln, nil, func(*net.TCPConn) string { return "proxy" }) },
		}
		for port, serve := range tcp {
			ln, err := listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
			if err != nil {
				return fail(err)
			}
			cl = append(cl, ln)
			go serve(ln)
		}
		pc, err := listenPacket("udp", net.JoinHostPort(host, strconv.Itoa(uidDNSPort)))
		if err != nil {
			return fail(err)
		}
		cl = append(cl, pc)
		go serveDNSUDP(pc, nil, "dnsproxy")
	}
	return cl, nil
}

// uidNet is one test's namespace with its servers and a probe binary.
type uidNet struct {
	ns      *proxytest.Netns
	ip      string
	setpriv string
	exe     string       // this test binary, executable by any uid
	targets atomic.Int64 // connections and queries the targets got
}

// newUIDNet makes the namespace (uidAddrs on its own interface), lets
// every gid open ping sockets there (so ICMP is up to the rules), and
// starts root's servers: the targets on uidAddrs (TCP 80, DNS 53, UDP
// 9999), others on loopback (TCP 8080, UDP 9999, and 127.0.0.2 on the
// proxy's port), and, with supervisor, serveSupervisor's.
func newUIDNet(t *testing.T, supervisor bool) *uidNet {
	t.Helper()
	u := &uidNet{ns: proxytest.NewNetns(t, uidAddrs...)}
	u.ip = testenv.NeedCommand(t, "ip")
	u.setpriv = testenv.NeedCommand(t, "setpriv")
	for _, args := range [][]string{
		{"netns", "exec", u.ns.Name, testenv.NeedCommand(t, "sysctl"), "-qw", "net.ipv4.ping_group_range=0 2147483647"},
		{"-n", u.ns.Name, "route", "add", uidFarV4 + "/32", "dev", "lo"},
	} {
		if out, err := exec.Command(u.ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	u.exe = anyUIDCopy(t)
	listen := func(network, addr string) net.Listener {
		ln := u.ns.Listen(t, network, addr)
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	listenPacket := func(addr string) net.PacketConn {
		pc := u.ns.ListenPacket(t, "udp", addr)
		t.Cleanup(func() { pc.Close() })
		return pc
	}
	for _, a := range uidTarget {
		go serveTCP(listen("tcp", net.JoinHostPort(a, "80")), &u.targets, func(*net.TCPConn) string { return "target" })
		go serveDNSTCP(listen("tcp", net.JoinHostPort(a, "53")), &u.targets, "target")
		go serveDNSUDP(listenPacket(net.JoinHostPort(a, "53")), &u.targets, "target")
		go serveUDP(listenPacket(net.JoinHostPort(a, "9999")), &u.targets, "target")
	}
	for _, a := range []string{"127.0.0.1:8080", "[::1]:8080"} {
		go serveTCP(listen("tcp", a), nil, func(*net.TCPConn) string { return "loopback" })
	}
	go serveUDP(listenPacket("127.0.0.1:9999"), nil, "loopback")
	go serveTCP(listen("tcp", "127.0.0.2:"+strconv.Itoa(uidProxyPort)), nil, func(*net.TCPConn) string { return "alias" })
	if supervisor {
		// Its listeners close with listen's and listenPacket's cleanups.
		if _, err := serveSupervisor(
			func(network, addr string) (net.Listener, error) { return listen(network, addr), nil },
			func(network, addr string) (net.PacketConn, error) { return listenPacket(addr), nil }); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// anyUIDCopy copies this test binary where any uid can run it.
func anyUIDCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "procjail-uidnet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "procjail.test")
	if err := os.WriteFile(exe, src, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe
}

// command is the helper in mode, in the namespace, under the commands
// of pre (none: as root with every capability), with its own process
// group and a parent-death signal.
func (u *uidNet) command(ctx context.Context, mode string, pre ...string) *exec.Cmd {
	return u.commandIn(ctx, u.ns.Name, mode, pre...)
}

// commandIn is command in the namespace named ns.
func (u *uidNet) commandIn(ctx context.Context, ns, mode string, pre ...string) *exec.Cmd {
	args := append(append([]string{"netns", "exec", ns}, pre...), u.exe)
	cmd := exec.CommandContext(ctx, u.ip, args...)
	// (The race detector's default is a second's sleep at exit.)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", uidProbeEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// asUID is the setpriv command that runs what follows as uid (and its gid)
// with no supplementary group and no capability, as the agent runs.
func (u *uidNet) asUID(uid uint32) []string {
	id := strconv.FormatUint(uint64(uid), 10)
	return []string{u.setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups",
		"--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"}
}

// probe runs uidProbes as uid in the namespace and returns what each got.
func (u *uidNet) probe(t *testing.T, uid uint32) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pre []string
	if uid != 0 {
		pre = u.asUID(uid)
	}
	cmd := u.command(ctx, "probe", pre...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe as uid %d: %v\n%s%s", uid, err, out, stderr.String())
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(line, "\t")
		if _, dup := got[k]; dup {
			t.Fatalf("probe %q twice", k)
		}
		got[k] = v
	}
	return got
}

// expect fails the test where got differs from want (what each probe of
// who should get).
func expect(t *testing.T, who string, got, want map[string]string) {
	t.Helper()
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s: probes differ (-want +got):\n%s", who, d)
	}
}

// with is base with the entries of changes.
func with(base, changes map[string]string) map[string]string {
	m := maps.Clone(base)
	maps.Copy(m, changes)
	return m
}

// do runs f in the namespace, failing the test on an error.
func (u *uidNet) do(t *testing.T, what string, f func() error) {
	t.Helper()
	if err := u.ns.Do(f); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// tables lists the namespace's tables named like uid's, as family/name.
func (u *uidNet) tables(t *testing.T, uid uint32) []string {
	t.Helper()
	var names []string
	u.do(t, "list tables", func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		ts, err := c.ListTables()
		for _, tb := range ts {
			if tb.Name == uidTable(uid) {
				names = append(names, fmt.Sprintf("%d/%s", tb.Family, tb.Name))
			}
		}
		return err
	})
	sort.Strings(names)
	return names
}

// TestUIDRules: with the rules installed for a uid, that uid's TCP to any
// address that is not loopback lands on the capture listener, which reads
// the dialed address (IPv4 and IPv6) with SO_ORIGINAL_DST; its DNS to port
// 53 of any address (UDP and TCP, loopback included) lands on the DNS
// proxy; it reaches on loopback only the listed ports (127.0.0.1 and ::1
// only, not 127.0.0.2), and its own listed server; its other UDP, ICMP and
// loopback traffic is dropped. Root and another uid are untouched, and
// after RemoveUIDRules so is the uid.
func TestUIDRules(t *testing.T) {
	u := newUIDNet(t, true)
	uid := uint32(uidBase + 1)
	expect(t, "root before", u.probe(t, 0), uidUntouched)
	u.do(t, "install", func() error { return InstallUIDRules(uidRules(uid)) })
	if got, want := u.tables(t, uid), []string{"10/barry_uid_1900000001", "2/barry_uid_1900000001"}; !slices.Equal(got, want) {
		t.Errorf("tables %v, want %v", got, want)
	}
	before := u.targets.Load()
	expect(t, "confined uid", u.probe(t, uid), uidConfined)
	if n := u.targets.Load() - before; n != 0 {
		t.Errorf("the targets got %d connections and queries from the confined uid", n)
	}
	expect(t, "root", u.probe(t, 0), uidUntouched)
	expect(t, "another uid", u.probe(t, uid+1), uidUntouched)
	u.do(t, "remove", func() error { return RemoveUIDRules(uid) })
	if got := u.tables(t, uid); len(got) != 0 {
		t.Errorf("tables left after removal: %v", got)
	}
	expect(t, "uid after removal", u.probe(t, uid), uidUntouched)
}

// TestUIDRulesFailClosed: a supervisor that installed the rules and was
// killed (SIGKILL: no cleanup ran) leaves them, and the uid then has no
// network: its redirected and allowed connections are refused (nothing
// listens any more), the rest dropped, and the targets, which are up, see
// nothing of it.
func TestUIDRulesFailClosed(t *testing.T) {
	u := newUIDNet(t, false)
	uid := uint32(uidBase + 2)
	rules, err := json.Marshal(uidRules(uid))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sup := u.command(ctx, "serve")
	sup.Env = append(sup.Env, uidRulesEnv+"="+string(rules))
	sup.Stderr = os.Stderr
	out, err := sup.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sup.Process.Kill(); sup.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the supervisor said %q, %v", line, err)
	}
	// It serves: the uid is confined as in TestUIDRules.
	got := u.probe(t, uid)
	for _, k := range []string{"tcp4", "tcp6", "dns4-udp", "lo4-proxy"} {
		if got[k] != uidConfined[k] {
			t.Fatalf("%s: %q while the supervisor serves, want %q", k, got[k], uidConfined[k])
		}
	}
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	sup.Wait()
	if got := u.tables(t, uid); len(got) != 2 {
		t.Fatalf("tables after the crash: %v, want both families'", got)
	}
	before := u.targets.Load()
	expect(t, "uid after the crash", u.probe(t, uid), uidCrashed)
	if n := u.targets.Load() - before; n != 0 {
		t.Errorf("the targets got %d connections and queries from the uid after the crash", n)
	}
	// The targets are up: root reaches them (not the supervisor's ports).
	expect(t, "root after the crash", u.probe(t, 0), with(uidUntouched, map[string]string{
		"lo4-proxy": "refused", "lo6-proxy": "refused", "lo4-capture": "refused", "lo4-dns": "refused"}))
}

// TestUIDRulesForeignNAT: another table's NAT rules in the namespace (as
// Docker's DNAT of its resolver 127.0.0.11:53, by iptables-nft at
// priority -100), made after the uid's (as when Docker makes its chain
// again: at one priority the chain registered last runs first), change
// nothing the uid gets: its DNS still goes to the DNS proxy, as the
// redirect runs at -110; and where a foreign DNAT does take its traffic
// (a loopback port it may reach, sent to one it may not) the filter,
// after every NAT, drops it. Root gets the foreign rules' targets.
func TestUIDRulesForeignNAT(t *testing.T) {
	u := newUIDNet(t, true)
	uid := uint32(uidBase + 6)
	docker := u.ns.ListenPacket(t, "udp", "127.0.0.11:5300")
	t.Cleanup(func() { docker.Close() })
	go serveDNSUDP(docker, nil, "docker")
	dnat := func(addr []byte, port uint16) []expr.Any {
		return []expr.Any{
			&expr.Immediate{Register: 1, Data: addr},
			&expr.Immediate{Register: 2, Data: binaryutil.BigEndian.PutUint16(port)},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true},
		}
	}
	v4 := uidFamilies[0]
	u.do(t, "install", func() error { return InstallUIDRules(uidRules(uid)) })
	u.do(t, "foreign rules", func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		tb := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "foreign"})
		ch := c.AddChain(&nftables.Chain{Name: "output", Table: tb, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
		c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: joinExprs(v4.daddr(expr.CmpOpEq, []byte{127, 0, 0, 11}),
			l4protoIs(unix.IPPROTO_UDP), dportIs(53), dnat([]byte{127, 0, 0, 11}, 5300))})
		c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: joinExprs(v4.daddr(expr.CmpOpEq, []byte{127, 0, 0, 1}),
			l4protoIs(unix.IPPROTO_TCP), dportIs(uidProxyPort), dnat([]byte{127, 0, 0, 1}, 8080))})
		return c.Flush()
	})
	expect(t, "root", u.probe(t, 0), with(uidUntouched, map[string]string{"dns4-docker": "docker", "lo4-proxy": "loopback"}))
	expect(t, "confined uid", u.probe(t, uid), with(uidConfined, map[string]string{"lo4-proxy": "dropped"}))
}

// TestUIDRulesReplace: installing over the tables a crashed run left
// (other ports) replaces them, in both families: the uid's connections go
// to the new capture port, none to the old.
func TestUIDRulesReplace(t *testing.T) {
	u := newUIDNet(t, true)
	uid := uint32(uidBase + 3)
	var stale atomic.Int64
	for _, a := range []string{"127.0.0.1:4130", "[::1]:4130"} {
		ln := u.ns.Listen(t, "tcp", a)
		t.Cleanup(func() { ln.Close() })
		go serveTCP(ln, &stale, func(*net.TCPConn) string { return "stale" })
	}
	old := uidRules(uid)
	old.CapturePort, old.DNSPort, old.LoopbackTCP = 4130, 4153, []uint16{4128}
	u.do(t, "install the stale rules", func() error { return InstallUIDRules(old) })
	if got := u.probe(t, uid)["tcp6"]; got != "stale" {
		t.Fatalf("tcp6 under the stale rules: %q", got)
	}
	stale.Store(0)
	u.do(t, "install over them", func() error { return InstallUIDRules(uidRules(uid)) })
	if got := u.tables(t, uid); len(got) != 2 {
		t.Errorf("tables %v, want one per family", got)
	}
	expect(t, "uid", u.probe(t, uid), uidConfined)
	if n := stale.Load(); n != 0 {
		t.Errorf("the stale capture port got %d connections", n)
	}
}

// TestRemoveUIDRulesInUse: RemoveUIDRules refuses while a process of the
// uid lives in the namespace (the rules stay), not for one of the uid in
// another namespace nor for a thread of the caller's own; once none is
// left it removes them, and removing again is no error.
func TestRemoveUIDRulesInUse(t *testing.T) {
	u := newUIDNet(t, false)
	other := proxytest.NewNetns(t)
	uid := uint32(uidBase + 4)
	u.do(t, "install", func() error { return InstallUIDRules(uidRules(uid)) })
	sleeper := func(ns string) *exec.Cmd {
		cmd := u.commandIn(context.Background(), ns, "sleep", u.asUID(uid)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Until it runs as uid (setpriv has changed its uid).
		for i := 0; i < 500; i++ {
			b, _ := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
			if statusHasUID(b, strconv.FormatUint(uint64(uid), 10)) {
				return cmd
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("the sleeper never ran as the uid")
		return nil
	}
	elsewhere := sleeper(other.Name)
	inside := sleeper(u.ns.Name)
	err := u.ns.Do(func() error { return RemoveUIDRules(uid) })
	if !errors.Is(err, ErrUIDInUse) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(inside.Process.Pid)) {
		t.Fatalf("RemoveUIDRules with pid %d of the uid alive: %v", inside.Process.Pid, err)
	}
	if strings.Contains(err.Error(), strconv.Itoa(elsewhere.Process.Pid)) {
		t.Errorf("RemoveUIDRules counted pid %d, in another namespace: %v", elsewhere.Process.Pid, err)
	}
	if got := u.tables(t, uid); len(got) != 2 {
		t.Fatalf("tables after the refusal: %v", got)
	}
	inside.Process.Kill()
	inside.Wait()
	// A thread of the caller's own under the uid, in the namespace (as
	// sandboxd's thread that kills the uid's processes), does not count.
	own := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		ns, err := os.Open("/var/run/netns/" + u.ns.Name)
		if err != nil {
			own <- err
			return
		}
		err = unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET)
		ns.Close()
		if err == nil {
			if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
				err = e
			}
		}
		own <- err
		<-done
	}()
	if err := <-own; err != nil {
		t.Fatalf("a thread under the uid: %v", err)
	}
	u.do(t, "remove", func() error { return RemoveUIDRules(uid) })
	if got := u.tables(t, uid); len(got) != 0 {
		t.Errorf("tables after removal: %v", got)
	}
	u.do(t, "remove again", func() error { return RemoveUIDRules(uid) })
}

// TestCheckUIDRules: in a namespace where root has CAP_NET_ADMIN the check
// passes and leaves nothing; without the capability (dropped from the
// bounding set, as a container without --cap-add NET_ADMIN runs, or as
// another uid) it names it and the fix; in a user namespace of its own
// (every capability, but none over this network namespace) it says so.
func TestCheckUIDRules(t *testing.T) {
	u := newUIDNet(t, false)
	u.do(t, "check", func() error { return CheckUIDRules() })
	var left []string
	u.do(t, "list tables", func() error {
		c, err := nftables.New()
		if err != nil {
			return err
		}
		ts, err := c.ListTables()
		for _, tb := range ts {
			left = append(left, tb.Name)
		}
		return err
	})
	if len(left) != 0 {
		t.Errorf("the check left tables: %v", left)
	}
	unshare := testenv.NeedCommand(t, "unshare")
	for _, c := range []struct {
		name string
		cmd  func(ctx context.Context) *exec.Cmd
		want string
	}{
		{"root without NET_ADMIN", func(ctx context.Context) *exec.Cmd {
			return u.command(ctx, "check", u.setpriv, "--bounding-set=-net_admin", "--inh-caps=-net_admin", "--")
		}, "uid network rules: CAP_NET_ADMIN is unavailable (run the container with --cap-add NET_ADMIN"},
		{"another uid", func(ctx context.Context) *exec.Cmd { return u.command(ctx, "check", u.asUID(uidBase+5)...) },
			"uid network rules: CAP_NET_ADMIN is unavailable (run the container with --cap-add NET_ADMIN"},
		{"user namespace", func(ctx context.Context) *exec.Cmd {
			return u.command(ctx, "check", unshare, "--user", "--map-root-user", "--")
		}, "uid network rules: CAP_NET_ADMIN over this network namespace is unavailable (sandboxd is in a user namespace that does not own the network namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := c.cmd(ctx).CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), c.want) {
				t.Errorf("check said %q (%v), want it to begin %q", out, err, c.want)
			}
		})
	}
}

// TestCheckUIDRulesNames: where the kernel refuses a piece (a fake
// netfilter answering ENOENT to every transaction that holds it), the
// check names that piece and its fix, IPv6 apart; EPERM is the
// capability over the namespace.
func TestCheckUIDRulesNames(t *testing.T) {
	testenv.NeedRoot(t) // the capability check comes first
	for _, c := range []struct {
		refuse string // bytes of a message the fake refuses
		family byte   // and only in this family (0: any)
		errno  unix.Errno
		want   string
	}{
		{"redir\x00", 0, unix.ENOENT, "uid network rules: nftables redirect is unavailable (the host's kernel needs nft_redir: modprobe nft_redir on the host)"},
		{"nat\x00", 0, unix.EOPNOTSUPP, "uid network rules: the nftables nat chain type is unavailable (the host's kernel needs nft_chain_nat: modprobe nft_chain_nat on the host)"},
		{"ct\x00", 0, unix.ENOENT, "uid network rules: the nftables conntrack match is unavailable (the host's kernel needs nft_ct: modprobe nft_ct on the host)"},
		{"redir\x00", unix.NFPROTO_IPV6, unix.ENOENT, "uid network rules: nftables redirect for IPv6 is unavailable"},
		{"barry_uid_check\x00", unix.NFPROTO_IPV6, unix.EAFNOSUPPORT, "uid network rules: nftables for IPv6 is unavailable (the host's kernel needs nf_tables"},
		{"barry_uid_check\x00", 0, unix.EPERM, "uid network rules: CAP_NET_ADMIN over this network namespace is unavailable"},
	} {
		t.Run(c.want, func(t *testing.T) {
			dial := func() (*nftables.Conn, error) {
				return nftables.New(nftables.WithTestDial(fakeNetfilter(c.refuse, c.family, c.errno)))
			}
			err := checkUIDRules(dial)
			var ue *UIDRulesUnavailableError
			if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, c.errno) {
				t.Errorf("check = %v, want it to begin %q and wrap %v", err, c.want, c.errno)
			}
		})
	}
	if err := checkUIDRules(func() (*nftables.Conn, error) {
		return nftables.New(nftables.WithTestDial(fakeNetfilter("no such bytes", 0, 0)))
	}); err != nil {
		t.Errorf("check with a netfilter that refuses nothing: %v", err)
	}
}

// fakeNetfilter answers a batch as nf_tables does: an error for the first
// message that holds refuse (of family, unless 0), an ack for every other.
func fakeNetfilter(refuse string, family byte, errno unix.Errno) nltest.Func {
	var pending []netlink.Message
	return func(req []netlink.Message) ([]netlink.Message, error) {
		if req == nil { // a receive: the next ack
			if len(pending) == 0 {
				return nil, io.EOF
			}
			m := pending[0]
			pending = pending[1:]
			return []netlink.Message{m}, nil
		}
		pending = nil
		for _, m := range req {
			if m.Header.Flags&netlink.Acknowledge == 0 {
				continue // the batch's begin and end
			}
			code := int32(0)
			if strings.Contains(string(m.Data), refuse) && (family == 0 || len(m.Data) > 0 && m.Data[0] == family) {
				code = -int32(errno)
			}
			ack := netlink.Message{Header: netlink.Header{Type: netlink.Error, Sequence: m.Header.Sequence},
				Data: binary.NativeEndian.AppendUint32(nil, uint32(code))}
			ack.Data = append(ack.Data, make([]byte, 16)...) // the request's header, as the kernel echoes it
			pending = append(pending, ack)
		}
		return nil, nil
	}
}
