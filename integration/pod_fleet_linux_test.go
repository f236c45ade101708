//go:build linux

package integration

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/kube"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// fleetPods is how many pods TestPodFleet runs side by side.
const fleetPods = 20

// TestPodFleet: fleetPods emulated pods side by side (each pause, netinit,
// the sidecar and an agent container, as TestPodSidecar's), pod i's policy
// allowing host-i.test alone. Every pod's fake world serves every
// host-j.test (its DNS answers each, its web server answers each by name),
// so only the pod's own sidecar stands between its agent and host-j.test.
// Every agent tries every host twice, by its name (the DNS proxy) and at
// its address with the name as TLS server name (the capture and the
// proxy): it reaches its own host both ways and no other, and its world
// sees no request for another host. Then the memory of each pod's
// containers (their cgroups) is printed: the pod (pause + sidecar + an
// idle agent) and the sidecar alone. Every container is gone at the end.
func TestPodFleet(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		testenv.SkipOrFail(t, "/usr/bin/curl is not installed")
	}
	// Registered first, run last: no container of this test is left.
	prefix := fmt.Sprintf("%s%d-", containerNamePrefix, os.Getpid())
	t.Cleanup(func() {
		r, err := dockerRun(dockerState.path, time.Minute, nil, "ps", "-a", "--filter", "name="+prefix, "--format", "{{.Names}}")
		if err != nil || strings.TrimSpace(r.stdout) != "" {
			t.Errorf("containers left after the test: %v %q", err, r.stdout)
		}
	})
	containerImage(t)

	type fleetPod struct {
		*testPod
		agent *runningContainer
	}
	began := time.Now()
	pods := make([]fleetPod, fleetPods)
	for i := range pods {
		name := fmt.Sprintf("fleet-%d", i)
		p := startPod(t, name, podPolicy(fmt.Sprintf("host-%d.test", i)))
		for j := range fleetPods {
			if err := p.w.dns.AddRR(fmt.Sprintf("host-%d.test. 5 IN A %s", j, webAddr)); err != nil {
				t.Fatal(err)
			}
		}
		flags := []string{"--user", fmt.Sprintf("%d:%d", containerAgentUID, containerAgentUID), "--cap-drop", "ALL",
			"-v", filepath.Join(p.dir, "run") + ":" + kube.RunDir + ":ro"}
		for _, e := range p.w.env(containerWorkdir, nil) {
			flags = append(flags, "--env", e)
		}
		agent := startDetached(t, containerOpts{network: "container:" + p.pause.name, hostTools: true, flags: flags}, "sleep", "86400")
		pods[i] = fleetPod{p, agent}
	}
	started := time.Since(began)
	t.Logf("%d pods started in %v (%v a pod, one after another)", fleetPods, started.Round(time.Millisecond), (started / fleetPods).Round(time.Millisecond))

	// Every agent tries every host, by name and at its address; four pods
	// at a time. -k: the world's certificate names its own hosts, not
	// host-j.test; what is tried is the name the agent asks for (the body
	// names the host the world served).
	script := `for j in $(seq 0 $1); do
  r=$(curl -ksS --max-time 5 https://host-$j.test/by-name 2>/dev/null); echo "name $j ${r:-none}"
  r=$(curl -ksS --max-time 5 --resolve host-$j.test:443:` + webAddr + ` https://host-$j.test/by-address 2>/dev/null); echo "address $j ${r:-none}"
done; echo end`
	out := make([]dockerResult, fleetPods)
	errs := make([]error, fleetPods)
	checksBegan := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i, p := range pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = dockerRun(dockerState.path, 3*time.Minute, nil, "exec", p.agent.name, "sh", "-c", script, "sh", strconv.Itoa(fleetPods-1))
		}()
	}
	wg.Wait()
	checks := time.Since(checksBegan)

	reached, denied := 0, 0
	for i, p := range pods {
		if errs[i] != nil || out[i].code != 0 || !strings.HasSuffix(out[i].stdout, "end\n") {
			t.Fatalf("pod %d's agent: %v %s", i, errs[i], out[i])
		}
		got := map[string]bool{}
		sc := bufio.NewScanner(strings.NewReader(out[i].stdout))
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), " ", 3)
			if len(f) == 3 {
				got[f[0]+" "+f[1]] = f[2] == "hello from host-"+f[1]+".test"
			}
		}
		for j := range fleetPods {
			for _, way := range []string{"name", "address"} {
				k := way + " " + strconv.Itoa(j)
				ok, seen := got[k]
				switch {
				case !seen:
					t.Errorf("pod %d: no result for host-%d.test by %s:\n%s", i, j, way, out[i].stdout)
				case ok && j != i:
					t.Errorf("pod %d reached host-%d.test by %s, which its policy denies", i, j, way)
				case !ok && j == i:
					t.Errorf("pod %d did not reach its own host-%d.test by %s:\n%s\nsidecar: %s", i, j, way, out[i].stdout, p.logs(t))
				case ok:
					reached++
				default:
					denied++
				}
			}
		}
		_, seen, tcp, udp := p.w.seen()
		for _, s := range seen {
			if !strings.HasPrefix(s, fmt.Sprintf("host-%d.test ", i)) {
				t.Errorf("pod %d's world saw %q", i, s)
			}
		}
		if len(seen) != 2 || tcp > 0 || udp > 0 {
			t.Errorf("pod %d's world saw %q, raw tcp %d, udp %d: want its own host twice", i, seen, tcp, udp)
		}
	}
	t.Logf("%d×%d hosts, by name and by address (%d tries) in %v: %d reached (each pod its own host), %d refused",
		fleetPods, fleetPods, 2*fleetPods*fleetPods, checks.Round(time.Millisecond), reached, denied)

	// Memory, after the tries: each container's cgroup.
	var pod, podRSS, side, sideRSS []int64
	for i, p := range pods {
		var tot, totRSS int64
		row := []string{}
		for _, c := range []struct {
			name string
			rc   *runningContainer
		}{{"pause", p.pause}, {"sidecar", p.sidecar}, {"agent", p.agent}} {
			usage, rss, err := containerMemory(c.rc.pid)
			if err != nil {
				t.Fatalf("pod %d %s: %v", i, c.name, err)
			}
			tot, totRSS = tot+usage, totRSS+rss
			if c.name == "sidecar" {
				side, sideRSS = append(side, usage), append(sideRSS, rss)
			}
			row = append(row, fmt.Sprintf("%s %s (rss %s)", c.name, mib(usage), mib(rss)))
		}
		pod, podRSS = append(pod, tot), append(podRSS, totRSS)
		t.Logf("pod %2d: %s; pod %s (rss %s)", i, strings.Join(row, ", "), mib(tot), mib(totRSS))
	}
	t.Logf("memory per pod (pause + sidecar + idle agent), cgroup usage: %s; rss: %s", spread(pod), spread(podRSS))
	t.Logf("memory of the sidecar alone, cgroup usage: %s; rss: %s", spread(side), spread(sideRSS))
}

// containerMemory is the memory cgroup's usage of the container whose init
// is pid (cgroup v1 memory.usage_in_bytes, v2 memory.current: page cache
// included) and its resident anonymous memory (v1 total_rss, v2 anon).
func containerMemory(pid int) (usage, rss int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, 0, err
	}
	var dir, usageFile, rssKey string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		if slices.Contains(strings.Split(f[1], ","), "memory") {
			dir, usageFile, rssKey = filepath.Join("/sys/fs/cgroup/memory", f[2]), "memory.usage_in_bytes", "total_rss"
			break
		}
		if f[0] == "0" && f[1] == "" {
			dir, usageFile, rssKey = filepath.Join("/sys/fs/cgroup", f[2]), "memory.current", "anon"
		}
	}
	if dir == "" {
		return 0, 0, fmt.Errorf("no memory cgroup in /proc/%d/cgroup", pid)
	}
	u, err := os.ReadFile(filepath.Join(dir, usageFile))
	if err != nil {
		return 0, 0, err
	}
	if usage, err = strconv.ParseInt(strings.TrimSpace(string(u)), 10, 64); err != nil {
		return 0, 0, err
	}
	st, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, rssKey+" "); ok {
			rss, err = strconv.ParseInt(v, 10, 64)
			return usage, rss, err
		}
	}
	return 0, 0, fmt.Errorf("%s/memory.stat has no %s", dir, rssKey)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// spread is "mean M (min A, max B)" of v.
func spread(v []int64) string {
	if len(v) == 0 {
		return "none"
	}
	var sum int64
	for _, x := range v {
		sum += x
	}
	return fmt.Sprintf("mean %s (min %s, max %s)", mib(sum/int64(len(v))), mib(slices.Min(v)), mib(slices.Max(v)))
}
