package hooks

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The client's side of the protocol's JSON, written without encoding/json's
// reflection. A hookgate process encodes one request and reads one response;
// json.Marshal and a struct decode spent most of their time building the
// encoders and field tables of Request, Call and Response, ~0.1 ms of each
// hookgate check --socket. TestAppendRequest holds appendRequest
// to json.Marshal's exact bytes for every Call field.

// appendRequest appends req encoded exactly as json.Marshal encodes it.
func appendRequest(b []byte, req Request) ([]byte, error) {
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, int64(req.V), 10)
	b = append(b, `,"op":`...)
	b = appendJSONString(b, req.Op)
	if req.Call != nil {
		var err error
		b = append(b, `,"call":`...)
		if b, err = appendCall(b, req.Call); err != nil {
			return nil, err
		}
	}
	if req.DeadlineMs != 0 {
		b = append(b, `,"deadlineMs":`...)
		b = strconv.AppendInt(b, req.DeadlineMs, 10)
	}
	return append(b, '}'), nil
}

// appendCall appends c as json.Marshal encodes it (its struct tags).
func appendCall(b []byte, c *Call) ([]byte, error) {
	b = append(b, `{"harness":`...)
	b = appendJSONString(b, string(c.Harness))
	b = append(b, `,"event":`...)
	b = appendJSONString(b, c.Event)
	b = append(b, `,"kind":`...)
	b = strconv.AppendUint(b, uint64(c.Kind), 10)
	str := func(key, v string) {
		if v != "" {
			b = append(b, `,"`...)
			b = append(b, key...)
			b = append(b, `":`...)
			b = appendJSONString(b, v)
		}
	}
	str("tool", c.Tool)
	if len(c.Input) > 0 {
		var err error
		b = append(b, `,"input":`...)
		if b, err = appendJSONValue(b, c.Input, 1); err != nil {
			return nil, err
		}
	}
	str("cwd", c.Cwd)
	str("sessionId", c.SessionID)
	str("toolUseId", c.ToolUseID)
	if len(c.WorkspaceRoots) > 0 {
		b = append(b, `,"workspaceRoots":[`...)
		for i, r := range c.WorkspaceRoots {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, r)
		}
		b = append(b, ']')
	}
	str("mcpServerUrl", c.MCPServerURL)
	str("mcpServerCommand", c.MCPServerCommand)
	return append(b, '}'), nil
}

// appendJSONValue appends a decoded JSON value (what Decode and the
// harness decoders put in Call.Input) as json.Marshal encodes it: object
// keys sorted, strings escaped alike. Any other type, and a value nested
// deeper than a payload can be, goes through json.Marshal itself.
func appendJSONValue(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxDepth {
		return appendMarshal(b, v)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendJSONString(b, x), nil
	case json.Number:
		if x == "" {
			return append(b, '0'), nil
		}
		if !validNumber(string(x)) {
			return appendMarshal(b, v) // json.Marshal's own error
		}
		return append(b, x...), nil
	case map[string]any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSONValue(b, x[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		if x == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSONValue(b, e, depth+1); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	}
	return appendMarshal(b, v)
}

func appendMarshal(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, m...), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string (with
// its default HTML escaping): ", \ and control characters escaped, <, >
// and & as \u003c, \u003e and \u0026, invalid UTF-8 as \ufffd, and U+2028
// and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// validNumber reports whether s is a JSON number literal (encoding/json's
// isValidNumber).
func validNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	default:
		return false
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}

// parseResponseFields reads one response line, a JSON object whose members
// are Response's fields, without a struct decode. It is stricter than a
// json.Decoder with DisallowUnknownFields: member names must match the
// tags exactly (no case folding), a member may not appear twice, and
// nothing may follow the object. Anything else is an error, and the
// caller's deny.
func parseResponseFields(line []byte) (Response, error) {
	var r Response
	if err := checkJSON(line); err != nil {
		return r, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		return r, err
	}
	for k, raw := range members {
		var err error
		switch k {
		case "v":
			err = json.Unmarshal(raw, &r.V)
		case "verdict":
			err = json.Unmarshal(raw, &r.Verdict)
		case "reason":
			err = json.Unmarshal(raw, &r.Reason)
		case "rule":
			err = json.Unmarshal(raw, &r.Rule)
		case "error":
			err = json.Unmarshal(raw, &r.Error)
		default:
			err = fmt.Errorf("json: unknown field %q", k)
		}
		if err != nil {
			return Response{}, err
		}
	}
	return r, nil
}
