//go:build linux

package integration

import (
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

// users are the two ways sandboxd runs: as root (CI) and as an
// unprivileged user through user namespaces.
var users = []struct {
	name string
	uid  int
}{{"root", 0}, {"nobody", 65534}}

func TestRealClients(t *testing.T) {
	w := newWorld(t)
	for _, c := range []string{"curl", "git", "python3", "dig"} {
		testenv.NeedCommand(t, c)
	}
	cases := []struct {
		name      string
		argv      []string
		wantCode  int
		wantOut   string // substring of stdout
		wantAudit string // substring of the audit log
	}{
		{"curl http allowed", []string{"curl", "-sS", "--max-time", "20", "http://allowed.test/a"}, 0, "hello from allowed.test", `"decision":"allow"`},
		{"curl https allowed", []string{"curl", "-sS", "--max-time", "20", "https://allowed.test/b"}, 0, "hello from allowed.test", `"decision":"allow"`},
		{"curl http denied", []string{"curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}", "http://denied.test/"}, 0, "403", `"decision":"deny"`},
		{"curl https denied", []string{"curl", "-sS", "--max-time", "20", "https://denied.test/"}, 56, "", `"decision":"deny"`},
		{"git clone allowed", []string{"sh", "-c", "git clone -q https://git.test/repo.git r && git -C r log --format=%s"}, 0, "fake internet", `"host":"git.test"`},
		{"git clone denied", []string{"git", "clone", "-q", "https://denied.test/repo.git", "r"}, 128, "", `"decision":"deny"`},
		{"python urllib allowed", []string{"python3", "-c", "import urllib.request as u; print(u.urlopen('https://allowed.test/py', timeout=20).read().decode())"}, 0, "hello from allowed.test", ""},
		{"python urllib denied", []string{"python3", "-c", "import urllib.request as u\ntry:\n  u.urlopen('http://denied.test/py', timeout=20)\nexcept Exception as e:\n  print('refused', e)"}, 0, "refused HTTP Error 403", ""},
		{"go net/http allowed", []string{goClientBin, "https://allowed.test/go"}, 0, "200 hello from allowed.test", ""},
		{"go net/http denied", []string{goClientBin, "http://denied.test/go"}, 1, "403", ""},
		{"dig udp allowed", []string{"dig", "+short", "+tries=1", "+time=5", "allowed.test", "A"}, 0, webAddr, `"kind":"dns"`},
		{"dig tcp allowed", []string{"dig", "+tcp", "+short", "+tries=1", "+time=5", "allowed.test", "A"}, 0, webAddr, `"kind":"dns"`},
		{"getent allowed", []string{"getent", "hosts", "allowed.test"}, 0, "allowed.test", ""},
	}
	for _, u := range users {
		for _, c := range cases {
			t.Run(u.name+"/"+c.name, func(t *testing.T) {
				r := w.sandboxd(t, runOpts{uid: u.uid, argv: c.argv})
				if r.code != c.wantCode || !strings.Contains(r.stdout, c.wantOut) || !strings.Contains(r.audit, c.wantAudit) {
					t.Fatalf("exit %d (want %d)\nstdout %q (want %q)\nstderr %q\naudit %s", r.code, c.wantCode, r.stdout, c.wantOut, r.stderr, r.audit)
				}
			})
		}
	}
	// No request for the denied host ever reached the world.
	_, httpSeen, _, _ := w.seen()
	for _, h := range httpSeen {
		if strings.HasPrefix(h, "denied.test") {
			t.Errorf("the denied host was reached: %s", h)
		}
	}
}

// TestSSHProxyCommandHelper: GIT_SSH_COMMAND's ProxyCommand helper
// (sandboxd __connect HOST PORT) tunnels through the proxy with the
// sandbox's credentials: an allowed host answers, a denied one is refused.
func TestSSHProxyCommandHelper(t *testing.T) {
	w := newWorld(t)
	script := `case "$GIT_SSH_COMMAND" in *"__connect %h %p"*) echo has-proxycommand;; esac
printf 'GET /ssh HTTP/1.0\r\nHost: allowed.test\r\n\r\n' | ` + sandboxdBin + ` __connect allowed.test 80
echo; ` + sandboxdBin + ` __connect denied.test 80 </dev/null; echo code=$?`
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			r := w.sandboxd(t, runOpts{uid: u.uid, argv: []string{"sh", "-c", script}})
			if !strings.Contains(r.stdout, "has-proxycommand") || !strings.Contains(r.stdout, "hello from allowed.test") ||
				!strings.Contains(r.stdout, "code=1") || !strings.Contains(r.stderr, "proxy refused: 403") {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
			}
		})
	}
}
