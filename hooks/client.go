package hooks

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/barry-rocks/sandbox/policy"
)

// ParseAddr reads a ruling server address: "unix:PATH", "tcp:HOST:PORT" with
// HOST a loopback IP address, or a bare absolute or ./relative socket path.
// It returns the network and address for net.Dial.
func ParseAddr(s string) (network, addr string, err error) {
	switch {
	case strings.HasPrefix(s, "unix:"):
		p := strings.TrimPrefix(s, "unix:")
		if p == "" {
			return "", "", fmt.Errorf("%w: empty socket path", ErrServer)
		}
		return "unix", p, nil
	case strings.HasPrefix(s, "tcp:"):
		hp := strings.TrimPrefix(s, "tcp:")
		ap, err := netip.ParseAddrPort(hp)
		if err != nil {
			return "", "", fmt.Errorf("%w: tcp address %q: want tcp:IP:PORT", ErrServer, hp)
		}
		if !ap.Addr().Unmap().IsLoopback() {
			return "", "", fmt.Errorf("%w: tcp address %q is not a loopback address", ErrServer, hp)
		}
		return "tcp", ap.String(), nil
	case strings.HasPrefix(s, "/") || strings.HasPrefix(s, "./"):
		return "unix", s, nil
	}
	return "", "", fmt.Errorf("%w: address %q: want PATH, unix:PATH or tcp:IP:PORT", ErrServer, s)
}

// ClientSource asks the ruling server at Addr for each ruling.
type ClientSource struct {
	Addr string
}

// Open dials the server; it fails when the address is bad or nothing
// answers before ctx's deadline.
func (s ClientSource) Open(ctx context.Context) (Ruling, error) {
	network, addr, err := ParseAddr(s.Addr)
	if err != nil {
		return nil, err
	}
	conn, err := dialRuling(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrServer, err)
	}
	return &Client{conn: conn, r: bufio.NewReaderSize(conn, 4096)}, nil
}

// rulingConn is a client's connection to a ruling server (dialRuling).
// abort, safe to call from any goroutine at any time, ends every pending
// and later Read and Write with an error.
type rulingConn interface {
	io.ReadWriteCloser
	abort()
}

// Client is one connection to a ruling server. It is not safe for
// concurrent use.
type Client struct {
	conn rulingConn
	r    *bufio.Reader
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Rule sends one call and reads the ruling, all before ctx's deadline.
// Every failure (write, read, timeout, a bad or error response) is an
// error, which callers turn into a deny.
func (c *Client) Rule(ctx context.Context, call Call) (policy.Decision, error) {
	req := Request{V: ProtocolVersion, Op: "rule", Call: &call}
	if dl, ok := ctx.Deadline(); ok {
		req.DeadlineMs = max(1, time.Until(dl).Milliseconds())
	}
	// ctx's end, its deadline included, aborts the connection: the write
	// or the read pending then fails.
	stop := context.AfterFunc(ctx, c.conn.abort)
	defer stop()
	if err := ctx.Err(); err != nil {
		return policy.Decision{}, fmt.Errorf("%w: %v", ErrServer, err)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return policy.Decision{}, fmt.Errorf("%w: encoding request: %v", ErrServer, err)
	}
	if len(line)+1 > MaxRequestBytes {
		return policy.Decision{}, fmt.Errorf("%w: request larger than %d bytes", ErrTooLarge, MaxRequestBytes)
	}
	if _, err := c.conn.Write(append(line, '\n')); err != nil {
		return policy.Decision{}, fmt.Errorf("%w: %v", ErrServer, err)
	}
	resp, err := readLine(c.r, 64<<10)
	if err != nil {
		return policy.Decision{}, fmt.Errorf("%w: %v", ErrServer, err)
	}
	return ParseResponse(resp)
}

// ParseResponse turns one response line into a decision; anything but a
// well-formed version-1 ruling is an error: a line that is not one JSON
// object with only Response's members, each once and spelled as its tag,
// a version other than 1, an error, an unknown verdict, no reason, or
// exclusion globs on anything but an allow.
func ParseResponse(line []byte) (policy.Decision, error) {
	r, err := parseResponseFields(line)
	if err != nil {
		return policy.Decision{}, fmt.Errorf("%w: bad response: %v", ErrServer, err)
	}
	if r.V != ProtocolVersion {
		return policy.Decision{}, fmt.Errorf("%w: response version %d, want %d", ErrServer, r.V, ProtocolVersion)
	}
	if r.Error != "" {
		return policy.Decision{}, fmt.Errorf("%w: %s", ErrServer, r.Error)
	}
	var v policy.Verdict
	switch r.Verdict {
	case "allow":
		v = policy.Allow
	case "deny":
		v = policy.Deny
	case "ask":
		v = policy.Ask
	default:
		return policy.Decision{}, fmt.Errorf("%w: unknown verdict %q", ErrServer, r.Verdict)
	}
	if r.Reason == "" {
		return policy.Decision{}, fmt.Errorf("%w: ruling without a reason", ErrServer)
	}
	if r.Exclude != "" && v != policy.Allow {
		return policy.Decision{}, fmt.Errorf("%w: exclusion globs on a %s", ErrServer, r.Verdict)
	}
	return policy.Decision{Verdict: v, Reason: r.Reason, Rule: r.Rule, Exclude: r.Exclude}, nil
}

// readLine reads one '\n'-terminated line of at most limit bytes.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > limit {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrTooLarge, limit)
		}
		if err == nil {
			return buf[:len(buf)-1], nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
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
		case "exclude":
			err = json.Unmarshal(raw, &r.Exclude)
		default:
			err = fmt.Errorf("json: unknown field %q", k)
		}
		if err != nil {
			return Response{}, err
		}
	}
	return r, nil
}
