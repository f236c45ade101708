package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxPayloadBytes caps a hook payload. Cursor's beforeReadFile carries the
// whole file and Write carries the whole new content, so the cap is generous;
// anything larger is denied, never truncated.
const MaxPayloadBytes = 8 << 20

// maxDepth caps JSON nesting in a payload.
const maxDepth = 64

// ReadPayload reads at most MaxPayloadBytes from r; more is ErrTooLarge.
func ReadPayload(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxPayloadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading stdin: %v", ErrMalformed, err)
	}
	if len(data) > MaxPayloadBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxPayloadBytes)
	}
	return data, nil
}

// kinds maps the gated events to their Kind and every other event a
// protocol defines to KindOther. An event in neither is ErrUnknownEvent.
func kinds(gated map[string]Kind, other ...string) map[string]Kind {
	for _, e := range other {
		gated[e] = KindOther
	}
	return gated
}

// Decode turns a harness's hook payload into a Call. It refuses (with an
// error wrapping ErrMalformed, ErrTooLarge, ErrUnknownEvent or
// ErrUnknownHarness) a payload over MaxPayloadBytes, one that is not a single
// JSON object of valid UTF-8, one with a duplicate key or nesting deeper
// than 64 anywhere, an event name the harness does not define, and a gated
// event whose fields have the wrong type or are missing. Unknown fields are
// tolerated: harnesses add them often.
func Decode(h Harness, data []byte) (Call, error) {
	p, err := protocolOf(h)
	if err != nil {
		return Call{}, err
	}
	if len(data) > MaxPayloadBytes {
		return Call{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxPayloadBytes)
	}
	if err := checkJSON(data); err != nil {
		return Call{}, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return Call{}, fmt.Errorf("%w: payload is not a JSON object", ErrMalformed)
	}
	f := fields{top: top}
	c := Call{Harness: h}
	if p.event != nil {
		c.Event = p.event(&f)
	} else {
		c.Event = f.str("hook_event_name", true)
	}
	if f.err != nil {
		return Call{}, f.err
	}
	kind, ok := p.events[c.Event]
	if !ok {
		return Call{}, fmt.Errorf("%w %q for %s", ErrUnknownEvent, c.Event, h)
	}
	c.Kind = kind
	c.SessionID = f.str("session_id", false)
	c.Cwd = f.str("cwd", false)
	if kind == KindOther {
		if f.err != nil {
			return Call{}, f.err
		}
		return c, nil
	}
	if p.decode != nil {
		p.decode(&f, &c)
	} else {
		c.Tool = f.str("tool_name", true)
		c.Input = f.object("tool_input", true)
		c.ToolUseID = f.str("tool_use_id", false)
	}
	if f.err != nil {
		return Call{}, f.err
	}
	if c.Tool == "" {
		return Call{}, fmt.Errorf("%w: tool_name is empty", ErrMalformed)
	}
	return c, nil
}

// fields reads typed top-level fields, keeping the first error.
type fields struct {
	top map[string]json.RawMessage
	err error
}

func (f *fields) fail(key, format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%w: %s: %s", ErrMalformed, key, fmt.Sprintf(format, args...))
	}
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// str reads a string field; null or absent is "" (an error when required).
func (f *fields) str(key string, required bool) string {
	raw, ok := f.top[key]
	if !ok || isNull(raw) {
		if required {
			f.fail(key, "missing")
		}
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		f.fail(key, "want a string")
		return ""
	}
	if required && s == "" {
		f.fail(key, "empty")
	}
	return s
}

func (f *fields) strList(key string) []string {
	raw, ok := f.top[key]
	if !ok || isNull(raw) {
		return nil
	}
	var out []string
	if err := json.Unmarshal(raw, &out); err != nil {
		f.fail(key, "want a list of strings")
		return nil
	}
	return out
}

func decodeObject(raw []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || m == nil {
		return nil, errors.New("want an object")
	}
	return m, nil
}

func (f *fields) object(key string, required bool) map[string]any {
	raw, ok := f.top[key]
	if !ok || isNull(raw) {
		if required {
			f.fail(key, "missing")
		}
		return nil
	}
	m, err := decodeObject(raw)
	if err != nil {
		f.fail(key, "%v", err)
	}
	return m
}

// objectOrJSONString reads Cursor's beforeMCPExecution tool_input, documented
// as a JSON string holding an object and seen as an object too. A string
// goes through the same structural checks as the payload.
func (f *fields) objectOrJSONString(key string) map[string]any {
	raw, ok := f.top[key]
	if !ok || isNull(raw) {
		f.fail(key, "missing")
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			f.fail(key, "want a string")
			return nil
		}
		if strings.TrimSpace(s) == "" {
			return map[string]any{}
		}
		if err := checkJSON([]byte(s)); err != nil {
			f.fail(key, "string does not hold a JSON object: %v", err)
			return nil
		}
		raw = json.RawMessage(s)
	}
	m, err := decodeObject(raw)
	if err != nil {
		f.fail(key, "%v", err)
	}
	return m
}

// checkJSON checks that data is exactly one JSON object of valid UTF-8 with
// no duplicate key in any object and nesting no deeper than maxDepth.
// encoding/json would otherwise keep the last of two duplicate keys and
// replace bad UTF-8 silently, and a harness might have read it differently.
func checkJSON(data []byte) error {
	if wellFormedObject(data) {
		return nil
	}
	return checkJSONTokens(data)
}

// wellFormedObject reports, without encoding/json's tokenizer, that data
// passes checkJSONTokens: valid UTF-8 and valid JSON (encoding/json's own
// checks), one object at the top, nesting no deeper than maxDepth, no
// object with a key twice. It answers false for a key with an escape, which
// only the tokenizer compares exactly, and for anything it refuses, so that
// checkJSONTokens rules on those and words the error. Reading every payload
// token by token cost each hookgate check and each ruling ~20 µs, most of
// the decode; FuzzCheckJSON holds the two to the same answer.
func wellFormedObject(data []byte) bool {
	if !utf8.Valid(data) || !json.Valid(data) {
		return false
	}
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i == len(data) || data[i] != '{' {
		return false
	}
	// One level per open object or array; an object's keys so far, and
	// whether its next string is a key.
	type level struct {
		object, wantKey bool
		keys            map[string]struct{}
	}
	var stack []level
	for ; i < len(data); i++ {
		switch data[i] {
		case '{', '[':
			if len(stack)+1 > maxDepth {
				return false
			}
			stack = append(stack, level{object: data[i] == '{', wantKey: data[i] == '{'})
		case '}', ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.wantKey = true
			}
		case '"':
			j := i + 1
			for data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			if top := &stack[len(stack)-1]; top.wantKey {
				key := data[i+1 : j]
				if bytes.IndexByte(key, '\\') >= 0 {
					return false
				}
				if _, dup := top.keys[string(key)]; dup {
					return false
				}
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.keys[string(key)] = struct{}{}
				top.wantKey = false
			}
			i = j
		}
	}
	return true
}

// checkJSONTokens is checkJSON's reference: it reads data token by token
// and says what is wrong with it.
func checkJSONTokens(data []byte) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: not valid UTF-8", ErrMalformed)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	first, err := d.Token()
	if err != nil {
		return fmt.Errorf("%w: not JSON", ErrMalformed)
	}
	if delim, ok := first.(json.Delim); !ok || delim != '{' {
		return fmt.Errorf("%w: payload is not a JSON object", ErrMalformed)
	}
	if err := checkObject(d, 1); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	return nil
}

// checkObject consumes an object's members after its '{'.
func checkObject(d *json.Decoder, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
	}
	keys := map[string]struct{}{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		k, _ := t.(string)
		if _, dup := keys[k]; dup {
			return fmt.Errorf("%w: duplicate key %q", ErrMalformed, k)
		}
		keys[k] = struct{}{}
		if err := checkValue(d, depth); err != nil {
			return err
		}
	}
	if _, err := d.Token(); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}

func checkValue(d *json.Decoder, depth int) error {
	t, err := d.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	delim, ok := t.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '{':
		return checkObject(d, depth+1)
	case '[':
		if depth+1 > maxDepth {
			return fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxDepth)
		}
		for d.More() {
			if err := checkValue(d, depth+1); err != nil {
				return err
			}
		}
		if _, err := d.Token(); err != nil {
			return fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		return nil
	}
	return fmt.Errorf("%w: unexpected %v", ErrMalformed, delim)
}
