package proxy

import (
	"crypto/subtle"
	"math"
	"strings"
)

// What the sandbox knows of a credential's value, and which tails of an
// answer the scrubber holds for it (docs/design.md, "The scrubber's hold").
//
// A tail (the last bytes of what the server has sent so far) is held
// until more comes when it could be the start of a value the proxy
// would swap. Which tails are held must not tell the sandbox anything of
// the value it does not already know, by what comes through nor by when:
//
//   - a tail shorter than the swap's bound is held when it fits the
//     value's public shape (its known prefix, each other position's
//     character class, its punctuation: what the placeholder shows), and
//     so whatever its secret characters are;
//   - a tail as long as the bound or longer is held only when it is the
//     value's own prefix: to tell it from one that is not, a guess must
//     get secretBits of the value right at once.
//
// Every real prefix of the value is held either way, so no part of the
// value is let through before it is swapped.

// shapeClass is what the sandbox knows of one byte of a swap's from.
type shapeClass uint8

const (
	exact   shapeClass = iota // the byte itself (a known prefix, punctuation, a user name)
	lower                     // some a-z
	upper                     // some A-Z
	digit                     // some 0-9
	b64char                   // some character of the standard base64 alphabet
)

// secretBits is how much of a value's secret a tail must carry before
// the scrubber's hold of it may depend on whether it is right: a blind
// guess of that much succeeds once in 2^64 tries.
const secretBits = 64

// classBits is the secret one byte of each class carries (log2 of the
// characters it may be).
var classBits = [...]float64{exact: 0, lower: math.Log2(26), upper: math.Log2(26), digit: math.Log2(10), b64char: 6}

// fits reports whether b can be a byte of class c whose public value,
// for exact, is want.
func (c shapeClass) fits(b, want byte) bool {
	switch c {
	case lower:
		return b >= 'a' && b <= 'z'
	case upper:
		return b >= 'A' && b <= 'Z'
	case digit:
		return b >= '0' && b <= '9'
	case b64char:
		return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '+' || b == '/'
	}
	return b == want
}

// publicParts returns how many leading and trailing bytes of value its
// placeholder keeps as they are (NewPlaceholder): a known prefix, and an
// Anthropic key's last claudeKeySuffix characters.
func publicParts(value string) (prefix, suffix int) {
	for _, p := range placeholderPrefixes {
		if strings.HasPrefix(value, p) && len(p) > prefix && len(value)-len(p) >= 4 {
			prefix = len(p)
		}
	}
	if strings.HasPrefix(value, "sk-ant-") && len(value)-prefix-claudeKeySuffix >= 16 {
		suffix = claudeKeySuffix
	}
	return prefix, suffix
}

// valueShape is the public shape of a value: per byte, its class (exact
// for the kept prefix and suffix and for every byte that is not a letter
// or digit, which NewPlaceholder keeps).
func valueShape(value string) []shapeClass {
	prefix, suffix := publicParts(value)
	shape := make([]shapeClass, len(value))
	for i := prefix; i < len(value)-suffix; i++ {
		switch c := value[i]; {
		case c >= 'a' && c <= 'z':
			shape[i] = lower
		case c >= 'A' && c <= 'Z':
			shape[i] = upper
		case c >= '0' && c <= '9':
			shape[i] = digit
		}
	}
	return shape
}

// boundOf is the length of the shortest prefix of a from whose byte i
// carries bits[i] of secret that carries secretBits in all, or len(bits)
// when the whole does not.
func boundOf(bits func(n int) float64, n int) int {
	for i := 1; i <= n; i++ {
		if bits(i) >= secretBits {
			return i
		}
	}
	return n
}

// valueSwap is the swap of a credential's value for its placeholder.
func valueSwap(value, placeholder string) swap {
	shape := valueShape(value)
	bound := boundOf(func(n int) float64 {
		var b float64
		for _, c := range shape[:n] {
			b += classBits[c]
		}
		return b
	}, len(shape))
	return swap{from: value, to: placeholder, shape: shape, bound: bound, fromb: []byte(value)}
}

// basicSwap is the swap of enc, the Basic encoding of plain (the
// client's user:password with creds' values put in), for the client's
// own. Its public shape: each character computed from public bytes of
// plain only is exact, any other is some base64 character; and a prefix
// of enc carries the secret of the bytes of plain it fixes whole.
func basicSwap(plain, enc, client string, creds []Credential) swap {
	shape := make([]shapeClass, len(plain))
	for _, c := range creds {
		vs := valueShape(c.Value)
		for off := 0; ; {
			j := strings.Index(plain[off:], c.Value)
			if j < 0 {
				break
			}
			for k, cl := range vs {
				if cl != exact {
					shape[off+j+k] = cl
				}
			}
			off += j + len(c.Value)
		}
	}
	eshape := make([]shapeClass, len(enc))
	for k := range enc {
		lo, hi := 6*k/8, (6*k+5)/8
		if enc[k] == '=' || lo >= len(plain) {
			continue
		}
		hi = min(hi, len(plain)-1)
		for i := lo; i <= hi; i++ {
			if shape[i] != exact {
				eshape[k] = b64char
			}
		}
	}
	bound := boundOf(func(n int) float64 {
		var b float64
		for _, c := range shape[:min(6*n/8, len(shape))] {
			b += classBits[c]
		}
		return b
	}, len(enc))
	return swap{from: enc, to: client, shape: eshape, bound: bound, fromb: []byte(enc)}
}

// holds reports whether the scrubber holds t, the tail of what came, for
// w: t is shorter than w.from and either shorter than w.bound and of
// w.from's public shape, or w.from's own prefix. A swap with no shape
// (made without valueSwap or basicSwap) holds every tail shorter than its
// from.
func (w *swap) holds(t []byte) bool {
	switch {
	case len(t) >= len(w.from):
		return false
	case w.shape == nil:
		return true
	case len(t) >= w.bound:
		// Past the bound the answer depends on the secret: compared in
		// constant time.
		return subtle.ConstantTimeCompare(t, w.fromb[:len(t)]) == 1
	}
	for i, b := range t {
		if !w.shape[i].fits(b, w.from[i]) {
			return false
		}
	}
	return true
}
