package proxy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// swap is one byte string replaced by another of the same length, so a
// body's length (and a Content-Length) does not change; with what the
// sandbox knows of from (scrubshape.go: valueSwap, basicSwap), which the
// scrubber holds tails by.
type swap struct {
	from, to string
	shape    []shapeClass // per byte of from; nil: nothing known, every tail held
	bound    int          // tails this long or longer are held only when from's prefix
	fromb    []byte       // from, for a comparison in constant time
}

// injection is what the proxy puts into one request's headers: the
// credentials used, by name, and the Basic credentials it re-encoded
// (what it wrote, what the client had sent).
type injection struct {
	used  []string
	basic []swap
}

// injects reports whether c's value may go into header name: the
// defaults (defaultInjectHeaders) and c.Headers, without case.
func injects(c Credential, name string) bool {
	for _, h := range defaultInjectHeaders {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	for _, h := range c.Headers {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// injectHeaders replaces, in the values of the headers each credential may
// go into (injects), its placeholder by its value; in an Authorization
// value of the Basic scheme it does so inside the decoded user:password
// and re-encodes it. creds are the credentials of the request's host; a
// placeholder in any other header passes as it is. It returns what it did.
// Values keep their length (placeholders do), and a value never holds a
// line break (CheckCredentials), so no header is split.
func injectHeaders(h http.Header, creds []Credential) injection {
	var inj injection
	used := map[string]bool{}
	for name, vals := range h {
		for i, v := range vals {
			nv := v
			if scheme, rest, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "basic") && strings.EqualFold(name, "Authorization") {
				b64 := strings.TrimSpace(rest)
				if dec, err := base64.StdEncoding.DecodeString(b64); err == nil && b64 != "" {
					plain := string(dec)
					for _, c := range creds {
						if strings.Contains(plain, c.Placeholder) {
							plain = strings.ReplaceAll(plain, c.Placeholder, c.Value)
							used[c.Name] = true
						}
					}
					if plain != string(dec) {
						enc := base64.StdEncoding.EncodeToString([]byte(plain))
						inj.basic = append(inj.basic, basicSwap(plain, enc, b64, creds))
						at := len(scheme) + 1 + strings.Index(rest, b64)
						nv = v[:at] + enc + v[at+len(b64):]
					}
				}
			}
			for _, c := range creds {
				if injects(c, name) && strings.Contains(nv, c.Placeholder) {
					nv = strings.ReplaceAll(nv, c.Placeholder, c.Value)
					used[c.Name] = true
				}
			}
			vals[i] = nv
		}
	}
	for _, c := range creds {
		if used[c.Name] {
			inj.used = append(inj.used, c.Name)
		}
	}
	return inj
}

// scrubString applies swaps to v.
func scrubString(v string, swaps []swap) string {
	for _, s := range swaps {
		if strings.Contains(v, s.from) {
			v = strings.ReplaceAll(v, s.from, s.to)
		}
	}
	return v
}

// scrubHeader applies swaps to every value of h, in place, and drops a
// header whose name holds a from (names are case-folded: compared
// without case).
func scrubHeader(h http.Header, swaps []swap) {
	if len(h) == 0 {
		return
	}
	lower := make([]string, len(swaps))
	for i, s := range swaps {
		lower[i] = strings.ToLower(s.from)
	}
	for name, vals := range h {
		lname := strings.ToLower(name)
		for _, l := range lower {
			if strings.Contains(lname, l) {
				delete(h, name)
				break
			}
		}
		for i, v := range vals {
			vals[i] = scrubString(v, swaps)
		}
	}
}

// placeholdersIn returns the names of creds whose placeholder s holds.
func placeholdersIn(s string, creds []Credential) []string {
	var names []string
	for _, c := range creds {
		if strings.Contains(s, c.Placeholder) {
			names = append(names, c.Name)
		}
	}
	return names
}

// scrubber is a reader that applies swaps (each from as long as its to)
// to a stream. The last bytes of a read that could begin a from are held
// until the next read shows whether they do, so a value split between two
// reads is still found; everything else is let through at once. Which
// tails could begin a from is decided by what the sandbox already knows
// of it (swap.holds: its public shape up to its bound, the real prefix
// past it), so that neither what is let through nor when tells a guess's
// secret characters. A stream scrubber (newStreamScrubber: WebSockets and
// bodies of unknown length, which may be interactive) lets the held bytes
// go after streamHold with nothing more from the server.
type scrubber struct {
	r      io.Reader
	stream bool
	pump   *pump // a stream scrubber's reader, started on its first read
	swaps  []swap
	keep   int // longest from, less one

	buf   []byte // held bytes then new ones
	ready []byte // a prefix of buf that is done, not yet read
	held  int    // bytes of buf after ready, carried to the next fill
	err   error

	// src, when set, is where swaps came from (the proxy's): a stream
	// open when a later request adds a Basic encoding scrubs it too.
	src *Server
	ver uint64
}

const (
	scrubChunk = 64 << 10
	streamHold = 50 * time.Millisecond
)

func newScrubber(r io.Reader, swaps []swap) *scrubber {
	s := &scrubber{r: r, swaps: swaps}
	for _, w := range swaps {
		s.keep = max(s.keep, len(w.from)-1)
	}
	s.buf = make([]byte, 0, s.keep+scrubChunk)
	return s
}

func newStreamScrubber(r io.Reader, swaps []swap) *scrubber {
	s := newScrubber(r, swaps)
	s.stream = true
	return s
}

// newUpgradedScrubber is a stream scrubber whose pump starts now: its
// Close comes from another goroutine than its reads.
func newUpgradedScrubber(r io.Reader, swaps []swap) *scrubber {
	s := newStreamScrubber(r, swaps)
	s.pump = newPump(r, scrubChunk)
	return s
}

func (s *scrubber) Read(p []byte) (int, error) {
	for len(s.ready) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.ready)
	s.ready = s.ready[n:]
	return n, nil
}

// fill moves the held bytes to the front, reads more behind them, swaps
// every whole occurrence, and makes ready all but the longest tail after
// the last swap that a swap holds (everything at the end of the stream).
func (s *scrubber) fill() {
	held := s.buf[len(s.buf)-s.held:]
	s.buf = s.buf[:copy(s.buf[:cap(s.buf)], held)]
	if s.stream && s.pump == nil {
		s.pump = newPump(s.r, scrubChunk)
	}
	var n int
	var err error
	switch {
	case s.pump == nil:
		n, err = s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	case len(s.buf) > 0:
		n, err = s.pump.read(s.buf[len(s.buf):cap(s.buf)], s.hold())
		if errors.Is(err, errStreamQuiet) {
			s.ready, s.held = s.buf, 0
			return
		}
	default:
		n, err = s.pump.read(s.buf[len(s.buf):cap(s.buf)], 0)
	}
	s.buf = s.buf[:len(s.buf)+n]
	s.err = err
	// After the read, which may have waited: what was added meanwhile
	// applies to what it brought.
	s.refresh()
	swapped := 0 // where the last swap ended: nothing before it is held
	for _, w := range s.swaps {
		from, to := []byte(w.from), []byte(w.to)
		for off := 0; ; {
			j := bytes.Index(s.buf[off:], from)
			if j < 0 {
				break
			}
			copy(s.buf[off+j:], to)
			off += j + len(from)
			swapped = max(swapped, off)
		}
	}
	done := len(s.buf)
	if s.err == nil {
		done -= s.tailHeld(swapped)
	}
	s.ready, s.held = s.buf[:done], len(s.buf)-done
}

// tailHeld is the length of the longest tail of buf, after swapped and at
// most keep bytes, that a swap holds.
func (s *scrubber) tailHeld(swapped int) int {
	lo := max(swapped, len(s.buf)-s.keep)
	held := 0
	for i := range s.swaps {
		w := &s.swaps[i]
		for j := lo; j < len(s.buf)-held; j++ {
			if w.holds(s.buf[j:]) {
				held = len(s.buf) - j
				break
			}
		}
	}
	return held
}

// hold is how long a stream's held bytes wait for more (streamHold, or
// the proxy's test setting).
func (s *scrubber) hold() time.Duration {
	if s.src != nil && s.src.streamHold > 0 {
		return s.src.streamHold
	}
	return streamHold
}

// refresh takes the proxy's swaps again when they changed (a Basic
// encoding added), with the room their longest needs.
func (s *scrubber) refresh() {
	if s.src == nil {
		return
	}
	v := s.src.basics.version()
	if v == s.ver {
		return
	}
	s.swaps, s.ver = s.src.scrubSwaps(), v
	for _, w := range s.swaps {
		s.keep = max(s.keep, len(w.from)-1)
	}
	if cap(s.buf) < s.keep+scrubChunk {
		nb := make([]byte, len(s.buf), s.keep+scrubChunk)
		copy(nb, s.buf)
		s.buf = nb
	}
}

var errStreamQuiet = errors.New("stream quiet")

// pump reads a stream in a goroutine of its own, so a reader can wait for
// its next bytes with a time limit.
type pump struct {
	c    chan pumped
	stop chan struct{}
	once sync.Once
	left []byte
	err  error
	// waiting is when the pump's goroutine began a read that has not
	// returned (unix nanos; 0 while it is not in one): the stream is quiet
	// only while the pump itself waits on it, not while this process is
	// too busy to have read what came.
	waiting atomic.Int64
}

type pumped struct {
	b   []byte
	err error
}

func newPump(r io.Reader, size int) *pump {
	p := &pump{c: make(chan pumped, 1), stop: make(chan struct{})}
	go func() {
		for {
			b := make([]byte, size)
			p.waiting.Store(time.Now().UnixNano())
			n, err := r.Read(b)
			p.waiting.Store(0)
			select {
			case p.c <- pumped{b[:n], err}:
			case <-p.stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

// read copies the next bytes into b, waiting at most wait for them when
// wait > 0 (errStreamQuiet when none came).
func (p *pump) read(b []byte, wait time.Duration) (int, error) {
	if len(p.left) == 0 && p.err == nil {
		var got pumped
		var quiet <-chan time.Time
		var t *time.Timer
		if wait > 0 {
			t = time.NewTimer(wait)
			defer t.Stop()
			quiet = t.C
		}
	wait:
		select {
		case got = <-p.c:
		case <-quiet:
			// Quiet when the pump has waited on the stream for wait: if
			// it has not (it is not in a read yet, or began one late),
			// what came may not have been read.
			if since := p.waiting.Load(); since == 0 || time.Since(time.Unix(0, since)) < wait {
				t.Reset(wait / 4)
				goto wait
			}
			return 0, errStreamQuiet
		case <-p.stop:
			// Closed (from another goroutine, as ReverseProxy ends an
			// upgraded connection): the pump may have stopped without
			// sending.
			return 0, net.ErrClosed
		}
		p.left, p.err = got.b, got.err
	}
	n := copy(b, p.left)
	p.left = p.left[n:]
	if len(p.left) == 0 && p.err != nil {
		return n, p.err
	}
	return n, nil
}

// close lets the pump's goroutine end once its reader returns.
func (p *pump) close() { p.once.Do(func() { close(p.stop) }) }

// scrubBody is a response body with swaps applied; at its end it also
// scrubs the response's trailers (which the transport sets once the body
// is read: a map it may make then, for trailers not announced).
type scrubBody struct {
	*scrubber
	c    io.Closer
	resp *http.Response
}

func (b *scrubBody) Read(p []byte) (int, error) {
	n, err := b.scrubber.Read(p)
	if err != nil {
		b.scrubber.refresh()
		scrubHeader(b.resp.Trailer, b.scrubber.swaps)
	}
	return n, err
}

func (b *scrubBody) Close() error {
	if b.pump != nil {
		b.pump.close()
	}
	err := b.c.Close()
	b.scrubber.refresh()
	scrubHeader(b.resp.Trailer, b.scrubber.swaps)
	return err
}

// scrubUpgraded is a switched-protocols connection (a WebSocket) whose
// server-to-client bytes are scrubbed; what the client writes goes on as
// it is (a WebSocket client masks its frames).
type scrubUpgraded struct {
	*scrubber
	rwc io.ReadWriteCloser
}

func (u *scrubUpgraded) Write(p []byte) (int, error) { return u.rwc.Write(p) }
func (u *scrubUpgraded) Close() error {
	if u.pump != nil {
		u.pump.close()
	}
	return u.rwc.Close()
}

// detector passes a request body on as it comes (a full-duplex stream
// must not wait) and calls seen with the name of each credential whose
// placeholder it carries, keeping the last bytes of each read to find one
// split between two.
type detector struct {
	io.ReadCloser
	creds []Credential
	seen  func(name string)
	keep  int // the longest placeholder, less one
	tail  []byte
	found map[string]bool
}

func newDetector(body io.ReadCloser, creds []Credential, seen func(string)) *detector {
	d := &detector{ReadCloser: body, creds: creds, seen: seen}
	for _, c := range creds {
		d.keep = max(d.keep, len(c.Placeholder)-1)
	}
	return d
}

func (d *detector) Read(p []byte) (int, error) {
	n, err := d.ReadCloser.Read(p)
	if n > 0 {
		keep := d.keep
		w := append(d.tail, p[:n]...)
		for _, c := range d.creds {
			if !d.found[c.Name] && bytes.Contains(w, []byte(c.Placeholder)) {
				if d.found == nil {
					d.found = map[string]bool{}
				}
				d.found[c.Name] = true
				d.seen(c.Name)
			}
		}
		d.tail = append(d.tail[:0], w[max(0, len(w)-keep):]...)
	}
	return n, err
}

// maxBasicSwaps bounds the Basic credentials a sandbox's proxy made and
// scrubs from every later response (an echo of one made earlier is found
// too).
const maxBasicSwaps = 256

// basicSwaps are those Basic credentials: what the proxy wrote, what the
// client had sent.
type basicSwaps struct {
	mu   sync.Mutex
	list []swap
	seen map[string]bool
	ver  atomic.Uint64 // len(list), read without the lock
}

func (b *basicSwaps) version() uint64 { return b.ver.Load() }

// add records sw; false when that would pass maxBasicSwaps (the request
// is then refused: its encoding could not be scrubbed later).
func (b *basicSwaps) add(sw []swap) bool {
	if len(sw) == 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.seen == nil {
		b.seen = map[string]bool{}
	}
	var fresh []swap
	for _, w := range sw {
		if !b.seen[w.from] {
			fresh = append(fresh, w)
		}
	}
	if len(b.list)+len(fresh) > maxBasicSwaps {
		return false
	}
	for _, w := range fresh {
		b.seen[w.from] = true
		b.list = append(b.list, w)
	}
	b.ver.Store(uint64(len(b.list)))
	return true
}

func (b *basicSwaps) all() []swap {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.list)
}

// scrubSwaps are the swaps applied to everything that goes back to the
// sandbox: every credential's value to its placeholder, then every Basic
// encoding the proxy made back to the client's.
func (s *Server) scrubSwaps() []swap {
	basic := s.basics.all()
	out := make([]swap, 0, len(s.credSwaps)+len(basic))
	out = append(out, s.credSwaps...)
	return append(out, basic...)
}
