package procjail

import (
	"bufio"
	"errors"
	pathpkg "path"
	"strconv"
	"strings"
	"testing"
)

// FuzzSeatbeltProfile: whatever path is offered, either the generator
// refuses it or the path appears once, inside one quoted literal, and the
// profile keeps exactly one outbound rule per port and per socket (no
// injected rule). The same with the paths of a confined FileSystem (and
// the socket path as a read-only path): either an error, or a profile
// whose every line is one of the generator's rule shapes with only its
// quoted strings changed, every quoted string an offered path, a parent
// of one or a cache below the home, and every offered path (the home's
// caches for the home) quoted as it is.
func FuzzSeatbeltProfile(f *testing.F) {
	for _, s := range []string{"/var/run/docker.sock", "relative.sock", `/tmp/a") (allow network*`, "/tmp/a\\b", "/tmp/\x00", "/", "/a b/c"} {
		f.Add(uint16(3128), s, "/Users/me/src", "/Users/me/src/.git/hooks", "/Users/me/.ssh", "/Users/me/.ssh/known_hosts", "/Users/me", "/private/tmp/t")
	}
	f.Add(uint16(1), "/p", "/", "/", "/", "/", "/", "/")
	f.Add(uint16(1), "/p", "/w", `/w/a")) (allow file-write* (subpath "/`, "/h", "/h/r", "", "")
	f.Add(uint16(1), "/p", "/h/w", "/h/w/p", "/h", "/h/w", "/h", "/h/t")
	f.Add(uint16(1), "/p", "/w/../x", "/w/", "/h\n", "h", "/h\\", "/t\"")
	f.Add(uint16(3071), "/.", "/", "/", "/", "/", "", "/") // a read-only path need not be clean
	f.Add(uint16(1), "/0", "/0", "/0", "/0", "/", "/", "") // home is quoted only in its caches' paths
	shapes := seatbeltShapes(f)
	f.Fuzz(func(t *testing.T, port uint16, path, root, protected, hidden, revealed, home, tmp string) {
		if p, err := SeatbeltProfile(SeatbeltArgs{ProxyPorts: []uint16{port}, AllowUnixSockets: []string{path}}); err == nil {
			if strings.Count(p, "(allow network-outbound") != 2 || strings.Count(p, "\n") != 8 {
				t.Fatalf("profile for %q has injected rules:\n%s", path, p)
			}
			if !strings.Contains(p, `(path-literal "`+path+`")`) {
				t.Fatalf("path %q not quoted verbatim:\n%s", path, p)
			}
		}
		a := SeatbeltArgs{ProxyPorts: []uint16{port}, ReadOnlyPaths: []string{path}, TempDir: tmp,
			FileSystem: FileSystem{Confine: true, WriteRoots: []string{root}, Protected: []string{protected},
				Hidden: []string{hidden}, Revealed: []string{revealed}, HomeOverlay: home}}
		p, err := SeatbeltProfile(a)
		if err != nil {
			return
		}
		offered := []string{path, pathpkg.Clean(path), root, protected, hidden, revealed, home, tmp}
		for _, line := range strings.Split(strings.TrimSuffix(p, "\n"), "\n") {
			shape, quoted, ok := seatbeltShape(line)
			if !ok || !shapes[shape] {
				t.Fatalf("line %q is not one of the generator's rules:\n%s", line, p)
			}
			for _, q := range quoted {
				if shapes["\""+q+"\""] || q == "localhost:"+strconv.Itoa(int(port)) {
					continue // one of the fixed strings, or the port
				}
				known := home != "" && seatbeltUnder(q, home)
				for _, o := range offered {
					if o != "" && seatbeltUnder(o, q) {
						known = true
					}
				}
				if !known {
					t.Fatalf("quoted %q is no offered path:\n%s", q, p)
				}
			}
		}
		caches := ""
		if home != "" {
			caches = pathpkg.Join(home, "Library/Caches")
		}
		for _, o := range []string{path, root, protected, hidden, caches, tmp} {
			if o != "" && !strings.Contains(p, `"`+o+`"`) {
				t.Fatalf("path %q not quoted verbatim:\n%s", o, p)
			}
		}
	})
}

// seatbeltShape returns line with the content of its quoted strings
// removed, and those contents; ok is false when a quote is left open.
func seatbeltShape(line string) (shape string, quoted []string, ok bool) {
	var b strings.Builder
	for {
		i := strings.IndexByte(line, '"')
		if i < 0 {
			b.WriteString(line)
			return b.String(), quoted, true
		}
		j := strings.IndexByte(line[i+1:], '"')
		if j < 0 {
			return "", nil, false
		}
		b.WriteString(line[:i+1] + `"`)
		quoted = append(quoted, line[i+1:i+1+j])
		line = line[i+2+j:]
	}
}

// seatbeltShapes collects the line shapes (and the fixed quoted strings,
// quotes included) of reference profiles that use every rule the
// generator has.
func seatbeltShapes(f *testing.F) map[string]bool {
	shapes := map[string]bool{}
	hiddenHome := SeatbeltArgs{ProxyPorts: []uint16{3128}, FileSystem: FileSystem{Confine: true,
		WriteRoots: []string{"/Users/me/work/app"}, Protected: []string{"/Users/me/work/app/.git/config"},
		Hidden: []string{"/Users/me", "/Users/me/work/app/.env"}, Revealed: []string{"/Users/me/.gitconfig", "/Users/me/work/app"}}}
	full := seatbeltTestArgs()
	full.ReadOnlyPaths = []string{"/Users/me/policy"}
	for _, a := range []SeatbeltArgs{full, hiddenHome, {ProxyPorts: []uint16{3128}, AllowUnixSockets: []string{"/s"}, ReadOnlyPaths: []string{"/r"}}} {
		p, err := SeatbeltProfile(a)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(p, "\n"), "\n") {
			shape, quoted, ok := seatbeltShape(line)
			if !ok {
				f.Fatalf("reference line %q", line)
			}
			shapes[shape] = true
			for _, q := range quoted {
				if !strings.HasPrefix(q, "/Users") && !strings.HasPrefix(q, "/private/var") && q != "/s" && q != "/r" {
					shapes[`"`+q+`"`] = true
				}
			}
		}
	}
	return shapes
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
