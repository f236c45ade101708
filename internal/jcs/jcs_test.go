package jcs

import (
	"encoding/json"
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
