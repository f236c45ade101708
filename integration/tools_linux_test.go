//go:build linux

package integration

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// The hosts TestEverydayTools serves on the world, each on its own address.
const (
	npmHost     = "registry.test"
	npmAddr     = "192.0.2.61"
	pypiHost    = "pypi.test"
	pypiAddr    = "192.0.2.62"
	goproxyHost = "goproxy.test"
	goproxyAddr = "192.0.2.63"
	gitPushHost = "gitpush.test"
	gitPushAddr = "192.0.2.64"
	filesHost   = "files.test"
	filesAddr   = "192.0.2.65"
	sshHost     = "ssh.test"
	sshAddr     = "192.0.2.66"

	goModPath = "example.test/greet"
)

// toolPath is the PATH the tools run with inside the sandbox: w.env's,
// with the directory of the host's go in front.
func toolPath() string {
	p := "/usr/local/bin:/usr/bin:/bin"
	if g, err := exec.LookPath("go"); err == nil {
		p = filepath.Dir(g) + ":" + p
	}
	return p
}

// onToolPath reports whether name is on toolPath (what the sandbox finds,
// not the test's own PATH).
func onToolPath(name string) bool {
	for _, d := range filepath.SplitList(toolPath()) {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// toolRun is what a tool subtest gives TestEverydayTools for one user.
type toolRun struct {
	argv  []string
	env   []string
	check func(t *testing.T, r runResult) // the host-side outcome
	hosts []string                        // "host path" requests the world must have seen
	// tunnels are hosts the audit must show an allowed CONNECT to (the
	// proxy variables' way, not the capture's), besides those of hosts.
	tunnels []string
}

// TestEverydayTools: the tools an agent runs every day work inside
// sandboxd run, as root and as uid 65534, with the proxy variables sandboxd
// sets and only the tool's usual trust setting for the world's CA, against
// servers the test runs on the world under hosts allowed with
// --allow-domain: git clone and push over HTTPS (git http-backend) and over
// ssh (a real sshd, through GIT_SSH_COMMAND's ProxyCommand), npm install
// from a registry, pip install from a simple index, go mod download through
// a GOPROXY, and curl, wget and Python requests. Each outcome is checked on
// the host: the pushed commit in the served repository, the installed files
// in the workspace, and the requests the world's servers saw.
func TestEverydayTools(t *testing.T) {
	w := newWorld(t)
	w.serveNPM(t)
	w.servePyPI(t)
	w.serveGoproxy(t)
	gitRoot := w.serveGitPush(t)
	w.serveHTTPS(t, filesHost, filesAddr, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "file %s", r.URL.Path)
	}))
	allow := []string{"--allow-domain", npmHost, "--allow-domain", pypiHost, "--allow-domain", goproxyHost,
		"--allow-domain", gitPushHost, "--allow-domain", filesHost, "--allow-domain", sshHost}

	type tool struct {
		name string
		need func(t *testing.T) // skips when the tool is absent
		run  func(t *testing.T, user string, uid int, dir string) toolRun
	}
	tools := []tool{
		{"git https clone and push", func(t *testing.T) { testenv.NeedCommand(t, "git") },
			func(t *testing.T, user string, uid int, dir string) toolRun {
				bare := newPushRepo(t, w.repoDir, gitRoot, user)
				msg := "pushed by " + user + " over https"
				return toolRun{
					argv: []string{"sh", "-c", `set -e
git clone -q https://` + gitPushHost + `/` + user + `.git r
cd r
git log --format=%s
git commit -q --allow-empty -m "` + msg + `"
git push -q origin HEAD:main`},
					env: gitIdentity,
					check: func(t *testing.T, r runResult) {
						if !strings.Contains(r.stdout, "fake internet") {
							t.Errorf("the clone has not the served history: %q", r.stdout)
						}
						if got := gitOut(t, bare, "log", "-1", "--format=%s", "main"); got != msg {
							t.Errorf("the served repository's main is %q, want %q", got, msg)
						}
					},
					hosts: []string{gitPushHost + " /" + user + ".git/info/refs", gitPushHost + " /" + user + ".git/git-upload-pack",
						gitPushHost + " /" + user + ".git/git-receive-pack"},
				}
			}},
		{"git ssh clone and push", func(t *testing.T) {
			testenv.NeedCommand(t, "git")
			testenv.NeedCommand(t, "ssh")
			if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
				testenv.SkipOrFail(t, "sshd (openssh-server) is not installed")
			}
		}, nil},
		{"npm install", func(t *testing.T) {
			if !onToolPath("npm") || !onToolPath("node") {
				testenv.SkipOrFail(t, "npm is not installed")
			}
		}, func(t *testing.T, user string, uid int, dir string) toolRun {
			writeFiles(t, dir, map[string]string{
				"package.json": `{"name": "app", "version": "1.0.0", "private": true, "dependencies": {"hello-pkg": "1.0.0"}}`,
				// npm trusts its cafile (which replaces Node's roots, and
				// which a global npmrc may set, as Debian's does), not
				// NODE_EXTRA_CA_CERTS or SSL_CERT_FILE.
				".npmrc": "registry=https://" + npmHost + "/\ncafile=" + w.caFile + "\naudit=false\nfund=false\nupdate-notifier=false\n",
			})
			return toolRun{
				argv: []string{"sh", "-c", `npm install --loglevel=error && node -e 'console.log(require("hello-pkg"))'`},
				check: func(t *testing.T, r runResult) {
					if !strings.Contains(r.stdout, "hello from npm") {
						t.Errorf("node did not load the installed package: %q", r.stdout)
					}
					b, err := os.ReadFile(filepath.Join(dir, "node_modules", "hello-pkg", "index.js"))
					if err != nil || !strings.Contains(string(b), "hello from npm") {
						t.Errorf("node_modules/hello-pkg/index.js in the workspace: %q, %v", b, err)
					}
				},
				hosts: []string{npmHost + " /hello-pkg", npmHost + " /hello-pkg/-/hello-pkg-1.0.0.tgz"},
			}
		}},
		{"pip install", func(t *testing.T) {
			if out, err := exec.Command("env", "PATH="+toolPath(), "python3", "-m", "pip", "--version").CombinedOutput(); err != nil {
				testenv.SkipOrFail(t, fmt.Sprintf("python3 -m pip is not installed: %v %s", err, out))
			}
		}, func(t *testing.T, user string, uid int, dir string) toolRun {
			return toolRun{
				argv: []string{"sh", "-c", `python3 -m pip install -q --target pkgs hello-pkg==1.0.0 && PYTHONPATH=pkgs python3 -c 'import hello_pkg; print(hello_pkg.GREETING)'`},
				env:  []string{"PIP_INDEX_URL=https://" + pypiHost + "/simple/", "PIP_CERT=" + w.caFile, "PIP_DISABLE_PIP_VERSION_CHECK=1"},
				check: func(t *testing.T, r runResult) {
					if !strings.Contains(r.stdout, "hello from pip") {
						t.Errorf("python did not import the installed package: %q", r.stdout)
					}
					for _, f := range []string{"hello_pkg/__init__.py", "hello_pkg-1.0.0.dist-info/METADATA"} {
						if _, err := os.Stat(filepath.Join(dir, "pkgs", f)); err != nil {
							t.Errorf("the installed package in the workspace: %v", err)
						}
					}
				},
				hosts: []string{pypiHost + " /simple/hello-pkg/", pypiHost + " /files/hello_pkg-1.0.0-py3-none-any.whl"},
			}
		}},
		{"go mod download", func(t *testing.T) {
			if !onToolPath("go") {
				testenv.SkipOrFail(t, "go is not installed")
			}
		}, func(t *testing.T, user string, uid int, dir string) toolRun {
			writeFiles(t, dir, map[string]string{
				"go.mod": "module example.test/app\n\ngo 1.21\n\nrequire " + goModPath + " v1.0.0\n",
			})
			return toolRun{
				argv: []string{"sh", "-c", `go list -m -versions ` + goModPath + ` && go mod download -x`},
				env: []string{"PATH=" + toolPath(), "GOPROXY=https://" + goproxyHost, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
					"GOPATH=" + filepath.Join(dir, "gopath"), "GOMODCACHE=" + filepath.Join(dir, "gomod"), "GOCACHE=" + filepath.Join(dir, "gocache")},
				check: func(t *testing.T, r runResult) {
					if !strings.Contains(r.stdout, goModPath+" v1.0.0") {
						t.Errorf("go list -m -versions: %q", r.stdout)
					}
					mc := filepath.Join(dir, "gomod")
					for _, f := range []string{goModPath + "@v1.0.0/greet.go", "cache/download/" + goModPath + "/@v/v1.0.0.zip"} {
						if _, err := os.Stat(filepath.Join(mc, f)); err != nil {
							t.Errorf("the module cache in the workspace: %v", err)
						}
					}
				},
				hosts: []string{goproxyHost + " /" + goModPath + "/@v/list", goproxyHost + " /" + goModPath + "/@v/v1.0.0.mod",
					goproxyHost + " /" + goModPath + "/@v/v1.0.0.zip"},
			}
		}},
		{"curl", func(t *testing.T) { testenv.NeedCommand(t, "curl") },
			func(t *testing.T, user string, uid int, dir string) toolRun {
				return fileFetch(dir, user, "curl", []string{"curl", "-sSf", "--max-time", "20", "-o", "got", "https://" + filesHost + "/curl-" + user})
			}},
		{"wget", func(t *testing.T) {
			if !onToolPath("wget") {
				testenv.SkipOrFail(t, "wget is not installed")
			}
		}, func(t *testing.T, user string, uid int, dir string) toolRun {
			return fileFetch(dir, user, "wget", []string{"wget", "-q", "--timeout=20", "--tries=1", "--ca-certificate=" + w.caFile,
				"-O", "got", "https://" + filesHost + "/wget-" + user})
		}},
		{"python requests", func(t *testing.T) {
			if exec.Command("env", "PATH="+toolPath(), "python3", "-c", "import requests").Run() != nil {
				testenv.SkipOrFail(t, "python3's requests is not installed")
			}
		}, func(t *testing.T, user string, uid int, dir string) toolRun {
			// requests trusts CURL_CA_BUNDLE (w.env sets it) as well as
			// REQUESTS_CA_BUNDLE.
			return fileFetch(dir, user, "requests", []string{"python3", "-c", `import requests, sys
r = requests.get(sys.argv[1], timeout=20)
r.raise_for_status()
open("got", "w").write(r.text)`, "https://" + filesHost + "/requests-" + user})
		}},
	}
	for _, tl := range tools {
		t.Run(tl.name, func(t *testing.T) {
			tl.need(t)
			run := tl.run
			if run == nil { // ssh: its server starts once sshd is known to be there
				run = w.startSSHD(t, gitRoot).gitRun
			}
			for _, u := range users {
				t.Run(u.name, func(t *testing.T) {
					dir := sharedDir(t)
					tr := run(t, u.name, u.uid, dir)
					_, before, _, _ := w.seen()
					r := w.sandboxd(t, runOpts{uid: u.uid, dir: dir, argv: tr.argv, flags: allow,
						extraEnv: append([]string{"PATH=" + toolPath()}, tr.env...), timeout: 90 * time.Second})
					_, after, _, _ := w.seen()
					if r.code != 0 {
						t.Fatalf("exit %d\nstdout %s\nstderr %s\naudit %s", r.code, r.stdout, r.stderr, r.audit)
					}
					tr.check(t, r)
					got := strings.Join(after[len(before):], "\n")
					for _, h := range tr.hosts {
						if !strings.Contains("\n"+got+"\n", "\n"+h+"\n") {
							t.Errorf("the world did not see %q; it saw:\n%s", h, got)
						}
					}
					tunnels := append([]string(nil), tr.tunnels...)
					for _, h := range tr.hosts {
						host, _, _ := strings.Cut(h, " ")
						tunnels = append(tunnels, host)
					}
					for _, h := range tunnels {
						if !auditHasTunnel(r.audit, h) {
							t.Errorf("no allowed CONNECT to %s in the audit:\n%s", h, r.audit)
						}
					}
					if t.Failed() {
						t.Logf("stdout %s\nstderr %s", r.stdout, r.stderr)
					}
				})
			}
		})
	}
}

var gitIdentity = []string{"GIT_AUTHOR_NAME=agent", "GIT_AUTHOR_EMAIL=agent@sandbox", "GIT_COMMITTER_NAME=agent", "GIT_COMMITTER_EMAIL=agent@sandbox"}

// fileFetch is a download of files.test/NAME-USER into the workspace's
// file "got".
func fileFetch(dir, user, name string, argv []string) toolRun {
	path := "/" + name + "-" + user
	return toolRun{argv: argv, hosts: []string{filesHost + " " + path},
		check: func(t *testing.T, r runResult) {
			b, err := os.ReadFile(filepath.Join(dir, "got"))
			if err != nil || string(b) != "file "+path {
				t.Errorf("the downloaded file in the workspace: %q, %v", b, err)
			}
		}}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o666); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o666)
	}
}

func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git -C %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// serveGitPush serves, as gitPushHost, git's smart HTTP (a real git
// http-backend) for the bare repositories in the directory it returns,
// pushes accepted (http.receivepack in each repository, see newPushRepo).
func (w *world) serveGitPush(t *testing.T) string {
	t.Helper()
	root := sharedDir(t)
	gitPath, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	w.serveHTTPS(t, gitPushHost, gitPushAddr, &cgi.Handler{
		Path: filepath.Join(strings.TrimSpace(string(gitPath)), "git-http-backend"),
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	return root
}

// newPushRepo makes root/NAME.git, a bare copy of the repository src
// that takes pushes over HTTP, and returns its path.
func newPushRepo(t *testing.T, src, root, name string) string {
	t.Helper()
	bare := filepath.Join(root, name+".git")
	os.RemoveAll(bare)
	sh(t, "git", "clone", "-q", "--bare", src, bare)
	sh(t, "git", "-C", bare, "config", "http.receivepack", "true")
	return bare
}

// serveNPM serves an npm registry as npmHost with one package, hello-pkg
// 1.0.0: its packument and its tarball.
func (w *world) serveNPM(t *testing.T) {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name": "hello-pkg", "version": "1.0.0", "main": "index.js"}`},
		{"package/index.js", `module.exports = "hello from npm";` + "\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: time.Unix(1700000000, 0), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f.body))
	}
	tw.Close()
	gz.Close()
	tgz := buf.Bytes()
	sha1sum := sha1.Sum(tgz)
	sha512sum := sha512.Sum512(tgz)
	version := map[string]any{
		"name": "hello-pkg", "version": "1.0.0", "main": "index.js",
		"dist": map[string]any{
			"tarball":   "https://" + npmHost + "/hello-pkg/-/hello-pkg-1.0.0.tgz",
			"shasum":    hex.EncodeToString(sha1sum[:]),
			"integrity": "sha512-" + base64.StdEncoding.EncodeToString(sha512sum[:]),
		},
	}
	packument, err := json.Marshal(map[string]any{
		"name": "hello-pkg", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": version},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.serveHTTPS(t, npmHost, npmAddr, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hello-pkg":
			rw.Header().Set("Content-Type", "application/json")
			rw.Write(packument)
		case "/hello-pkg/-/hello-pkg-1.0.0.tgz":
			rw.Header().Set("Content-Type", "application/octet-stream")
			rw.Write(tgz)
		default:
			http.NotFound(rw, r)
		}
	}))
}

// servePyPI serves a simple index (PEP 503) as pypiHost with one project,
// hello-pkg 1.0.0, as a pure-Python wheel written here.
func (w *world) servePyPI(t *testing.T) {
	t.Helper()
	const name = "hello_pkg-1.0.0-py3-none-any.whl"
	files := []struct{ name, body string }{
		{"hello_pkg/__init__.py", `GREETING = "hello from pip"` + "\n"},
		{"hello_pkg-1.0.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: hello-pkg\nVersion: 1.0.0\n"},
		{"hello_pkg-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: barry-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("hello_pkg-1.0.0.dist-info/RECORD,,\n")
	files = append(files, struct{ name, body string }{"hello_pkg-1.0.0.dist-info/RECORD", record.String()})
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	whl := buf.Bytes()
	sum := sha256.Sum256(whl)
	index := fmt.Sprintf("<!DOCTYPE html>\n<html><body><a href=\"/files/%s#sha256=%s\">%s</a></body></html>\n", name, hex.EncodeToString(sum[:]), name)
	w.serveHTTPS(t, pypiHost, pypiAddr, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/simple/hello-pkg/":
			rw.Header().Set("Content-Type", "text/html")
			fmt.Fprint(rw, index)
		case "/simple/hello-pkg":
			http.Redirect(rw, r, "/simple/hello-pkg/", http.StatusMovedPermanently)
		case "/files/" + name:
			rw.Header().Set("Content-Type", "application/octet-stream")
			rw.Write(whl)
		default:
			http.NotFound(rw, r)
		}
	}))
}

// serveGoproxy serves a module proxy (GOPROXY protocol) as goproxyHost
// with one module, goModPath v1.0.0 (goproxyHandler).
func (w *world) serveGoproxy(t *testing.T) {
	t.Helper()
	w.serveHTTPS(t, goproxyHost, goproxyAddr, goproxyHandler(t))
}

// goproxyHandler is a module proxy (GOPROXY protocol) with one module,
// goModPath v1.0.0: its list, info, go.mod and zip; anything else is a
// 404.
func goproxyHandler(t *testing.T) http.Handler {
	t.Helper()
	const ver = "v1.0.0"
	mod := "module " + goModPath + "\n\ngo 1.21\n"
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"go.mod", mod},
		{"greet.go", "package greet\n\n// Hello greets.\nfunc Hello() string { return \"hello from go\" }\n"},
	} {
		fw, err := zw.Create(goModPath + "@" + ver + "/" + f.name)
		if err != nil {
			t.Fatal(err)
		}
		fw.Write([]byte(f.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	modZip := buf.Bytes()
	info := `{"Version":"` + ver + `","Time":"2024-01-01T00:00:00Z"}`
	base := "/" + goModPath + "/@v/"
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case base + "list":
			fmt.Fprintln(rw, ver)
		case base + ver + ".info", "/" + goModPath + "/@latest":
			rw.Header().Set("Content-Type", "application/json")
			fmt.Fprint(rw, info)
		case base + ver + ".mod":
			fmt.Fprint(rw, mod)
		case base + ver + ".zip":
			rw.Header().Set("Content-Type", "application/zip")
			rw.Write(modZip)
		default:
			http.NotFound(rw, r)
		}
	})
}

// sshServer is a real sshd on the world, as sshHost on port 22, that lets
// in root with the test's key and serves the bare repositories of a
// directory to git over ssh.
type sshServer struct {
	w          *world
	root       string // the repositories
	keyFile    string // the client's private key, 0600 and root's
	knownHosts string // "sshHost KEY": the server's host key
	log        *lockedBuffer
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startSSHD starts sshd (non-daemon, a configuration of its own: its own
// host key, authorized keys and listen address, no PAM) in the world's
// namespace, serving the repositories in root, until the test ends.
func (w *world) startSSHD(t *testing.T, root string) *sshServer {
	t.Helper()
	dir := sharedDir(t)
	os.Chmod(dir, 0o755)
	hostKey, clientKey := filepath.Join(dir, "host_ed25519"), filepath.Join(dir, "client_ed25519")
	for _, k := range []string{hostKey, clientKey} {
		sh(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "barry-test", "-f", k)
	}
	pub, err := os.ReadFile(clientKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	hostPub, err := os.ReadFile(hostKey + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(cfg, []byte(strings.Join([]string{
		"ListenAddress " + sshAddr + ":22",
		"HostKey " + hostKey,
		"AuthorizedKeysFile " + authorized,
		"PidFile none",
		"UsePAM no",
		"StrictModes no",
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"LogLevel VERBOSE",
		"",
	}, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd refuses to start without its privilege separation directory,
	// which the package's service (not started here) would make.
	if _, err := os.Stat("/run/sshd"); os.IsNotExist(err) {
		if err := os.Mkdir("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove("/run/sshd") })
	}
	sh(t, "ip", "-n", w.world.Name, "addr", "add", sshAddr+"/32", "dev", "lo")
	if err := w.dns.AddRR(sshHost + ". 5 IN A " + sshAddr); err != nil {
		t.Fatal(err)
	}
	s := &sshServer{w: w, root: root, keyFile: clientKey, knownHosts: sshHost + " " + strings.TrimSpace(string(hostPub)), log: &lockedBuffer{}}
	cmd := exec.Command("ip", "netns", "exec", w.world.Name, "/usr/sbin/sshd", "-D", "-e", "-f", cfg)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("sshd (pid %d) did not exit", cmd.Process.Pid)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := w.world.Dial(ctx, "tcp", sshAddr+":22")
		cancel()
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("sshd exited: %s", s.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen in 10s: %v\n%s", err, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// gitRun clones and pushes to root/USER.git over ssh inside the sandbox,
// with sandboxd's GIT_SSH_COMMAND (its ProxyCommand through the proxy)
// given the test's key and the server's host key. ssh reads its
// configuration and known hosts from the passwd entry's home, not $HOME,
// so they go on GIT_SSH_COMMAND rather than in a ~/.ssh/config.
func (s *sshServer) gitRun(t *testing.T, user string, uid int, dir string) toolRun {
	bare := newPushRepo(t, s.w.repoDir, s.root, user+"-ssh")
	keys := sharedDir(t)
	os.Chmod(keys, 0o755)
	key, kh := filepath.Join(keys, "id"), filepath.Join(keys, "known_hosts")
	b, err := os.ReadFile(s.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kh, []byte(s.knownHosts+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(key, uid, uid); err != nil {
		t.Fatal(err)
	}
	msg := "pushed by " + user + " over ssh"
	before := strings.Count(s.log.String(), "Accepted publickey")
	return toolRun{
		argv: []string{"sh", "-c", `set -e
case "$GIT_SSH_COMMAND" in *"__connect %h %p"*) ;; *) echo "no ProxyCommand in GIT_SSH_COMMAND: $GIT_SSH_COMMAND"; exit 3;; esac
export GIT_SSH_COMMAND="$GIT_SSH_COMMAND -i ` + key + ` -o IdentitiesOnly=yes -o UserKnownHostsFile=` + kh + ` -o StrictHostKeyChecking=yes -o BatchMode=yes -o ConnectTimeout=20"
git clone -q ssh://root@` + sshHost + bare + ` r
cd r
git log --format=%s
git commit -q --allow-empty -m "` + msg + `"
git push -q origin HEAD:main`},
		env: gitIdentity,
		check: func(t *testing.T, r runResult) {
			if !strings.Contains(r.stdout, "fake internet") {
				t.Errorf("the clone has not the served history: %q", r.stdout)
			}
			if got := gitOut(t, bare, "log", "-1", "--format=%s", "main"); got != msg {
				t.Errorf("the served repository's main is %q, want %q", got, msg)
			}
			// A clone and a push: two sessions the server let in.
			if n := strings.Count(s.log.String(), "Accepted publickey") - before; n < 2 {
				t.Errorf("sshd accepted %d sessions, want 2:\n%s", n, s.log)
			}
		},
		tunnels: []string{sshHost},
	}
}

// auditHasTunnel reports whether the audit holds an allowed CONNECT tunnel
// to host, not a captured connection.
func auditHasTunnel(lines, host string) bool {
	for _, l := range strings.Split(lines, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m[audit.AttrHost] == host && m[audit.AttrDecision] == "allow" && m[audit.AttrKind] == string(audit.KindConnect) &&
			m[audit.AttrCaptured] == nil {
			return true
		}
	}
	return false
}
