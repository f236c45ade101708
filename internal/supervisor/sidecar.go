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
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
	"github.com/barry-rocks/sandbox/proxy"
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
	// CredentialDir is the mounted credential Secret, one file per key:
	// every credential's value is read from it (its policy file when
	// that is in it, else the file named as its variable), never from
	// an environment. Required when the policy names credentials.
	CredentialDir string
	// RunDir is the directory the agent's container mounts read-only
	// (the pod's /run/barry): with credentials the sidecar writes there
	// the placeholders (SidecarPlaceholders/VARIABLE, one line each) and
	// the trust (SidecarTrust/ca-bundle.pem, truststore.jks: its roots
	// and the sandbox CA). Required when the policy names credentials.
	RunDir string
	// Ready, when set, is called once everything serves.
	Ready func()
}

// The files the sidecar writes under SidecarOptions.RunDir for the agent's
// container (internal/kube's contract names the same paths).
const (
	// SidecarPlaceholders is the directory of the placeholders, a file
	// per credential variable holding its placeholder and a line break.
	SidecarPlaceholders = "placeholders"
	// SidecarTrust is the directory of the trust files.
	SidecarTrust = "trust"
	// TrustBundle and TrustStore are the trust files' names: the PEM
	// bundle and the JKS truststore (password truststore.JKSPassword).
	TrustBundle = "ca-bundle.pem"
	TrustStore  = "truststore.jks"
)

// Sidecar serves o until ctx is done, or a server fails; its error says
// which. A policy's credentials are read from o.CredentialDir, and their
// placeholders and the sandbox CA written to o.RunDir before it is ready.
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
		s.resolve, func() (func(), error) { return s.sidecarCredentials(o) }, func() (func(), error) { return s.sidecarDir(o) }, s.startProxies,
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

// sidecarCredentials reads the policy's credentials from o.CredentialDir
// and writes what the agent's container needs of them into o.RunDir: each
// placeholder (SidecarPlaceholders/VARIABLE) and the trust (SidecarTrust):
// the roots this process trusts and the sandbox CA, with which the proxy
// terminates TLS for the credentials' hosts alone. A placeholder an earlier
// run of the sidecar wrote there (the pod's emptyDir outlives a restart)
// is kept when it still fits the value: the agent's processes read theirs
// at start.
func (s *session) sidecarCredentials(o SidecarOptions) (func(), error) {
	cur := s.live.Current()
	specs, _, err := s.opts.declaredCredentials(cur.resolved)
	if err != nil || len(specs) == 0 {
		return nil, err
	}
	names := make([]string, len(specs))
	for i, c := range specs {
		names[i] = c.Env
	}
	if o.CredentialDir == "" || o.RunDir == "" {
		return nil, fmt.Errorf("sidecar: the policy names credentials (%s): --credential-dir (the mounted Secret) and --run-dir (the directory the agent mounts read-only) are required", strings.Join(names, ", "))
	}
	read := make([]policy.CredentialSpec, len(specs))
	for i, c := range specs {
		f, err := sidecarCredentialFile(o.CredentialDir, c)
		if err != nil {
			return nil, err
		}
		read[i] = c
		read[i].File = f
	}
	creds, err := s.opts.readCredentials(cur.proxy, read)
	if err != nil {
		return nil, err
	}
	phDir := filepath.Join(o.RunDir, SidecarPlaceholders)
	creds = keepPlaceholders(creds, func(name string) string {
		b, _ := os.ReadFile(filepath.Join(phDir, name))
		return strings.TrimSuffix(string(b), "\n")
	})
	st := &credState{specs: specs, creds: creds}
	if st.ca, err = proxy.NewCA(credentialHosts(creds)); err != nil {
		return nil, err
	}
	trust := filepath.Join(o.RunDir, SidecarTrust)
	st.bundle, st.truststore = filepath.Join(trust, TrustBundle), filepath.Join(trust, TrustStore)
	if err := writeShared(trust, []string{TrustBundle, TrustStore}, 0o644, func(tmp map[string]string) error {
		return writeTrust(tmp[TrustBundle], tmp[TrustStore], st.ca, nil)
	}); err != nil {
		return nil, fmt.Errorf("sandbox CA: %w", err)
	}
	if err := writePlaceholders(phDir, creds); err != nil {
		return nil, fmt.Errorf("placeholders: %w", err)
	}
	s.cred = st
	return nil, nil
}

// sidecarCredentialFile is where a pod's credential c is read: its policy
// file when that is in dir (the Secret's mount, "/etc/barry/credentials/KEY"),
// dir/VARIABLE when it names none. A file elsewhere is refused: in a pod
// the Secret is the one place a value comes from.
func sidecarCredentialFile(dir string, c policy.CredentialSpec) (string, error) {
	if c.File == "" {
		return filepath.Join(dir, c.Env), nil
	}
	if filepath.IsAbs(c.File) {
		f := filepath.Clean(c.File)
		if rel, err := filepath.Rel(filepath.Clean(dir), f); err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !strings.Contains(rel, "/") {
			return f, nil
		}
	}
	return "", fmt.Errorf("credential %s: its file %s is not a key of the mounted Secret %s; in a pod a value is read from the Secret alone (name %s/KEY, or no file for %s/%s)", c.Env, c.File, dir, dir, dir, c.Env)
}

// keepPlaceholders gives each credential the placeholder prior returns
// for its name when that still fits its value (the same length, another
// value, not holding it): a restarted sidecar keeps the agent's
// placeholders. Credentials sharing a value share the first one's. When
// the kept ones do not pass proxy.CheckCredentials, creds are returned as
// they were made.
func keepPlaceholders(creds []proxy.Credential, prior func(name string) string) []proxy.Credential {
	out := slices.Clone(creds)
	for i, c := range out {
		if j := slices.IndexFunc(out[:i], func(o proxy.Credential) bool { return o.Value == c.Value }); j >= 0 {
			out[i].Placeholder = out[j].Placeholder
			continue
		}
		if p := prior(c.Name); len(p) == len(c.Value) && p != c.Value && !strings.Contains(p, c.Value) && !strings.ContainsAny(p, "\r\n\x00") {
			out[i].Placeholder = p
		}
	}
	if proxy.CheckCredentials(out) != nil {
		return creds
	}
	return out
}

// writePlaceholders writes each credential's placeholder and a line break
// to dir/NAME (mode 0444), and removes the files of names no credential
// has any more.
func writePlaceholders(dir string, creds []proxy.Credential) error {
	var names []string
	for _, c := range creds {
		names = append(names, c.Name)
	}
	err := writeShared(dir, names, 0o444, func(tmp map[string]string) error {
		for _, c := range creds {
			if err := os.WriteFile(tmp[c.Name], []byte(c.Placeholder+"\n"), 0o600); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !slices.Contains(names, e.Name()) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// writeShared makes dir (mode 0755) and has write write its files names
// under temporary names in dir (tmp[name]), then gives each mode and
// renames it over its own: a reader never sees a half-written file.
func writeShared(dir string, names []string, mode os.FileMode, write func(tmp map[string]string) error) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	tmp := map[string]string{}
	defer func() {
		for _, t := range tmp {
			os.Remove(t)
		}
	}()
	for _, name := range names {
		tmp[name] = filepath.Join(dir, "."+name+".tmp")
		os.Remove(tmp[name])
	}
	if err := write(tmp); err != nil {
		return err
	}
	for _, name := range names {
		if err := os.Chmod(tmp[name], mode); err != nil {
			return err
		}
		if err := os.Rename(tmp[name], filepath.Join(dir, name)); err != nil {
			return err
		}
		delete(tmp, name)
	}
	return nil
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
		append([]slog.Attr{slog.String(audit.AttrPolicyFile, o.PolicyFile), slog.String(audit.AttrSandboxMode, ModeSidecar),
			slog.String("capture", o.CaptureListen), slog.String("dns", o.DNSListen), slog.String("hook_socket", o.HookSocket)}, s.credAuditAttrs()...)...)
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
