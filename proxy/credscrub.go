package proxy

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// swap is one byte string replaced by another of the same length, so a
// body's length (and a Content-Length) does not change.
type swap struct{ from, to string }

// injection is what the proxy puts into one request's headers: the
// credentials used, by name, and the swaps that undo on the way back what
// it wrote (a value as such, and each Basic credential it re-encoded).
type injection struct {
	used  []string
	basic []swap
}

// injectHeaders replaces, in every value of h, each credential's
// placeholder by its value; in an Authorization or Proxy-Authorization
// value of the Basic scheme it does so inside the decoded user:password
// and re-encodes it. creds are the credentials of the request's host. It
// returns what it did (names used, and the swaps from what it wrote back
// to what the client sent). Values keep their length (placeholders do),
// and a value never holds a line break (CheckCredentials), so no header
// is split.
func injectHeaders(h http.Header, creds []Credential) injection {
	var inj injection
	used := map[string]bool{}
	for name, vals := range h {
		for i, v := range vals {
			nv := v
			if scheme, rest, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "basic") && isAuthHeader(name) {
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
						inj.basic = append(inj.basic, swap{from: enc, to: b64})
						at := len(scheme) + 1 + strings.Index(rest, b64)
						nv = v[:at] + enc + v[at+len(b64):]
					}
				}
			}
			for _, c := range creds {
				if strings.Contains(nv, c.Placeholder) {
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

func isAuthHeader(name string) bool {
	return strings.EqualFold(name, "Authorization") || strings.EqualFold(name, "Proxy-Authorization")
}

// scrubSwaps are the swaps applied to everything that goes back to the
// sandbox: every credential's value to its placeholder, then the Basic
// encodings made for this request back to the client's.
func scrubSwaps(all []Credential, inj injection) []swap {
	s := make([]swap, 0, len(all)+len(inj.basic))
	for _, c := range all {
		s = append(s, swap{from: c.Value, to: c.Placeholder})
	}
	return append(s, inj.basic...)
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

// scrubHeader applies swaps to every value of h, in place.
func scrubHeader(h http.Header, swaps []swap) {
	for _, vals := range h {
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
// to a stream. A read's tail that could begin a from is held until the next
// read shows whether it does, so a value split between two reads is still
// found; a stream scrubber (newStreamScrubber: WebSockets, bodies of
// unknown length, which may be interactive) lets a held tail go after
// streamHold with nothing more from the server. seen, when set, is called
// with a swap's index the first time its from is found (a swap to itself:
// detection only).
type scrubber struct {
	r     io.Reader
	pump  *pump // a stream scrubber's reader
	swaps []swap
	keep  int // longest from, less one
	seen  func(i int)
	found []bool

	buf   []byte // held bytes then new ones
	ready []byte // a prefix of buf that is done, not yet read
	held  int    // bytes of buf after ready, carried to the next fill
	err   error
}

const (
	scrubChunk = 64 << 10
	streamHold = 20 * time.Millisecond
)

func newScrubber(r io.Reader, swaps []swap, seen func(int)) *scrubber {
	s := &scrubber{r: r, swaps: swaps, seen: seen, found: make([]bool, len(swaps))}
	for _, w := range swaps {
		s.keep = max(s.keep, len(w.from)-1)
	}
	s.buf = make([]byte, 0, s.keep+scrubChunk)
	return s
}

func newStreamScrubber(r io.Reader, swaps []swap) *scrubber {
	s := newScrubber(r, swaps, nil)
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
// every whole occurrence, and makes ready all but a tail that could begin
// a from (everything at the end of the stream).
func (s *scrubber) fill() {
	held := s.buf[len(s.buf)-s.held:]
	s.buf = s.buf[:copy(s.buf[:cap(s.buf)], held)]
	var n int
	var err error
	switch {
	case s.pump == nil:
		n, err = s.r.Read(s.buf[len(s.buf):cap(s.buf)])
	case len(s.buf) > 0:
		n, err = s.pump.read(s.buf[len(s.buf):cap(s.buf)], streamHold)
		if errors.Is(err, errStreamQuiet) {
			s.ready, s.held = s.buf, 0
			return
		}
	default:
		n, err = s.pump.read(s.buf[len(s.buf):cap(s.buf)], 0)
	}
	s.buf = s.buf[:len(s.buf)+n]
	s.err = err
	swapped := 0 // where the last swap ended: no held tail starts before it
	for i, w := range s.swaps {
		from, to := []byte(w.from), []byte(w.to)
		for off := 0; ; {
			j := bytes.Index(s.buf[off:], from)
			if j < 0 {
				break
			}
			copy(s.buf[off+j:], to)
			off += j + len(from)
			swapped = max(swapped, off)
			if !s.found[i] {
				s.found[i] = true
				if s.seen != nil {
					s.seen(i)
				}
			}
		}
	}
	done := len(s.buf)
	if s.err == nil {
		done -= s.partial(len(s.buf) - swapped)
	}
	s.ready, s.held = s.buf[:done], len(s.buf)-done
}

// partial is the length of the longest tail of buf (at most keep, and at
// most limit) that is a proper prefix of some from.
func (s *scrubber) partial(limit int) int {
	for k := min(s.keep, limit); k > 0; k-- {
		tail := s.buf[len(s.buf)-k:]
		for _, w := range s.swaps {
			if len(w.from) > k && w.from[0] == tail[0] && w.from[:k] == string(tail) {
				return k
			}
		}
	}
	return 0
}

var errStreamQuiet = errors.New("stream quiet")

// pump reads a stream in a goroutine of its own, so a reader can wait for
// its next bytes with a time limit.
type pump struct {
	c    chan pumped
	stop chan struct{}
	left []byte
	err  error
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
			n, err := r.Read(b)
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
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case got = <-p.c:
				t.Stop()
			case <-t.C:
				return 0, errStreamQuiet
			}
		} else {
			got = <-p.c
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
func (p *pump) close() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
}

// scrubBody is a response body with swaps applied; at its end it also
// scrubs trailer (filled by the transport once the body is read).
type scrubBody struct {
	*scrubber
	c       io.Closer
	trailer http.Header
	swaps   []swap
}

func (b *scrubBody) Read(p []byte) (int, error) {
	n, err := b.scrubber.Read(p)
	if err != nil && b.trailer != nil {
		scrubHeader(b.trailer, b.swaps)
	}
	return n, err
}

func (b *scrubBody) Close() error {
	if b.pump != nil {
		b.pump.close()
	}
	return b.c.Close()
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
	u.pump.close()
	return u.rwc.Close()
}
