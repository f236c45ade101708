//go:build linux

package integration

import (
	"strconv"
	"strings"
	"testing"
)

// containerModePolicy is a session policy that denies every .env file,
// written inside the container (in /etc/barry, root's) by the script
// before sandboxd starts.
const containerModePolicy = `mkdir -p /etc/barry && printf '%s\n' 'version: 1' 'harness: claude-code' 'bags: {}' 'tools: []' 'traits: {}' 'bounds:' '  fs: {files: {deny: ["**/.env"]}}' 'identity: {name: dev}' 'session: {bounds: [fs]}' > /etc/barry/policy.yaml`

// TestContainerModeFileRules: in container mode the file rules hold as far
// as Landlock and the command's uid hold them, and a start they could not
// hold is refused with one line naming the file and the fix: a denied file
// the uid may read; a policy directory it may change. A denied file it
// cannot read stays unread; protected paths it may write are reported.
func TestContainerModeFileRules(t *testing.T) {
	containerImage(t)
	agent := strconv.Itoa(containerAgentUID)
	o := containerOpts{flags: []string{"--cap-add", "NET_ADMIN", "--workdir", "/home/agent/ws"}}
	// The workspace, the agent's: a .env, a git repository's hooks.
	setup := containerModePolicy + ` && mkdir -p /home/agent/ws/.git/hooks && echo SECRET-VALUE > /home/agent/ws/.env && chown -R ` + agent + `:` + agent + ` /home/agent/ws && cd /home/agent/ws`
	cases := []struct {
		name   string
		script string
		code   int
		stdout string   // contained in stdout
		stderr []string // each contained in stderr
	}{
		{"denied file readable by the uid", setup + ` && exec sandboxd run --policy /etc/barry/policy.yaml -- cat .env`,
			125, "", []string{"container mode", "/home/agent/ws/.env", "uid " + agent, "chown"}},
		// Its own file it could chmod back: as good as readable.
		{"denied file of the uid's, mode 000", setup + ` && chmod 000 .env && exec sandboxd run --policy /etc/barry/policy.yaml -- sh -c 'chmod 600 .env; cat .env'`,
			125, "", []string{"container mode", "/home/agent/ws/.env", "chown root"}},
		{"denied file unreadable by the uid", setup + ` && chown root:root .env && chmod 600 .env && sandboxd run --policy /etc/barry/policy.yaml -- sh -c 'cat .env; echo code=$?'`,
			0, "code=1", []string{"Permission denied", "protected paths in the workspace stay writable", ".git/hooks"}},
		{"the home's protected files", setup + ` && rm .env && exec sandboxd run --policy /etc/barry/policy.yaml -- sh -c 'echo x >> ~/.claude/settings.json; echo w=$?; mv ~/.claude ~/.c2; echo m=$?; rm -f ~/.bashrc; echo r=$?; mkdir -p ~/.local/bin/x; echo b=$?; touch ~/own && mv ~/own ~/own2 && echo own-ok; cat ~/.claude/settings.json' 2>/dev/null`,
			0, "w=1\nm=1\nr=1\nb=1\nown-ok\n{}", nil},
		{"policy in a directory the uid may change", setup + ` && mkdir /home/agent/pol && cp /etc/barry/policy.yaml /home/agent/pol/ && chown -R ` + agent + ` /home/agent/pol && rm .env && exec sandboxd run --policy /home/agent/pol/policy.yaml -- true`,
			125, "", []string{"container mode", "/home/agent/pol", "uid " + agent, "chown root"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := containerRun(t, o, "sh", "-c", c.script)
			t.Logf("%s", r)
			if r.code != c.code || !strings.Contains(r.stdout, c.stdout) || strings.Contains(r.stdout, "SECRET-VALUE") {
				t.Fatalf("exit %d, stdout %q: want exit %d, %q, and never the secret", r.code, r.stdout, c.code, c.stdout)
			}
			for _, want := range c.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
			if c.code == 125 {
				if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 {
					t.Errorf("refused in %d lines, want one", len(lines))
				}
			}
		})
	}
}

// TestContainerModeUnixSockets: in container mode the Unix socket gate
// copies the command's sockets, which Docker's default seccomp profile
// allows only with CAP_SYS_PTRACE: without it --allow-unix-socket is
// refused in one line naming the fix; with it, an allowed socket's server
// sees the command's uid, not root's.
func TestContainerModeUnixSockets(t *testing.T) {
	containerImage(t)
	agent := strconv.Itoa(containerAgentUID)
	// A server on a host socket (in the container) that answers with its
	// peer's uid, started by root before sandboxd.
	server := `python3 -c '
import socket, struct, os
s = socket.socket(socket.AF_UNIX); s.bind("/tmp/peer.sock"); os.chmod("/tmp/peer.sock", 0o777); s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
pid, uid, gid = struct.unpack("3i", c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
c.send(("peer uid %d\n" % uid).encode())
' & sleep 1; cd /home/agent && `
	client := `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("/tmp/peer.sock"); print(s.recv(100).decode().strip())'`
	cases := []struct {
		name   string
		flags  []string
		code   int
		stdout string
		stderr []string
	}{
		{"default profile", []string{"--cap-add", "NET_ADMIN"}, 125, "", []string{"--allow-unix-socket", "--cap-add SYS_PTRACE"}},
		{"with SYS_PTRACE", []string{"--cap-add", "NET_ADMIN", "--cap-add", "SYS_PTRACE"}, 0, "peer uid " + agent, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			o := containerOpts{flags: c.flags, hostTools: true}
			r := containerRun(t, o, "sh", "-c", server+`exec sandboxd run --agent-uid `+agent+` --allow-unix-socket /tmp/peer.sock -- `+client)
			t.Logf("%s", r)
			if r.code != c.code || !strings.Contains(r.stdout, c.stdout) {
				t.Fatalf("exit %d, stdout %q: want exit %d and %q", r.code, r.stdout, c.code, c.stdout)
			}
			for _, want := range c.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
		})
	}
}

// TestContainerModeOpenGate: in container mode sandboxd cannot have the
// fanotify gate; under filesystem.openGate: always the seccomp route holds
// files.deny at open time instead: a .env that root makes readable to the
// agent during the session is refused (EPERM, one open refused line
// naming it), the file beside it is read. The route runs on the create
// gate's machinery, which Docker's default seccomp profile refuses
// without CAP_SYS_PTRACE: there the session does not start (125), in one
// line naming filesystem.openGate and why.
func TestContainerModeOpenGate(t *testing.T) {
	containerImage(t)
	agent := strconv.Itoa(containerAgentUID)
	policy := strings.Replace(containerModePolicy, `'session: {bounds: [fs]}'`, `'session: {bounds: [fs]}' 'filesystem: {openGate: always}'`, 1)
	script := policy + ` && mkdir -p /home/agent/ws/late && chown -R ` + agent + `:` + agent + ` /home/agent/ws && cd /home/agent/ws && ` +
		`sandboxd run --audit /tmp/audit.jsonl --policy /etc/barry/policy.yaml -- sh -c 'i=0; while [ ! -e go ]; do sleep 0.05; i=$((i+1)); [ $i -gt 600 ] && exit 3; done; cat late/.env 2>&1; echo rc=$?; cat late/ok.txt' & ` +
		`sleep 1; echo SECRET-VALUE > late/.env; echo NEIGHBOUR > late/ok.txt; chown ` + agent + ` late/.env late/ok.txt; touch go; wait $!; code=$?; ` +
		`grep -c '"open refused".*"path":"/home/agent/ws/late/.env"' /tmp/audit.jsonl; grep -o '"open_gate":"[^"]*"' /tmp/audit.jsonl; exit $code`
	cases := []struct {
		name   string
		flags  []string
		code   int
		stdout []string
		stderr []string
	}{
		{"default profile", []string{"--cap-add", "NET_ADMIN"}, 125, nil, []string{"filesystem.openGate is always", "no seccomp route", "SYS_PTRACE"}},
		{"with SYS_PTRACE", []string{"--cap-add", "NET_ADMIN", "--cap-add", "SYS_PTRACE"}, 0,
			[]string{"Operation not permitted", "rc=1", "NEIGHBOUR", "\n1\n", `"open_gate":"on (seccomp: every open decided, no cache)"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := containerRun(t, containerOpts{flags: append(c.flags, "--workdir", "/home/agent/ws")}, "sh", "-c", script)
			t.Logf("%s", r)
			if r.code != c.code || strings.Contains(r.stdout, "SECRET-VALUE") {
				t.Fatalf("exit %d, stdout %q: want exit %d and never the secret", r.code, r.stdout, c.code)
			}
			for _, want := range c.stdout {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout does not say %q", want)
				}
			}
			for _, want := range c.stderr {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr does not say %q", want)
				}
			}
		})
	}
}
