package supervisor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"unicode"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
)

// Audit is a session's one JSON-lines audit stream. Every line carries the
// sandbox id and the policy fingerprint in force; each line is built whole
// and written with one write under a lock, so lines from concurrent
// goroutines are never torn or interleaved (a file is opened O_APPEND, so
// several sandboxes may share one). It counts allowed and denied decisions
// by the lines' kind and decision keys alone (internal/audit is the schema).
// It is safe for concurrent use.
type Audit struct {
	mu      sync.Mutex
	w       io.Writer
	closer  io.Closer
	sandbox string
	policy  atomic.Pointer[string]
	counts  map[string]*[2]int64 // kind -> allowed, denied
	byCmd   map[string]int64     // command (argv[0]'s base) -> denials
	onErr   func(error)
	werr    error // the first write error
}

// OnWriteError sets a function called (once) when a line cannot be written,
// so a full disk or a closed stream does not lose audit lines silently.
func (a *Audit) OnWriteError(f func(error)) {
	a.mu.Lock()
	a.onErr = f
	a.mu.Unlock()
}

// OpenAudit opens the stream: "" discards (decisions are still counted),
// "-" is standard error, anything else a file opened for appending (mode
// 0600, created if missing).
func OpenAudit(path, sandbox string) (*Audit, error) {
	a := NewAudit(nil, sandbox)
	switch path {
	case "":
		a.w = io.Discard
	case "-":
		a.w = os.Stderr
	default:
		// Not through a symlink: a sandbox whose workspace holds the audit
		// file could otherwise plant a link there and have the next
		// session append to any file of the user (~/.bashrc).
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit file: %w", err)
		}
		a.w, a.closer = f, f
	}
	return a, nil
}

// NewAudit is an audit stream writing to w (not closed by Close).
func NewAudit(w io.Writer, sandbox string) *Audit {
	a := &Audit{sandbox: sandbox, counts: map[string]*[2]int64{}, byCmd: map[string]int64{}, w: w}
	empty := ""
	a.policy.Store(&empty)
	return a
}

// Err returns the first error writing a line, or nil.
func (a *Audit) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.werr
}

// SetPolicy sets the fingerprint added to lines that carry none.
func (a *Audit) SetPolicy(fingerprint string) { a.policy.Store(&fingerprint) }

// Logger returns a logger that writes to the stream.
func (a *Audit) Logger() *slog.Logger { return slog.New(&auditHandler{a: a}) }

// Close closes the file, if any.
func (a *Audit) Close() error {
	if a.closer != nil {
		return a.closer.Close()
	}
	return nil
}

// Counts returns allowed and denied counts by kind.
func (a *Audit) Counts() map[string][2]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][2]int64, len(a.counts))
	for k, v := range a.counts {
		out[k] = *v
	}
	return out
}

// Summary is the one-line summary of the counts: "connect 3 allowed 1
// denied; dns 9 allowed 0 denied; ...", kinds sorted, then the denials of
// the lines that name the process behind them, by command: "; denied by
// command: curl 2, node 1" (most first).
func (a *Audit) Summary() string {
	a.mu.Lock()
	by := maps.Clone(a.byCmd)
	a.mu.Unlock()
	s := FormatCounts(a.Counts())
	if len(by) == 0 {
		return s
	}
	cmds := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(cmds, func(x, y string) int { return int(by[y] - by[x]) })
	var parts []string
	for i, c := range cmds {
		if i == maxSummaryCommands {
			parts = append(parts, fmt.Sprintf("%d more", len(cmds)-i))
			break
		}
		// A command name is the sandbox's to choose (argv[0]): quoted
		// when it holds anything but printable text, so it cannot write
		// to the terminal or look like another line.
		if strings.IndexFunc(c, func(r rune) bool { return !unicode.IsPrint(r) || r == ',' || r == ';' }) >= 0 {
			c = strconv.Quote(c)
		}
		parts = append(parts, fmt.Sprintf("%s %d", c, by[cmds[i]]))
	}
	return s + "; denied by command: " + strings.Join(parts, ", ")
}

// maxSummaryCommands bounds the commands the summary names.
const maxSummaryCommands = 10

// FormatCounts renders counts by kind as "connect 3 allowed 1 denied; ...",
// kinds sorted, or "no decisions".
func FormatCounts(c map[string][2]int64) string {
	parts := make([]string, 0, len(c))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		parts = append(parts, fmt.Sprintf("%s %d allowed %d denied", k, c[k][0], c[k][1]))
	}
	if len(parts) == 0 {
		return "no decisions"
	}
	return strings.Join(parts, "; ")
}

func (a *Audit) write(line []byte, kind, decision, command string, weight int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	allow, deny := policy.Allow.String(), policy.Deny.String()
	if command != "" && decision == deny {
		a.byCmd[command] += weight
	}
	if kind != "" && (decision == allow || decision == deny) {
		c := a.counts[kind]
		if c == nil {
			c = new([2]int64)
			a.counts[kind] = c
		}
		if decision == allow {
			c[0] += weight
		} else {
			c[1] += weight
		}
	}
	if _, err := a.w.Write(line); err != nil && a.werr == nil {
		a.werr = err
		if a.onErr != nil {
			a.onErr(err)
		}
	}
}

// auditHandler renders each record whole, adds the sandbox and policy
// attributes when the record lacks them, and hands the line to Audit.
type auditHandler struct {
	a      *Audit
	attrs  []slog.Attr
	groups []string
}

func (h *auditHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *auditHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &c
}

func (h *auditHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.groups = append(append([]string{}, h.groups...), name)
	return &c
}

func (h *auditHandler) Handle(ctx context.Context, r slog.Record) error {
	var kind, decision, command string
	weight := int64(1) // how many decisions the line stands for
	has := map[string]bool{}
	see := func(at slog.Attr) {
		has[at.Key] = true
		switch at.Key {
		case audit.AttrKind:
			kind = at.Value.String()
		case audit.AttrDecision:
			decision = at.Value.String()
		case audit.AttrArgv:
			if argv, ok := at.Value.Any().([]string); ok && len(argv) > 0 {
				command = filepath.Base(argv[0])
			}
		case audit.AttrRepeated:
			// A summary line (open refused): it stands for this many
			// refusals not written one by one.
			if at.Value.Kind() == slog.KindInt64 && at.Value.Int64() > 0 {
				weight = at.Value.Int64()
			}
		}
	}
	for _, at := range h.attrs {
		see(at)
	}
	r.Attrs(func(at slog.Attr) bool { see(at); return true })
	var extra []slog.Attr
	if !has[audit.AttrSandbox] {
		extra = append(extra, slog.String(audit.AttrSandbox, h.a.sandbox))
	}
	if !has[audit.AttrPolicy] {
		extra = append(extra, slog.String(audit.AttrPolicy, *h.a.policy.Load()))
	}
	var buf bytes.Buffer
	var jh slog.Handler = slog.NewJSONHandler(&buf, nil)
	if len(extra) > 0 {
		jh = jh.WithAttrs(extra)
	}
	if len(h.attrs) > 0 {
		jh = jh.WithAttrs(h.attrs)
	}
	for _, g := range h.groups {
		jh = jh.WithGroup(g)
	}
	if err := jh.Handle(ctx, r); err != nil {
		return err
	}
	h.a.write(buf.Bytes(), kind, decision, command, weight)
	return nil
}
