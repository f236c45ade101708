package proxy

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// record is one audit line in the making. Its decision starts as the zero
// policy.Decision, a denial; the deciders fill it.
type record struct {
	kind                     audit.Kind
	d                        policy.Decision
	client, host, port, addr string
	policy                   string // fingerprint of the policy that decided
	sni, close               string
	// captured is a captured connection's original destination (the
	// address the client dialed, sandboxd's capture reports it in
	// OriginalDestinationHeader); invalid for a proxy-aware client.
	captured netip.AddrPort
	// pid and argv name the process inside the sandbox behind the
	// connection (PeerHeader); 0 when unknown.
	pid      int
	argv     []string
	up, down int64
	start    time.Time
	// terminated is a credential host's CONNECT whose TLS the proxy
	// terminated; creds are the credentials put into its requests and
	// placeholders those whose placeholder passed as it is (names).
	terminated          bool
	creds, placeholders []string
}

// deny turns the record's decision into a denial for reason, keeping the
// rule that decided the name (a name allowed by an entry whose address or
// ClientHello is then refused still names the entry).
func (r *record) deny(reason string) { r.d.Verdict, r.d.Reason = policy.Deny, reason }

// audit writes the record's line (see internal/audit for the keys).
func (s *Server) audit(r *record) {
	if s.auditLog == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String(audit.AttrSandbox, s.cfg.SandboxID),
		slog.String(audit.AttrPolicy, r.policyFingerprint(s)),
		slog.String(audit.AttrClient, r.client),
		slog.String(audit.AttrHost, r.host),
		slog.String(audit.AttrPort, r.port),
		slog.String(audit.AttrAddr, r.addr),
	}
	if r.sni != "" {
		attrs = append(attrs, slog.String(audit.AttrSNI, r.sni))
	}
	if r.captured.IsValid() {
		attrs = append(attrs, slog.String(audit.AttrCaptured, r.captured.String()))
	}
	if r.pid > 0 {
		attrs = append(attrs, slog.Int(audit.AttrPID, r.pid), slog.Any(audit.AttrArgv, r.argv))
	}
	if r.close != "" {
		attrs = append(attrs, slog.String(audit.AttrClose, r.close))
	}
	if r.terminated {
		attrs = append(attrs, slog.Bool(audit.AttrTerminated, true))
	}
	if len(r.creds) > 0 {
		attrs = append(attrs, slog.Any(audit.AttrCredentials, r.creds))
	}
	if len(r.placeholders) > 0 {
		attrs = append(attrs, slog.Any(audit.AttrPlaceholder, r.placeholders))
	}
	attrs = append(attrs,
		slog.Int64(audit.AttrBytesUp, r.up),
		slog.Int64(audit.AttrBytesDown, r.down),
		slog.Float64(audit.AttrDurationMS, float64(time.Since(r.start).Microseconds())/1000),
	)
	audit.Decision(context.Background(), s.auditLog, r.kind, r.d, attrs...)
}

func (r *record) policyFingerprint(s *Server) string {
	if r.policy != "" {
		return r.policy
	}
	return s.pol.Load().fingerprint
}
