package jcs

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

func TestMarshal(t *testing.T) {
	cases := []struct {
		in   any
		want string
	}{
		{map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`},
		{map[string]any{"\uFFFD": 1, "\U0001F600": 2}, "{\"\U0001F600\":2,\"\uFFFD\":1}"},
		{[]any{1e21, 1e-7, 0.000001, 1.5, -0.0, 100}, `[1e+21,1e-7,0.000001,1.5,0,100]`},
		{"a\"\\\b\f\n\r\t\x01é<>&", `"a\"\\\b\f\n\r\t\u0001é<>&"`},
		{map[string]any{"z": []any{}, "y": map[string]any{}, "x": nil, "w": true}, `{"w":true,"x":null,"y":{},"z":[]}`},
	}
	for _, c := range cases {
		got, err := Marshal(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("Marshal(%v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

// FuzzMarshal: any JSON document canonicalizes to valid JSON that
// canonicalizes to itself, and never panics.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1e21,"x",null,true]}`, `"\u0001é"`, `[{"\ud83d\ude00":2,"\ufffd":1}]`, `-0.0`, `1e-7`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			return
		}
		out, err := Marshal(v)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q", out)
		}
		var w any
		if err := json.Unmarshal(out, &w); err != nil {
			t.Fatal(err)
		}
		again, err := Marshal(w)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q then %q (%v)", out, again, err)
		}
	})
}

// TestRFC8785Numbers: the number serialization samples of RFC 8785,
// Appendix B: each IEEE 754 double (as its 64 bits in hex) and the text JCS
// writes for it; NaN and Infinity have no JSON form and are errors.
func TestRFC8785Numbers(t *testing.T) {
	cases := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"}, // minus zero
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
		{"7fffffffffffffff", ""}, // NaN
		{"7ff0000000000000", ""}, // Infinity
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.bits] {
			t.Fatalf("duplicate case %s", c.bits)
		}
		seen[c.bits] = true
		bits, err := strconv.ParseUint(c.bits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(bits)
		got, err := Marshal(f)
		if c.want == "" {
			if err == nil {
				t.Errorf("%s (%v): %s, want an error", c.bits, f, got)
			}
			continue
		}
		if err != nil || string(got) != c.want {
			t.Errorf("%s (%v): %s, %v; want %s", c.bits, f, got, err, c.want)
		}
		// The same number read from JSON text, as a policy's numbers are.
		if got, err := Marshal(json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))); err != nil || string(got) != c.want {
			t.Errorf("%s from JSON text: %s, %v; want %s", c.bits, got, err, c.want)
		}
	}
}

// TestRFC8785Examples: the canonicalization example of RFC 8785, section
// 3.2.2 (numbers, escapes, literals), and the sorting example of section
// 3.2.3, whose property names sort by UTF-16 code units: U+1F600 (a
// surrogate pair, D83D DE00) before U+FB33, unlike sorting by code point or
// by UTF-8 bytes.
func TestRFC8785Examples(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"3.2.2", `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"3.2.3", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
			"\"€\":\"Euro Sign\",\"\U0001F600\":\"Emoji: Grinning Face\",\"\uFB33\":\"Hebrew Letter Dalet With Dagesh\"}"},
	}
	for _, c := range cases {
		got, err := Marshal(json.RawMessage(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("section %s: %s, %v\nwant %s", c.name, got, err, c.want)
		}
	}
}
