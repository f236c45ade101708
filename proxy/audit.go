package proxy

import (
	"context"
	"log/slog"
	"time"
)

// Audit attribute keys. Every audit line is one JSON object with the slog
// keys "time", "level" and "msg" plus these.
const (
	AttrKind       = "kind"        // "connect", "http" or "dns"
	AttrSandbox    = "sandbox"     // sandbox id
	AttrPolicy     = "policy"      // policy fingerprint
	AttrClient     = "client"      // client address
	AttrHost       = "host"        // requested host, canonical when valid
	AttrPort       = "port"        // requested port
	AttrAddr       = "addr"        // resolved and dialed address; DNS: the answered A/AAAA addresses, comma-separated
	AttrDecision   = "decision"    // "allow" or "deny"
	AttrReason     = "reason"      // one-line reason
	AttrRule       = "rule"        // the policy entry that decided, if any
	AttrSNI        = "sni"         // CONNECT: the ClientHello server name, "none" or "not-tls"
	AttrBytesUp    = "bytes_up"    // client to server; DNS: the query's size
	AttrBytesDown  = "bytes_down"  // server to client; DNS: the answer's size
	AttrDurationMS = "duration_ms" // from request to close
	AttrClose      = "close"       // why an allowed connection ended
	AttrQType      = "qtype"       // DNS question type
	AttrRcode      = "rcode"       // DNS response code
	AttrStripped   = "stripped"    // DNS: address records removed by the dial guard
	AuditMsgProxy  = "proxy decision"
	AuditMsgDNS    = "dns decision"
)

// record is one audit line in the making.
type record struct {
	kind, client, host, port, addr string
	policy                         string // fingerprint of the policy that decided
	decision                       string
	reason, rule, sni, close       string
	up, down                       int64
	start                          time.Time
}

func (s *Server) audit(r *record) {
	if s.auditLog == nil {
		return
	}
	attrs := []slog.Attr{
		slog.String(AttrKind, r.kind),
		slog.String(AttrSandbox, s.cfg.SandboxID),
		slog.String(AttrPolicy, r.policyFingerprint(s)),
		slog.String(AttrClient, r.client),
		slog.String(AttrHost, r.host),
		slog.String(AttrPort, r.port),
		slog.String(AttrAddr, r.addr),
		slog.String(AttrDecision, r.decision),
		slog.String(AttrReason, r.reason),
	}
	if r.rule != "" {
		attrs = append(attrs, slog.String(AttrRule, r.rule))
	}
	if r.sni != "" {
		attrs = append(attrs, slog.String(AttrSNI, r.sni))
	}
	if r.close != "" {
		attrs = append(attrs, slog.String(AttrClose, r.close))
	}
	attrs = append(attrs,
		slog.Int64(AttrBytesUp, r.up),
		slog.Int64(AttrBytesDown, r.down),
		slog.Float64(AttrDurationMS, float64(time.Since(r.start).Microseconds())/1000),
	)
	s.auditLog.LogAttrs(context.Background(), slog.LevelInfo, AuditMsgProxy, attrs...)
}

func (r *record) policyFingerprint(s *Server) string {
	if r.policy != "" {
		return r.policy
	}
	return s.pol.Load().fingerprint
}
