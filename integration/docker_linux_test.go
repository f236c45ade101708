//go:build linux

package integration

// The machinery for running sandboxd inside real containers: a
// Docker daemon (scripts/dockerd starts one in CI), an image built once per
// test binary from static binaries with `docker import` (no registry), and
// containers that are always --rm, --network none unless a test links its
// own namespace in, and removed when their test ends.

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

const (
	// containerImageRepo is the test image's repository; its tags are
	// PID-NONCE, the building test binary's pid first (see
	// sweepContainerLeftovers).
	containerImageRepo = "barry-sandbox-it"
	// containerNamePrefix names the tests' containers: PREFIX PID-SEQ.
	containerNamePrefix = "barry-sandbox-it-"
	// containerSandboxd is where the image holds the static sandboxd (on
	// PATH: /bin is the image's own, /usr may be the host's).
	containerSandboxd = "/bin/sandboxd"
	// containerHookgate is the static hookgate beside it, where sandboxd
	// launch finds it.
	containerHookgate = "/bin/hookgate"
	// containerWorkdir is the image's workspace (mode 0777), the containers'
	// working directory.
	containerWorkdir = "/work"
	// containerPATH is the image's PATH: the host's tools (when bound in)
	// before busybox's applets.
	containerPATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// containerAgentUID is the image's one user besides root with a passwd
	// entry and a home (/home/agent); other uids (1000) have neither, and
	// Docker gives them HOME=/.
	containerAgentUID = 1001
)

// dockerState is what requireDocker found, once per test binary.
var dockerState struct {
	once sync.Once
	path string // the docker client
	why  string // why the tests cannot use Docker ("" when they can)
}

// requireDocker returns the docker client's path once a daemon answers;
// otherwise it skips the test, or fails it under BARRY_REQUIRE_PRIVILEGED=1.
func requireDocker(t testing.TB) string {
	t.Helper()
	dockerState.once.Do(func() {
		p, err := exec.LookPath("docker")
		if err != nil {
			dockerState.why = "no docker client (.ci/run installs docker.io)"
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, p, "info", "--format", "{{.ServerVersion}}").CombinedOutput()
		if err != nil || ctx.Err() != nil {
			dockerState.why = fmt.Sprintf("no Docker daemon answers (scripts/dockerd starts one): %v: %s", err, strings.TrimSpace(string(out)))
			return
		}
		dockerState.path = p
	})
	if dockerState.why != "" {
		testenv.SkipOrFail(t, dockerState.why)
	}
	return dockerState.path
}

// dockerResult is one docker command's outcome.
type dockerResult struct {
	code           int
	stdout, stderr string
}

func (r dockerResult) String() string {
	return fmt.Sprintf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
}

// docker runs the docker client with args, giving up (and failing the test)
// after timeout.
func docker(t testing.TB, timeout time.Duration, args ...string) dockerResult {
	t.Helper()
	r, err := dockerRun(requireDocker(t), timeout, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// dockerRun runs the docker client p with args and stdin, for at most
// timeout; err says why it did not run or did not finish.
func dockerRun(p string, timeout time.Duration, stdin io.Reader, args ...string) (dockerResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err := cmd.Run()
	r := dockerResult{stdout: out.String(), stderr: errb.String()}
	if ctx.Err() != nil {
		return r, fmt.Errorf("docker %s: no answer within %s\nstdout %q\nstderr %q", strings.Join(args, " "), timeout, r.stdout, r.stderr)
	}
	if cmd.ProcessState == nil {
		return r, fmt.Errorf("docker %s: %v", strings.Join(args, " "), err)
	}
	r.code = cmd.ProcessState.ExitCode()
	return r, nil
}

// containerImageState is the image this test binary built (once) and
// removes when it ends (removeContainerImage, from TestMain).
var containerImageState struct {
	once    sync.Once
	tag     string
	missing string // a missing prerequisite: skip, or fail in CI
	err     error
}

// containerImage returns the tag of the test image, building it on first
// use: busybox-static's busybox with every applet linked in /bin, the
// static sandboxd at /bin/sandboxd and the static hookgate beside it (where
// sandboxd launch finds it), /etc/passwd with root and agent
// (containerAgentUID, home /home/agent), /work (0777), an empty /usr and
// /etc/ssl, /etc/alternatives to bind the host's into, and /lib, /lib64 as
// the host has them (symlinks into /usr on a merged-/usr host).
func containerImage(t testing.TB) string {
	t.Helper()
	client := requireDocker(t)
	s := &containerImageState
	s.once.Do(func() { s.tag, s.missing, s.err = buildContainerImage(client) })
	if s.missing != "" {
		testenv.SkipOrFail(t, s.missing)
	}
	if s.err != nil {
		t.Fatalf("building the container image: %v", s.err)
	}
	return s.tag
}

func buildContainerImage(client string) (tag, missing string, err error) {
	sweepContainerLeftovers(client)
	busybox := ""
	for _, p := range []string{"/usr/bin/busybox", "/bin/busybox"} {
		if isStatic(p) {
			busybox = p
			break
		}
	}
	if busybox == "" {
		return "", "no static busybox (.ci/run installs busybox-static)", nil
	}
	applets, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return "", "", fmt.Errorf("%s --list: %v", busybox, err)
	}
	dir := filepath.Join(shareRoot, "container")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	sandboxd, hookgate := filepath.Join(dir, "sandboxd"), filepath.Join(dir, "hookgate")
	for out, pkg := range map[string]string{sandboxd: "../cmd/sandboxd", hookgate: "../cmd/hookgate"} {
		build := exec.Command("go", "build", "-o", out, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("CGO_ENABLED=0 go build %s: %v\n%s", pkg, err, b)
		}
		if !isStatic(out) {
			return "", "", fmt.Errorf("%s is not static", out)
		}
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	add := func(h *tar.Header, body []byte) {
		h.ModTime, h.Format = now, tar.FormatPAX
		if err == nil {
			err = tw.WriteHeader(h)
		}
		if err == nil && body != nil {
			_, err = tw.Write(body)
		}
	}
	dirEntry := func(name string, mode int64, uid int) {
		add(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: uid, Gid: uid}, nil)
	}
	file := func(name string, mode int64, body []byte) {
		add(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body))}, body)
	}
	link := func(name, target string) {
		add(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}, nil)
	}
	for _, d := range []string{"bin", "etc", "etc/ssl", "etc/alternatives", "usr", "proc", "sys", "dev", "run", "home", "opt"} {
		dirEntry(d, 0o755, 0)
	}
	dirEntry("root", 0o700, 0)
	dirEntry("home/agent", 0o755, containerAgentUID)
	dirEntry("tmp", 0o1777, 0)
	dirEntry("var", 0o755, 0)
	dirEntry("var/tmp", 0o1777, 0)
	dirEntry(strings.TrimPrefix(containerWorkdir, "/"), 0o777, 0)
	for _, l := range []string{"lib", "lib64"} {
		if target, lerr := os.Readlink("/" + l); lerr == nil {
			link(l, target)
		} else {
			dirEntry(l, 0o755, 0)
		}
	}
	bb, rerr := os.ReadFile(busybox)
	if rerr != nil {
		return "", "", rerr
	}
	file("bin/busybox", 0o755, bb)
	for _, a := range strings.Fields(string(applets)) {
		if a != "busybox" && !strings.Contains(a, "/") {
			link("bin/"+a, "busybox")
		}
	}
	for bin, in := range map[string]string{containerSandboxd: sandboxd, containerHookgate: hookgate} {
		b, rerr := os.ReadFile(in)
		if rerr != nil {
			return "", "", rerr
		}
		file(strings.TrimPrefix(bin, "/"), 0o755, b)
	}
	agent := strconv.Itoa(containerAgentUID)
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nagent:x:"+agent+":"+agent+":agent:/home/agent:/bin/sh\n"))
	file("etc/group", 0o644, []byte("root:x:0:\nagent:x:"+agent+":\n"))
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		return "", "", fmt.Errorf("writing the image's tar: %v", err)
	}
	tag = fmt.Sprintf("%s:%d-%d", containerImageRepo, os.Getpid(), now.UnixNano()%1e9)
	r, err := dockerRun(client, 2*time.Minute, &buf, "import", "--change", "ENV PATH="+containerPATH, "-", tag)
	if err != nil {
		return "", "", err
	}
	if r.code != 0 {
		return "", "", fmt.Errorf("docker import: %s", r)
	}
	return tag, "", nil
}

// isStatic reports whether p is an ELF executable with no interpreter.
func isStatic(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, pr := range f.Progs {
		if pr.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// removeContainerImage removes the image this test binary built, if any.
func removeContainerImage() {
	s := &containerImageState
	if s.tag == "" {
		return
	}
	if r, err := dockerRun(dockerState.path, time.Minute, nil, "rmi", "-f", s.tag); err != nil || r.code != 0 {
		fmt.Fprintf(os.Stderr, "removing the test image %s: %v %v\n", s.tag, err, r)
	}
}

// sweepContainerLeftovers removes the containers and images of earlier test
// binaries killed before their cleanups ran (their pid is gone).
func sweepContainerLeftovers(client string) {
	gone := func(s string) bool {
		p, _, _ := strings.Cut(s, "-")
		pid, err := strconv.Atoi(p)
		return err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	if r, err := dockerRun(client, time.Minute, nil, "ps", "-a", "--filter", "name="+containerNamePrefix, "--format", "{{.Names}}"); err == nil {
		for _, n := range strings.Fields(r.stdout) {
			if rest, ok := strings.CutPrefix(n, containerNamePrefix); ok && gone(rest) {
				dockerRun(client, time.Minute, nil, "rm", "-f", n)
			}
		}
	}
	if r, err := dockerRun(client, time.Minute, nil, "images", containerImageRepo, "--format", "{{.Tag}}"); err == nil {
		for _, tag := range strings.Fields(r.stdout) {
			if gone(tag) {
				dockerRun(client, time.Minute, nil, "rmi", "-f", containerImageRepo+":"+tag)
			}
		}
	}
}

// containerOpts says how a test container runs.
type containerOpts struct {
	// flags are docker run's own: --user, --security-opt, --cap-add.
	flags []string
	// hostTools binds the host's /usr (and /lib, /lib64 where they are not
	// symlinks into it), /etc/ssl and /etc/alternatives read-only, for real
	// clients inside (curl, git, python3, node, dig), and shareRoot at its
	// own path, read-write (the tests' files and the audit logs).
	hostTools bool
	// network is docker run's --network ("" none): "container:NAME"
	// joins a pod's namespace.
	network string
	// noShareRoot leaves shareRoot out of hostTools' binds: a pod's agent
	// sees none of the test's files.
	noShareRoot bool
}

// containerSeq keeps one test binary's container names apart.
var containerSeq atomic.Int64

// runArgs returns docker run's arguments, before the command, for a
// container named name, with extra flags of docker run; it is removed when
// the test ends, whatever happened to it.
func (o containerOpts) runArgs(t testing.TB, name string, extra ...string) []string {
	t.Helper()
	image := containerImage(t)
	t.Cleanup(func() {
		// Gone already (--rm) unless the test gave up on it.
		dockerRun(dockerState.path, time.Minute, nil, "rm", "-f", name)
	})
	network := o.network
	if network == "" {
		network = "none"
	}
	args := append([]string{"run", "--rm", "--name", name, "--network", network, "--workdir", containerWorkdir}, extra...)
	if o.hostTools {
		args = append(args, "-v", "/usr:/usr:ro")
		for _, d := range []string{"/lib", "/lib64", "/etc/ssl", "/etc/alternatives"} {
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				args = append(args, "-v", d+":"+d+":ro")
			}
		}
		if !o.noShareRoot {
			args = append(args, "-v", shareRoot+":"+shareRoot)
		}
	}
	args = append(args, o.flags...)
	return append(args, image)
}

func newContainerName() string {
	return fmt.Sprintf("%s%d-%d", containerNamePrefix, os.Getpid(), containerSeq.Add(1))
}

// containerRun runs argv in a new container (docker run --rm) and returns
// its outcome; docker's own failures are exit 125 too, and tell themselves
// apart by a stderr that does not start with "sandboxd:".
func containerRun(t testing.TB, o containerOpts, argv ...string) dockerResult {
	t.Helper()
	args := o.runArgs(t, newContainerName())
	return docker(t, 3*time.Minute, append(args, argv...)...)
}

// runningContainer is a container that sleeps until the test ends; tests
// run their commands in it with exec.
type runningContainer struct {
	name string
	pid  int // its init's pid on the host
}

// startContainer starts a container that sleeps until the test ends.
func startContainer(t testing.TB, o containerOpts) *runningContainer {
	t.Helper()
	c := &runningContainer{name: newContainerName()}
	args := o.runArgs(t, c.name, "--detach")
	r := docker(t, 2*time.Minute, append(args, "sleep", "86400")...)
	if r.code != 0 {
		t.Fatalf("docker run -d: %s", r)
	}
	r = docker(t, time.Minute, "inspect", "--format", "{{.State.Pid}}", c.name)
	pid, err := strconv.Atoi(strings.TrimSpace(r.stdout))
	if r.code != 0 || err != nil || pid <= 0 {
		t.Fatalf("docker inspect %s: %s", c.name, r)
	}
	c.pid = pid
	return c
}

// exec runs argv in the container with docker exec's flags (-u, -w, -e).
func (c *runningContainer) exec(t testing.TB, timeout time.Duration, flags []string, argv ...string) dockerResult {
	t.Helper()
	args := append(append([]string{"exec"}, flags...), c.name)
	return docker(t, timeout, append(args, argv...)...)
}
