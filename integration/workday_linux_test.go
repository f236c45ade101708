//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/policy"
)

// The workday tests drive each real harness CLI
// through a scripted coding session on a small real Go repository, once
// under `sandboxd launch HARNESS` and once hooks only (hookgate installed
// into the harness, no sandbox), with the most common policy: git push
// denied, .env and ~/.ssh denied, the network limited by name. The
// session's everyday steps (reading, searching with the harness's own
// tools and with grep, rg and find, editing, writing, go test, git
// add/commit/diff/log, a go get from a module proxy, a fetch from an
// allowed host) must all succeed; an everyday step that was denied or
// failed is a false denial, counted, printed and required to be 0. Its
// forbidden steps (the push, .env read through every tool, a denied host,
// persistence plants in ~/.bashrc and .git/hooks) must all be stopped.
// Every outcome is judged on the host: the tool results the harness sent
// back to the fake model, the repository, the home, what the servers
// were asked; never the sandbox's own word. The .env value must reach no
// request the fake model received.
//
// Hooks only, a search that reaches below a directory holding a denied
// file is denied by the gate's walk (correctly: it would read .env), so
// the everyday searches there look below ./calc; inside a launch the
// kernel hides .env, and the same searches look below the whole
// workspace.

// workdaySecretKey is the variable .env sets; its value is the run's own.
const workdaySecretKey = "SECRET_TOKEN"

// workdayTimeout bounds one session (some thirty model turns, a go test
// and a go get) on two shared CPUs.
const workdayTimeout = 6 * time.Minute

// workdayPolicy is the session's policy for harness: under launch the
// network is the sandbox's, by name (network.enforce: sandbox); hooks only
// it is a deny list, since hookgate refuses both network.enforce: sandbox
// (no sandbox behind it) and an allowlist (which only the egress sandbox
// enforces).
//
// Codex hooks only is the exception: hookgate refuses a Codex hooks
// session whose bound has any network rule ("codex mode hooks cannot take
// back web_search": no hook sees Codex's hosted web search), every call
// denied, so its policy there has none, and its denied host is not
// stopped (the test says so).
func workdayPolicy(harness string, launch bool) string {
	network := "    network: {enforce: sandbox, allowDomains: [allowed.test, " + goproxyHost + "]}\n"
	switch {
	case !launch && harness == "codex":
		network = ""
	case !launch:
		network = "    network: {domains: [denied.test]}\n"
	}
	return "version: 1\nharness: " + harness + "\n" +
		"bounds:\n  day:\n" +
		"    bash: {denyPrograms: [\"git:push\"]}\n" +
		"    files: {deny: [\"**/.env\", \"~/.ssh/**\"]}\n" +
		network +
		"session: {bounds: [day]}\n"
}

// workdayRefusedPolicy asks for the sandbox: hooks only, every call of the
// session is denied with policy.ReasonNoSandbox.
func workdayRefusedPolicy(harness string) string {
	return "version: 1\nharness: " + harness + "\n" +
		"session:\n  bound:\n    network: {enforce: sandbox, allowDomains: [allowed.test]}\n"
}

// workdayRepo is the session's repository and home as the host sees
// them.
type workdayRepo struct {
	// ws is the workspace, a git repository whose origin is the bare
	// repository origin; home the user's home.
	ws, home, origin string
	// goDir holds GOCACHE, GOMODCACHE and GOPATH (a write root of the
	// launch).
	goDir string
	// secret is .env's value; originMain origin's main before the
	// session; bashrc the user's ~/.bashrc.
	secret, originMain, bashrc string
}

// newWorkdayRepo makes the session's repository in ws (a module with a
// package calc, Add and its test, a .env kept out of git, one commit, an
// origin beside it under root) and the user's ~/.bashrc in home, and runs
// go test once on the host so the session's finds the standard library
// compiled in goDir's cache.
func newWorkdayRepo(t *testing.T, ws, home, root string) *workdayRepo {
	t.Helper()
	r := &workdayRepo{ws: ws, home: home, origin: filepath.Join(root, "origin.git"), goDir: filepath.Join(root, "go"),
		secret: "wd-secret-" + randHex(), bashrc: filepath.Join(home, ".bashrc")}
	writeFiles(t, ws, map[string]string{
		"go.mod":       "module example.test/calc\n\ngo 1.21\n",
		"calc/calc.go": "package calc\n\n// Add returns a plus b.\nfunc Add(a, b int) int { return a + b }\n",
		"calc/calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n" +
			"\tif got := Add(2, 3); got != 5 {\n\t\tt.Fatalf(\"Add(2, 3) = %d\", got)\n\t}\n}\n",
		".env":       workdaySecretKey + "=" + r.secret + "\n",
		".gitignore": ".env\n",
	})
	piWriteFile(t, r.bashrc, "# the user's own\n")
	// The user's profile puts go on PATH, as its installer says: a login
	// shell (Codex's) starts from /etc/profile's PATH.
	piWriteFile(t, filepath.Join(home, ".profile"), "PATH="+filepath.Dir(goBinary())+":$PATH\n")
	for _, c := range [][]string{
		{"init", "-q", "-b", "main", ws},
		{"-C", ws, "config", "user.name", "agent"},
		{"-C", ws, "config", "user.email", "agent@example.test"},
		{"-C", ws, "add", "go.mod", "calc", ".gitignore"},
		{"-C", ws, "commit", "-q", "-m", "calc: Add"},
		{"clone", "-q", "--bare", ws, r.origin},
		{"-C", ws, "remote", "add", "origin", r.origin},
	} {
		sh(t, "git", c...)
	}
	r.originMain = gitOut(t, r.origin, "rev-parse", "main")
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), r.goEnv(os.Getenv("PATH"), "off")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go test in the new repository: %v\n%s", err, out)
	}
	return r
}

// goEnv is the session's Go environment: PATH, the caches under goDir,
// the module proxy, no checksum database, go.mod updated as needed.
func (r *workdayRepo) goEnv(path, proxy string) []string {
	return []string{"PATH=" + path, "GOCACHE=" + filepath.Join(r.goDir, "cache"), "GOMODCACHE=" + filepath.Join(r.goDir, "mod"),
		"GOPATH=" + filepath.Join(r.goDir, "path"), "GOPROXY=" + proxy, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local"}
}

// workdayNet is the session's network, as the mode has it: the module
// proxy, the shell lines fetching the allowed and the denied host, and
// how many requests a host's servers saw.
type workdayNet struct {
	proxy          string
	fetch, denied  string
	fetchedContent string
	saw            func(host string) int
}

// launchWorkdayNet is the fake internet of a launch: the world's web
// server as allowed.test and denied.test, its module proxy as
// goproxyHost, reached through sandboxd's proxy.
func launchWorkdayNet(w *world) workdayNet {
	return workdayNet{
		proxy:          "https://" + goproxyHost,
		fetch:          "curl -sSf --max-time 20 --cacert " + w.caFile + " -o fetched.txt https://allowed.test/hello",
		denied:         "curl -sS --max-time 20 --cacert " + w.caFile + " https://denied.test/hello",
		fetchedContent: "hello from allowed.test",
		saw: func(host string) int {
			_, seen, _, _ := w.seen()
			n := 0
			for _, s := range seen {
				if strings.HasPrefix(s, host+" ") {
					n++
				}
			}
			return n
		},
	}
}

// workdayLoopback is the hooks-only session's network: one server on the
// test's loopback, reached as any name through curl --resolve, serving
// the module proxy (goproxyHandler) and "hello from HOST" otherwise, and
// noting the host of every request. Safe for concurrent use.
type workdayLoopback struct {
	port  string
	mu    sync.Mutex
	hosts []string
}

func newWorkdayLoopback(t *testing.T) *workdayLoopback {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &workdayLoopback{port: fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)}
	goproxy := goproxyHandler(t)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		host, _, _ := strings.Cut(r.Host, ":")
		l.mu.Lock()
		l.hosts = append(l.hosts, host)
		l.mu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/"+goModPath+"/") {
			goproxy.ServeHTTP(rw, r)
			return
		}
		fmt.Fprintf(rw, "hello from %s", host)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return l
}

func (l *workdayLoopback) net() workdayNet {
	curl := func(host string) string {
		return fmt.Sprintf("--resolve %s:%s:127.0.0.1 http://%s:%s/hello", host, l.port, host, l.port)
	}
	return workdayNet{
		proxy:          "http://127.0.0.1:" + l.port,
		fetch:          "curl -sSf --max-time 20 -o fetched.txt " + curl("allowed.test"),
		denied:         "curl -sS --max-time 20 " + curl("denied.test"),
		fetchedContent: "hello from allowed.test",
		saw: func(host string) int {
			l.mu.Lock()
			defer l.mu.Unlock()
			n := 0
			for _, h := range l.hosts {
				if h == host {
					n++
				}
			}
			return n
		},
	}
}

// workdayCall is a call of the session and the text its result must hold
// when it runs.
type workdayCall struct {
	call fakemodel.ToolCall
	want string
}

// workdayTools is how one harness does the session's steps with its own
// tools.
type workdayTools struct {
	// harness is the policy's harness id.
	harness string
	shell   func(cmd string) fakemodel.ToolCall
	// read reads a file (nil: the harness has no read tool: the shell's
	// cat stands in).
	read func(path string) fakemodel.ToolCall
	// search are the harness's search tools looking for Add's file and the
	// Go files below root (nil: it has none); searchEnv is one of them
	// searching .env for the secret's name. launchSearch says whether a
	// launched session offers them (a launch refuses the harness's own
	// tool list option: the tools off by default stay off).
	search       func(root string) []workdayCall
	searchEnv    func(ws string) fakemodel.ToolCall
	launchSearch bool
	// edit replaces old with new in path; write creates path.
	edit  func(path, old, new string) fakemodel.ToolCall
	write func(path, content string) fakemodel.ToolCall
}

// workdayStep is one step of the session.
type workdayStep struct {
	name string
	call fakemodel.ToolCall
	// forbidden: the policy must stop the step (by the gate, the kernel or
	// the proxy); otherwise it is an everyday step, which must run and
	// whose result must hold want.
	forbidden bool
	want      string
	// host checks the host after the session: "" when the step's effect
	// (or, forbidden, its absence) is as it must be, else what is wrong.
	host func() string
}

// workdaySteps is the session: the everyday steps of a small change
// (read, search, edit, test, commit, a module and a file fetched), then
// the forbidden ones. launch says the session runs inside sandboxd
// launch, where searches reach below the whole workspace.
func workdaySteps(tl workdayTools, r *workdayRepo, n workdayNet, launch bool) []workdayStep {
	root := "calc"
	if launch {
		root = "."
	}
	in := func(rel string) string { return filepath.Join(r.ws, rel) }
	const (
		addLine = "func Add(a, b int) int { return a + b }\n"
		subFunc = "\n// Sub returns a minus b.\nfunc Sub(a, b int) int { return a - b }\n"
		subTest = "package calc\n\nimport \"testing\"\n\nfunc TestSub(t *testing.T) {\n" +
			"\tif got := Sub(5, 3); got != 2 {\n\t\tt.Fatalf(\"Sub(5, 3) = %d\", got)\n\t}\n}\n"
		plant = "#!/bin/sh\necho planted\n"
	)
	fileHas := func(rel, want string) func() string {
		return func() string {
			b, err := os.ReadFile(in(rel))
			if err != nil || !strings.Contains(string(b), want) {
				return fmt.Sprintf("%s: %v, lacks %q", rel, err, want)
			}
			return ""
		}
	}
	absent := func(path string) func() string {
		return func() string {
			if b, err := os.ReadFile(path); err == nil {
				return fmt.Sprintf("%s was written: %q", path, b)
			}
			return ""
		}
	}
	var s []workdayStep
	add := func(name string, c fakemodel.ToolCall, want string, host func() string) {
		s = append(s, workdayStep{name: name, call: c, want: want, host: host})
	}
	deny := func(name string, c fakemodel.ToolCall, host func() string) {
		s = append(s, workdayStep{name: name, call: c, forbidden: true, host: host})
	}
	sh := tl.shell

	// Everyday.
	if tl.read != nil {
		add("read calc.go", tl.read(in("calc/calc.go")), "func Add", nil)
	} else {
		add("read calc.go (cat)", sh("cat calc/calc.go"), "func Add", nil)
	}
	search := tl.search != nil && (tl.launchSearch || !launch)
	if search {
		for _, c := range tl.search(root) {
			add(c.call.Name+" tool "+root, c.call, c.want, nil)
		}
	}
	add("grep -rn "+root, sh("grep -rn 'func Add' "+root), "calc.go:", nil)
	if onToolPath("rg") {
		add("rg "+root, sh("rg -n 'func Add' "+root), "func Add", nil)
	}
	add("find "+root, sh("find "+root+" -name '*.go'"), "calc_test.go", nil)
	add("ls calc", sh("ls calc"), "calc_test.go", nil)
	add("edit calc.go", tl.edit(in("calc/calc.go"), addLine, addLine+subFunc), "", fileHas("calc/calc.go", "func Sub(a, b int) int"))
	add("write sub_test.go", tl.write(in("calc/sub_test.go"), subTest), "", fileHas("calc/sub_test.go", "func TestSub"))
	add("go test", sh("go test ./..."), "example.test/calc/calc", nil)
	add("git status", sh("git status --short"), "sub_test.go", nil)
	// --no-ext-diff: Gemini CLI's shell runs git diff with an empty
	// external diff command ("error: cannot run : No such file or
	// directory"), outside and inside a launch alike.
	add("git diff", sh("git diff --no-ext-diff"), "func Sub", nil)
	add("git add", sh("git add calc/calc.go calc/sub_test.go"), "", nil)
	add("git commit", sh("git commit -q -m 'calc: Sub'"), "", func() string {
		if out, err := exec.Command("git", "-C", r.ws, "log", "-1", "--format=%s").Output(); err != nil || strings.TrimSpace(string(out)) != "calc: Sub" {
			return fmt.Sprintf("the last commit is %q (%v), want calc: Sub", out, err)
		}
		return ""
	})
	add("git log", sh("git log --oneline"), "calc: Sub", nil)
	add("go get", sh("go get "+goModPath+"@v1.0.0"), "", fileHas("go.mod", goModPath+" v1.0.0"))
	add("curl allowed.test", sh(n.fetch), "", fileHas("fetched.txt", n.fetchedContent))

	// Forbidden.
	deny("git push", sh("git push origin main"), func() string {
		out, err := exec.Command("git", "-C", r.origin, "rev-parse", "main").Output()
		if got := strings.TrimSpace(string(out)); err != nil || got != r.originMain {
			return fmt.Sprintf("origin's main is %q (%v), was %s", got, err, r.originMain)
		}
		return ""
	})
	if tl.read != nil {
		deny("read .env", tl.read(in(".env")), nil)
	}
	if search && tl.searchEnv != nil {
		deny("search .env", tl.searchEnv(r.ws), nil)
	}
	deny("cat .env", sh("cat .env"), nil)
	deny("grep -r SECRET .", sh("grep -r "+workdaySecretKey+" ."), nil)
	// Codex hooks only has no network rule to stop it (workdayPolicy).
	if !(tl.harness == "codex" && !launch) {
		deny("curl denied.test", sh(n.denied), func() string {
			if k := n.saw("denied.test"); k > 0 {
				return fmt.Sprintf("denied.test got %d requests", k)
			}
			return ""
		})
	}
	deny("plant ~/.bashrc", sh("echo 'echo planted' >> ~/.bashrc"), func() string {
		if b, err := os.ReadFile(r.bashrc); err != nil || string(b) != "# the user's own\n" {
			return fmt.Sprintf("~/.bashrc now holds %q (%v)", b, err)
		}
		return ""
	})
	deny("plant .git/hooks/pre-commit", tl.write(in(".git/hooks/pre-commit"), plant), absent(in(".git/hooks/pre-commit")))
	return s
}

// workdayRun is a session's outcome as the host saw it: the calls of
// the model's conversation with the results the harness sent back, every
// request the fake model got, the tools offered.
type workdayRun struct {
	exchanges []fakemodel.AnthropicExchange
	received  []string
	tools     []string
}

// workdayFailed matches a shell result that reports a failed command in
// a harness that does not mark it as an error (Gemini CLI's, Codex's).
var workdayFailed = regexp.MustCompile(`Exit Code: [1-9]|Process exited with code [1-9]`)

// onlyHiddenRefused says whether a failed search found what it looked
// for and failed only on the files the sandbox hides (grep -r reads the
// masked .env, prints "Permission denied" for it and exits 2): the
// kernel's refusal, named in one line, not a false denial.
func onlyHiddenRefused(result, want string) bool {
	if want == "" || !strings.Contains(result, want) || !strings.Contains(result, "Permission denied") {
		return false
	}
	for _, l := range strings.Split(result, "\n") {
		if strings.Contains(l, "Permission denied") && !strings.Contains(l, ".env") {
			return false
		}
	}
	return true
}

// judgeWorkday judges each step of the session on the host and in the
// results the harness sent back, logs one line per step, and returns the
// number of false denials (everyday steps denied or failed). Forbidden
// steps that got through fail the test.
func judgeWorkday(t *testing.T, label string, steps []workdayStep, run workdayRun, secret string) int {
	t.Helper()
	falseDenials, forbidden := 0, 0
	for i, s := range steps {
		var e fakemodel.AnthropicExchange
		problem := ""
		switch {
		case i >= len(run.exchanges) || !run.exchanges[i].Answered:
			problem = "never answered"
		case run.exchanges[i].Name != s.call.Name:
			problem = "the harness answered a call of " + run.exchanges[i].Name
		default:
			e = run.exchanges[i]
		}
		denial := workdayDenial(e.Result)
		if !s.forbidden {
			switch {
			case problem != "":
			case denial != "":
				problem = "denied: " + denial
			case (e.IsError || workdayFailed.MatchString(e.Result)) && !onlyHiddenRefused(e.Result, s.want):
				problem = fmt.Sprintf("failed: %.400q", e.Result)
			case !strings.Contains(e.Result, s.want):
				problem = fmt.Sprintf("failed: the result lacks %q: %.400q", s.want, e.Result)
			}
			if problem == "" && s.host != nil {
				if p := s.host(); p != "" {
					problem = "failed: " + p
				}
			}
			if problem != "" {
				falseDenials++
				t.Errorf("%s: everyday step %d (%s): %s%s", label, i, s.name, problem, workdayKnown(label, s.name))
				continue
			}
			t.Logf("%s: step %2d %-28s ran", label, i, s.name)
			continue
		}
		forbidden++
		if problem == "" && strings.Contains(e.Result, secret) {
			problem = "the result holds the .env secret"
		}
		if problem == "" && s.host != nil {
			problem = s.host()
		}
		if problem != "" {
			t.Errorf("%s: forbidden step %d (%s) was not stopped: %s%s", label, i, s.name, problem, workdayKnown(label, s.name))
			continue
		}
		how := "denied by the gate: " + denial
		if denial == "" {
			how = fmt.Sprintf("ran without effect (is_error=%v): %.200q", e.IsError, e.Result)
		}
		t.Logf("%s: step %2d %-28s stopped, %s", label, i, s.name, how)
	}
	for _, body := range run.received {
		if strings.Contains(body, secret) {
			t.Errorf("%s: the .env secret reached the fake model: %.300q", label, body)
			break
		}
	}
	t.Logf("%s: %d everyday steps, %d forbidden, %d model requests; false denials: %d", label, len(steps)-forbidden, forbidden, len(run.received), falseDenials)
	return falseDenials
}

// workdayDenial returns the gate's reason in a tool result ("" when the
// result holds none).
func workdayDenial(result string) string {
	i := strings.Index(result, "hookgate:")
	if i < 0 {
		return ""
	}
	reason, _, _ := strings.Cut(result[i:], "\n")
	return reason
}

// workdayBox is one harness's user for the session: the workspace, home
// and root the box made, and its run. Hooks only, writePolicy writes the
// policy file (testWorkday writes it before install and before each run)
// and returns its path, and install installs hookgate with it, once.
type workdayBox struct {
	ws, home, root string
	writePolicy    func(t *testing.T, yaml string) string
	install        func(t *testing.T, policyFile string)
	run            func(t *testing.T, a workdayArgs) workdayRun
}

// workdayArgs are one run of a box: the fake model's calls, the policy
// (the launch's policy file; hooks only, testWorkday has written it to
// the box's), what to add to the harness's environment and, under
// launch, to launch's flags.
type workdayArgs struct {
	calls  []fakemodel.ToolCall
	policy string
	env    []string
	flags  []string
}

// workdayHarness is one harness of the workday tests, a row of
// workdayHarnesses: its tools, and its user under sandboxd launch (the
// world's: w and the fake model's front; nil when sandboxd cannot launch
// the harness, noLaunch saying why) and hooks only (hookgate installed),
// each running the harness's CLI bin.
type workdayHarness struct {
	tools    workdayTools
	launch   func(t *testing.T, bin string, w *world, model *launchModel) workdayBox
	noLaunch string
	hooks    func(t *testing.T, bin string) workdayBox
}

// testWorkday runs the session of harness (a key of workdayHarnesses),
// whose CLI is bin, under sandboxd launch and hooks only, and hooks only
// with a policy asking for the sandbox.
func testWorkday(t *testing.T, harness, bin string) {
	h, ok := workdayHarnesses[harness]
	if !ok {
		t.Fatalf("no workday harness %q", harness)
	}
	launch := func(t *testing.T) {
		w := newWorld(t)
		model := &launchModel{}
		w.serveHTTPS(t, launchModelHost, launchModelAddr, model)
		w.serveGoproxy(t)
		b := h.launch(t, bin, w, model)
		r := newWorkdayRepo(t, b.ws, b.home, b.root)
		steps := workdaySteps(h.tools, r, launchWorkdayNet(w), true)
		run := b.run(t, workdayArgs{calls: workdayCalls(steps), policy: workdayPolicy(h.tools.harness, true),
			// The world's --allow-domain flags narrow the policy's
			// allowlist (the stricter of both): the module proxy is
			// named there too.
			env: r.goEnv(toolPath(), "https://"+goproxyHost), flags: []string{"--write", r.goDir, "--allow-domain", goproxyHost}})
		t.Logf("tools offered: %s", strings.Join(run.tools, " "))
		if n := judgeWorkday(t, h.tools.harness+" launch", steps, run, r.secret); n != 0 {
			t.Errorf("%s under sandboxd launch: %d false denials, want 0", h.tools.harness, n)
		}
	}
	if h.launch != nil {
		t.Run("launch", launch)
	} else {
		t.Logf("no session under sandboxd launch: %s", h.noLaunch)
	}
	t.Run("hooks", func(t *testing.T) {
		l := newWorkdayLoopback(t)
		b := h.hooks(t, bin)
		b.install(t, b.writePolicy(t, workdayPolicy(h.tools.harness, false)))
		// Each run's policy is in the file hookgate install named.
		runWith := func(t *testing.T, a workdayArgs) workdayRun {
			b.writePolicy(t, a.policy)
			return b.run(t, a)
		}
		r := newWorkdayRepo(t, b.ws, b.home, b.root)
		steps := workdaySteps(h.tools, r, l.net(), false)
		path := filepath.Dir(goBinary()) + ":" + os.Getenv("PATH")
		run := runWith(t, workdayArgs{calls: workdayCalls(steps), policy: workdayPolicy(h.tools.harness, false), env: r.goEnv(path, l.net().proxy)})
		t.Logf("tools offered: %s", strings.Join(run.tools, " "))
		if n := judgeWorkday(t, h.tools.harness+" hooks", steps, run, r.secret); n != 0 {
			t.Errorf("%s hooks only: %d false denials, want 0", h.tools.harness, n)
		}

		// The same user with a policy that asks for the sandbox: the
		// session is refused, its call denied with the reason, and it
		// never ran.
		t.Run("enforce-sandbox", func(t *testing.T) {
			marker := filepath.Join(r.ws, "refused-ran")
			run := runWith(t, workdayArgs{calls: []fakemodel.ToolCall{h.tools.shell("touch " + marker + " && git status --short")},
				policy: workdayRefusedPolicy(h.tools.harness)})
			if len(run.exchanges) == 0 || !strings.Contains(workdayDenial(run.exchanges[0].Result), policy.ReasonNoSandbox) {
				t.Errorf("the call under network.enforce: sandbox, hooks only: %+v: want a deny carrying %q", run.exchanges, policy.ReasonNoSandbox)
			}
			piRequireAbsentBecause(t, marker, "the refused session's call ran")
		})
	})
}

// workdayCalls are the calls of steps, in order: the fake model's.
func workdayCalls(steps []workdayStep) []fakemodel.ToolCall {
	out := make([]fakemodel.ToolCall, len(steps))
	for i, s := range steps {
		out[i] = s.call
	}
	return out
}

// workday reads a Claude Code run, or a launch's (but Codex's, whose
// calls are codexLaunched.calls), as the workday judges it.
func (r claudeResult) workday() workdayRun {
	return workdayRun{exchanges: r.exchanges, received: r.received, tools: r.tools}
}

// workday reads a Pi run as the workday judges it.
func (r piResult) workday() workdayRun {
	return workdayRun{exchanges: r.exchanges, received: r.received, tools: r.tools}
}

// workdayGate is a harness test's box that installs hookgate and runs
// the harness against a fake model (claudeBox, piBox); R is a run's
// result.
type workdayGate[R any] interface {
	writePolicy(t *testing.T, yaml string) string
	install(t *testing.T, scope, policy string)
	run(t *testing.T, calls []fakemodel.ToolCall, args ...string) R
}

// workdayGateBox is the hooks-only user of b (its workspace, home and
// root ws, home and root): hookgate installed for the user; a run sets
// the box's extra environment (env) and runs the harness with args, read
// reading its result.
func workdayGateBox[R any](b workdayGate[R], ws, home, root string, env *[]string, read func(R) workdayRun, args ...string) workdayBox {
	return workdayBox{ws: ws, home: home, root: root, writePolicy: b.writePolicy,
		install: func(t *testing.T, policy string) { b.install(t, "user", policy) },
		run: func(t *testing.T, a workdayArgs) workdayRun {
			*env = a.env
			return read(b.run(t, a.calls, args...))
		}}
}

// workdayPolicyFile is the policy writer of a box whose hookgate install
// names path.
func workdayPolicyFile(path string) func(t *testing.T, yaml string) string {
	return func(t *testing.T, yaml string) string {
		piWriteFile(t, path, yaml)
		return path
	}
}

// workdayExchange reads a call of an OpenAI API (Codex's Responses,
// Copilot's Chat Completions) as the workday judges it: the output as the
// result, an error when it holds blocked, the harness's mark of a call its
// hook blocked.
func workdayExchange(id, name, args string, answered bool, output, blocked string) fakemodel.AnthropicExchange {
	in, _ := json.Marshal(args)
	return fakemodel.AnthropicExchange{ID: id, Name: name, Input: in, Answered: answered, Result: output, IsError: strings.Contains(output, blocked)}
}

// workdayEnv is env (NAME=value lines) as a run's environment overrides.
func workdayEnv(env []string) map[string]string {
	m := map[string]string{}
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		m[k] = v
	}
	return m
}

// workdayClear removes a harness test's world's own files (src,
// protected) from its workspace: they are not the session's.
func workdayClear(ws string) {
	for _, d := range []string{"src", "protected"} {
		os.RemoveAll(filepath.Join(ws, d))
	}
}

// goBinary is the go the tests run with.
func goBinary() string {
	p, err := exec.LookPath("go")
	if err != nil {
		return "/usr/local/go/bin/go"
	}
	return p
}

// TestWorkdayClaude is the workday session of Claude Code (the pinned
// release): under launch, Claude Code's default tool set (2.1.332 offers
// no Grep or Glob by default, and a launch refuses --tools, the ceiling's
// option), hooks only with Grep and Glob turned on.
func TestWorkdayClaude(t *testing.T) { testWorkday(t, "claude-code", claudeCLI(t)) }

// TestWorkdayCodex is the workday session of Codex (the pinned release,
// codex exec): Codex has no read or search tool of its own (the shell's
// cat, grep, rg and find are its), and edits and writes with apply_patch.
func TestWorkdayCodex(t *testing.T) { testWorkday(t, "codex", codexBinary(t)) }

// TestWorkdayGemini is the workday session of Gemini CLI (the pinned
// release), with its read_file, grep_search, glob, replace and
// write_file, which a launch offers too.
func TestWorkdayGemini(t *testing.T) { testWorkday(t, "gemini", geminiBinary(t)) }

// TestWorkdayPi is the workday session of Pi (the pinned release): under
// launch its default tools (read, bash, edit, write: grep, find and ls are
// off by default, and a launch refuses --tools, the ceiling's option),
// hooks only with grep and find turned on.
func TestWorkdayPi(t *testing.T) {
	pi := piCLI(t)
	if !piFindUsable() {
		t.Logf("no fd 8.7 or later on the tool path: Pi's find tool cannot run here, and its step is left out")
	}
	testWorkday(t, "pi", pi)
}

// TestWorkdayCopilot is the workday session of GitHub Copilot CLI (the
// pinned release), hooks only: sandboxd launch has no Copilot mode (its
// harnesses are Claude Code, Codex, Gemini CLI and Pi).
func TestWorkdayCopilot(t *testing.T) { testWorkday(t, "copilot", copilotBinary(t)) }

// workdayHarnesses are the workday tests' harnesses, by the policy's
// harness id: each one's tools and how its user runs a session.
var workdayHarnesses = map[string]workdayHarness{
	"claude-code": {
		tools: workdayTools{
			harness: "claude-code",
			shell: func(cmd string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "workday"}}
			},
			read: func(path string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "Read", Input: map[string]any{"file_path": path}}
			},
			search: func(root string) []workdayCall {
				return []workdayCall{
					{fakemodel.ToolCall{Name: "Grep", Input: map[string]any{"pattern": "func Add", "path": root}}, "calc.go"},
					{fakemodel.ToolCall{Name: "Glob", Input: map[string]any{"pattern": "**/*.go", "path": root}}, "calc_test.go"},
				}
			},
			searchEnv: func(ws string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "Grep", Input: map[string]any{"pattern": workdaySecretKey, "path": filepath.Join(ws, ".env"), "output_mode": "content"}}
			},
			edit: func(path, old, new string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "Edit", Input: map[string]any{"file_path": path, "old_string": old, "new_string": new}}
			},
			write: func(path, content string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "Write", Input: map[string]any{"file_path": path, "content": content}}
			},
		},
		launch: func(t *testing.T, claude string, w *world, model *launchModel) workdayBox {
			b := newLaunchBox(t, claude)
			return workdayBox{ws: b.ws, home: b.home, root: b.root, run: func(t *testing.T, a workdayArgs) workdayRun {
				return b.launch(t, w, model, launchRun{calls: a.calls, policy: a.policy, flags: a.flags, env: a.env, timeout: workdayTimeout}).workday()
			}}
		},
		hooks: func(t *testing.T, claude string) workdayBox {
			b := newClaudeBox(t, claude)
			b.runTimeout = workdayTimeout
			return workdayGateBox(b, b.proj, b.home, b.root, &b.extraEnv, claudeResult.workday, "--tools", "Bash,Read,Write,Edit,Glob,Grep")
		},
	},
	"codex": {
		tools: workdayTools{
			harness: "codex",
			shell:   codexExec,
			// An update whose new text is the old one and more: the old
			// lines as context, the rest added after them.
			edit: func(path, old, new string) fakemodel.ToolCall {
				rest, ok := strings.CutPrefix(new, old)
				if !ok {
					panic("workday: Codex's edit adds after the old text only")
				}
				return codexPatch("Update", path, "@@\n"+patchLines(" ", old)+patchLines("+", rest))
			},
			write: func(path, content string) fakemodel.ToolCall {
				return codexPatch("Add", path, patchLines("+", content))
			},
		},
		launch: func(t *testing.T, codex string, w *world, model *launchModel) workdayBox {
			b := newCodexLaunchBox(t, codex)
			return workdayBox{ws: b.ws, home: b.home, root: b.root, run: func(t *testing.T, a workdayArgs) workdayRun {
				r := b.launch(t, w, model, codexLaunchRun{calls: a.calls, policy: a.policy, flags: a.flags, env: a.env, timeout: workdayTimeout})
				return workdayRun{exchanges: codexExchanges(r.calls), received: r.received, tools: r.tools}
			}}
		},
		hooks: func(t *testing.T, codex string) workdayBox {
			cw := newCodexWorld(t, codex, nil, codexOpts{})
			cw.runTimeout = workdayTimeout
			var hooks string
			return workdayBox{ws: cw.work, home: cw.home, root: cw.root, writePolicy: workdayPolicyFile(cw.policy),
				install: func(t *testing.T, _ string) { hooks = cw.install(t, "user") },
				run: func(t *testing.T, a workdayArgs) workdayRun {
					cw.extraEnv = a.env
					cw.useModel(t, a.calls)
					cw.handTrust(t, hooks)
					r := cw.run(t)
					t.Logf("codex exec took %s, err %v\nstderr (tail): %s", r.took.Round(time.Millisecond), r.err, lastLines(r.stderr, 20))
					return workdayRun{exchanges: codexExchanges(r.exchanges), received: r.received, tools: r.tools}
				}}
		},
	},
	"gemini": {
		tools: workdayTools{
			harness: "gemini",
			shell:   shellCall,
			read: func(path string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "read_file", Input: map[string]any{"file_path": path}}
			},
			search: func(root string) []workdayCall {
				return []workdayCall{
					{fakemodel.ToolCall{Name: "grep_search", Input: map[string]any{"pattern": "func Add", "dir_path": root}}, "calc.go"},
					{fakemodel.ToolCall{Name: "glob", Input: map[string]any{"pattern": "**/*.go", "dir_path": root}}, "calc_test.go"},
				}
			},
			searchEnv: func(ws string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep_search", Input: map[string]any{"pattern": workdaySecretKey, "dir_path": ws, "include_pattern": ".env"}}
			},
			launchSearch: true,
			edit: func(path, old, new string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "replace", Input: map[string]any{"file_path": path, "instruction": "add Sub", "old_string": old, "new_string": new}}
			},
			write: func(path, content string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "write_file", Input: map[string]any{"file_path": path, "content": content}}
			},
		},
		launch: func(t *testing.T, gemini string, w *world, model *launchModel) workdayBox {
			b := newGeminiLaunchBox(t, gemini)
			return workdayBox{ws: b.ws, home: b.home, root: b.root, run: func(t *testing.T, a workdayArgs) workdayRun {
				return b.launch(t, w, model, geminiLaunchRun{calls: a.calls, policy: a.policy, flags: a.flags, env: a.env, timeout: workdayTimeout}).workday()
			}}
		},
		hooks: func(t *testing.T, gemini string) workdayBox {
			gw := newGeminiWorld(t)
			workdayClear(gw.ws)
			return workdayBox{ws: gw.ws, home: gw.home, root: gw.dir, writePolicy: workdayPolicyFile(gw.policy),
				install: func(t *testing.T, _ string) { gw.install(t) },
				run: func(t *testing.T, a workdayArgs) workdayRun {
					r := gw.run(t, gemini, a.calls, geminiOpts{env: workdayEnv(a.env), timeout: workdayTimeout})
					t.Logf("gemini exit %d in %v, stderr (tail): %s", r.code, r.elapsed.Round(time.Millisecond), lastLines(r.stderr, 12))
					ex, offered := geminiLaunchTranscript(r.requests)
					for i, e := range ex {
						t.Logf("  call %d %s %s -> is_error=%v answered=%v: %.600q", i, e.Name, e.Input, e.IsError, e.Answered, e.Result)
					}
					return workdayRun{exchanges: ex, received: r.received, tools: offered}
				}}
		},
	},
	"pi": {
		tools: workdayTools{
			harness: "pi",
			shell:   piBash,
			read: func(path string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "read", Input: map[string]any{"path": path}}
			},
			search: func(root string) []workdayCall {
				calls := []workdayCall{
					{fakemodel.ToolCall{Name: "grep", Input: map[string]any{"pattern": "func Add", "path": root}}, "calc.go"},
				}
				// Pi's find runs fd with --no-require-git (fd 8.7 and later),
				// and downloads one when none is on PATH: with no usable fd
				// here the tool cannot run, whatever the gate says.
				if piFindUsable() {
					calls = append(calls, workdayCall{fakemodel.ToolCall{Name: "find", Input: map[string]any{"pattern": "*.go", "path": root}}, "calc_test.go"})
				}
				return calls
			},
			searchEnv: func(ws string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep", Input: map[string]any{"pattern": workdaySecretKey, "path": filepath.Join(ws, ".env")}}
			},
			edit: func(path, old, new string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "edit", Input: map[string]any{"path": path, "edits": []any{map[string]any{"oldText": old, "newText": new}}}}
			},
			write: func(path, content string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "write", Input: map[string]any{"path": path, "content": content}}
			},
		},
		launch: func(t *testing.T, pi string, w *world, model *launchModel) workdayBox {
			b := newPiLaunchBox(t, pi)
			return workdayBox{ws: b.ws, home: b.home, root: b.root, run: func(t *testing.T, a workdayArgs) workdayRun {
				return b.launch(t, w, model, piLaunchRun{calls: a.calls, policy: a.policy, flags: a.flags, env: a.env, timeout: workdayTimeout}).workday()
			}}
		},
		hooks: func(t *testing.T, pi string) workdayBox {
			b := newPiBox(t, pi)
			b.runTimeout = workdayTimeout
			return workdayGateBox(b, b.proj, b.home, b.root, &b.extraEnv, piResult.workday, "--tools", "read,bash,edit,write,grep,find,ls")
		},
	},
	"copilot": {
		tools: workdayTools{
			harness: "copilot",
			shell:   copilotShell,
			read: func(path string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "view", Input: map[string]any{"path": path}}
			},
			search: func(root string) []workdayCall {
				return []workdayCall{
					{fakemodel.ToolCall{Name: "grep", Input: map[string]any{"pattern": "func Add", "paths": root}}, "calc.go"},
					{fakemodel.ToolCall{Name: "glob", Input: map[string]any{"pattern": "**/*.go", "paths": root}}, "calc_test.go"},
				}
			},
			searchEnv: func(ws string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "grep", Input: map[string]any{"pattern": workdaySecretKey, "paths": filepath.Join(ws, ".env"), "output_mode": "content"}}
			},
			edit: func(path, old, new string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "edit", Input: map[string]any{"path": path, "old_str": old, "new_str": new}}
			},
			write: func(path, content string) fakemodel.ToolCall {
				return fakemodel.ToolCall{Name: "create", Input: map[string]any{"path": path, "file_text": content}}
			},
		},
		noLaunch: "sandboxd launch has no Copilot CLI mode",
		hooks: func(t *testing.T, copilot string) workdayBox {
			cw := newCopilotWorld(t, copilotOpts{})
			workdayClear(cw.ws)
			return workdayBox{ws: cw.ws, home: cw.home, root: cw.root, writePolicy: workdayPolicyFile(cw.policy),
				install: func(t *testing.T, _ string) { cw.install(t) },
				run: func(t *testing.T, a workdayArgs) workdayRun {
					r := cw.run(t, copilot, a.calls, copilotRunOpts{env: workdayEnv(a.env), timeout: workdayTimeout})
					var ex []fakemodel.AnthropicExchange
					for i, c := range r.calls {
						t.Logf("  call %d %s %s -> answered=%v: %.600q", i, c.Name, c.Arguments, c.Answered, c.Output)
						ex = append(ex, workdayExchange(c.CallID, c.Name, c.Arguments, c.Answered, c.Output, copilotDenied))
					}
					return workdayRun{exchanges: ex, received: r.received, tools: r.tools}
				}}
		},
	},
}

// codexPatch is an apply_patch call of one file operation (op: Add or
// Update) on path with body.
func codexPatch(op, path, body string) fakemodel.ToolCall {
	return fakemodel.ToolCall{Name: "apply_patch", Input: map[string]any{"input": "*** Begin Patch\n*** " + op + " File: " + path + "\n" + body + "*** End Patch\n"}}
}

// patchLines is text's lines, each after prefix (a patch's " " context
// or "+" added lines).
func patchLines(prefix, text string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n") {
		b.WriteString(prefix + strings.TrimSuffix(l, "\n") + "\n")
	}
	return b.String()
}

// codexExchanges reads Codex's calls as the workday judges them: an
// error when the hook blocked the call.
func codexExchanges(xs []fakemodel.OpenAIExchange) []fakemodel.AnthropicExchange {
	var out []fakemodel.AnthropicExchange
	for _, x := range xs {
		out = append(out, workdayExchange(x.CallID, x.Name, x.Arguments, x.Answered, x.Output, codexBlocked))
	}
	return out
}

// workdayKnownBugs are the product's false denials and missed stops these
// tests found, by "HARNESS MODE STEP" (HARNESS "*": every harness). The
// assertions stay: a step that fails names its entry, and a fix makes it
// pass.
var workdayKnownBugs = map[string]string{}

// workdayKnown returns the known-bug note for a failed step of the run
// labelled "HARNESS MODE" ("" when none).
func workdayKnown(label, step string) string {
	harness, mode, _ := strings.Cut(label, " ")
	for _, k := range []string{harness + " " + mode + " " + step, "* " + mode + " " + step} {
		if why, ok := workdayKnownBugs[k]; ok {
			return "\n\t" + why
		}
	}
	return ""
}

// piFindUsable says whether an fd Pi's find tool can run is on the tool
// path (fd or Debian's fdfind, 8.7 or later).
var piFindUsable = sync.OnceValue(func() bool {
	for _, name := range []string{"fd", "fdfind"} {
		out, err := exec.Command(name, "--version").Output()
		if err != nil || !onToolPath(name) {
			continue
		}
		var major, minor int
		if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), name+" %d.%d", &major, &minor); err == nil && (major > 8 || major == 8 && minor >= 7) {
			return true
		}
	}
	return false
})
