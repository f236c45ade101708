package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/procjail"
)

// SidecarOptions is "sandboxd proxy --sidecar": the network half of a
// sandbox whose confinement another process set up, a pod's (see
// docs/kubernetes.md). "sandboxd netinit" sends every TCP connection of
// the agent's uid to CaptureListen and its DNS to DNSListen, in the pod's
// network namespace, which this process shares; it serves them with the
// session's proxies as a sandbox's init does, and the agent's hook
// rulings on HookSocket.
type SidecarOptions struct {
	// Options: PolicyFile (required), AllowDomains, DenyDomains,
	// DNSUpstream, AllowPrivate, Debounce. The rest is a sandbox's.
	Options
	// CaptureListen and DNSListen are the loopback ports netinit
	// redirects to ("127.0.0.1:PORT"); DNS is served on UDP and TCP.
	CaptureListen, DNSListen string
	// HookSocket is the ruling server's Unix socket, on a volume the
	// agent's container mounts (BARRY_HOOK_SOCKET=unix:PATH there).
	HookSocket string
	// AgentUID is the agent's uid, whose hook calls the ruling server
	// takes (beside its own and root's).
	AgentUID uint32
	// AgentHome is the agent's HOME, where "~/" file patterns point; the
	// rulings read the agent's files at the same paths (its workspace
	// and home mounted here too, read-only).
	AgentHome string
	// HealthListen serves /readyz (the forwards listen, the proxies are
	// up) and /livez ("" none).
	HealthListen string
	// Audit receives the audit's JSON lines (the pod's stdout).
	Audit *os.File
	// Fleet are added to every audit line: the pod, its namespace and
	// uid, so that a cluster's log pipeline can tell sessions apart.
	Fleet []slog.Attr
	// Ready, when set, is called once everything serves.
	Ready func()
}

// Sidecar serves o until ctx is done, or a server fails; its error says
// which. A policy that names credentials is refused: the agent's
// container would need the placeholders and the sandbox CA, which a pod
// does not carry yet.
func Sidecar(ctx context.Context, o SidecarOptions) error {
	if o.PolicyFile == "" || o.HookSocket == "" || o.CaptureListen == "" || o.DNSListen == "" || o.AgentUID == 0 {
		return errors.New("sidecar: the policy file, the agent's uid (not 0), the hook socket, the capture and the DNS addresses are required")
	}
	o.noFileLayer, o.agentHome = true, o.AgentHome
	o.Command = []string{"(pod)"}
	s := &session{opts: o.Options, stderr: os.Stderr}
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()
	s.setupCtx, s.abortSetup = context.WithCancel(ctx)
	cleanups = append(cleanups, s.abortSetup)
	var health sidecarHealth
	for _, step := range []func() (func(), error){
		s.resolve, s.sidecarCredentials, func() (func(), error) { return s.sidecarDir(o) }, s.startProxies,
		func() (func(), error) { return s.sidecarServe(o, &health) }, s.firstStatus, s.livePolicy,
	} {
		cleanup, err := step()
		if cleanup != nil {
			cleanups = append(cleanups, cleanup)
		}
		if err != nil {
			return err
		}
	}
	if err := s.awaitProxies(); err != nil {
		return err
	}
	health.ready.Store(true)
	s.logStart(o)
	if o.Ready != nil {
		o.Ready()
	}
	<-ctx.Done()
	health.ready.Store(false)
	audit.Event(context.Background(), s.log, slog.LevelInfo, audit.KindSession, audit.MsgSessionExit, slog.String(audit.AttrReason, "sidecar stopped"))
	return nil
}

// sidecarCredentials refuses credentials (see Sidecar).
func (s *session) sidecarCredentials() (func(), error) {
	specs, err := s.opts.credentialSpecs(s.live.Current().resolved)
	if err != nil {
		return nil, err
	}
	if len(specs) > 0 {
		return nil, fmt.Errorf("sidecar: the policy names credentials (%s), which a pod's agent cannot be given yet; remove them from the pod's policy", specs[0].Env)
	}
	return nil, nil
}

// sidecarDir makes the sidecar's private runtime directory (the proxies'
// sockets: the sidecar's own, never on a volume the agent mounts) and
// opens the audit stream on o.Audit, its lines carrying o.Fleet.
func (s *session) sidecarDir(o SidecarOptions) (func(), error) {
	// Where sandboxd status looks, else the temporary directory (a
	// read-only root with an emptyDir there).
	dir, err := os.MkdirTemp(RuntimeBase(), runtimePrefix)
	if err != nil {
		dir, err = os.MkdirTemp("", runtimePrefix)
	}
	if err != nil {
		return nil, fmt.Errorf("sidecar runtime directory: %w", err)
	}
	s.dir, s.id = dir, filepath.Base(dir)
	stream := NewAudit(o.Audit, s.id)
	stream.SetPolicy(s.live.Current().fingerprint)
	s.stream = stream
	s.log = stream.Logger()
	if len(o.Fleet) > 0 {
		args := make([]any, len(o.Fleet))
		for i, a := range o.Fleet {
			args[i] = a
		}
		s.log = s.log.With(args...)
	}
	return func() { stream.Close(); os.RemoveAll(dir) }, nil
}

// sidecarHealth is what /readyz and /livez say.
type sidecarHealth struct{ ready atomic.Bool }

// sidecarServe starts the ruling server on o.HookSocket, the forwards
// (the capture, DNS on UDP and TCP) and the health server.
func (s *session) sidecarServe(o SidecarOptions, h *sidecarHealth) (func(), error) {
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	// The agent's uid connects, through a volume its container mounts
	// read-only.
	hln, err := hooks.ListenUnixShared(o.HookSocket)
	if err != nil {
		return nil, fmt.Errorf("hook ruling server: %w", err)
	}
	undo = append(undo, func() { hln.Close() })
	cur := s.live.Current()
	if cur.rulings, err = cur.engine(); err != nil {
		return cleanup, fmt.Errorf("hook ruling server: %w", err)
	}
	s.hsrv = hooks.NewServer(cur.rulings, s.log)
	s.hsrv.PeerUIDs = []int{int(o.AgentUID)}
	hctx, hcancel := context.WithCancel(context.Background())
	undo = append(undo, hcancel)
	go s.hsrv.Serve(hctx, hln)

	capturePort, err := loopbackPort(o.CaptureListen)
	if err != nil {
		return cleanup, fmt.Errorf("capture: %w", err)
	}
	dnsPort, err := loopbackPort(o.DNSListen)
	if err != nil {
		return cleanup, fmt.Errorf("dns: %w", err)
	}
	fwd := []procjail.Forward{
		{InsidePort: capturePort, Network: "capture", Target: s.proxySock, Authorization: procjail.BasicProxyAuth(s.id, s.secret)},
		{InsidePort: dnsPort, Network: "udp", Target: s.dnsSock, Attribute: "dns"},
		{InsidePort: dnsPort, Network: "tcp", Target: s.dnsSock, Attribute: "dns"},
	}
	if err := procjail.ServeForwards(fwd); err != nil {
		return cleanup, err
	}
	if o.HealthListen != "" {
		ln, err := net.Listen("tcp", o.HealthListen)
		if err != nil {
			return cleanup, fmt.Errorf("health: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
			if !h.ready.Load() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		mux.HandleFunc("/livez", func(w http.ResponseWriter, _ *http.Request) {
			if s.upDoneErr() != nil {
				http.Error(w, "proxies failed", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		undo = append(undo, func() { srv.Close() })
	}
	return cleanup, nil
}

// upDoneErr is the proxies' start error once they are up or failed, nil
// before.
func (s *session) upDoneErr() error {
	if !s.upDone {
		return nil
	}
	return s.up.err
}

// logStart writes the session start line of a sidecar.
func (s *session) logStart(o SidecarOptions) {
	audit.Event(context.Background(), s.log, slog.LevelInfo, audit.KindSession, audit.MsgSessionStart,
		slog.String(audit.AttrPolicyFile, o.PolicyFile), slog.String(audit.AttrSandboxMode, ModeSidecar),
		slog.String("capture", o.CaptureListen), slog.String("dns", o.DNSListen), slog.String("hook_socket", o.HookSocket))
}

// ModeSidecar is a pod's sandbox: the network half served by "sandboxd
// proxy --sidecar", the confinement by netinit's rules.
const ModeSidecar = "sidecar"

// loopbackPort is the port of a loopback address "127.0.0.1:PORT" (the
// forwards listen on 127.0.0.1 and, for the capture, ::1).
func loopbackPort(addr string) (uint16, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	if host != "127.0.0.1" && host != "localhost" {
		return 0, fmt.Errorf("%s: the forwards listen on loopback (127.0.0.1:PORT)", addr)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil || p == 0 {
		return 0, fmt.Errorf("%s: not a port", addr)
	}
	return uint16(p), nil
}
