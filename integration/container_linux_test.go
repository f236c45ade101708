//go:build linux

package integration

// sandboxd inside containers: every way Docker is commonly run
// ends in a running sandbox or a one-line refusal that names its fix, and
// `sandboxd doctor` agrees with what `run` then does; in nested mode the
// network escapes stay contained. Run them alone with
//
//	go test ./integration -run Container

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// seccompProfile is the seccomp profile sandboxd ships for containers,
// relative to the repository.
const seccompProfile = "deploy/seccomp.json"

// shippedSeccompProfile returns the absolute path of seccompProfile, or
// skips the test (fails it under BARRY_REQUIRE_PRIVILEGED=1) when the
// repository has none.
func shippedSeccompProfile(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", seccompProfile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		testenv.SkipOrFail(t, fmt.Sprintf("%s does not exist (deploy/ ships it): %v", seccompProfile, err))
	}
	return p
}

// containerFixes are what a refusal's line may name as its fix: a line
// naming none of them leaves the user with no way forward. Bare words that
// also describe a cause ("seccomp filter", "kernel.*") are not fixes.
var containerFixes = []struct{ text, what string }{
	{"--security-opt", "a docker/podman run flag: seccomp=PROFILE, systempaths=unconfined"},
	{"--cap-add", "a docker/podman run flag"},
	{"seccomp=", "the seccomp option's value: seccomp=" + seccompProfile},
	{"seccomp.json", "the shipped profile, by its file name"},
	{"systempaths=unconfined", "the /proc masks off"},
	{"sysctl", "a host setting to change (sysctl -w ...)"},
	{"securityContext", "Kubernetes: the pod's or container's securityContext"},
	{"seccompProfile", "Kubernetes: securityContext.seccompProfile"},
	{"procMount", "Kubernetes: securityContext.procMount: Unmasked"},
	{"--agent-uid", "sandboxd's flag: container mode's uid for the command"},
	{"chown", "give the command's uid the workspace"},
}

// namesFix returns the entry of containerFixes that line names, or "".
func namesFix(line string) string {
	for _, f := range containerFixes {
		if strings.Contains(line, f.text) {
			return f.text
		}
	}
	return ""
}

// containerRow is one way of running a container: docker run's flags.
type containerRow struct {
	name    string
	flags   []string
	profile bool   // flags name the shipped profile: "seccomp=" + its path is appended
	mode    string // what run does: "nested", "container" or "none" (refused)
}

// containerRows are the common ways of running Docker, plus the shipped profile with and
// without a user, and nested mode as users other than root.
var containerRows = []containerRow{
	{name: "default", mode: "none"},
	{name: "user 1000", flags: []string{"--user", "1000"}, mode: "none"},
	// Container mode runs the command under the workspace owner's uid:
	// /work is root's, /home/agent the agent's.
	{name: "cap-add NET_ADMIN", flags: []string{"--cap-add", "NET_ADMIN"}, mode: "none"},
	{name: "cap-add NET_ADMIN workdir agent's", flags: []string{"--cap-add", "NET_ADMIN", "--workdir", "/home/agent"}, mode: "container"},
	{name: "cap-add NET_ADMIN agent-uid", flags: []string{"--cap-add", "NET_ADMIN", "--workdir", "/home/agent", "-e", "BARRY_AGENT_UID_FLAG=1"}, mode: "container"},
	{name: "cap-add NET_ADMIN user 1000", flags: []string{"--cap-add", "NET_ADMIN", "--user", "1000", "--workdir", "/home/agent"}, mode: "none"},
	{name: "cap-add SYS_ADMIN", flags: []string{"--cap-add", "SYS_ADMIN"}, mode: "nested"},
	{name: "seccomp unconfined", flags: []string{"--security-opt", "seccomp=unconfined"}, mode: "nested"},
	// uid 1000 has no passwd entry in the image: Docker sets HOME=/.
	{name: "seccomp unconfined user 1000", flags: []string{"--security-opt", "seccomp=unconfined", "--user", "1000"}, mode: "nested"},
	{name: "seccomp unconfined systempaths unconfined", flags: []string{"--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined"}, mode: "nested"},
	{name: "seccomp unconfined systempaths unconfined user 1000", flags: []string{"--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined", "--user", "1000"}, mode: "nested"},
	{name: "seccomp unconfined systempaths unconfined user agent", flags: []string{"--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined", "--user", strconv.Itoa(containerAgentUID)}, mode: "nested"},
	{name: "seccomp profile", profile: true, mode: "nested"},
	{name: "seccomp profile user 1000", flags: []string{"--user", "1000"}, profile: true, mode: "nested"},
	{name: "seccomp profile user agent", flags: []string{"--user", strconv.Itoa(containerAgentUID)}, profile: true, mode: "nested"},
	// Both granted: nested mode wins.
	{name: "seccomp profile cap-add NET_ADMIN", flags: []string{"--cap-add", "NET_ADMIN"}, profile: true, mode: "nested"},
}

// doctorReport is what `sandboxd doctor --json` prints, as far as these
// tests read it.
type doctorReport struct {
	Mode string `json:"mode"` // nested, container or none
	// Missing are the pieces whose lack refuses the sandbox (mode none),
	// Notes those it runs without; each names its fix.
	Missing []doctorPiece `json:"missing"`
	Notes   []doctorPiece `json:"notes"`
	// Refusal, when doctor gives it, is the reason run gives for refusing.
	Refusal string `json:"refusal"`
}

type doctorPiece struct {
	Piece string `json:"piece"`
	Fix   string `json:"fix"`
}

// TestContainerMatrix: in each row, `sandboxd run -- echo ok` either runs
// (and the sandbox is a real one: its own network namespace, no_new_privs,
// a seccomp filter of its own) or is refused with exit 125 and one stderr
// line naming a fix; `sandboxd doctor --json` in the same container says
// mode "none" exactly when run was refused.
func TestContainerMatrix(t *testing.T) {
	containerImage(t) // skip or fail once, before the rows
	for _, row := range containerRows {
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			o := containerOpts{flags: slices.Clone(row.flags)}
			if row.profile {
				o.flags = append(o.flags, "--security-opt", "seccomp="+shippedSeccompProfile(t))
			}
			run := []string{"sandboxd", "run"}
			if slices.Contains(row.flags, "BARRY_AGENT_UID_FLAG=1") {
				run = append(run, "--agent-uid", strconv.Itoa(containerAgentUID))
			}
			r := containerRun(t, o, append(run, "--", "echo", "ok")...)
			t.Logf("docker run %s IMAGE %s -- echo ok: %s", strings.Join(o.flags, " "), strings.Join(run, " "), r)
			checkRunOrRefusal(t, r)
			if (r.code == 0) != (row.mode != "none") {
				t.Errorf("run exited %d, want the row's mode %s", r.code, row.mode)
			}
			if r.code == 0 {
				checkRealSandbox(t, o, row.mode)
			}
			checkDoctor(t, o, r, row.mode)
		})
	}
}

// checkRunOrRefusal: exit 0 with stdout "ok", or exit 125 with exactly one
// stderr line, sandboxd's, that names a fix.
func checkRunOrRefusal(t *testing.T, r dockerResult) {
	t.Helper()
	for _, p := range judgeRun(r) {
		t.Error(p)
	}
}

// judgeRun returns what is wrong with r, the outcome of `sandboxd run --
// echo ok` (checkRunOrRefusal).
func judgeRun(r dockerResult) []string {
	switch r.code {
	case 0:
		if r.stdout != "ok\n" {
			return []string{fmt.Sprintf("exit 0 but stdout %q, want \"ok\\n\"", r.stdout)}
		}
	case 125:
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		switch {
		case r.stdout != "":
			return []string{fmt.Sprintf("refused, yet stdout %q", r.stdout)}
		case len(lines) != 1 || lines[0] == "":
			return []string{fmt.Sprintf("refused with %d stderr lines, want exactly one:\n%s", len(lines), r.stderr)}
		case !strings.HasPrefix(lines[0], "sandboxd: "):
			return []string{"exit 125 from docker itself, not sandboxd: " + lines[0]}
		case namesFix(lines[0]) == "":
			return []string{fmt.Sprintf("the refusal names no fix (none of %s): %s", fixTexts(), lines[0])}
		}
	default:
		return []string{fmt.Sprintf("exit %d: want 0 (ran) or 125 (refused)", r.code)}
	}
	return nil
}

func fixTexts() string {
	var s []string
	for _, f := range containerFixes {
		s = append(s, strconv.Quote(f.text))
	}
	return strings.Join(s, ", ")
}

// statusField returns the value of a /proc/PID/status field in status.
func statusField(status, name string) string {
	m := regexp.MustCompile(`(?m)^` + name + `:\s*(\S+)$`).FindStringSubmatch(status)
	if m == nil {
		return ""
	}
	return m[1]
}

// realUID returns the real uid of a /proc/PID/status's Uid line.
func realUID(status string) string {
	m := regexp.MustCompile(`(?m)^Uid:\s*(\d+)`).FindStringSubmatch(status)
	if m == nil {
		return ""
	}
	return m[1]
}

// checkRealSandbox: in a container like o's, a command under sandboxd run
// has no_new_privs, no capabilities, and seccomp filtering (mode 2) with
// more filters than sandboxd itself has (a container's own profile is a
// filter too); in nested mode a network namespace other than sandboxd's,
// in container mode the same one but a uid other than sandboxd's.
func checkRealSandbox(t *testing.T, o containerOpts, mode string) {
	t.Helper()
	const probe = `echo "net: $(readlink /proc/self/ns/net)"; grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp|Seccomp_filters):' /proc/self/status`
	script := `echo OUTER; ` + probe + `; echo INNER; exec sandboxd run -- sh -c "$0"`
	r := containerRun(t, o, "sh", "-c", script, probe)
	outer, inner, ok := strings.Cut(strings.TrimPrefix(r.stdout, "OUTER\n"), "INNER\n")
	if r.code != 0 || !ok {
		t.Errorf("the sandbox's status could not be read: %s", r)
		return
	}
	t.Logf("sandboxd's process:\n%sthe sandboxed command:\n%s", outer, inner)
	n1, n2 := statusField(outer, "net"), statusField(inner, "net")
	switch mode {
	case "nested":
		if n1 == "" || n1 == n2 {
			t.Errorf("the sandboxed command's network namespace %q is sandboxd's %q", n2, n1)
		}
	case "container":
		if u1, u2 := realUID(outer), realUID(inner); n1 == "" || n1 != n2 || u1 == "" || u2 == "" || u1 == u2 || u2 == "0" {
			t.Errorf("container mode: network namespace %q (sandboxd's %q), uid %q (sandboxd's %q): want the same namespace, a uid of its own", n2, n1, u2, u1)
		}
	}
	if v := statusField(inner, "CapEff"); v != "0000000000000000" {
		t.Errorf("inside, CapEff: %q, want none", v)
	}
	if v := statusField(inner, "NoNewPrivs"); v != "1" {
		t.Errorf("inside, NoNewPrivs: %q, want 1", v)
	}
	if v := statusField(inner, "Seccomp"); v != "2" {
		t.Errorf("inside, Seccomp: %q, want 2", v)
	}
	fo, fi := statusField(outer, "Seccomp_filters"), statusField(inner, "Seccomp_filters")
	if fi != "" {
		no, _ := strconv.Atoi(fo)
		ni, err := strconv.Atoi(fi)
		if err != nil || ni <= no {
			t.Errorf("inside, Seccomp_filters: %s, outside %s: sandboxd added no filter", fi, fo)
		}
	}
}

// checkDoctor: `sandboxd doctor --json`, in a container like o's, says
// mode "none" exactly when run (r) was refused, and then lists what is
// missing, each with a fix.
func checkDoctor(t *testing.T, o containerOpts, run dockerResult, mode string) {
	t.Helper()
	d := containerRun(t, o, "sandboxd", "doctor", "--json")
	t.Logf("sandboxd doctor --json: %s", d)
	if strings.Contains(d.stderr, `unknown command "doctor"`) {
		if testenv.Required() {
			t.Fatalf("doctor not implemented: %s", d)
		}
		t.Logf("doctor not implemented: its assertions are left out (they fail under %s=1)", testenv.RequirePrivilegedEnv)
		return
	}
	for _, p := range judgeDoctor(d.stdout, run) {
		t.Error(p)
	}
	var rep doctorReport
	if json.Unmarshal([]byte(d.stdout), &rep) == nil && rep.Mode != mode {
		t.Errorf("doctor says mode %q, want the row's %q", rep.Mode, mode)
	}
}

// judgeDoctor returns what is wrong with doctor's JSON report out, given
// what run then did (checkDoctor).
func judgeDoctor(out string, run dockerResult) []string {
	runCode := run.code
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return []string{fmt.Sprintf("doctor --json printed no JSON report (%v): %q", err, out)}
	}
	var p []string
	switch rep.Mode {
	case "nested", "container", "none":
	default:
		p = append(p, fmt.Sprintf("doctor's mode %q: want nested, container or none", rep.Mode))
	}
	if (rep.Mode == "none") != (runCode == 125) {
		p = append(p, fmt.Sprintf("doctor says mode %q, but run exited %d", rep.Mode, runCode))
	}
	if rep.Mode == "none" && len(rep.Missing) == 0 {
		p = append(p, "doctor says mode none but lists nothing missing")
	}
	for _, m := range append(slices.Clone(rep.Missing), rep.Notes...) {
		if m.Piece == "" || namesFix(m.Fix) == "" {
			p = append(p, fmt.Sprintf("doctor's piece %q has no fix naming one of %s: %q", m.Piece, fixTexts(), m.Fix))
		}
	}
	if rep.Refusal != "" && (runCode != 125 || !strings.Contains(run.stderr, rep.Refusal)) {
		p = append(p, fmt.Sprintf("doctor's refusal %q is not run's (exit %d, stderr %q)", rep.Refusal, runCode, run.stderr))
	}
	return p
}

// TestContainerJudges: the matrix's judgements of run and doctor, on made-up
// outcomes (no container needed), so that they can tell a bad row.
func TestContainerJudges(t *testing.T) {
	userns := "sandboxd: sandbox could not start: create namespaces: user namespaces are unavailable: operation not permitted: the kernel or a seccomp filter of the calling container refused a new user namespace (check kernel.unprivileged_userns_clone)\n"
	fixed := "sandboxd: sandbox could not start: user namespaces are refused by the container's seccomp profile: run it with --security-opt seccomp=" + seccompProfile + "\n"
	runs := []struct {
		name string
		r    dockerResult
		ok   bool
	}{
		{"ran", dockerResult{code: 0, stdout: "ok\n"}, true},
		{"ran, warning on stderr", dockerResult{code: 0, stdout: "ok\n", stderr: "sandboxd: warning\n"}, true},
		{"ran, wrong output", dockerResult{code: 0, stdout: "ok\nok\n"}, false},
		{"refused with a fix", dockerResult{code: 125, stderr: fixed}, true},
		{"refused without a fix", dockerResult{code: 125, stderr: userns}, false},
		{"refused in two lines", dockerResult{code: 125, stderr: "sandboxd: warning\n" + fixed}, false},
		{"refused, yet ran", dockerResult{code: 125, stdout: "ok\n", stderr: fixed}, false},
		{"docker's own 125", dockerResult{code: 125, stderr: "docker: Error response from daemon: --security-opt seccomp=x: no such file\n"}, false},
		{"the command's failure", dockerResult{code: 1, stderr: fixed}, false},
	}
	for _, c := range runs {
		if p := judgeRun(c.r); (len(p) == 0) != c.ok {
			t.Errorf("%s: judged %q, want ok=%v", c.name, p, c.ok)
		}
	}
	doctors := []struct {
		name    string
		out     string
		runCode int
		ok      bool
	}{
		{"refusal as run's", `{"mode":"none","refusal":"no userns","missing":[{"piece":"user namespaces","fix":"--security-opt seccomp=deploy/seccomp.json"}]}`, 125, true},
		{"refusal not run's", `{"mode":"none","refusal":"no procfs","missing":[{"piece":"user namespaces","fix":"--security-opt seccomp=deploy/seccomp.json"}]}`, 125, false},
		{"a note without a fix", `{"mode":"nested","notes":[{"piece":"a /proc of its own","fix":""}]}`, 0, false},
		{"nested, ran", `{"mode":"nested","missing":[]}`, 0, true},
		{"container, ran", `{"mode":"container"}`, 0, true},
		{"none, refused", `{"mode":"none","missing":[{"piece":"user namespaces","fix":"--security-opt seccomp=deploy/seccomp.json"}]}`, 125, true},
		{"none, but ran", `{"mode":"none","missing":[{"piece":"user namespaces","fix":"--security-opt seccomp=deploy/seccomp.json"}]}`, 0, false},
		{"nested, but refused", `{"mode":"nested","missing":[]}`, 125, false},
		{"none, nothing missing", `{"mode":"none","missing":[]}`, 125, false},
		{"a fix naming nothing", `{"mode":"none","missing":[{"piece":"user namespaces","fix":"ask your administrator"}]}`, 125, false},
		{"unknown mode", `{"mode":"maybe"}`, 0, false},
		{"not JSON", "mode: nested\n", 0, false},
	}
	for _, c := range doctors {
		run := dockerResult{code: c.runCode}
		if c.runCode == 125 {
			run.stderr = "sandboxd: sandbox could not start: no userns\n"
		}
		if p := judgeDoctor(c.out, run); (len(p) == 0) != c.ok {
			t.Errorf("%s: judged %q, want ok=%v", c.name, p, c.ok)
		}
	}
}

// TestContainerEscapes: sandboxd run in a container in nested mode (the
// container's own seccomp and /proc let sandboxd make its namespaces), as
// root and as uid 65534, and in container mode (--cap-add NET_ADMIN only;
// sandboxd as root, the command as the image's agent), holds against
// TestEscapes's attempts (containerModeCases says where container mode
// contains them otherwise); a
// proxy-aware client reaches an allowed host and gets the proxy's 403 for a
// denied one. The fake internet is TestEscapes's: the world is a namespace
// the test makes, linked by a veth pair to the container's namespace (its
// only other device is its own lo), where the host-side sockets listen;
// what the world's servers saw is checked from the test, not the sandbox.
func TestContainerEscapes(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	for _, c := range append(slices.Clone(escapeClients), "getent") {
		// Inside, the host's /usr is bound in: the clients must be there.
		if _, err := os.Stat(filepath.Join("/usr/bin", c)); err != nil {
			testenv.SkipOrFail(t, "/usr/bin/"+c+" is not installed")
		}
	}
	containerImage(t)
	variants := []struct {
		name    string
		flags   []string
		profile bool
		mode    string
	}{
		{"seccomp unconfined systempaths unconfined", []string{"--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined"}, false, "nested"},
		{"seccomp profile", nil, true, "nested"},
		// Container mode: sandboxd as root (the only user it runs as
		// there), the command as the image's agent.
		{"container mode cap-add NET_ADMIN", []string{"--cap-add", "NET_ADMIN"}, false, "container"},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			o := containerOpts{flags: slices.Clone(v.flags), hostTools: true}
			if v.profile {
				o.flags = append(o.flags, "--security-opt", "seccomp="+shippedSeccompProfile(t))
			}
			c := startContainer(t, o)
			doctorArgs := []string{containerSandboxd, "doctor", "--json"}
			if v.mode == "container" {
				doctorArgs = append(doctorArgs, "--agent-uid", strconv.Itoa(containerAgentUID))
			}
			d := c.exec(t, time.Minute, nil, doctorArgs...)
			var rep doctorReport
			switch {
			case strings.Contains(d.stderr, `unknown command "doctor"`):
				t.Logf("doctor not implemented: whether the container is in nested mode is not checked")
			case json.Unmarshal([]byte(d.stdout), &rep) != nil || rep.Mode != v.mode:
				t.Errorf("doctor does not say %s mode: %s", v.mode, d)
			}
			runAs, flags := users, escapeFlags
			if v.mode == "container" {
				runAs = users[:1]
				flags = append(slices.Clone(escapeFlags), "--agent-uid", strconv.Itoa(containerAgentUID))
			}
			w := newWorldAround(t, proxytest.AttachNetns(t, c.pid), false)
			e := newEscapeTargets(t, w)
			for _, u := range runAs {
				cases := e.cases()
				if v.mode == "container" {
					cases = containerModeCases(cases)
				}
				marker := fmt.Sprintf("/container-%s-%d", u.name, time.Now().UnixNano())
				cases = append(cases,
					escapeCase{"curl http allowed via the proxy", []string{"curl", "-sS", "--max-time", "20", "http://allowed.test" + marker}, "hello from allowed.test"},
					escapeCase{"curl https allowed via the proxy", []string{"curl", "-sS", "--max-time", "20", "https://allowed.test" + marker + "-tls"}, "hello from allowed.test"},
					escapeCase{"curl http denied via the proxy", []string{"curl", "-sS", "--max-time", "20", "-w", "\n%{http_code}", "http://denied.test" + marker}, "\n403"},
				)
				for _, ec := range cases {
					t.Run(u.name+"/"+ec.name, func(t *testing.T) {
						ec.check(t, c.sandboxd(t, w, runOpts{uid: u.uid, argv: ec.argv, flags: flags}))
					})
				}
				_, seen, _, _ := w.seen()
				for _, want := range []string{"allowed.test " + marker, "allowed.test " + marker + "-tls"} {
					if !slices.Contains(seen, want) {
						t.Errorf("%s: the world's web server never saw %q (it saw %q)", u.name, want, seen)
					}
				}
			}
			e.checkWorld(t)
		})
	}
}

// containerModeCases are the escape cases as container mode contains them,
// where that differs from a sandbox's own network namespace: the
// container's has IPv6 off (Docker's default), so IPv6 connections fail
// before anything is sent (curl's 7, EADDRNOTAVAIL), and DNS to any
// address goes to the DNS proxy, which refuses the denied name (the
// nested sandbox has no route to the resolver: dig times out).
func containerModeCases(cases []escapeCase) []escapeCase {
	want := map[string]string{
		"ipv6 curl":                        "code=7",
		"ipv6 python":                      "refused 99",
		"dns direct to the world resolver": "status: REFUSED",
	}
	out := slices.Clone(cases)
	for i, c := range out {
		if w, ok := want[c.name]; ok {
			out[i].want = w
			delete(want, c.name)
		}
	}
	if len(want) > 0 {
		panic(fmt.Sprintf("container mode's escape cases name cases that are gone: %v", want))
	}
	return out
}

// sandboxd runs sandboxd in the container like world.sandboxd does in the
// host namespace: the world's flags and environment, a shared directory as
// the working directory, o.uid (and gid) as the user.
func (c *runningContainer) sandboxd(t *testing.T, w *world, o runOpts) runResult {
	t.Helper()
	if o.timeout == 0 {
		o.timeout = 90 * time.Second
	}
	audit := filepath.Join(sharedDir(t), "audit.jsonl")
	dir := o.dir
	if dir == "" {
		dir = sharedDir(t)
	}
	flags := []string{"--user", fmt.Sprintf("%d:%d", o.uid, o.uid), "--workdir", dir}
	for _, e := range w.env(dir, o.extraEnv) {
		flags = append(flags, "--env", e)
	}
	r := c.exec(t, o.timeout, flags, w.sandboxdCommand(containerSandboxd, o, audit)...)
	a, _ := os.ReadFile(audit)
	return runResult{code: r.code, stdout: r.stdout, stderr: r.stderr, audit: string(a)}
}
