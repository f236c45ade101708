package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/policy"
)

// awkward is a string with everything encoding/json escapes.
const awkward = "q\"b\\s/<a>&\x00\x01\x1f\b\f\n\r\t\u2028\u2029é\xff\xfe end"

// fullCall sets every field of Call, through reflection, so that a field
// added to Call is on the wire in TestClientRequest.
func fullCall(t *testing.T) Call {
	t.Helper()
	var c Call
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString(v.Type().Field(i).Name + awkward)
		case reflect.Uint8:
			f.SetUint(2)
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"/w", awkward, ""}))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]any{
				"command": awkward, "z": nil, "a": true, "b": false, "n": json.Number("-1.5e+3"), "zero": json.Number(""),
				"f": 1.25, "i": 7, "nested": map[string]any{"k": []any{"x", json.Number("2"), nil, map[string]any{}, []any{}}},
				"nilmap": map[string]any(nil), "nilslice": []any(nil), awkward: "key",
			}))
		default:
			t.Fatalf("Call.%s has kind %s, which fullCall does not fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	return c
}

// pipeConn is a rulingConn that records what the client writes and reads
// a canned response.
type pipeConn struct {
	written bytes.Buffer
	resp    *strings.Reader
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.resp.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.written.Write(p) }
func (c *pipeConn) Close() error                { return nil }
func (c *pipeConn) abort()                      {}

// TestClientRequest: the line Client.Rule writes, for every payload
// fixture and for a call with every field set, is the request as
// json.Marshal encodes it, one line, and the server's decoder (checkJSON,
// unknown fields refused) reads it back as the same call.
func TestClientRequest(t *testing.T) {
	full := fullCall(t)
	calls := []Call{full, {Harness: ClaudeCode, Event: "PreToolUse"}}
	for _, p := range payloadFixtures(t) {
		data, err := os.ReadFile(filepath.Join("testdata/fixtures", p+".json"))
		if err != nil {
			t.Fatal(err)
		}
		h, _, _ := strings.Cut(p, "/")
		if c, err := Decode(Harness(h), data); err == nil {
			calls = append(calls, c)
		}
	}
	for _, c := range calls {
		conn := &pipeConn{resp: strings.NewReader(`{"v":1,"verdict":"allow","reason":"r"}` + "\n")}
		cl := &Client{conn: conn, r: bufio.NewReader(conn)}
		d, err := cl.Rule(context.Background(), c)
		if err != nil || d.Verdict != policy.Allow || d.Reason != "r" {
			t.Fatalf("Rule = %+v, %v", d, err)
		}
		line, ok := bytes.CutSuffix(conn.written.Bytes(), []byte("\n"))
		if !ok || bytes.ContainsRune(line, '\n') {
			t.Fatalf("not one line: %q", conn.written.Bytes())
		}
		want, err := json.Marshal(Request{V: ProtocolVersion, Op: "rule", Call: &c})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(line, want) {
			t.Errorf("request:\n got %s\nwant %s", line, want)
		}
		if err := checkJSON(line); err != nil {
			t.Errorf("the server's check refuses the request: %v", err)
		}
		var back Request
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		dec.UseNumber()
		if err := dec.Decode(&back); err != nil || back.Call == nil {
			t.Fatalf("the server's decoder: %v", err)
		}
		// Each invalid UTF-8 byte comes back as U+FFFD (as []rune makes
		// it); the rest as it went.
		got, sent := *back.Call, c
		for _, s := range []*string{&sent.Tool, &sent.Event, &sent.Cwd} {
			*s = string([]rune(*s))
		}
		if got.Tool != sent.Tool || got.Event != sent.Event || got.Cwd != sent.Cwd || got.Kind != sent.Kind || len(got.Input) != len(sent.Input) {
			t.Errorf("read back as another call: %+v", got)
		}
	}
	// A number json.Marshal refuses is refused, and nothing is sent.
	conn := &pipeConn{resp: strings.NewReader("")}
	cl := &Client{conn: conn, r: bufio.NewReader(conn)}
	bad := Call{Harness: ClaudeCode, Input: map[string]any{"n": json.Number("01")}}
	if _, err := cl.Rule(context.Background(), bad); err == nil || conn.written.Len() != 0 {
		t.Errorf("an invalid number: %v, sent %q", err, conn.written.Bytes())
	}
}

// TestParseResponse: the rulings the server writes are read back, and a
// line that is not exactly one response object is refused.
func TestParseResponse(t *testing.T) {
	for _, r := range []Response{
		{V: 1, Verdict: "allow", Reason: "r"},
		{V: 1, Verdict: "deny", Reason: awkward, Rule: "files.deny:**/.env*"},
		{V: 1, Verdict: "ask", Reason: "<&>"},
		{V: 1, Verdict: "allow", Reason: "r", Exclude: "!**/.env !**/.ssh"},
	} {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var want Response
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		got, err := parseResponseFields(line)
		if err != nil || got != want {
			t.Errorf("%s: got %+v, %v", line, got, err)
		}
		if _, err := ParseResponse(line); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	for _, line := range []string{
		``, `null`, `[]`, `"x"`, `{"v":1,"verdict":"allow","reason":"r"} {}`, `{"v":1,"verdict":"allow","reason":"r"}x`,
		`{"v":1,"verdict":"allow","reason":"r","extra":1}`, `{"V":1,"verdict":"allow","reason":"r"}`,
		`{"v":1,"verdict":"allow","verdict":"deny","reason":"r"}`, `{"v":"1","verdict":"allow","reason":"r"}`,
		`{"v":1.5,"verdict":"allow","reason":"r"}`, `{"v":1,"verdict":true,"reason":"r"}`,
		`{"v":1,"verdict":"allow","reason":"r","error":"e"}`, `{"v":1,"verdict":"allow"}`, `{"v":2,"verdict":"allow","reason":"r"}`,
		"{\"v\":1,\"verdict\":\"allow\",\"reason\":\"\xff\"}",
		// Exclusion globs hold an allow; on anything else they are an error.
		`{"v":1,"verdict":"deny","reason":"r","exclude":"!**/.env"}`, `{"v":1,"verdict":"ask","reason":"r","exclude":"!**/.env"}`,
		`{"v":1,"verdict":"allow","reason":"r","exclude":["!**/.env"]}`,
	} {
		if d, err := ParseResponse([]byte(line)); err == nil {
			t.Errorf("%q accepted as %+v", line, d)
		}
	}
}

// checkJSONCases are inputs for the structural check, accepted and refused.
var checkJSONCases = []string{
	`{}`, ` {"a":1} `, `{"a":{"b":[1,{"c":null}]},"d":"x\"y\\"}`, `{"a":1,"a":2}`, `{"a":1,"b":{"a":2}}`,
	`{"a":{"k":1,"k":1}}`, `[{"a":1}]`, `{"a":1}{}`, `{"a":1} x`, `{"\u0061":1,"a":2}`, `{"a\"":1,"a\"":2}`,
	`{"a":[{"x":1},{"x":1}]}`, "{\"a\":\"\xff\"}", `{"a":"\ud800"}`, `{"a"}`, `{"a":1,}`, `{`, ``, `1`,
	`{"":1,"":2}`, `{"a":{"":{}}}`, "\t{\n\"a\"\r:1}",
	strings.Repeat(`{"a":`, maxDepth) + `1` + strings.Repeat(`}`, maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + `1` + strings.Repeat(`}`, maxDepth+1),
	`{"a":` + strings.Repeat(`[`, maxDepth-1) + strings.Repeat(`]`, maxDepth-1) + `}`,
	`{"a":` + strings.Repeat(`[`, maxDepth) + strings.Repeat(`]`, maxDepth) + `}`,
}

// FuzzCheckJSON: the quick structural check never accepts what the
// token-by-token reference refuses.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range checkJSONCases {
		f.Add([]byte(s))
	}
	for _, p := range payloadFixtures(f) {
		data, err := os.ReadFile(filepath.Join("testdata/fixtures", p+".json"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if wellFormedObject(data) {
			if err := checkJSONTokens(data); err != nil {
				t.Fatalf("%q: quick check accepts, reference refuses: %v", data, err)
			}
		}
		if (checkJSON(data) == nil) != (checkJSONTokens(data) == nil) {
			t.Fatalf("%q: checkJSON and the reference disagree", data)
		}
	})
}

// TestCheckJSONQuick: the quick check accepts the payloads (so checkJSON
// rarely needs the reference) and refuses what the reference refuses.
func TestCheckJSONQuick(t *testing.T) {
	for _, p := range payloadFixtures(t) {
		data, err := os.ReadFile(filepath.Join("testdata/fixtures", p+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if checkJSONTokens(data) == nil && !wellFormedObject(data) {
			t.Errorf("%s: the quick check refuses a well-formed payload", p)
		}
	}
	for _, s := range checkJSONCases {
		quick, ref := wellFormedObject([]byte(s)), checkJSONTokens([]byte(s))
		if quick && ref != nil {
			t.Errorf("%q: quick check accepts, reference refuses: %v", s, ref)
		}
		if !quick && ref == nil && !strings.Contains(s, `\`) {
			t.Errorf("%q: quick check refuses a well-formed object without escaped keys", s)
		}
	}
}
