package proxy

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// chunked reads its data in pieces of the given sizes (cycled).
type chunked struct {
	data  []byte
	sizes []byte
	i     int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.sizes) > 0 {
		n = int(c.sizes[c.i%len(c.sizes)])%97 + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzScrubber: however the stream is cut into reads, the scrubber's
// output is strings.ReplaceAll's over the whole.
func FuzzScrubber(f *testing.F) {
	f.Add([]byte("xx ghp_secret123 yy ghp_secret123"), []byte("ghp_secret123"), []byte{1, 2, 3})
	f.Add([]byte("aaaaab"), []byte("aab"), []byte{1})
	f.Add([]byte("ababab"), []byte("abab"), []byte{2, 5})
	f.Add([]byte("data: x\n\nsk-ant-api03-Ab3_xY9-kLm2Ab3_xY9-kLm2Ab3_xY9-kLm2 sk-ant-api03-Ab3_xY9-kLm2Ab3_xY9-kLm2Ab3_xY9-kLm3"),
		[]byte("sk-ant-api03-Ab3_xY9-kLm2Ab3_xY9-kLm2Ab3_xY9-kLm3"), []byte{7, 30, 2})
	f.Fuzz(func(t *testing.T, data, from, sizes []byte) {
		if len(from) < 2 || len(from) > 64 {
			return
		}
		to := bytes.Map(func(r rune) rune { return 'Z' }, from)
		if len(to) != len(from) {
			return
		}
		// With nothing known of from (every tail held) and with its
		// public shape (valueSwap: only tails that could begin it held).
		for _, w := range []swap{{from: string(from), to: string(to)}, valueSwap(string(from), string(to))} {
			sc := newScrubber(&chunked{data: slices.Clone(data), sizes: sizes}, []swap{w})
			got, err := io.ReadAll(sc)
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(string(data), string(from), string(to)); string(got) != want {
				t.Fatalf("scrubbed %q (from %q, shape %v) = %q, want %q", data, from, w.shape, got, want)
			}
		}
	})
}

// FuzzInjectHeaders: injection leaves no placeholder in a header a value
// may go into and touches no other, and the swaps it returns turn what it
// wrote back into exactly what the client sent (so an echoing server shows
// the sandbox nothing new).
func FuzzInjectHeaders(f *testing.F) {
	const ph, real = "ghp_PlaceholderAAAA1234", "ghp_RealValueBBBBB98765"
	f.Add("Authorization", "Bearer "+ph)
	f.Add("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+ph)))
	f.Add("authorization", "basic   "+base64.StdEncoding.EncodeToString([]byte(ph+":"+ph))+"  ")
	f.Add("X-Api-Key", ph+ph)
	f.Add("Cookie", "a="+ph[:5])
	f.Add("X-Amz-Meta-Note", ph)
	f.Add("X-Custom", "k="+ph)
	f.Fuzz(func(t *testing.T, name, value string) {
		if strings.Contains(value, real) || strings.ContainsAny(value, "\r\n") {
			return
		}
		creds := []Credential{{Name: "T", Hosts: []string{"h.test"}, Value: real, Placeholder: ph, Headers: []string{"x-custom"}}}
		h := http.Header{name: {value}}
		inj := injectHeaders(h, creds)
		out := h[name][0]
		switch {
		case !injects(creds[0], name) && out != value:
			t.Fatalf("%s is not a header the value goes into: %q -> %q", name, value, out)
		case injects(creds[0], name) && strings.Contains(out, ph):
			t.Fatalf("%s: %q -> %q still holds the placeholder", name, value, out)
		case strings.ContainsAny(out, "\r\n"):
			t.Fatalf("%q -> %q: a line break", value, out)
		case injects(creds[0], name) && strings.Contains(value, ph) && len(inj.used) != 1:
			t.Fatalf("%q: used %v", value, inj.used)
		}
		swaps := append([]swap{{from: real, to: ph}}, inj.basic...)
		if back := scrubString(out, swaps); back != value {
			t.Fatalf("%s: %q -> %q -> back %q", name, value, out, back)
		}
	})
}

func TestStreamScrubberLetsAQuietTailGo(t *testing.T) {
	pr, pw := io.Pipe()
	sc := newStreamScrubber(pr, []swap{{from: "ghp_secret", to: "ghp_XXXXXX"}})
	go io.WriteString(pw, "hello gh") // "gh" could begin the value
	got := make(chan string, 1)
	go func() {
		var b bytes.Buffer
		buf := make([]byte, 64)
		for b.Len() < len("hello gh") {
			n, err := sc.Read(buf)
			b.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		if s != "hello gh" {
			t.Errorf("got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a tail that could begin the value was held while the stream was quiet")
	}
	pw.Close()
}

// Closed from another goroutine while its reader waits on an idle stream
// (ReverseProxy ending an upgraded connection), the reader returns.
func TestUpgradedScrubberCloseEndsRead(t *testing.T) {
	for i := range 40 {
		pr, pw := io.Pipe()
		u := &scrubUpgraded{scrubber: newUpgradedScrubber(pr, []swap{{from: "ghp_secret", to: "ghp_XXXXXX"}}), rwc: pipeRWC{pr, pw}}
		done := make(chan struct{})
		go func() {
			u.Read(make([]byte, 16))
			close(done)
		}()
		time.Sleep(time.Millisecond)
		u.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("run %d: the read of a closed upgraded stream did not return", i)
		}
	}
}

type pipeRWC struct {
	*io.PipeReader
	w *io.PipeWriter
}

func (p pipeRWC) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipeRWC) Close() error                { p.w.Close(); return p.PipeReader.Close() }
