package procjail

import (
	"bufio"
	"errors"
	"strings"
	"testing"
)

// FuzzSeatbeltProfile: whatever path is offered, either the generator
// refuses it or the path appears once, inside one quoted literal, and the
// profile keeps exactly one outbound rule per port and per socket (no
// injected rule).
func FuzzSeatbeltProfile(f *testing.F) {
	for _, s := range []string{"/var/run/docker.sock", "relative.sock", `/tmp/a") (allow network*`, "/tmp/a\\b", "/tmp/\x00", "/", "/a b/c"} {
		f.Add(uint16(3128), s)
	}
	f.Fuzz(func(t *testing.T, port uint16, path string) {
		p, err := SeatbeltProfile(SeatbeltArgs{ProxyPorts: []uint16{port}, AllowUnixSockets: []string{path}})
		if err != nil {
			return
		}
		if strings.Count(p, "(allow network-outbound") != 2 || strings.Count(p, "\n") != 8 {
			t.Fatalf("profile for %q has injected rules:\n%s", path, p)
		}
		if !strings.Contains(p, `(path-literal "`+path+`")`) {
			t.Fatalf("path %q not quoted verbatim:\n%s", path, p)
		}
	})
}

// FuzzReadReply: the parent's reading of message 5 never panics, and
// accepts only "ok <pid>" (pid > 0) or "error <reason>".
func FuzzReadReply(f *testing.F) {
	for _, s := range []string{"ok 2\n", "error mount /proc: permission denied\n", "ok\n", "ok x\n", "", "garbage\n", "error \n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pid, err := readReply(bufio.NewReader(strings.NewReader(s)), "ok")
		var ce *childError
		switch {
		case err == nil:
			if !strings.HasPrefix(s, "ok ") || pid <= 0 {
				t.Fatalf("%q accepted as ok (pid %d)", s, pid)
			}
		case errors.As(err, &ce):
			if !strings.HasPrefix(s, "error ") {
				t.Fatalf("%q read as a child error", s)
			}
		}
	})
}

// FuzzSpecValidate: Validate never panics, and a spec it accepts has a
// command and only tcp/udp forwards with absolute targets.
func FuzzSpecValidate(f *testing.F) {
	f.Add("sh", uint16(3128), "tcp", "/run/p.sock", "/var/run/docker.sock", "sandbox")
	f.Add("", uint16(0), "sctp", "rel", "rel/../x", "a/b")
	f.Fuzz(func(t *testing.T, cmd string, port uint16, network, target, unixPath, host string) {
		s := Spec{Command: cmd, Forwards: []Forward{{InsidePort: port, Network: network, Target: target}},
			AllowUnixSockets: []string{unixPath}, Hostname: host}
		if s.Validate() != nil {
			return
		}
		if cmd == "" || port == 0 || (network != "tcp" && network != "udp") || !strings.HasPrefix(target, "/") || !strings.HasPrefix(unixPath, "/") {
			t.Fatalf("accepted %+v", s)
		}
	})
}
