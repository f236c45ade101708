package proxy

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
)

// shapeValues are values of the shapes the hold is decided for: an
// Anthropic key (known prefix, kept suffix), a GitHub token, a key with
// no known prefix, one of digits only, and values too short to carry
// secretBits (held by shape whole).
var shapeValues = []string{
	"sk-ant-api03-" + strings.Repeat("Ab3_xY9-kLm2", 7) + "QrSt5uVwX7yZaB1cDe2fGhAA",
	"ghp_RealSecretValue0123456789abcdefABCD",
	"3fa9c0e1d2b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3",
	"839201748392017483920174839201",
	"hunter2hunter2",
	"ghp_ab12",
}

// basicOf returns the Basic swap the proxy makes for a client's
// user:password holding placeholder ph of value v, with its plain text.
func basicOf(t *testing.T, userPass, v string) swap {
	t.Helper()
	ph, err := NewPlaceholder(v)
	if err != nil {
		t.Fatal(err)
	}
	creds := []Credential{{Name: "T", Hosts: []string{"h.test"}, Value: v, Placeholder: ph}}
	client := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(userPass, ph)))
	inj := injectHeaders(map[string][]string{"Authorization": {"Basic " + client}}, creds)
	if len(inj.basic) != 1 {
		t.Fatalf("%q: %d Basic swaps", userPass, len(inj.basic))
	}
	if want := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(userPass, v))); inj.basic[0].from != want {
		t.Fatalf("%q: from %q, want %q", userPass, inj.basic[0].from, want)
	}
	return inj.basic[0]
}

func shapeSwaps(t *testing.T) []swap {
	var sws []swap
	for _, v := range shapeValues {
		ph, err := NewPlaceholder(v)
		if err != nil {
			t.Fatal(err)
		}
		sws = append(sws, valueSwap(v, ph))
		for _, up := range []string{"x-access-token:%s", "%s:x-oauth-basic", "u:%s", "%s:"} {
			sws = append(sws, basicOf(t, up, v))
		}
	}
	return sws
}

// Every real prefix of a from is held: nothing of a value goes through
// before the scrubber has seen whether the rest follows.
func TestSwapHoldsEveryPrefix(t *testing.T) {
	for _, w := range shapeSwaps(t) {
		for n := 1; n < len(w.from); n++ {
			if !w.holds([]byte(w.from[:n])) {
				t.Errorf("%q (bound %d): its prefix of %d bytes is let through", w.from, w.bound, n)
			}
		}
		if w.holds([]byte(w.from)) {
			t.Errorf("%q: the whole is held (it is swapped)", w.from)
		}
	}
}

// The bounds: an Anthropic key's hold depends on its secret only past its
// 13-byte prefix and 64 bits of secret; a value too short for 64 bits
// never.
func TestSwapBound(t *testing.T) {
	for _, tc := range []struct {
		value string
		bound int
	}{
		// 13 + 3*("Ab3" 14.1 bits, "_", "xY9" 14.1, "-", "kLm" 14.1,
		// "2" 3.3 = 45.6 bits) ...: the 64th bit in the second group's "xY9".
		{shapeValues[0], 13 + 12 + 6},
		{shapeValues[1], 4 + 14},
		{shapeValues[4], len(shapeValues[4])},
		{shapeValues[5], len(shapeValues[5])},
	} {
		if w := valueSwap(tc.value, ""); w.bound != tc.bound {
			t.Errorf("%q: bound %d, want %d", tc.value, w.bound, tc.bound)
		}
	}
}

// wrongFrom returns t with every byte from m on replaced by another of
// the same public shape of w's from (the same class, or the same exact
// byte), so it fits the shape and matches exactly m secret bytes... or
// fewer, where a position has one possible byte.
func wrongFrom(w swap, t []byte, m int) []byte {
	out := append([]byte(nil), t...)
	for i := m; i < len(out); i++ {
		switch c := out[i]; w.shape[i] {
		case lower:
			out[i] = 'a' + (c-'a'+1)%26
		case upper:
			out[i] = 'A' + (c-'A'+1)%26
		case digit:
			out[i] = '0' + (c-'0'+1)%10
		case b64char:
			if c == 'A' {
				out[i] = 'B'
			} else {
				out[i] = 'A'
			}
		}
	}
	return out
}

// TestScrubberHoldIsBlindBelowTheBound: whether a tail is held (and so
// when it is let through) is the same whether it matches none, some or
// all of the value's secret characters, for every tail shorter than the
// bound: the decision a timing probe can observe is constant there. Past
// the bound only the value's own prefix is held, which a guess reaches
// once in 2^secretBits.
func TestScrubberHoldIsBlindBelowTheBound(t *testing.T) {
	const lead = "data: {\"type\":\"content_block_delta\"}\n\n"
	for _, w := range shapeSwaps(t) {
		for n := 1; n < len(w.from); n++ {
			real := []byte(w.from[:n])
			for m := 0; m <= n; m++ {
				guess := wrongFrom(w, real, m)
				got := readyAfterOneRead(lead+string(guess), w)
				switch {
				case n < w.bound && got != len(lead):
					t.Fatalf("%q: a tail of %d bytes matching %d of them: %d ready, want %d (held whole: the decision depends on the secret below the bound %d)", w.from, n, m, got, len(lead), w.bound)
				case n >= w.bound && string(guess) == string(real) && got != len(lead):
					t.Fatalf("%q: its own prefix of %d bytes: %d ready, want %d (held)", w.from, n, got, len(lead))
				case n >= w.bound && string(guess) != string(real) && got == len(lead):
					// Past the bound a wrong guess goes (what is held of it
					// is a shorter tail, which fits the shape on its own).
					t.Fatalf("%q: a wrong guess of %d bytes (bound %d) held whole", w.from, n, w.bound)
				}
			}
		}
	}
}

// A Server-Sent-Events stream is let through event by event: its reads
// end in a blank line, which begins no value.
func TestScrubberHoldsNothingOfAnEvent(t *testing.T) {
	for _, w := range shapeSwaps(t) {
		for _, ev := range []string{
			"event: content_block_delta\ndata: {\"delta\":{\"text\":\"sk\"}}\n\n",
			"data: {\"text\":\"ghp_ab\"}\n\n",
			": keep-alive\n\n",
			"data: [DONE]\n\n",
		} {
			if got := readyAfterOneRead(ev, w); got != len(ev) {
				t.Errorf("%q: %q: %d of %d bytes ready", w.from, ev, got, len(ev))
			}
		}
	}
}

func readyAfterOneRead(in string, w swap) int {
	sc := newScrubber(&oneRead{b: []byte(in)}, []swap{w})
	sc.fill()
	return len(sc.ready)
}
