//go:build linux

package integration

// The container tests that need more than a shell, inside real containers: the
// credential tests and `sandboxd launch claude-code` with the real Claude
// Code CLI in nested mode, in a container run with the shipped seccomp
// profile alone (no seccomp=unconfined, no systempaths=unconfined: the
// runtime's /proc masks stay, so the sandbox keeps the container's /proc),
// as root and as users other than root; and in container mode (a container
// with --cap-add NET_ADMIN alone: Docker's default seccomp profile refuses
// user namespaces), the credential tests with the command as the image's
// agent, and the launch's refusal. The container's network namespace is
// linked to the test's fake world (newWorldAround), and every outcome is
// checked from the test: what the world's servers and the fake model saw,
// the files the sandboxed commands left in a workspace bound into the
// container at its own path, the audit. Run them alone with
//
//	go test ./integration -run 'ContainerNested|ContainerMode'

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// nestedUser is a user a nested container runs as (docker run --user), and
// so everything docker exec starts in it.
type nestedUser struct {
	name     string // also in request paths: no spaces
	user     string // docker run --user ("" for the image's default, root)
	login    string // its passwd name ("" for none)
	uid, gid int    // as Docker sets them (a uid with no passwd entry gets gid 0)
}

// nestedUsers: root; the image's agent, with a passwd entry and a home; and
// uid 1000, with neither (Docker sets HOME=/).
var nestedUsers = []nestedUser{
	{name: "root", login: "root"},
	{name: "agent", user: strconv.Itoa(containerAgentUID), login: "agent", uid: containerAgentUID, gid: containerAgentUID},
	{name: "uid1000", user: "1000", uid: 1000},
}

// startNested starts a container with the shipped seccomp profile as its
// only security option, as u, with the host's tools bound in and docker
// run's extra flags; checks that doctor says nested mode there; and links
// its network namespace to a new fake world.
func startNested(t *testing.T, u nestedUser, extra ...string) (*runningContainer, *world) {
	t.Helper()
	flags := []string{"--security-opt", "seccomp=" + shippedSeccompProfile(t)}
	if u.user != "" {
		flags = append(flags, "--user", u.user)
	}
	c := startContainer(t, containerOpts{flags: append(flags, extra...), hostTools: true})
	d := c.exec(t, time.Minute, nil, containerSandboxd, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(d.stdout), &rep); err != nil || rep.Mode != "nested" {
		t.Fatalf("doctor in the container (%s) does not say nested mode (%v): %s", strings.Join(flags, " "), err, d)
	}
	if id := c.exec(t, time.Minute, nil, "id", "-u"); strings.TrimSpace(id.stdout) != strconv.Itoa(u.uid) {
		t.Fatalf("the container's user is not uid %d: %s", u.uid, id)
	}
	return c, newWorldAround(t, proxytest.AttachNetns(t, c.pid), false)
}

// nestedSandboxd runs sandboxd in the container as the container's own
// user (docker exec with no --user), with the world's flags and
// environment (o.extraEnv's entries replacing the world's of the same
// name) from o.dir, auditing to o.audit (default: a new file); docker
// exec gives up after o.timeout (default 2 minutes).
func (c *runningContainer) nestedSandboxd(t *testing.T, w *world, o runOpts) runResult {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 2 * time.Minute
	}
	if o.audit == "" {
		o.audit = filepath.Join(sharedDir(t), "audit.jsonl")
	}
	if o.dir == "" {
		o.dir = sharedDir(t)
	}
	flags := []string{"--workdir", o.dir}
	for _, e := range lastWins(w.env(o.dir, o.extraEnv)) {
		flags = append(flags, "--env", e)
	}
	r := c.exec(t, o.timeout, flags, w.sandboxdCommand(containerSandboxd, o, o.audit)...)
	a, _ := os.ReadFile(o.audit)
	return runResult{code: r.code, stdout: r.stdout, stderr: r.stderr, audit: string(a)}
}

// lastWins returns env with one entry per name, the last one given, in the
// order of their first appearance.
func lastWins(env []string) []string {
	var out []string
	at := map[string]int{}
	for _, e := range env {
		k, _, _ := strings.Cut(e, "=")
		if i, ok := at[k]; ok {
			out[i] = e
			continue
		}
		at[k] = len(out)
		out = append(out, e)
	}
	return out
}

// requireContainerProc fails t unless the audit's session start line says
// the sandbox kept the container's /proc (the masks of a container run
// without systempaths=unconfined) and names the credential want.
func requireContainerProc(t *testing.T, lines []map[string]any, want string) {
	t.Helper()
	n := 0
	for _, m := range lines {
		if m["msg"] != audit.MsgSessionStart {
			continue
		}
		n++
		if m[audit.AttrProc] != "container" {
			t.Errorf("the session start line's %q is %v, want \"container\" (the runtime's masks stay on /proc)", audit.AttrProc, m[audit.AttrProc])
		}
		if got := asSlice(m[audit.AttrCredentials]); !slices.Equal(got, []string{want}) {
			t.Errorf("the session start line's %q is %q, want [%s]", audit.AttrCredentials, got, want)
		}
	}
	if n != 1 {
		t.Errorf("%d session start lines in the audit, want 1", n)
	}
}

// newNestedCredWorld serves the credential tests' two hosts on w: credHost,
// which demands the real token and echoes the request and the token
// (credServer), and plainHost, allowed but no credential host; the runs'
// flags allow both and make GITHUB_TOKEN a credential for credHost.
func newNestedCredWorld(t *testing.T, w *world) *credWorld {
	t.Helper()
	cw := &credWorld{world: w, real: "ghp_" + randAlnum(t, 36)}
	cw.cred = &credServer{host: credHost, tokens: []string{cw.real}}
	cw.plain = &credServer{host: plainHost}
	cw.credCert, cw.plainCert = w.issue(t, credHost), w.issue(t, plainHost)
	w.serveTLS(t, credHost, credAddr, cw.credCert, cw.cred)
	w.serveTLS(t, plainHost, plainAddr, cw.plainCert, cw.plain)
	cw.secrets = map[string]string{"the real " + credVar: cw.real}
	for _, u := range basicUsers {
		cw.secrets[fmt.Sprintf("Basic %s:<real value>", u)] = base64.StdEncoding.EncodeToString([]byte(u + ":" + cw.real))
	}
	for k := range cw.secrets {
		cw.secretNames = append(cw.secretNames, k)
	}
	sort.Strings(cw.secretNames)
	cw.allowHost = []string{"--allow-domain", credHost, "--allow-domain", plainHost}
	cw.credFlags = append(slices.Clone(cw.allowHost), "--credential", credVar+"@"+credHost)
	return cw
}

// containerCredScript is what the credential tests run inside the
// sandbox: GITHUB_TOKEN as the sandbox sees it, the command's uid (id -u),
// its HOME and whether it may write there; every process's environment it
// can read under the container's /proc (a sleep in the background, so that
// two of the sandbox's own are among them), cat's errors for the others,
// and every process's pid and command line (on one line); then curl to
// credHost with the placeholder as Bearer and as Basic, a stream of the
// token, and curl to plainHost with the placeholder. {case} is replaced by
// the case's name (in the request paths).
const containerCredScript = `mkdir -p out && printf %s "$GITHUB_TOKEN" > out/placeholder
id -u > out/uid
printf %s "$HOME" > out/home
touch "$HOME/.barry-home-probe" && echo writable > out/home-writable
sleep 30 &
cat /proc/[0-9]*/environ 2>out/environ.err | tr '\0' '\n' > out/environ
for p in /proc/[0-9]*; do echo "${p#/proc/} $(tr '\0\n' '  ' < $p/cmdline 2>/dev/null)"; done > out/cmdlines
kill $!
T="$GITHUB_TOKEN"
c() { name=$1; shift; curl -sS --max-time 20 -D out/$name.head -o out/$name.body -w "$name %{http_code}\n" "$@"; }
c bearer -H "Authorization: Bearer $T" https://` + credHost + `/cred-bearer-{case}
c basic -u "u:$T" https://` + credHost + `/cred-basic-{case}
c stream -H "Authorization: Bearer $T" https://` + credHost + `/stream-cred-{case}
c plain -H "Authorization: Bearer $T" https://` + plainHost + `/cred-plain-{case}
`

// containerCredCase is one run of the container credential tests: its
// name (in the request paths), the sandbox's mode ("nested" or
// "container"), the uid the command runs as inside, and sandboxd's flags
// besides the credential's.
type containerCredCase struct {
	name  string
	mode  string
	uid   int
	flags []string
	// chown gives the workspace to the command's uid (container mode: the
	// agent's workspace), else it stays a directory every uid may write.
	chown bool
}

// TestContainerNestedCredentials: the credential tests' essence in nested
// mode, in a container with the shipped seccomp profile alone, as root, as
// the image's agent and as uid 1000 (checkContainerCredentials).
func TestContainerNestedCredentials(t *testing.T) {
	requireContainerCredTools(t)
	for _, u := range nestedUsers {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			c, w := startNested(t, u)
			checkContainerCredentials(t, c, w, start, containerCredCase{name: "nested-" + u.name, mode: "nested", uid: u.uid})
		})
	}
}

// TestContainerModeCredentials: the same in container mode, in a container
// with --cap-add NET_ADMIN as its only option (Docker's default seccomp
// profile, which refuses user namespaces: sandboxd falls back to container
// mode), sandboxd run as root (docker exec's user, the container's) with
// --agent-uid of the image's agent, from a workspace the agent owns
// (checkContainerCredentials). Besides what the nested test asserts: the
// audit's start line says sandbox_mode "container" and agent_uid 1001, the
// command ran as uid 1001 (id -u inside), with a HOME of its own that it
// may write (not sandboxd's), and sandboxd's process, whose environment
// holds the real token and which runs as root, is refused to the agent's
// uid (EACCES).
func TestContainerModeCredentials(t *testing.T) {
	requireContainerCredTools(t)
	start := time.Now()
	c, w := startContainerMode(t)
	checkContainerCredentials(t, c, w, start, containerCredCase{name: "container-agent", mode: "container", uid: containerAgentUID,
		flags: []string{"--agent-uid", strconv.Itoa(containerAgentUID)}, chown: true})
}

// requireContainerCredTools skips (fails under BARRY_REQUIRE_PRIVILEGED=1)
// the container credential tests where Docker, root or the host's clients
// (bound into the container) are missing, and builds the image.
func requireContainerCredTools(t *testing.T) {
	t.Helper()
	requireDocker(t)
	testenv.NeedRoot(t)
	for _, c := range []string{"curl", "tr", "sh", "id"} {
		// Inside, the host's /usr is bound in: the clients must be there.
		if _, err := os.Stat(filepath.Join("/usr/bin", c)); err != nil {
			testenv.SkipOrFail(t, "/usr/bin/"+c+" is not installed")
		}
	}
	containerImage(t)
}

// startContainerMode starts a container with --cap-add NET_ADMIN as its
// only option (Docker's default seccomp profile, no user namespaces) and
// the host's tools bound in, plus docker run's extra flags; checks that
// its user is root and that doctor says container mode there for the
// image's agent; and links its network namespace to a new fake world.
func startContainerMode(t *testing.T, extra ...string) (*runningContainer, *world) {
	t.Helper()
	flags := []string{"--cap-add", "NET_ADMIN"}
	c := startContainer(t, containerOpts{flags: append(flags, extra...), hostTools: true})
	d := c.exec(t, time.Minute, nil, containerSandboxd, "doctor", "--json", "--agent-uid", strconv.Itoa(containerAgentUID))
	var rep doctorReport
	if err := json.Unmarshal([]byte(d.stdout), &rep); err != nil || rep.Mode != "container" {
		t.Fatalf("doctor in the container (%s) does not say container mode (%v): %s", strings.Join(flags, " "), err, d)
	}
	if id := c.exec(t, time.Minute, nil, "id", "-u"); strings.TrimSpace(id.stdout) != "0" {
		t.Fatalf("the container's user is not root: %s", id)
	}
	return c, newWorldAround(t, proxytest.AttachNetns(t, c.pid), false)
}

// checkContainerCredentials runs `sandboxd run --credential
// GITHUB_TOKEN@api.cred.test` in c (as its own user), with the real token
// in sandboxd's environment, running containerCredScript, and checks:
// inside, GITHUB_TOKEN is a placeholder of the token's shape, in both of
// the sandbox's processes; the command ran as cc.uid; the container's
// /proc lists sandboxd's own process, whose environment holds the real
// token, and reading its environment and the sandbox init's is refused
// (EACCES); no environment the sandbox could read holds the real value;
// curl with the placeholder as Bearer and as Basic reaches a TLS server in
// the world that demands the real token, which it gets (and never the placeholder); the server's echo
// of the token (body and X-Token header) and a stream of it split across
// writes come back with the placeholder in its place; an allowed host that
// is no credential host gets the placeholder; the audit says the
// connection was terminated and the credential used, and its one start
// line says the sandbox kept the container's /proc and the mode (in
// container mode, the agent's uid; in nested mode, none). stdout, stderr,
// the audit and every file the run left in its workspace are scanned for
// the real value (noLeak). In container mode, the command's HOME is a
// directory of its own, not sandboxd's, and it may write there.
func checkContainerCredentials(t *testing.T, c *runningContainer, w *world, start time.Time, cc containerCredCase) {
	t.Helper()
	cw := newNestedCredWorld(t, w)
	dir := sharedDir(t)
	if cc.chown {
		if err := os.Chown(dir, cc.uid, cc.uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := c.nestedSandboxd(t, w, runOpts{dir: dir, flags: append(slices.Clone(cw.credFlags), cc.flags...), extraEnv: []string{credVar + "=" + cw.real},
		argv: []string{"sh", "-c", strings.ReplaceAll(containerCredScript, "{case}", cc.name)}})
	t.Logf("%s: exit %d in %v (with the container's start)\nstdout %q\nstderr %q", cc.name, r.code, time.Since(start).Round(time.Millisecond), r.stdout, r.stderr)
	cr := credRun{runResult: r, dir: dir, lines: parseAudit(t, r.audit)}
	cr.placeholder = cr.out("placeholder")
	cw.noLeak(t, cr)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, decisions(r.audit))
	}
	p := cr.placeholder
	checkPlaceholder(t, p, cw.real, "ghp_")
	requireContainerProc(t, cr.lines, credVar)
	requireSandboxMode(t, cr.lines, cc.mode, cc.uid)
	if got := strings.TrimSpace(cr.out("uid")); got != strconv.Itoa(cc.uid) {
		t.Errorf("id -u inside says %q, want %d", got, cc.uid)
	}
	if cc.mode == "container" {
		if home := cr.out("home"); home == "" || home == dir || cr.out("home-writable") != "writable\n" {
			t.Errorf("the command's HOME %q (sandboxd's: %s) is not a directory of its own that it may write (%q)", home, dir, cr.out("home-writable"))
		}
	}

	// The environments: the sandbox's two processes hold the placeholder;
	// sandboxd's processes, whose environment holds the real value, are
	// listed (the container's /proc) and their environments were refused;
	// noLeak found the real value in none that was read.
	if n := strings.Count(cr.out("environ"), credVar+"="+p+"\n"); n < 2 {
		t.Errorf("%d readable environments hold %s=<placeholder>, want at least 2 (sh and sleep):\n%s", n, credVar, cr.out("environ"))
	}
	// sandboxd run itself, and the sandbox's init (sandboxd __init).
	ms := regexp.MustCompile(`(?m)^([0-9]+) (`+regexp.QuoteMeta(containerSandboxd)+` run|sandboxd __init) `).FindAllStringSubmatch(cr.out("cmdlines"), -1)
	if !slices.ContainsFunc(ms, func(m []string) bool { return m[2] != "sandboxd __init" }) {
		t.Errorf("the container's /proc as the sandbox sees it does not list sandboxd's process: the scan proves nothing:\n%s", cr.out("cmdlines"))
	}
	for _, m := range ms {
		if want := "/proc/" + m[1] + "/environ: Permission denied"; !strings.Contains(cr.out("environ.err"), want) {
			t.Errorf("reading the environment of %s (pid %s in the container's /proc) was not refused with EACCES: cat's errors %q\nprocesses:\n%s", m[2], m[1], cr.out("environ.err"), cr.out("cmdlines"))
		}
	}

	for _, c := range []struct{ name, path, how, status string }{
		{"bearer", "/cred-bearer-", "bearer", "200"}, {"basic", "/cred-basic-", "basic", "200"}, {"stream", "/stream-cred-", "bearer", "200"},
	} {
		if !strings.Contains(r.stdout, c.name+" "+c.status+"\n") {
			t.Errorf("curl %s: want HTTP %s; stdout %q, stderr %q", c.name, c.status, r.stdout, r.stderr)
		}
		for _, q := range wantAuthed(t, cw.cred, c.path+cc.name, c.how, cw.real) {
			if c.how == "basic" && q.basicUser != "u" {
				t.Errorf("curl basic: the server got user %q, want u", q.basicUser)
			}
			if strings.Contains(q.headers, p) {
				t.Errorf("curl %s: the credential host got the placeholder:\n%s", c.name, q.headers)
			}
		}
	}
	for _, name := range []string{"bearer", "basic"} {
		var echo struct{ Token, How string }
		if err := json.Unmarshal([]byte(cr.out(name+".body")), &echo); err != nil || echo.Token != p || echo.How != name {
			t.Errorf("curl %s: the echo came back as %q (%v): want the placeholder where the server put the token, how %q", name, cr.out(name+".body"), err, name)
		}
		if h := cr.out(name + ".head"); !headerHas(h, "X-Token", p) {
			t.Errorf("curl %s: the response's X-Token is not the placeholder:\n%s", name, h)
		}
	}
	if body := cr.out("stream.body"); len(body) != streamLen(len(cw.real)) || strings.Count(body, p) != streamPieces {
		t.Errorf("the stream came back with %d bytes and %d placeholders, want %d and %d", len(body), strings.Count(body, p), streamLen(len(cw.real)), streamPieces)
	}
	if !strings.Contains(r.stdout, "plain 200\n") {
		t.Errorf("curl to %s: stdout %q, stderr %q", plainHost, r.stdout, r.stderr)
	}
	if got := cw.plain.seen("/cred-plain-" + cc.name); len(got) != 1 || got[0].auth != "Bearer "+p {
		t.Errorf("%s (no credential host) must get the placeholder as sent; it saw: %s", plainHost, describe(got))
	}
	wantTerminated(t, cr, credHost, credVar, false)
}

// requireSandboxMode fails t unless the audit's session start line says
// the sandbox's mode, and in container mode the command's uid (agent_uid),
// which a nested start line does not carry (requireContainerProc checks
// that there is one start line).
func requireSandboxMode(t *testing.T, lines []map[string]any, mode string, uid int) {
	t.Helper()
	for _, m := range lines {
		if m["msg"] != audit.MsgSessionStart {
			continue
		}
		if m[audit.AttrSandboxMode] != mode {
			t.Errorf("the session start line's %q is %v, want %q", audit.AttrSandboxMode, m[audit.AttrSandboxMode], mode)
		}
		got, ok := m[audit.AttrAgentUID]
		switch {
		case mode == "container" && got != float64(uid):
			t.Errorf("the session start line's %q is %v, want %d (the command's uid)", audit.AttrAgentUID, got, uid)
		case mode != "container" && ok:
			t.Errorf("a %s start line carries %q: %v", mode, audit.AttrAgentUID, got)
		}
	}
}

// TestContainerNestedLaunchClaude: `sandboxd launch claude-code` with the
// real Claude Code CLI (the pinned release, its directory bound read-only
// into the container at its own path) in nested mode, in a container with
// the shipped seccomp profile alone, as root, as the image's agent and as
// uid 1000, against the fake Anthropic API served in the world as
// api.model.test (launchModel), under launchPolicy. From the host: Claude
// Code ran to its last turn and offered no tool of the ceiling and no MCP
// tool of the user's; a shell call the gate denies (git push) did not run
// and Claude Code sent hookgate's reason back as its tool result; an
// allowed one left its marker in the workspace, bound into the container;
// the API key is a credential (a placeholder inside, the real key at the
// model's server); a fetch of a host the policy does not allow failed on
// the proxy's 403 and the world never saw it; a Write outside the write
// roots failed on EROFS and left nothing; an edit of the session's hook
// settings failed on EROFS and the settings never changed; a second denied
// call was denied still; the audit's rulings are these, in order, and the
// start line says the container's /proc.
func TestContainerNestedLaunchClaude(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	claude := claudeCLI(t)
	for _, c := range []string{"python3", "sh"} {
		if _, err := os.Stat(filepath.Join("/usr/bin", c)); err != nil {
			testenv.SkipOrFail(t, "/usr/bin/"+c+" is not installed")
		}
	}
	harnesses := harnessesDir(claude)
	containerImage(t)
	for _, u := range nestedUsers {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			c, w := startNested(t, u, "-v", harnesses+":"+harnesses+":ro")
			// Claude Code runs in the container at all (outside sandboxd):
			// what fails below is the sandbox's.
			v := c.exec(t, time.Minute, []string{"--env", "HOME=/tmp", "--env", "DISABLE_AUTOUPDATER=1"}, claude, "--version")
			if v.code != 0 || !strings.HasPrefix(v.stdout, claudeVersion+" ") {
				t.Fatalf("%s --version in the container, outside sandboxd: %s", claude, v)
			}
			b := newNestedLaunchBox(t, claude, u)
			checkContainerLaunch(t, c, w, b, u, "nested")
		})
	}
}

// checkContainerLaunch runs the session of TestContainerNestedLaunchClaude
// in c (linked to the world w) from box b as u, and checks it for the
// sandbox's mode. Besides the calls above, the command writes the
// project's local settings with disableAllHooks and a PreToolUse hook of
// its own: nested mode refuses it (the project's .claude, which did not
// exist, is made and kept read-only whole); container mode lets the
// command write its own workspace, and Claude Code reads no project
// settings there. The gate still rules on the next call, and that hook
// never runs.
func checkContainerLaunch(t *testing.T, c *runningContainer, w *world, b *launchBox, u nestedUser, mode string) *launchResult {
	t.Helper()
	model := &launchModel{}
	w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
	mcp := &launchMCP{}
	w.serveHTTPS(t, launchMCPHost, launchMCPAddr, mcp)

	bash := func(cmd string) fakemodel.ToolCall {
		return fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "fakemodel"}}
	}
	const pushReason = `hookgate: shell command runs git push, denied by bash.denyPrograms "git:push"`
	pushRan, pushRanAfter := filepath.Join(b.ws, "push-ran"), filepath.Join(b.ws, "push-ran-after")
	marker, envOut := filepath.Join(b.ws, "marker"), filepath.Join(b.ws, "env-out")
	outside := filepath.Join(b.root, "outside.txt")
	plant, plantRan := filepath.Join(b.ws, ".claude", "settings.local.json"), filepath.Join(b.ws, "plant-ran")
	r := c.launchClaude(t, w, model, b, u, []fakemodel.ToolCall{
		bash("touch " + pushRan + " && git push origin main"),
		bash("echo hi > " + marker),
		bash("env > " + envOut),
		bash(`printf 'import urllib.request\nurllib.request.urlopen("https://denied.test/", timeout=20)\n' > fetch.py && python3 fetch.py`),
		{Name: "Write", Input: map[string]any{"file_path": outside, "content": "escaped\n"}},
		// The runtime directory is /run/sandboxd-* for root, else in
		// the temporary directory: one glob for both, read by tee
		// (the gate would deny a redirection to a path it cannot
		// read; the kernel's refusal is the point here).
		bash("tee /*/sandboxd-*/launch/settings.json </dev/null"),
		// Written by python, which names no file to the gate (a
		// redirection there the gate refuses: a protected path): what
		// holds then is the kernel's, or the launch's setting sources.
		bash(`printf '%s\n' '{"disableAllHooks": true, "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch ` + plantRan + `"}]}]}}' > plant.json && python3 -c "import os, shutil; os.makedirs('.claude', exist_ok=True); shutil.copy('plant.json', '` + plant + `')" && sleep 2`),
		bash("touch " + pushRanAfter + " && git push origin main"),
	})
	r.requireSucceeded(t)
	claudeRequirePresent(t, b.ran)
	lines := parseAudit(t, r.run.audit)
	requireContainerProc(t, lines, "ANTHROPIC_API_KEY")
	requireSandboxMode(t, lines, mode, containerAgentUID)
	r.requireRulings(t, "Bash deny", "Bash allow", "Bash allow", "Bash allow", "Write allow", "Bash allow", "Bash allow", "Bash deny")

	t.Run("tools", func(t *testing.T) { r.requireStrictTools(t, "Bash", "Read", "Write", "Edit") })

	t.Run("gate", func(t *testing.T) {
		r.requireDenied(t, 0, "Bash", pushReason)
		claudeRequireAbsent(t, pushRan)
		r.requireRan(t, 1, "Bash")
		if got, err := os.ReadFile(marker); err != nil || string(got) != "hi\n" {
			t.Errorf("marker %s: %q, %v: want the allowed command's \"hi\"", marker, got, err)
		}
		if mode == "container" {
			// The command's own workspace: written, and not read.
			r.requireRan(t, 6, "Bash")
			if got, err := os.ReadFile(plant); err != nil || !strings.Contains(string(got), "disableAllHooks") {
				t.Errorf("the planted %s: %q, %v: want the command's disableAllHooks", plant, got, err)
			}
		} else {
			// The project's .claude is read-only whole where it exists
			// (EROFS); where it does not, the create gate refuses the
			// name (EACCES).
			if e := r.exchange(t, 6, "Bash"); !e.IsError || !(strings.Contains(e.Result, "Read-only file system") || strings.Contains(e.Result, "Permission denied")) {
				t.Errorf("planting %s: is_error=%v %q: want the shell's EROFS or the create gate's EACCES", plant, e.IsError, e.Result)
			}
			if _, err := os.Lstat(plant); err == nil {
				t.Errorf("the refused plant left %s on the host", plant)
			}
		}
		r.requireDenied(t, 7, "Bash", pushReason)
		claudeRequireAbsent(t, pushRanAfter)
		claudeRequireAbsent(t, plantRan)
	})

	t.Run("api-key", func(t *testing.T) {
		r.requireRan(t, 2, "Bash")
		requireKeyPlaceholder(t, envOut, model)
		for _, s := range []string{r.stdout, r.stderr, r.run.audit} {
			if strings.Contains(s, claudeAPIKey) {
				t.Errorf("the real API key is in sandboxd's output or audit")
			}
		}
	})

	t.Run("proxy", func(t *testing.T) { r.requireFetchDenied(t, 3) })
	// A write outside the write roots: the read-only mount (nested) or
	// Landlock (container mode) refuses it; the session's settings are
	// a read-only mount's, or root's.
	refusal, settingsRefusal := "EROFS", "settings.json: Read-only file system"
	if mode == "container" {
		refusal, settingsRefusal = "EACCES", "settings.json: Permission denied"
	}
	t.Run("kernel", func(t *testing.T) { r.requireWriteRefused(t, 4, outside, refusal) })

	t.Run("config", func(t *testing.T) {
		e := r.exchange(t, 5, "Bash")
		if !e.IsError || !strings.Contains(e.Result, settingsRefusal) {
			t.Errorf("overwriting the session settings: is_error=%v %q: want tee's %q", e.IsError, e.Result, settingsRefusal)
		}
		r.requireSettingsRun(t, len(r.exchanges), containerHookgate)
	})
	return r
}

// TestContainerModeLaunchClaude: TestContainerNestedLaunchClaude's session
// in container mode, in a container with --cap-add NET_ADMIN as its only
// option (Docker's default seccomp profile): sandboxd as root, the
// harness and its tools as the image's agent (the owner of the workspace,
// where `sandboxd run -- id -u` says so first), in a home of the
// session's whose protected files (~/.claude/settings.json, ...) are
// root's. The workspace is the command's, so no settings file in it can
// be kept from it: one is planted before the start (the project's local
// settings, the agent's, with a PreToolUse hook of its own that leaves a
// marker: a hook that could rewrite what the gate allowed), and the
// launch reads no project or local settings (--setting-sources=user):
// the hook never ran, and one stderr line names the file. The same checks hold: the gate rules on
// the first call and on the last, after the command wrote the plant
// again; the start line says container mode and the agent's uid; the
// refusals of a write outside the roots and of the session's settings
// are Landlock's and the file's (EACCES).
func TestContainerModeLaunchClaude(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	claude := claudeCLI(t)
	harnesses := harnessesDir(claude)
	containerImage(t)
	c, w := startContainerMode(t, "-v", harnesses+":"+harnesses+":ro")
	// sandboxd runs as root, the container's user; the box is laid out as
	// container mode wants it: the workspace (whose owner is the command's
	// uid) and the log directory are the agent's, the policy's directory
	// root's, in a directory the agent cannot write.
	root := nestedUsers[0]
	b := newNestedLaunchBox(t, claude, root)
	for _, d := range []string{b.ws, filepath.Join(b.root, "log")} {
		if err := os.Chown(d, containerAgentUID, containerAgentUID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(b.root, 0o755); err != nil {
		t.Fatal(err)
	}
	id := c.exec(t, 2*time.Minute, []string{"--workdir", b.ws}, containerSandboxd, "run", "--", "id", "-u")
	if id.code != 0 || id.stdout != strconv.Itoa(containerAgentUID)+"\n" {
		t.Fatalf("sandboxd run -- id -u from the agent's workspace %s: %s: want container mode's uid %d", b.ws, id, containerAgentUID)
	}
	plant := filepath.Join(b.ws, ".claude", "settings.local.json")
	if err := os.Mkdir(filepath.Dir(plant), 0o755); err != nil {
		t.Fatal(err)
	}
	hookRan := filepath.Join(b.ws, "local-hook-ran")
	claudeWriteFile(t, plant, `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch `+hookRan+`"}]}]}}`+"\n")
	for _, p := range []string{filepath.Dir(plant), plant} {
		if err := os.Chown(p, containerAgentUID, containerAgentUID); err != nil {
			t.Fatal(err)
		}
	}
	r := checkContainerLaunch(t, c, w, b, root, "container")
	claudeRequireAbsent(t, hookRan)
	var notes []string
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if strings.Contains(l, "--setting-sources") || strings.Contains(l, "reads no ") {
			notes = append(notes, l)
		}
	}
	if len(notes) != 1 || !strings.HasPrefix(notes[0], "sandboxd: ") || !strings.Contains(notes[0], plant) || !strings.Contains(notes[0], "CLAUDE.md") {
		t.Errorf("stderr %q: want sandboxd's one line saying the project's and local settings (%s), CLAUDE.md, skills and commands are not read", r.stderr, plant)
	}
}

// newNestedLaunchBox is newLaunchBox's throwaway user for a container: its
// home (whose ~/.claude.json configures the user's MCP server), workspace,
// program (a script that leaves a marker and runs claude), policy and log
// directories under a shared directory (bound into the container at its
// own path, so the host sees what the run left), owned by u.
func newNestedLaunchBox(t *testing.T, claude string, u nestedUser) *launchBox {
	t.Helper()
	root := sharedDir(t)
	b := &launchBox{root: root, home: filepath.Join(root, "home"), ws: filepath.Join(root, "ws")}
	b.program, b.ran = filepath.Join(root, "bin", "claude"), filepath.Join(b.ws, "program-ran")
	for _, d := range []string{b.home, b.ws, filepath.Dir(b.program), filepath.Join(root, "policy"), filepath.Join(root, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	claudeWriteFile(t, filepath.Join(b.home, ".claude.json"),
		`{"mcpServers": {"`+launchMCPName+`": {"type": "http", "url": "https://`+launchMCPHost+`/mcp"}}}`+"\n")
	if err := os.WriteFile(b.program, []byte("#!/bin/sh\necho ran >> "+b.ran+"\nexec "+claude+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, u.uid, u.gid)
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// launchClaude runs `sandboxd launch claude-code` in the container as its
// user from the box's workspace, with the fake model serving calls behind
// api.model.test, under launchPolicy (as launchBox.launch does on the
// host); before each model turn the host reads the session's settings
// through the container's root.
func (c *runningContainer) launchClaude(t *testing.T, w *world, m *launchModel, b *launchBox, u nestedUser, calls []fakemodel.ToolCall) *launchResult {
	t.Helper()
	live := &launchLive{}
	srv, err := fakemodel.AnthropicWith(calls, fakemodel.AnthropicOptions{
		Logf: func(f string, a ...any) { live.do(func() { t.Logf(f, a...) }) }})
	if err != nil {
		t.Fatal(err)
	}
	policy := filepath.Join(b.root, "policy", "session.yaml")
	claudeWriteFile(t, policy, launchPolicy)
	auditFile := filepath.Join(sharedDir(t), "audit.jsonl")
	r := &launchResult{box: b}
	r.debugLog = filepath.Join(b.root, "log", "claude-debug.txt")
	settingsPath := ""
	m.set(srv, func() {
		live.do(func() {
			if settingsPath == "" {
				if p := launchSettingsPath(auditFile); p != "" {
					settingsPath = filepath.Join("/proc", strconv.Itoa(c.pid), "root", p)
				}
			}
			data, err := os.ReadFile(settingsPath)
			if err != nil {
				data = []byte("unreadable: " + err.Error())
			}
			r.settings = append(r.settings, string(data))
		})
	})
	_, before, _, _ := w.seen()
	args := []string{"-p", "Run the tool calls you are given.", "--dangerously-skip-permissions",
		"--no-session-persistence", "--debug-file", r.debugLog}
	o := b.runOpts(w, policy, auditFile, filepath.Dir(r.debugLog), nil, args)
	o.extraEnv = slices.DeleteFunc(o.extraEnv, func(e string) bool { return strings.HasPrefix(e, "USER=") })
	if u.login != "" {
		o.extraEnv = append(o.extraEnv, "USER="+u.login)
	}
	o.timeout = 2 * claudeRunTimeout
	start := time.Now()
	r.run = c.nestedSandboxd(t, w, o)
	r.elapsed = time.Since(start)
	r.finish(t, w, m, srv, live, before, "sandboxd launch as "+u.name, settingsPath, 600)
	return r
}
