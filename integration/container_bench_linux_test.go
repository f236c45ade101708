//go:build linux

package integration

// The containers benchmark: sandboxd inside Docker against the host's sandbox,
// in one run on this machine (scripts/bench-containers; docs/benchmarks.md,
// "Containers (sandboxd inside Docker)"). Three rows, interleaved so that
// they share the machine's drift: the host sandbox (the baseline: sandboxd
// in a network namespace the test made, linked to a fake world), a container
// in nested mode (deploy/seccomp.json) and a container in container mode
// (--cap-add NET_ADMIN, the command as the image's agent). Each is linked
// to a fake world of its own (newWorldAround) serving the same 256 MiB over
// HTTPS; nothing outside loopback and the test's own namespaces is reached.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

const (
	// benchHost serves benchBytes over HTTPS on benchAddr in each world.
	benchHost  = "bench.test"
	benchAddr  = "192.0.2.40"
	benchBytes = 256 << 20
	// benchBatch is how many start-ups one timing process (one docker exec)
	// runs back to back before the next row's turn.
	benchBatch = 5
	// benchPython is the system interpreter, the host's /usr's: the same
	// binary inside the containers (hostTools binds /usr in).
	benchPython = "/usr/bin/python3"
)

// benchLoop times argv (sys.argv[2:]) sys.argv[1] times, each from
// time.perf_counter around subprocess.run, and prints the times in ms as a
// JSON list; a run that fails or takes over 60 s ends it with exit 3.
const benchLoop = `import json, subprocess, sys, time
n, argv, out = int(sys.argv[1]), sys.argv[2:], []
for _ in range(n):
    t = time.perf_counter()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    d = (time.perf_counter() - t) * 1000
    if p.returncode != 0:
        sys.stderr.write("exit %d: %s" % (p.returncode, p.stderr.decode(errors="replace")))
        sys.exit(3)
    out.append(d)
print(json.dumps(out))
`

// benchRow is one way of running sandboxd: its start-up timer and its
// download through the proxy.
type benchRow struct {
	name string
	// startup runs n start-ups of `sandboxd run -- true` in one timing
	// process and returns their times in ms.
	startup func(t *testing.T, n int) []float64
	// download runs one download; it returns curl's output (the last line:
	// size_download speed_download) and what failed, if anything.
	download func(t *testing.T) (string, error)
}

// TestContainerBench measures `sandboxd run -- true`'s start-up and a 256 MiB
// HTTPS download through its proxy on the host, in a container in nested
// mode and in one in container mode, interleaved, and prints markdown tables
// with each row's ratio to the host sandbox. BENCH_N start-ups each (default
// 40), BENCH_DL_RUNS downloads each (default 5). It runs only with
// BARRY_BENCH=1 (scripts/bench-containers): timing is measured, never
// asserted; a failed start-up or a download of the wrong size fails it.
func TestContainerBench(t *testing.T) {
	testenv.OptIn(t, "BARRY_BENCH", "scripts/bench-containers")
	n, dlRuns := benchEnvInt(t, "BENCH_N", 40), benchEnvInt(t, "BENCH_DL_RUNS", 5)
	requireDocker(t)
	testenv.NeedRoot(t)
	for _, p := range []string{benchPython, "/usr/bin/curl"} {
		if _, err := os.Stat(p); err != nil {
			testenv.SkipOrFail(t, p+" is not installed (the containers use the host's /usr)")
		}
	}
	containerImage(t)
	// The same static binary in every row: the image's (containerImage
	// built it), as released.
	sandboxd := filepath.Join(shareRoot, "container", "sandboxd")
	if _, err := os.Stat(sandboxd); err != nil || !isStatic(sandboxd) {
		t.Fatalf("the image's static sandboxd is not at %s (docker_linux_test.go builds it there): %v", sandboxd, err)
	}
	blob := bytes.Repeat([]byte("barry-bench-blob\n"), 1<<20/17+1)[:1<<20]
	serveBlob := func(t *testing.T, w *world) {
		w.serveHTTPS(t, benchHost, benchAddr, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("Content-Length", strconv.Itoa(benchBytes))
			for i := 0; i < benchBytes/len(blob); i++ {
				if _, err := rw.Write(blob); err != nil {
					return
				}
			}
		}))
	}
	curl := []string{"curl", "-sS", "-o", "/dev/null", "--max-time", "120", "-w", `%{size_download} %{speed_download}\n`, "https://" + benchHost + "/blob"}
	dlFlags := []string{"--allow-domain", benchHost}

	// The host sandbox: sandboxd in a namespace the test made (ip netns
	// exec), as root, from a directory of its own with HOME there.
	hw := newWorld(t)
	serveBlob(t, hw)
	hostDir := sharedDir(t)
	hostCmd := func(timeout time.Duration, argv ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", hw.host.Name}, argv...)...)
		cmd.Dir, cmd.Env = hostDir, hw.env(hostDir, nil)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		cmd.WaitDelay = 5 * time.Second
		if err := cmd.Run(); err != nil {
			return out.String(), fmt.Errorf("%s: %v\nstdout %q\nstderr %q", strings.Join(argv, " "), err, out.String(), errb.String())
		}
		return out.String(), nil
	}
	loopTimeout := func(n int) time.Duration { return time.Minute + time.Duration(n)*30*time.Second }
	host := benchRow{
		name: "host sandbox (baseline)",
		startup: func(t *testing.T, n int) []float64 {
			out, err := hostCmd(loopTimeout(n), benchPython, "-c", benchLoop, strconv.Itoa(n), sandboxd, "run", "--", "true")
			if err != nil {
				t.Fatal(err)
			}
			return benchTimes(t, out, n)
		},
		download: func(t *testing.T) (string, error) {
			audit := filepath.Join(hostDir, "audit.jsonl")
			return hostCmd(3*time.Minute, hw.sandboxdCommand(sandboxd, runOpts{flags: dlFlags, argv: curl}, audit)...)
		},
	}
	direct := func(t *testing.T) (string, error) {
		c := slices.Clone(curl)
		c = append(c[:len(c)-1], "--resolve", benchHost+":443:"+benchAddr, c[len(c)-1])
		return hostCmd(3*time.Minute, c...)
	}

	// The containers: each linked to a world of its own; doctor must say
	// the row's mode.
	inContainer := func(name, mode, workdir string, flags, runFlags []string) benchRow {
		o := containerOpts{flags: flags, hostTools: true}
		c := startContainer(t, o)
		doctor := append([]string{containerSandboxd, "doctor", "--json"}, runFlags...)
		d := c.exec(t, time.Minute, nil, doctor...)
		var rep doctorReport
		if err := json.Unmarshal([]byte(d.stdout), &rep); err != nil || rep.Mode != mode {
			t.Fatalf("%s: doctor does not say %s mode (%v): %s", name, mode, err, d)
		}
		w := newWorldAround(t, proxytest.AttachNetns(t, c.pid), false)
		serveBlob(t, w)
		return benchRow{
			name: name,
			startup: func(t *testing.T, n int) []float64 {
				argv := append(append([]string{benchPython, "-c", benchLoop, strconv.Itoa(n), containerSandboxd, "run"}, runFlags...), "--", "true")
				r := c.exec(t, loopTimeout(n), []string{"--workdir", workdir}, argv...)
				if r.code != 0 {
					t.Fatalf("%s: the start-up loop: %s", name, r)
				}
				return benchTimes(t, r.stdout, n)
			},
			download: func(t *testing.T) (string, error) {
				r := c.sandboxd(t, w, runOpts{flags: append(slices.Clone(dlFlags), runFlags...), argv: curl, timeout: 3 * time.Minute})
				if r.code != 0 {
					return r.stdout, fmt.Errorf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
				}
				return r.stdout, nil
			},
		}
	}
	nested := inContainer("container, nested mode (`--security-opt seccomp=deploy/seccomp.json`)", "nested", containerWorkdir,
		[]string{"--security-opt", "seccomp=" + shippedSeccompProfile(t)}, nil)
	agent := strconv.Itoa(containerAgentUID)
	cmode := inContainer("container, container mode (`--cap-add NET_ADMIN`, `--agent-uid "+agent+"`)", "container", "/home/agent",
		[]string{"--cap-add", "NET_ADMIN"}, []string{"--agent-uid", agent})
	rows := []benchRow{host, nested, cmode}

	load0 := benchLoad()
	start := time.Now()
	// 1. Start-up: one warm-up batch each, then rounds of benchBatch per
	// row, the row order rotating each round.
	for _, r := range rows {
		r.startup(t, 2)
	}
	times := make([][]float64, len(rows))
	for round := 0; len(times[0]) < n; round++ {
		k := min(benchBatch, n-len(times[0]))
		for j := range rows {
			i := (round + j) % len(rows)
			times[i] = append(times[i], rows[i].startup(t, k)...)
		}
	}
	startupTook := time.Since(start)

	// 2. Downloads: the direct reference, then the three rows, rotating.
	dl := append([]benchRow{{name: "direct, no sandbox (reference: the host sandbox's namespace)", download: direct}}, rows...)
	speeds := make([][]float64, len(dl))
	for round := range dlRuns {
		for j := range dl {
			i := (round + j) % len(dl)
			out, err := dl[i].download(t)
			if err != nil {
				t.Fatalf("%s: download: %v", dl[i].name, err)
			}
			size, speed, ok := benchCurlResult(out)
			if !ok || size != benchBytes {
				t.Fatalf("%s: downloaded %d bytes, want %d (curl printed %q)", dl[i].name, size, benchBytes, out)
			}
			speeds[i] = append(speeds[i], speed/1e6)
		}
	}
	took := time.Since(start)
	load1 := benchLoad()

	var b strings.Builder
	fmt.Fprintf(&b, "==== containers bench\n")
	fmt.Fprintf(&b, "# %d CPUs, %s; load average %s before, %s after; measuring took %s (start-up %s)\n\n",
		runtime.NumCPU(), benchKernel(), load0, load1, took.Round(time.Second), startupTook.Round(time.Second))
	fmt.Fprintf(&b, "| `sandboxd run -- true` (%d each, interleaved in batches of %d) | median ms | p10 ms | p90 ms | median / host |\n|---|---|---|---|---|\n", n, benchBatch)
	base := benchQuantile(times[0], 0.5)
	for i, r := range rows {
		v := times[i]
		fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.2f | %.2fx |\n", r.name, benchQuantile(v, 0.5), benchQuantile(v, 0.1), benchQuantile(v, 0.9), benchQuantile(v, 0.5)/base)
	}
	fmt.Fprintf(&b, "\n| %d MiB over HTTPS through the proxy (%d runs each, interleaved) | median MB/s | min | max | median / host sandbox |\n|---|---|---|---|---|\n", benchBytes>>20, dlRuns)
	base = benchQuantile(speeds[1], 0.5)
	for i, r := range dl {
		v := speeds[i]
		fmt.Fprintf(&b, "| %s | %.0f | %.0f | %.0f | %.2fx |\n", r.name, benchQuantile(v, 0.5), slices.Min(v), slices.Max(v), benchQuantile(v, 0.5)/base)
	}
	fmt.Fprintf(&b, "==== end\n")
	fmt.Print(b.String())
}

// benchEnvInt returns the positive integer in the environment variable name,
// or def when it is unset.
func benchEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > 10000 {
		t.Fatalf("%s=%q: want a count from 1 to 10000", name, s)
	}
	return v
}

// benchTimes decodes benchLoop's output: n times in ms.
func benchTimes(t *testing.T, out string, n int) []float64 {
	t.Helper()
	var v []float64
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &v); err != nil || len(v) != n {
		t.Fatalf("the timing loop printed %q (%v), want %d times", out, err, n)
	}
	return v
}

// benchCurlResult reads curl's -w '%{size_download} %{speed_download}' line,
// the last of out: bytes and bytes per second.
func benchCurlResult(out string) (size int64, speed float64, ok bool) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 2 {
		return 0, 0, false
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	speed, err2 := strconv.ParseFloat(f[1], 64)
	return size, speed, err1 == nil && err2 == nil && speed > 0
}

// benchQuantile is the nearest-rank q-quantile of v.
func benchQuantile(v []float64, q float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if q == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// benchLoad is /proc/loadavg's three averages.
func benchLoad() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// benchKernel is the running kernel, as uname -sr says it.
func benchKernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}
