package hooks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// Server serves rulings over the ruling protocol (wire.go). Its engine is
// swapped atomically by SetPolicy, so a reload or revocation applies to
// the next request. Exported fields must be set before Serve. It is safe
// for concurrent use.
type Server struct {
	// Log receives one JSON record per ruling and per refused connection.
	Log *slog.Logger
	// RequestTimeout bounds one ruling (default DefaultDeadline).
	RequestTimeout time.Duration
	// IdleTimeout closes a connection with no request for that long (default 30 s).
	IdleTimeout time.Duration
	// MaxConns caps concurrent connections (default 64); more are closed at once.
	MaxConns int
	// PeerUIDs are the uids besides this one and root whose Unix
	// connections it serves: a pod's agent, whose sidecar rules on its
	// calls (ListenUnixShared).
	PeerUIDs []int

	engine atomic.Pointer[engineBox]
}

type engineBox struct{ e Engine }

// NewServer returns a server ruling with e (nil: deny everything until
// SetPolicy).
func NewServer(e Engine, log *slog.Logger) *Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{Log: log}
	s.SetPolicy(e)
	return s
}

// SetPolicy replaces the engine; requests read after it returns use e.
func (s *Server) SetPolicy(e Engine) { s.engine.Store(&engineBox{e}) }

// Listen opens a listener for a ruling server address (see ParseAddr): a
// Unix socket through ListenUnix, or a loopback TCP port.
func Listen(addr string) (net.Listener, error) {
	network, a, err := ParseAddr(addr)
	if err != nil {
		return nil, err
	}
	if network == "unix" {
		return ListenUnix(a)
	}
	return net.Listen("tcp", a)
}

// ListenUnix creates the socket at path, mode 0600, in a private directory:
// the directory is created mode 0700 when missing, and otherwise must be a
// real directory (not a symlink) owned by this user with no group or other
// permission. A stale socket at path is replaced; any other file is an
// error. The socket file is removed when the listener closes.
func ListenUnix(path string) (net.Listener, error) {
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("socket directory %s: not a directory", dir)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("socket directory %s: mode %v is not private (want no group or other access)", dir, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("socket directory %s: owned by uid %d, not %d", dir, st.Uid, os.Geteuid())
	}
	return listenSocket(path, 0o600)
}

// listenSocket listens on the Unix socket path, replacing a stale socket
// there (any other file is an error), with mode; the file is removed when
// the listener closes.
func listenSocket(path string, mode os.FileMode) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("socket %s: exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("socket %s: removing stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket %s: chmod %#o: %w", path, mode, err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return ln, nil
}

// ListenUnixShared creates the socket at path, mode 0666, for peers of
// other uids (Server.PeerUIDs), in a directory that must exist and be a
// real one: a volume that only this process mounts writable (a pod's
// emptyDir, read-only in the agent's container), which is what keeps
// the socket from being replaced. A stale socket at path is replaced.
func ListenUnixShared(path string) (net.Listener, error) {
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("socket directory %s: not a directory", dir)
	}
	return listenSocket(path, 0o666)
}

// Serve accepts connections on ln until ctx is done, then closes ln and
// waits for open connections to finish. Unix peers must be this user,
// root or one of PeerUIDs (SO_PEERCRED / LOCAL_PEERCRED); TCP peers must
// be loopback.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	maxConns := s.MaxConns
	if maxConns <= 0 {
		maxConns = 64
	}
	sem := make(chan struct{}, maxConns)
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		select {
		case sem <- struct{}{}:
		default:
			audit.Event(ctx, s.Log, slog.LevelWarn, audit.KindHook, audit.MsgHookRefused, slog.String(audit.AttrReason, "too many connections"))
			conn.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer conn.Close()
			stopConn := context.AfterFunc(ctx, func() { conn.Close() })
			defer stopConn()
			if reason := checkPeer(conn, s.PeerUIDs); reason != "" {
				audit.Event(ctx, s.Log, slog.LevelWarn, audit.KindHook, audit.MsgHookRefused, slog.String(audit.AttrReason, reason))
				return
			}
			s.serveConn(ctx, conn)
		}()
	}
}

// checkPeer returns why a peer is refused, or "".
func checkPeer(conn net.Conn, others []int) string {
	switch c := conn.(type) {
	case *net.UnixConn:
		uid, err := peerUID(c)
		if err != nil {
			return "peer credentials: " + err.Error()
		}
		if uid != os.Geteuid() && uid != 0 && !slices.Contains(others, uid) {
			return fmt.Sprintf("peer uid %d is neither uid %d nor root", uid, os.Geteuid())
		}
	case *net.TCPConn:
		ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			return "peer " + c.RemoteAddr().String() + " is not loopback"
		}
	default:
		return fmt.Sprintf("unsupported connection type %T", conn)
	}
	return ""
}

func (s *Server) idle() time.Duration {
	if s.IdleTimeout > 0 {
		return s.IdleTimeout
	}
	return 30 * time.Second
}

func (s *Server) serveConn(ctx context.Context, conn net.Conn) {
	r := bufio.NewReaderSize(conn, 4<<10) // readLine grows past it up to MaxRequestBytes
	for ctx.Err() == nil {
		conn.SetReadDeadline(time.Now().Add(s.idle()))
		line, err := readLine(r, MaxRequestBytes)
		if err != nil {
			if errors.Is(err, ErrTooLarge) {
				s.reply(conn, Response{V: ProtocolVersion, Error: err.Error()})
			}
			return
		}
		resp := s.handle(ctx, line)
		if !s.reply(conn, resp) {
			return
		}
	}
}

func (s *Server) reply(conn net.Conn, resp Response) bool {
	b, err := json.Marshal(resp)
	if err != nil {
		return false
	}
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err = conn.Write(append(b, '\n'))
	return err == nil
}

// handle decodes one request and rules on it.
func (s *Server) handle(ctx context.Context, line []byte) Response {
	start := time.Now()
	var req Request
	d := json.NewDecoder(bytesReader(line))
	d.DisallowUnknownFields()
	d.UseNumber()
	if err := checkJSON(line); err != nil {
		return Response{V: ProtocolVersion, Error: "bad request: " + err.Error()}
	}
	if err := d.Decode(&req); err != nil {
		return Response{V: ProtocolVersion, Error: "bad request: " + err.Error()}
	}
	switch {
	case req.V != ProtocolVersion:
		return Response{V: ProtocolVersion, Error: fmt.Sprintf("unsupported protocol version %d", req.V)}
	case req.Op != "rule":
		return Response{V: ProtocolVersion, Error: fmt.Sprintf("unknown op %q", req.Op)}
	case req.Call == nil:
		return Response{V: ProtocolVersion, Error: "rule: no call"}
	}
	c := *req.Call
	if _, err := ParseHarness(string(c.Harness)); err != nil {
		return Response{V: ProtocolVersion, Error: err.Error()}
	}
	if c.Kind != KindTool && c.Kind != KindPermission && c.Kind != KindOther {
		return Response{V: ProtocolVersion, Error: "rule: unknown call kind"}
	}
	timeout := s.RequestTimeout
	if timeout <= 0 {
		timeout = DefaultDeadline
	}
	if req.DeadlineMs > 0 && time.Duration(req.DeadlineMs)*time.Millisecond < timeout {
		timeout = time.Duration(req.DeadlineMs) * time.Millisecond
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dec := s.rule(rctx, c)
	audit.Decision(ctx, s.Log, audit.KindHook, dec,
		slog.String(audit.AttrHarness, string(c.Harness)), slog.String(audit.AttrEvent, c.Event),
		slog.String(audit.AttrTool, c.Tool), slog.String(audit.AttrSession, c.SessionID),
		slog.Int64(audit.AttrDurationUS, time.Since(start).Microseconds()))
	return Response{V: ProtocolVersion, Verdict: dec.Verdict.String(), Reason: dec.Reason, Rule: dec.Rule, Exclude: dec.Exclude}
}

// rule runs the engine under ctx: no engine, a panic or the deadline is a
// deny.
func (s *Server) rule(ctx context.Context, c Call) policy.Decision {
	box := s.engine.Load()
	if box == nil || box.e == nil {
		return policy.Denied(policy.ReasonServerNoPolicy, policy.RuleServer)
	}
	ch := make(chan policy.Decision, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- policy.Denied(policy.Because(policy.ReasonServerPanic, "panic: %v", p), policy.RuleServer)
			}
		}()
		ch <- box.e.Rule(ctx, c)
	}()
	select {
	case d := <-ch:
		if d.Reason == "" {
			d = policy.Denied(policy.ReasonServerNoReason, policy.RuleServer)
		}
		return d
	case <-ctx.Done():
		return policy.Denied(policy.ReasonServerDeadline, policy.RuleDeadline)
	}
}
