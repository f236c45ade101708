//go:build linux

package procjail

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// startForward listens on 127.0.0.1:f.InsidePort inside the sandbox and
// relays to the host Unix socket f.Target (see Forward for the framing of
// "udp"), or hands its connections to the host over passFD ("pass"). The
// listener lives as long as the init.
func startForward(f Forward, names *dnsNames, passFD int) error {
	addr := net.JoinHostPort("127.0.0.1", itoa(int(f.InsidePort)))
	switch f.Network {
	case "capture":
		return startCapture(f, names)
	case "pass":
		if passFD <= 0 {
			return errors.New("no pass socket")
		}
		return startPass(addr, passFD)
	case "tcp":
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		go acceptLoop(ln, func(c net.Conn) {
			switch f.Attribute {
			case "http":
				attributedRelay(c.(*net.TCPConn), f.Target)
			case "dns":
				dnsAttributedRelay(c.(*net.TCPConn), f.Target, names)
			default:
				dialRelay(c.(*net.TCPConn), f.Target)
			}
		})
	case "udp":
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		go func() {
			// At most maxDatagramsInFlight exchanges at once; past that a
			// datagram is dropped, as UDP may (the client retries).
			sem := make(chan struct{}, maxDatagramsInFlight)
			for {
				buf := make([]byte, 65535)
				n, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				select {
				case sem <- struct{}{}:
					go func() {
						defer func() { <-sem }()
						var peer []byte
						if f.Attribute == "dns" {
							peer = peerFrame("udp", from, addrPort(pc.LocalAddr()))
						}
						relayDatagram(pc, from, buf[:n], f.Target, peer, names)
					}()
				default:
				}
			}
		}()
	}
	return nil
}

// maxDatagramsInFlight bounds the UDP forwarder's concurrent exchanges.
const maxDatagramsInFlight = 256

// dialRelay relays between c and a new connection to the Unix socket
// target.
func dialRelay(c *net.TCPConn, target string) {
	defer c.Close()
	u, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	defer u.Close()
	relayStream(c, u.(*net.UnixConn))
}

// relayStream copies between c and uc until both directions end.
func relayStream(c *net.TCPConn, uc *net.UnixConn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(uc, c); uc.CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, uc); c.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

// relayDatagram sends one datagram framed over a new stream connection and
// returns the one framed reply.
func relayDatagram(pc net.PacketConn, from net.Addr, msg []byte, target string, peer []byte, names *dnsNames) {
	u, err := net.DialTimeout("unix", target, 5*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	u.SetDeadline(time.Now().Add(10 * time.Second))
	frame := make([]byte, 2+len(msg))
	binary.BigEndian.PutUint16(frame, uint16(len(msg)))
	copy(frame[2:], msg)
	if _, err := u.Write(append(peer, frame...)); err != nil {
		return
	}
	var hdr [2]byte
	if _, err := io.ReadFull(u, hdr[:]); err != nil {
		return
	}
	reply := make([]byte, binary.BigEndian.Uint16(hdr[:]))
	if _, err := io.ReadFull(u, reply); err != nil {
		return
	}
	names.learn(reply)
	pc.WriteTo(reply, from)
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}

// unixConnOf takes over descriptor fd, which must be a Unix socket (one
// of the pairs Start hands the init).
func unixConnOf(fd int, name string) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), name)
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("%s descriptor is not a Unix socket", name)
	}
	return uc, nil
}

// startInbound receives the host's inbound connections over inboundFD
// (an index into ports and the connection's descriptor each) and relays
// each to 127.0.0.1:PORT inside, for as long as the init lives.
func startInbound(ports []Inbound) error {
	uc, err := unixConnOf(inboundFD, "inbound")
	if err != nil {
		return err
	}
	go func() {
		defer uc.Close()
		buf, oob := make([]byte, 2), make([]byte, unix.CmsgSpace(4))
		for {
			n, oobn, _, _, err := uc.ReadMsgUnix(buf, oob)
			if err != nil || n == 0 {
				return
			}
			fds := receivedFDs(oob[:oobn])
			i := int(buf[0])<<8 | int(buf[1])
			if n != 2 || len(fds) != 1 || i >= len(ports) {
				for _, fd := range fds {
					unix.Close(fd)
				}
				continue
			}
			go relayInbound(fds[0], ports[i].Port)
		}
	}()
	return nil
}

// receivedFDs are the descriptors an SCM_RIGHTS message carried.
func receivedFDs(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}

// relayInbound relays the host's connection fd to 127.0.0.1:port inside.
func relayInbound(fd int, port uint16) {
	unix.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "inbound connection")
	hc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	defer hc.Close()
	t, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", itoa(int(port))), 10*time.Second)
	if err != nil {
		return
	}
	defer t.Close()
	done := make(chan struct{}, 2)
	half := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go half(t, hc)
	go half(hc, t)
	<-done
	<-done
}

// attributedRelay is dialRelay for the proxy's forward: the first request's
// line is followed by PeerHeader, naming the process behind the
// connection; the rest is relayed as it comes. (Every plain-HTTP exchange
// of the proxy closes its connection, and a CONNECT's tunnel follows its
// one request: the first request is the connection's only one the proxy
// reads.)
func attributedRelay(c *net.TCPConn, target string) {
	defer c.Close()
	u, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	uc := u.(*net.UnixConn)
	defer uc.Close()
	// As large as the proxy's header limit: any request line it would
	// read gets the init's own PeerHeader before the client's headers.
	br := bufio.NewReaderSize(c, 64<<10)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := br.ReadSlice('\n')
	c.SetReadDeadline(time.Time{})
	head := append([]byte(nil), line...)
	if err == nil && len(bytes.TrimSpace(line)) > 0 {
		head = append(head, peerLine(c.RemoteAddr(), addrPort(c.LocalAddr()))...)
	}
	n := br.Buffered()
	rest, _ := br.Peek(n)
	head = append(head, rest...)
	br.Discard(n)
	if _, err := uc.Write(head); err != nil {
		return
	}
	relayStream(c, uc)
}

// dnsAttributedRelay is dialRelay for the DNS proxy's TCP forward: the
// process behind the connection first, in a frame of its own (PeerFrame);
// the replies are read frame by frame, for the names they give.
func dnsAttributedRelay(c *net.TCPConn, target string, names *dnsNames) {
	defer c.Close()
	u, err := net.Dial("unix", target)
	if err != nil {
		return
	}
	uc := u.(*net.UnixConn)
	defer uc.Close()
	if p := peerFrame("tcp", c.RemoteAddr(), addrPort(c.LocalAddr())); p != nil {
		if _, err := uc.Write(p); err != nil {
			return
		}
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(uc, c); uc.CloseWrite(); done <- struct{}{} }()
	go func() {
		// The replies, frame by frame, so the capture learns their names
		// as it does the UDP forwarder's.
		var hdr [2]byte
		for {
			if _, err := io.ReadFull(uc, hdr[:]); err != nil {
				break
			}
			msg := make([]byte, binary.BigEndian.Uint16(hdr[:]))
			if _, err := io.ReadFull(uc, msg); err != nil {
				break
			}
			names.learn(msg)
			if _, err := c.Write(append(hdr[:], msg...)); err != nil {
				break
			}
		}
		c.CloseWrite()
		done <- struct{}{}
	}()
	<-done
	<-done
}

// acceptLoop serves each connection ln accepts with serve, in a goroutine
// of its own, until ln is closed. An error of another kind (EMFILE: too
// many descriptors) is waited out with a backoff, as net/http does: a
// forwarder that stopped there would cut the sandbox off for good.
func acceptLoop(ln net.Listener, serve func(net.Conn)) {
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		go serve(c)
	}
}

// ServeForwards serves fs in this process's own network namespace, as the
// sandbox's init serves its forwards in the sandbox's: the capture (with
// the names the DNS forwards learn), TCP and UDP relays to Unix sockets.
// It is the network half of a sandbox whose confinement is elsewhere (a
// pod's uid-matched rules, installed by "sandboxd netinit"): the
// listeners live as long as the process. A forward that cannot listen is
// an error, and the ones started before it keep serving: the caller
// exits.
func ServeForwards(fs []Forward) error {
	names := newDNSNames()
	for _, f := range fs {
		if f.Network == "pass" {
			return fmt.Errorf("forward to port %d: a pass forward needs the sandbox's init", f.InsidePort)
		}
		if err := startForward(f, names, -1); err != nil {
			return fmt.Errorf("forward to port %d (%s): %w", f.InsidePort, f.Network, err)
		}
	}
	return nil
}
