//go:build linux

package procjail

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/proxy/tlshello"
)

// Transparent capture (a Forward of network "capture"): in the sandbox's
// network namespace every address routes to lo, and netfilter redirects
// each TCP connection to an address that is not loopback to the capture
// listener on InsidePort; every other packet to such an address (UDP, ICMP)
// is dropped, so sendto fails with EPERM. The listener reads the address
// the client dialed (SO_ORIGINAL_DST) and the name its first bytes carry,
// and hands the connection to the proxy (Target, the proxy's socket) as a
// proxy-aware client would: a TLS ClientHello's server name becomes
// "CONNECT name:port", a plain HTTP request becomes the same request in
// absolute form, and anything else (no name: a server-first protocol, an
// unknown one) a CONNECT to the address itself, which the proxy decides
// like any IP literal. Each carries CaptureHeader, so the proxy dials the
// dialed address only if it is the name's. The capture decides nothing: a
// program inside can send the proxy the same requests itself; the proxy
// owns every rule and audits every refusal.

const (
	// capturePeek bounds the wait for a client's first bytes; a client
	// that waits for the server to speak first gets none.
	capturePeek = 3 * time.Second
	// captureLearnedPeek is that wait for an address the sandbox's DNS
	// answers named.
	captureLearnedPeek = 300 * time.Millisecond
	// captureHeaderTimeout bounds the wait for each plain HTTP request's
	// head.
	captureHeaderTimeout = 30 * time.Second
	// captureTable names the netfilter tables of the capture.
	captureTable = "barry_capture"
	// ip6tSoOriginalDst is IP6T_SO_ORIGINAL_DST (linux/netfilter_ipv6/
	// ip6_tables.h), which x/sys/unix does not name.
	ip6tSoOriginalDst = 80
)

// setupCapture routes every IPv4 and IPv6 address to lo and installs the
// capture's netfilter rules for port.
func setupCapture(port uint16) error {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		return err
	}
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		if err := addDefaultRoute(fam, lo.Index); err != nil {
			return fmt.Errorf("default route (family %d) via lo: %w", fam, err)
		}
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("netfilter: %w", err)
	}
	for _, f := range []struct {
		family  nftables.TableFamily
		off     uint32 // destination address in the network header
		loop    []byte // loopback, to compare with
		loopLen uint32 // bytes of the address compared
	}{
		{nftables.TableFamilyIPv4, 16, []byte{127}, 1},
		{nftables.TableFamilyIPv6, 24, net.IPv6loopback, 16},
	} {
		t := c.AddTable(&nftables.Table{Family: f.family, Name: captureTable})
		notLoopback := []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: f.off, Len: f.loopLen},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: f.loop},
		}
		l4 := func(op expr.CmpOp) []expr.Any {
			return []expr.Any{
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: op, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			}
		}
		nat := c.AddChain(&nftables.Chain{Name: "redirect", Table: t, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
		c.AddRule(&nftables.Rule{Table: t, Chain: nat, Exprs: append(append(l4(expr.CmpOpEq), notLoopback...),
			&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
			&expr.Redir{RegisterProtoMin: 1},
		)})
		filter := c.AddChain(&nftables.Chain{Name: "drop", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter})
		c.AddRule(&nftables.Rule{Table: t, Chain: filter, Exprs: append(append(l4(expr.CmpOpNeq), notLoopback...),
			&expr.Verdict{Kind: expr.VerdictDrop},
		)})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("netfilter rules: %w", err)
	}
	return nil
}

// addDefaultRoute adds the default route of family through the interface
// ifindex (rtnetlink, RTM_NEWROUTE) with loopback as its source: without
// one, a socket connected over it would get 0.0.0.0 as its address, and
// the replies to it would go nowhere.
func addDefaultRoute(family uint8, ifindex int) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	src := []byte{127, 0, 0, 1}
	if family == unix.AF_INET6 {
		src = net.IPv6loopback
	}
	const hdr, rtm = unix.SizeofNlMsghdr, unix.SizeofRtMsg
	oif, pref := 8, 4+len(src)
	msg := make([]byte, hdr+rtm+oif+pref)
	h := (*unix.NlMsghdr)(unsafe.Pointer(&msg[0]))
	h.Len, h.Type, h.Seq = uint32(len(msg)), unix.RTM_NEWROUTE, 1
	h.Flags = unix.NLM_F_REQUEST | unix.NLM_F_CREATE | unix.NLM_F_EXCL | unix.NLM_F_ACK
	r := (*unix.RtMsg)(unsafe.Pointer(&msg[hdr]))
	r.Family, r.Table, r.Protocol, r.Scope, r.Type = family, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_LINK, unix.RTN_UNICAST
	a := (*unix.RtAttr)(unsafe.Pointer(&msg[hdr+rtm]))
	a.Len, a.Type = uint16(oif), unix.RTA_OIF
	*(*uint32)(unsafe.Pointer(&msg[hdr+rtm+4])) = uint32(ifindex)
	a = (*unix.RtAttr)(unsafe.Pointer(&msg[hdr+rtm+oif]))
	a.Len, a.Type = uint16(pref), unix.RTA_PREFSRC
	copy(msg[hdr+rtm+oif+4:], src)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n < hdr+4 {
		return errors.New("short netlink answer")
	}
	if e := int32(*(*uint32)(unsafe.Pointer(&buf[hdr]))); e != 0 {
		return unix.Errno(-e)
	}
	return nil
}

// startCapture serves the capture for f on 127.0.0.1 and ::1 for as long
// as the init lives (setupNetwork set its routes and rules up).
func startCapture(f Forward, names *dnsNames) error {
	for _, host := range []string{"127.0.0.1", "::1"} {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, itoa(int(f.InsidePort))))
		if host == "::1" && errors.Is(err, unix.EADDRNOTAVAIL) {
			// IPv6 is off in this network namespace (a container's, in
			// container mode): nothing can be dialed over it either.
			continue
		}
		if err != nil {
			return err
		}
		go acceptLoop(ln, func(c net.Conn) { captureConn(c.(*net.TCPConn), f, names) })
	}
	return nil
}

// originalDst is the address a redirected connection's client dialed.
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var ap netip.AddrPort
	var serr error
	err = rc.Control(func(fd uintptr) {
		if a, e := unix.GetsockoptIPv6Mreq(int(fd), unix.IPPROTO_IP, unix.SO_ORIGINAL_DST); e == nil {
			// sockaddr_in: family, port (big-endian), address.
			m := a.Multiaddr
			ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte{m[4], m[5], m[6], m[7]}), uint16(m[2])<<8|uint16(m[3]))
			return
		}
		var sa unix.RawSockaddrInet6
		l := uint32(unix.SizeofSockaddrInet6)
		_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.IPPROTO_IPV6, ip6tSoOriginalDst,
			uintptr(unsafe.Pointer(&sa)), uintptr(unsafe.Pointer(&l)), 0)
		if e != 0 {
			serr = e
			return
		}
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	})
	if err == nil {
		err = serr
	}
	return ap, err
}

// captureConn hands one captured connection to the proxy.
func captureConn(c *net.TCPConn, f Forward, names *dnsNames) {
	defer c.Close()
	orig, err := originalDst(c)
	if err != nil {
		return
	}
	br := bufio.NewReaderSize(c, tlshello.MaxBytes)
	// A client that names its host (TLS, HTTP) sends its first bytes at
	// once; with a name its address came from, one that waits for the
	// server (ssh) need not wait long.
	learned, peek := names.lookup(orig.Addr()), capturePeek
	if learned != "" {
		peek = captureLearnedPeek
	}
	c.SetReadDeadline(time.Now().Add(peek))
	name, isHTTP := sniff(br)
	c.SetReadDeadline(time.Time{})
	if name == "" && !isHTTP && (br.Buffered() == 0 || first(br) != 0x16) {
		// Nothing named: the name the address came from, if any. (A TLS
		// hello without a name stays nameless: the proxy's rules for
		// those apply.)
		name = learned
	}
	u, err := net.DialTimeout("unix", f.Target, 10*time.Second)
	if err != nil {
		return
	}
	uc := u.(*net.UnixConn)
	defer uc.Close()
	if isHTTP {
		captureHTTP(c, br, uc, orig, f.Authorization, strings.TrimSuffix(peerLine(c.RemoteAddr(), orig), "\r\n"))
		return
	}
	host := orig.Addr().String()
	if name != "" {
		host = name
	}
	target := net.JoinHostPort(host, strconv.Itoa(int(orig.Port())))
	head := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n" + CaptureHeader + ": " + orig.String() + "\r\n" +
		peerLine(c.RemoteAddr(), orig) + proxyAuth(f.Authorization) + "\r\n"
	if _, err := io.WriteString(uc, head); err != nil {
		return
	}
	ur := bufio.NewReader(uc)
	resp, err := http.ReadResponse(ur, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		return // the proxy said why, in its audit
	}
	relayBuffered(c, br, uc, ur)
}

// sniff reads what the client's first bytes name: a ClientHello's server
// name, or that they begin a plain HTTP request; neither when they are
// something else or do not come in time.
func sniff(br *bufio.Reader) (name string, isHTTP bool) {
	first, err := br.Peek(1)
	if err != nil {
		return "", false
	}
	if first[0] == 0x16 {
		// Record by record (a ClientHello may span several), each peeked
		// whole by its length: a client sends its hello and waits.
		for off := 0; ; {
			h, err := br.Peek(off + 5)
			if err != nil {
				return "", false
			}
			need := off + 5 + (int(h[off+3])<<8 | int(h[off+4]))
			if need > tlshello.MaxBytes {
				return "", false
			}
			b, err := br.Peek(need)
			if err != nil {
				return "", false
			}
			switch st, sni := tlshello.Parse(b); st {
			case tlshello.SNI:
				if !hostLike(sni) {
					// Bytes a host name has not (CR, LF, ':'...) would
					// go into the CONNECT head: nameless instead.
					return "", false
				}
				return sni, false
			case tlshello.NeedMore:
				off = need
			default:
				return "", false
			}
		}
	}
	line, err := br.Peek(min(br.Buffered(), 16))
	if err != nil || len(line) == 0 {
		return "", false
	}
	method, _, ok := strings.Cut(string(line), " ")
	return "", ok && method != "" && strings.Trim(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

// captureHTTP forwards the client's plain HTTP requests to the proxy in
// absolute form (by each one's Host, else the dialed address) and the
// proxy's responses back, until either side ends.
func captureHTTP(c *net.TCPConn, br *bufio.Reader, uc *net.UnixConn, orig netip.AddrPort, auth, peer string) {
	done := make(chan struct{})
	go func() {
		io.Copy(c, uc)
		c.CloseWrite()
		// The proxy ended the exchange: stop waiting for the client's
		// next request too.
		c.SetReadDeadline(time.Now())
		close(done)
	}()
	for {
		select {
		case <-done:
			uc.CloseWrite()
			<-done
			return
		default:
		}
		// A request's head must come within the proxy's own header
		// timeout; its body streams with none.
		c.SetReadDeadline(time.Now().Add(captureHeaderTimeout))
		req, err := http.ReadRequest(br)
		if err != nil {
			break
		}
		c.SetReadDeadline(time.Time{})
		host := req.Host
		if host == "" {
			host = orig.Addr().String()
		}
		if _, _, err := net.SplitHostPort(host); err != nil && orig.Port() != 80 {
			host = net.JoinHostPort(strings.Trim(host, "[]"), strconv.Itoa(int(orig.Port())))
		}
		req.URL.Scheme, req.URL.Host = "http", host
		req.Header.Set(CaptureHeader, orig.String())
		req.Header.Del(PeerHeader)
		if k, v, ok := strings.Cut(peer, ": "); ok {
			req.Header.Set(k, v)
		}
		if auth != "" {
			req.Header.Set("Proxy-Authorization", auth)
		}
		err = req.WriteProxy(uc)
		req.Body.Close()
		if err != nil {
			break
		}
	}
	uc.CloseWrite()
	<-done
}

// relayBuffered relays between the client (what br holds first) and the
// proxy's tunnel (what ur holds first) until both directions end.
func relayBuffered(c *net.TCPConn, br *bufio.Reader, uc *net.UnixConn, ur *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(uc, br); uc.CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, ur); c.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// proxyAuth is the Proxy-Authorization header line for auth ("" none).
func proxyAuth(auth string) string {
	if auth == "" {
		return ""
	}
	return "Proxy-Authorization: " + auth + "\r\n"
}

// first is the first buffered byte of br (which holds at least one).
func first(br *bufio.Reader) byte {
	b, _ := br.Peek(1)
	return b[0]
}

// hostLike reports whether s is made of the bytes a DNS name has (letters,
// digits, '-', '_', '.'), at most 253 of them.
func hostLike(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
