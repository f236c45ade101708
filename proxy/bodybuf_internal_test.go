package proxy

import (
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// sizeReader records the size of the buffers it is read into.
type sizeReader struct {
	r     io.Reader
	sizes []int
}

func (s *sizeReader) Read(p []byte) (int, error) {
	s.sizes = append(s.sizes, len(p))
	return s.r.Read(p)
}

// TestBodyBufferCap: a body is copied through a bodyBuffer while fewer than
// maxBodyBuffers are in use, through a small one past that, and whole
// either way.
func TestBodyBufferCap(t *testing.T) {
	var pool sync.Pool
	big := make(chan struct{}, 1)
	body := strings.Repeat("x", 100<<10)
	for _, full := range []bool{false, true} {
		if full {
			big <- struct{}{} // every token taken
		}
		rec := httptest.NewRecorder()
		w := &flushingWriter{ResponseWriter: rec, bufs: &pool, big: big}
		sr := &sizeReader{r: strings.NewReader(body)}
		n, err := w.ReadFrom(sr)
		if err != nil || n != int64(len(body)) || rec.Body.String() != body {
			t.Fatalf("full=%v: copied %d, %v", full, n, err)
		}
		want := bodyBuffer
		if full {
			want = 32 << 10
		}
		if sr.sizes[0] != want {
			t.Errorf("full=%v: read into %d bytes, want %d", full, sr.sizes[0], want)
		}
		if !full && len(big) != 0 {
			t.Errorf("the token was not given back")
		}
	}
}
