package kube

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// A user's objects, each with an agent container (image and command its
// own) and a second container running as another uid.
const (
	userPod = `apiVersion: v1
kind: Pod
metadata:
  name: review
  namespace: team-a
  labels: {app: review}
spec:
  serviceAccountName: reviewer
  containers:
  - name: claude
    image: example.com/agent:2
    command: [claude, -p, "review the change"]
    env:
    - {name: HOME, value: /home/dev}
  - name: logs
    image: example.com/logs:1
    securityContext: {runAsUser: 4000}
`
	userPodJSON = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"review"},
 "spec":{"containers":[{"name":"claude","image":"example.com/agent:2","securityContext":{"runAsUser":1500,"readOnlyRootFilesystem":false}}]}}`
	userDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: agents}
spec:
  selector: {matchLabels: {app: agents}}
  template:
    metadata: {labels: {app: agents}}
    spec:
      securityContext: {runAsUser: 3000}
      initContainers:
      - {name: fetch, image: example.com/fetch:1, securityContext: {runAsUser: 3001}}
      containers:
      - {name: agent, image: example.com/agent:2, securityContext: {runAsUser: 1000}}
      - {name: helper, image: example.com/helper:1}
`
	userPodNonRoot = `apiVersion: v1
kind: Pod
metadata: {name: strict}
spec:
  securityContext: {runAsNonRoot: true, runAsUser: 1000}
  containers:
  - {name: agent, image: example.com/agent:2}
`
	userStatefulSet = `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: agents}
spec:
  serviceName: agents
  selector: {matchLabels: {app: agents}}
  template:
    metadata: {labels: {app: agents}}
    spec:
      containers:
      - {name: agent, image: example.com/agent:2}
`
	userJob = `apiVersion: batch/v1
kind: Job
metadata: {name: nightly}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: agent
        image: example.com/agent:2
        command: [codex, exec, "fix the build"]
        securityContext: {seccompProfile: {type: Unconfined}, capabilities: {drop: [NET_RAW]}}
`
)

func TestInject(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		o     Options
		w     want
		image string
		cmd   []string
		warns []string
	}{
		{"pod", userPod, Options{CredentialSecret: "creds"},
			want{name: "review", namespace: "team-a", uid: 1000, secret: "creds", agentName: "claude"},
			"example.com/agent:2", []string{"claude", "-p", "review the change"},
			[]string{"serviceAccountName reviewer replaced by the session's review (no token mounted)"}},
		{"pod json", userPodJSON, Options{Name: "r2", Namespace: "team-b"},
			want{name: "r2", namespace: "team-b", uid: 1500, agentName: "claude"}, "example.com/agent:2", nil, nil},
		{"deployment", userDeployment, Options{AgentUID: new(int64(1000)), WorkspaceClaim: "ws"},
			want{name: "agents", uid: 1000, agentName: "agent"}, "example.com/agent:2", nil, nil},
		{"pod runAsNonRoot", userPodNonRoot, Options{},
			want{name: "strict", uid: 1000, agentName: "agent"}, "example.com/agent:2", nil, nil},
		{"statefulset", userStatefulSet, Options{AgentUID: new(int64(1234))},
			want{name: "agents", uid: 1234, agentName: "agent"}, "example.com/agent:2", nil, nil},
		{"job", userJob, Options{},
			want{name: "nightly", uid: 1000, agentName: "agent"}, "example.com/agent:2", []string{"codex", "exec", "fix the build"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Policy, o.Image = readPolicy(t, "codex"), testImage
			m, err := Inject(o, strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			tc.w.allowDomains = "api.openai.com,proxy.golang.org"
			checkManifests(t, roundTrip(t, m), tc.w)
			if !slices.Equal(m.Warnings, tc.warns) {
				t.Errorf("warnings %q, want %q", m.Warnings, tc.warns)
			}
			_, podMeta, spec := parts(m.Workload)
			agent := spec.Containers[0]
			if agent.Image != tc.image || !slices.Equal(agent.Command, tc.cmd) {
				t.Errorf("agent image %q command %q: the user's must be kept", agent.Image, agent.Command)
			}
			for k, v := range map[string]string{"app": "", SessionLabel: tc.w.name} {
				if _, had := podMeta.Labels[k]; v == "" && !had && tc.name != "job" && tc.name != "pod json" && tc.name != "pod runAsNonRoot" {
					t.Errorf("pod label %s lost", k)
				} else if v != "" && podMeta.Labels[k] != v {
					t.Errorf("pod label %s = %q", k, podMeta.Labels[k])
				}
			}
			// The user's init containers run after ours.
			for i, c := range spec.InitContainers[2:] {
				if c.Name == NetinitName || c.Name == ProxyName {
					t.Errorf("init container %d is %s", i+2, c.Name)
				}
			}
			switch tc.name {
			case "pod":
				if envValue(agent.Env, "HOME") != "/home/dev" || !hasMount(&agent, "/home/dev") || !hasMount(&agent, "/tmp") {
					t.Errorf("the user's HOME /home/dev is not the writable one: %v %v", agent.Env, agent.VolumeMounts)
				}
			case "pod json":
				// A writable root the user asked for is kept, and then no
				// emptyDir hides the image's home.
				if sc := agent.SecurityContext; *sc.ReadOnlyRootFilesystem || hasMount(&agent, AgentHome) {
					t.Errorf("readOnlyRootFilesystem %v mounts %v", *sc.ReadOnlyRootFilesystem, agent.VolumeMounts)
				}
			case "pod runAsNonRoot":
				if !isBool(spec.SecurityContext.RunAsNonRoot, true) || !isBool(spec.InitContainers[0].SecurityContext.RunAsNonRoot, false) {
					t.Errorf("the pod's runAsNonRoot must be kept and netinit's own override it")
				}
			case "deployment":
				d := m.Workload.(*appsv1.Deployment)
				if d.Spec.Selector.MatchLabels["app"] != "agents" || len(d.Spec.Selector.MatchLabels) != 1 {
					t.Errorf("selector changed: %v", d.Spec.Selector.MatchLabels)
				}
				if !hasMount(&agent, WorkspaceDir) || *spec.SecurityContext.RunAsUser != 3000 {
					t.Errorf("workspace claim not mounted, or the pod's runAsUser changed")
				}
			case "job":
				j := m.Workload.(*batchv1.Job)
				if sc := j.Spec.Template.Spec.Containers[0].SecurityContext; sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					t.Errorf("agent seccomp %s", sc.SeccompProfile.Type)
				}
			}
		})
	}
}

// TestInjectRefusals has a row for every spec inject cannot make safe,
// with the one line it refuses with.
func TestInjectRefusals(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + spec
	}
	const agent = "  containers:\n  - {name: agent, image: a}\n"
	seen := map[string]bool{}
	for _, tc := range []struct {
		name string
		in   string
		o    Options
		is   error
		want string
	}{
		{"hostNetwork", pod("  hostNetwork: true\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: hostNetwork: true: the agent would be in the node's network namespace, outside the pod's rules"},
		{"hostPID", pod("  hostPID: true\n" + agent), Options{}, ErrUnsafe, "cannot be made safe: hostPID: true: the agent would see the node's processes"},
		{"hostIPC", pod("  hostIPC: true\n" + agent), Options{}, ErrUnsafe, "cannot be made safe: hostIPC: true: the agent would share the node's IPC namespace"},
		{"shareProcessNamespace", pod("  shareProcessNamespace: true\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: shareProcessNamespace: true: the agent would see the sidecar's processes"},
		{"no containers", pod("  containers: []\n"), Options{}, ErrUnsafe, "cannot be made safe: no containers: the first container is the agent"},
		{"ephemeral", pod(agent + "  ephemeralContainers:\n  - {name: debug, image: d}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: ephemeralContainers: debug: not checked for the agent's uid"},
		{"named barry-netinit", pod(agent + "  - {name: barry-netinit, image: x, securityContext: {runAsUser: 5}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container barry-netinit: the name is the session's own barry-netinit"},
		{"named barry-proxy", pod("  initContainers:\n  - {name: barry-proxy, image: x}\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: container barry-proxy: the name is the session's own barry-proxy"},
		{"privileged agent", pod("  containers:\n  - {name: agent, image: a, securityContext: {privileged: true}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent: privileged"},
		{"privileged other", pod(agent + "  - {name: o, image: x, securityContext: {runAsUser: 5, privileged: true}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container o: privileged"},
		{"privilege escalation", pod("  containers:\n  - {name: agent, image: a, securityContext: {allowPrivilegeEscalation: true}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent: allowPrivilegeEscalation: true"},
		{"added capability", pod("  containers:\n  - {name: agent, image: a, securityContext: {capabilities: {add: [NET_RAW]}}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent: adds capability NET_RAW"},
		{"init adds capability", pod("  initContainers:\n  - {name: i, image: x, securityContext: {runAsUser: 5, capabilities: {add: [NET_ADMIN]}}}\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: container i: adds capability NET_ADMIN"},
		{"agent uid differs", pod("  containers:\n  - {name: agent, image: a, securityContext: {runAsUser: 1500}}\n"), Options{AgentUID: new(int64(1000))}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): runAsUser 1500, not the agent uid 1000"},
		{"second container as agent uid", pod(agent + "  - {name: o, image: x, securityContext: {runAsUser: 1000}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container o: runs as the agent uid 1000"},
		{"init container as agent uid", pod("  initContainers:\n  - {name: i, image: x, securityContext: {runAsUser: 1000}}\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: container i: runs as the agent uid 1000"},
		{"pod uid is the agent's", pod("  securityContext: {runAsUser: 1000}\n" + agent + "  - {name: o, image: x}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container o: runs as the agent uid 1000"},
		{"second container image user", pod(agent + "  - {name: o, image: x}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container o: no runAsUser (its image's user could be the agent uid 1000); set securityContext.runAsUser"},
		{"volume named barry-run", pod(agent + "  volumes:\n  - {name: barry-run, emptyDir: {}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: volume barry-run: the name is the session's own"},
		{"volume named workspace with a claim", pod(agent + "  volumes:\n  - {name: workspace, emptyDir: {}}\n"), Options{WorkspaceClaim: "c"}, ErrUnsafe,
			"cannot be made safe: volume workspace: the name is the session's own"},
		{"workspace already mounted", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: w, mountPath: /workspace/}]}\n  volumes:\n  - {name: w, emptyDir: {}}\n"), Options{WorkspaceClaim: "c"}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): already mounts /workspace, where --workspace-claim goes"},
		{"agent hostPath", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: d, mountPath: /d}]}\n  volumes:\n  - {name: d, hostPath: {path: /var/run/docker.sock}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts hostPath /var/run/docker.sock"},
		{"agent mounts the credential Secret", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: s, mountPath: /s}]}\n  volumes:\n  - {name: s, secret: {secretName: creds}}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts the credential Secret creds"},
		{"agent projects the credential Secret", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: s, mountPath: /s}]}\n  volumes:\n  - {name: s, projected: {sources: [{secret: {name: creds}}]}}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts the credential Secret creds"},
		{"agent env from the credential Secret", pod("  containers:\n  - {name: agent, image: a, env: [{name: T, valueFrom: {secretKeyRef: {name: creds, key: t}}}]}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): reads the credential Secret creds in its environment"},
		{"agent envFrom the credential Secret", pod("  containers:\n  - {name: agent, image: a, envFrom: [{secretRef: {name: creds}}]}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): reads the credential Secret creds in its environment"},
		// A mount by the name of a volume the session adds (a read-write
		// barry-run would let the agent replace hooks.sock).
		{"agent mounts barry-credentials by name", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: barry-credentials, mountPath: /x, readOnly: true}]}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts barry-credentials, the session's own volume"},
		{"agent mounts barry-run writable by name", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: barry-run, mountPath: /x}]}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts barry-run, the session's own volume"},
		{"other container mounts barry-proxy-tmp", pod(agent + "  - {name: o, image: x, securityContext: {runAsUser: 5}, volumeMounts: [{name: barry-proxy-tmp, mountPath: /x}]}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container o: mounts barry-proxy-tmp, the session's own volume"},
		// Only the sidecar reads the Secret: a container that copies it
		// to a volume the agent mounts is refused.
		{"init container mounts the credential Secret", pod("  initContainers:\n  - {name: i, image: x, securityContext: {runAsUser: 2000}, volumeMounts: [{name: s, mountPath: /s}]}\n" + agent + "  volumes:\n  - {name: s, secret: {secretName: creds}}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container i: mounts the credential Secret creds"},
		{"other container env from the credential Secret", pod(agent + "  - {name: o, image: x, securityContext: {runAsUser: 5}, envFrom: [{secretRef: {name: creds}}]}\n"), Options{CredentialSecret: "creds"}, ErrUnsafe,
			"cannot be made safe: container o: reads the credential Secret creds in its environment"},
		// The sidecar sees the agent's volumes at their paths: one over
		// its programs would run as the sidecar.
		{"agent volume over /usr/local/sbin", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: t, mountPath: /usr/local/sbin}]}\n  volumes:\n  - {name: t, emptyDir: {}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts t at /usr/local/sbin, a system path (/usr) the sidecar would run from, seeing the agent's copy"},
		{"agent volume over /etc/ssl", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: t, mountPath: /etc/ssl/}]}\n  volumes:\n  - {name: t, emptyDir: {}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts t at /etc/ssl/, a system path (/etc) the sidecar would run from, seeing the agent's copy"},
		{"agent service account token", pod("  containers:\n  - {name: agent, image: a, volumeMounts: [{name: t, mountPath: /t}]}\n  volumes:\n  - {name: t, projected: {sources: [{serviceAccountToken: {path: token}}]}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): mounts a service account token (volume t); the session has no API credentials"},
		{"agent unmasked proc", pod("  containers:\n  - {name: agent, image: a, securityContext: {procMount: Unmasked}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): procMount: Unmasked (the runtime's masked /proc paths would be readable)"},
		{"pod AppArmor unconfined", pod("  securityContext: {appArmorProfile: {type: Unconfined}}\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): appArmorProfile: Unconfined"},
		{"agent SELinux spc_t", pod("  containers:\n  - {name: agent, image: a, securityContext: {seLinuxOptions: {type: spc_t}}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): seLinuxOptions type spc_t (a super-privileged container)"},
		{"agent group the sidecar's", pod("  containers:\n  - {name: agent, image: a, securityContext: {runAsGroup: 1337}}\n"), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): runAsGroup is the sidecar's gid 1337"},
		{"supplemental group the sidecar's", pod("  securityContext: {supplementalGroups: [5, 1337]}\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): a supplemental group is the sidecar's gid 1337"},
		{"fsGroup the sidecar's", pod("  securityContext: {fsGroup: 1337}\n" + agent), Options{}, ErrUnsafe,
			"cannot be made safe: container agent (the agent): fsGroup is the sidecar's gid 1337"},
		{"claim template named barry-run", "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec:\n      containers: [{name: agent, image: a}]\n  volumeClaimTemplates:\n  - metadata: {name: barry-run}\n", Options{}, ErrUnsafe,
			"cannot be made safe: volumeClaimTemplates barry-run: the name is the session's own"},
		{"agent uid 0", pod("  containers:\n  - {name: agent, image: a, securityContext: {runAsUser: 0}}\n"), Options{}, ErrOptions,
			"invalid options: agent uid 0: the agent must not be root"},
		{"agent uid 1337", pod(agent), Options{AgentUID: new(ProxyUID)}, ErrOptions,
			"invalid options: agent uid 1337: the proxy's uid; the agent's must differ"},
		{"pod uid 0 for the agent", pod("  securityContext: {runAsUser: 0}\n" + agent), Options{}, ErrOptions,
			"invalid options: agent uid 0: the agent must not be root"},
		{"namespace differs", "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: a}\nspec:\n" + agent, Options{Namespace: "b"}, ErrOptions,
			"invalid options: --namespace b: the object's namespace is a"},
		{"no name", "apiVersion: v1\nkind: Pod\nmetadata: {generateName: p-}\nspec:\n" + agent, Options{}, ErrOptions,
			"invalid options: the object has no metadata.name; give --name"},
	} {
		if seen[tc.in+tc.want] {
			t.Fatalf("row %s repeats an earlier row", tc.name)
		}
		seen[tc.in+tc.want] = true
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Policy, o.Image = readPolicy(t, "codex"), testImage
			m, err := Inject(o, strings.NewReader(tc.in))
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v (manifests %v)", err, tc.is, m)
			}
			if err.Error() != tc.want {
				t.Errorf("err = %q\nwant  %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("err has more than one line")
			}
		})
	}
}

// decodeRows are inputs Decode refuses; FuzzInject seeds from them.
var decodeRows = []struct {
	name, in, want string
}{
	{"empty", "", "decode: no object"},
	{"comments only", "# nothing\n---\n", "decode: no object"},
	{"unknown field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: a, image: a, privilegd: true}]\n",
		`decode: Pod: unknown field "spec.containers[0].privilegd"`},
	{"unknown top field", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spek":{}}`,
		`decode: Pod: unknown field "spek"`},
	{"duplicate field", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  hostNetwork: false\n  hostNetwork: true\n  containers: [{name: a, image: a}]\n",
		`decode: yaml: unmarshal errors:
  line 6: key "hostNetwork" already set in map`},
	{"duplicate JSON field", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"a","image":"a"}],"hostNetwork":false,"hostNetwork":true}}`,
		`decode: yaml: unmarshal errors:
  line 1: key "hostNetwork" already set in map`},
	{"field in another case", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  HostNetwork: true\n  containers: [{name: a, image: a}]\n",
		`decode: Pod: unknown field "spec.HostNetwork"`},
	{"apiVersion in another case", "ApiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
		`decode: apiVersion "" kind "Pod": want a v1 Pod, an apps/v1 Deployment or StatefulSet, or a batch/v1 Job`},
	{"two documents", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: q}\n",
		"decode: more than one document: give one object"},
	{"other kind", "apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: p}\n",
		`decode: apiVersion "apps/v1" kind "DaemonSet": want a v1 Pod, an apps/v1 Deployment or StatefulSet, or a batch/v1 Job`},
	{"old apiVersion", "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: p}\n",
		`decode: apiVersion "extensions/v1beta1" kind "Deployment": want a v1 Pod, an apps/v1 Deployment or StatefulSet, or a batch/v1 Job`},
	{"wrong type", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {hostNetwork: yes please}\n",
		`decode: Pod: json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool`},
	{"a list", "- 1\n- 2\n", `decode: json: cannot unmarshal array into Go value of type v1.TypeMeta`},
}

func TestDecodeStrict(t *testing.T) {
	for _, tc := range decodeRows {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("err = %v, want ErrDecode", err)
			}
			if err.Error() != tc.want {
				t.Errorf("err = %q\nwant  %q", err, tc.want)
			}
		})
	}
	big := bytes.Repeat([]byte("#"), MaxInput+1)
	if _, err := Inject(Options{}, bytes.NewReader(big)); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized input: %v", err)
	}
}

// FuzzInject feeds what a user might pipe in to Inject. Property: no
// panic; an error is one of Inject's kinds; an injected object is the
// session's pod by every check of checkManifests, and decodes strictly
// back from its YAML.
func FuzzInject(f *testing.F) {
	for _, s := range []string{userPod, userPodJSON, userPodNonRoot, userDeployment, userStatefulSet, userJob} {
		f.Add([]byte(s))
	}
	for _, r := range decodeRows {
		f.Add([]byte(r.in))
	}
	pol := readPolicy(f, "codex")
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Inject(Options{Policy: pol, Image: testImage}, bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrDecode) && !errors.Is(err, ErrUnsafe) && !errors.Is(err, ErrOptions) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		_, _, spec := parts(m.Workload)
		uid := *spec.Containers[0].SecurityContext.RunAsUser
		back := roundTrip(t, m)
		meta, _, _ := parts(back.Workload)
		checkManifests(t, back, want{name: m.ServiceAccount.Name, namespace: meta.Namespace, uid: uid,
			allowDomains: "api.openai.com,proxy.golang.org", agentName: spec.Containers[0].Name})
	})
}

// TestInjectCredentials: with a policy naming credentials, the agent's
// own variable of a credential's name (a literal here: the real value in
// the pod's spec) is dropped, its command wrapped to read the
// placeholders, the trust variables set, its JAVA_TOOL_OPTIONS kept before
// the truststore's; an agent with no command is refused.
func TestInjectCredentials(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata: {name: review}
spec:
  containers:
  - name: claude
    image: example.com/agent:2
    command: [claude, -p, "review the change"]
    args: [--verbose]
    env:
    - {name: GITHUB_TOKEN, value: ghp_thisIsTheRealValueInTheSpec000000000}
    - {name: JAVA_TOOL_OPTIONS, value: -Xmx1g}
`
	m, err := Inject(Options{Policy: readPolicy(t, "claude-code"), Image: testImage, CredentialSecret: "gh"}, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	checkManifests(t, roundTrip(t, m), want{name: "review", uid: 1000, secret: "gh", agentName: "claude",
		allowDomains: "api.anthropic.com,api.github.com,github.com", credentials: [][2]string{{"GITHUB_TOKEN", "github-token"}}})
	_, _, spec := parts(m.Workload)
	agent := spec.Containers[0]
	if want := []string{"/bin/sh", "-c", PlaceholderWrapper([]string{"GITHUB_TOKEN"}), "claude", "-p", "review the change"}; !slices.Equal(agent.Command, want) || !slices.Equal(agent.Args, []string{"--verbose"}) {
		t.Errorf("agent command %q args %q", agent.Command, agent.Args)
	}
	if got := envValue(agent.Env, "JAVA_TOOL_OPTIONS"); !strings.HasPrefix(got, "-Xmx1g -Djavax.net.ssl.trustStore=") {
		t.Errorf("JAVA_TOOL_OPTIONS %q: the user's options first", got)
	}
	var b bytes.Buffer
	if err := m.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "thisIsTheRealValue") {
		t.Errorf("the agent's literal credential is still in the manifests")
	}

	_, err = Inject(Options{Policy: readPolicy(t, "claude-code"), Image: testImage, CredentialSecret: "gh"}, strings.NewReader(userStatefulSet))
	if want := "cannot be made safe: container agent (the agent): no command; the policy names credentials (GITHUB_TOKEN) and the agent's command is wrapped to read their placeholders: set command to its image's entrypoint"; err == nil || err.Error() != want {
		t.Errorf("an agent with no command: err = %v, want %q", err, want)
	}
}
