package kube

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const testImage = "ghcr.io/barry-rocks/sandboxd:test"

func readPolicy(t testing.TB, harness string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", harness+".policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decodeStream splits a WriteYAML stream into its documents and decodes
// each strictly (unknown and duplicate fields fail) into the k8s.io/api
// type its place in the stream calls for: ConfigMap, ServiceAccount,
// NetworkPolicy, then the workload of workload's type.
func decodeStream(t testing.TB, stream []byte, workload runtime.Object) *Manifests {
	t.Helper()
	var docs [][]byte
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		d, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("split: %v", err)
		}
		docs = append(docs, d)
	}
	m := &Manifests{ConfigMap: &corev1.ConfigMap{}, ServiceAccount: &corev1.ServiceAccount{},
		NetworkPolicy: &networkingv1.NetworkPolicy{}, Workload: workload}
	objs := m.Objects()
	if len(docs) != len(objs) {
		t.Fatalf("%d documents, want %d:\n%s", len(docs), len(objs), stream)
	}
	for i, d := range docs {
		js, err := yaml.YAMLToJSONStrict(d)
		if err == nil {
			err = unmarshalStrict(js, objs[i])
		}
		if err != nil {
			t.Fatalf("document %d does not decode strictly into %T: %v\n%s", i, objs[i], err, d)
		}
	}
	return m
}

// emptyOf returns a new object of obj's type.
func emptyOf(obj runtime.Object) runtime.Object {
	switch obj.(type) {
	case *corev1.Pod:
		return &corev1.Pod{}
	case *appsv1.Deployment:
		return &appsv1.Deployment{}
	case *appsv1.StatefulSet:
		return &appsv1.StatefulSet{}
	case *batchv1.Job:
		return &batchv1.Job{}
	}
	panic("emptyOf")
}

// want is what checkManifests holds a session's manifests to.
type want struct {
	name, namespace string
	uid             int64
	secret          string
	allowDomains    string
	agentName       string
	// credentials are the policy's credential variables, each with its
	// Secret key.
	credentials [][2]string
	// rendered is true for Render's manifests (Inject's keep some of the
	// user's choices: a Deployment's selector, a writable root).
	rendered bool
}

// roundTrip writes m and decodes it back strictly, checking that nothing
// is lost on the way.
func roundTrip(t testing.TB, m *Manifests) *Manifests {
	t.Helper()
	var b bytes.Buffer
	if err := m.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	back := decodeStream(t, b.Bytes(), emptyOf(m.Workload))
	for i, o := range m.Objects() {
		// EquateEmpty: an empty list the input gave is left out, as
		// Kubernetes reads it.
		if diff := cmp.Diff(o, back.Objects()[i], cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("object %d changed on the way through YAML (-had +decoded):\n%s", i, diff)
		}
	}
	return back
}

// checkManifests asserts every security field of a session's manifests.
func checkManifests(t testing.TB, m *Manifests, w want) {
	t.Helper()
	errorf := func(format string, a ...any) { t.Helper(); t.Errorf(format, a...) }
	sel := map[string]string{SessionLabel: w.name}

	// ConfigMap, ServiceAccount, NetworkPolicy.
	if m.ConfigMap.Name != w.name+"-policy" || m.ConfigMap.Namespace != w.namespace || len(m.ConfigMap.Data) != 1 || m.ConfigMap.Data[PolicyKey] == "" {
		errorf("ConfigMap %s/%s data keys %v", m.ConfigMap.Namespace, m.ConfigMap.Name, m.ConfigMap.Data)
	}
	if sa := m.ServiceAccount; sa.Name != w.name || sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		errorf("ServiceAccount %s automount %v", sa.Name, sa.AutomountServiceAccountToken)
	}
	np := m.NetworkPolicy
	if !cmp.Equal(np.Spec.PodSelector.MatchLabels, sel) || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
		errorf("NetworkPolicy selector %v types %v", np.Spec.PodSelector.MatchLabels, np.Spec.PolicyTypes)
	}
	if got := np.Annotations[AllowedDomainsAnnotation]; got != w.allowDomains {
		errorf("NetworkPolicy %s = %q, want %q", AllowedDomainsAnnotation, got, w.allowDomains)
	}
	var rules []string
	for _, r := range np.Spec.Egress {
		to := "anywhere"
		if len(r.To) == 1 && r.To[0].NamespaceSelector != nil && r.To[0].PodSelector != nil {
			to = r.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] + "/" + r.To[0].PodSelector.MatchLabels["k8s-app"]
		} else if len(r.To) != 0 {
			to = "other"
		}
		for _, p := range r.Ports {
			rules = append(rules, to+" "+string(*p.Protocol)+"/"+p.Port.String())
		}
	}
	if want := []string{"kube-system/kube-dns UDP/53", "kube-system/kube-dns TCP/53", "anywhere TCP/443", "anywhere TCP/80"}; !slices.Equal(rules, want) {
		errorf("NetworkPolicy egress %v, want %v", rules, want)
	}

	meta, podMeta, spec := parts(m.Workload)
	if meta.Namespace != w.namespace || podMeta.Labels[SessionLabel] != w.name {
		errorf("workload namespace %q, pod label %q", meta.Namespace, podMeta.Labels[SessionLabel])
	}
	if d, ok := m.Workload.(*appsv1.Deployment); ok {
		// The selector still selects the template's pods: render's is the
		// session label, inject's the user's own.
		for k, v := range d.Spec.Selector.MatchLabels {
			if podMeta.Labels[k] != v {
				errorf("Deployment selector %v does not select the template's labels %v", d.Spec.Selector.MatchLabels, podMeta.Labels)
			}
		}
		if w.rendered && !cmp.Equal(d.Spec.Selector.MatchLabels, sel) {
			errorf("Deployment selector %v, want %v", d.Spec.Selector.MatchLabels, sel)
		}
	}

	// The pod.
	psc := spec.SecurityContext
	switch {
	case spec.ServiceAccountName != w.name:
		errorf("serviceAccountName %q", spec.ServiceAccountName)
	case spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken:
		errorf("automountServiceAccountToken not false")
	case spec.EnableServiceLinks == nil || *spec.EnableServiceLinks:
		errorf("enableServiceLinks not false")
	case spec.HostNetwork || spec.HostPID || spec.HostIPC:
		errorf("host namespaces")
	case psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		errorf("pod seccompProfile %+v", psc)
	case w.rendered && psc.RunAsNonRoot != nil:
		errorf("pod runAsNonRoot set: the init container is root")
	}
	if len(spec.InitContainers) < 2 || spec.InitContainers[0].Name != NetinitName || spec.InitContainers[1].Name != ProxyName {
		t.Fatalf("init containers do not start with %s, %s", NetinitName, ProxyName)
	}
	netinit, proxy, agent := spec.InitContainers[0], spec.InitContainers[1], spec.Containers[0]
	if agent.Name != w.agentName {
		errorf("first container %q, want the agent %q", agent.Name, w.agentName)
	}

	// Capabilities: netinit alone adds one, exactly NET_ADMIN; every
	// container of ours drops ALL.
	all := slices.Concat(spec.InitContainers, spec.Containers)
	for _, c := range all {
		var add []corev1.Capability
		if c.SecurityContext != nil && c.SecurityContext.Capabilities != nil {
			add = c.SecurityContext.Capabilities.Add
		}
		if c.Name == NetinitName {
			if !slices.Equal(add, []corev1.Capability{"NET_ADMIN"}) {
				errorf("%s adds %v, want exactly NET_ADMIN", c.Name, add)
			}
		} else if len(add) > 0 {
			errorf("%s adds %v: only %s may", c.Name, add, NetinitName)
		}
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			errorf("%s privileged", c.Name)
		}
	}
	for _, c := range []corev1.Container{netinit, proxy, agent} {
		sc := c.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			errorf("%s does not drop ALL", c.Name)
			continue
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			errorf("%s allowPrivilegeEscalation not false", c.Name)
		}
		if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			errorf("%s seccompProfile %+v", c.Name, sc.SeccompProfile)
		}
		// Inject keeps a writable root the user's agent asks for.
		if c.Name != agent.Name || w.rendered {
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				errorf("%s root not read-only", c.Name)
			}
		}
	}

	// netinit: root, the agent's uid in its command; its own runAsNonRoot
	// false holds whatever the pod's says.
	if sc := netinit.SecurityContext; !is(sc.RunAsUser, 0) || !isBool(sc.RunAsNonRoot, false) {
		errorf("%s runAsUser %v runAsNonRoot %v", netinit.Name, sc.RunAsUser, sc.RunAsNonRoot)
	}
	if want := []string{"sandboxd", "netinit", "--agent-uid", strconv.FormatInt(w.uid, 10), "--capture-port", "15001", "--dns-port", "15053"}; !slices.Equal(netinit.Command, want) {
		errorf("%s command %q, want %q", netinit.Name, netinit.Command, want)
	}
	if netinit.RestartPolicy != nil || len(netinit.VolumeMounts) != 0 {
		errorf("%s restartPolicy %v mounts %v", netinit.Name, netinit.RestartPolicy, netinit.VolumeMounts)
	}

	// The sidecar: native, ProxyUID, the pod's identity, probes.
	if proxy.RestartPolicy == nil || *proxy.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		errorf("%s restartPolicy %v, want Always", proxy.Name, proxy.RestartPolicy)
	}
	if sc := proxy.SecurityContext; !is(sc.RunAsUser, ProxyUID) || !isBool(sc.RunAsNonRoot, true) || *sc.RunAsUser == w.uid {
		errorf("%s runAsUser %v runAsNonRoot %v", proxy.Name, sc.RunAsUser, sc.RunAsNonRoot)
	}
	wantCmd := []string{"sandboxd", "proxy", "--sidecar", "--policy", "/etc/barry/policy/policy.yaml",
		"--dns-listen", "127.0.0.1:15053", "--capture-listen", "127.0.0.1:15001", "--hook-socket", "/run/barry/hooks.sock",
		"--health-listen", "0.0.0.0:15021", "--audit", "-"}
	if len(w.credentials) > 0 {
		wantCmd = append(wantCmd, "--credential-dir", "/etc/barry/credentials", "--run-dir", "/run/barry")
	}
	wantCmd = append(wantCmd, "--agent-uid", strconv.FormatInt(w.uid, 10))
	if home := envValue(agent.Env, "HOME"); strings.HasPrefix(home, "/") {
		wantCmd = append(wantCmd, "--agent-home", home)
	}
	if !slices.Equal(proxy.Command, wantCmd) {
		errorf("%s command %q, want %q", proxy.Name, proxy.Command, wantCmd)
	}
	fields := map[string]string{}
	for _, e := range proxy.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	if want := map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace", "POD_UID": "metadata.uid",
		"BARRY_SESSION": "metadata.labels['barry.rocks/session']"}; !cmp.Equal(fields, want) {
		errorf("%s downward API env %v", proxy.Name, fields)
	}
	for _, p := range []struct {
		name string
		p    *corev1.Probe
		path string
	}{{"startup", proxy.StartupProbe, "/readyz"}, {"readiness", proxy.ReadinessProbe, "/readyz"}, {"liveness", proxy.LivenessProbe, "/livez"}} {
		if p.p == nil || p.p.HTTPGet == nil || p.p.HTTPGet.Path != p.path || p.p.HTTPGet.Port.IntValue() != 15021 || p.p.HTTPGet.Host != "" {
			errorf("%s %s probe %+v", proxy.Name, p.name, p.p)
		}
	}
	mounts := func(c corev1.Container) map[string]string {
		out := map[string]string{}
		for _, mt := range c.VolumeMounts {
			// The API server refuses two mounts at one path.
			if _, dup := out[mt.MountPath]; dup {
				errorf("%s mounts two volumes at %s", c.Name, mt.MountPath)
			}
			ro := ""
			if mt.ReadOnly {
				ro = " ro"
			}
			out[mt.MountPath] = mt.Name + ro
		}
		return out
	}
	// The sidecar's own: the policy, the socket's volume, its runtime
	// directory; and the agent's volumes, /tmp too, read-only at the same
	// paths (its rulings walk them).
	wantProxy := map[string]string{"/etc/barry/policy": "barry-policy ro", "/run/barry": "barry-run", "/run/barry-proxy": "barry-proxy-tmp"}
	if envValue(proxy.Env, "XDG_RUNTIME_DIR") != "/run/barry-proxy" || envValue(proxy.Env, "TMPDIR") != "/run/barry-proxy" {
		errorf("%s env %v: want XDG_RUNTIME_DIR and TMPDIR its runtime directory", proxy.Name, proxy.Env)
	}
	for p, name := range mounts(agent) {
		if p != "/run/barry" {
			wantProxy[p] = strings.TrimSuffix(name, " ro") + " ro"
		}
	}
	if w.secret != "" {
		wantProxy["/etc/barry/credentials"] = "barry-credentials ro"
	}
	if got := mounts(proxy); !cmp.Equal(got, wantProxy) {
		errorf("%s mounts %v, want %v", proxy.Name, got, wantProxy)
	}

	// The agent: its own non-root uid, the socket's directory read-only.
	if sc := agent.SecurityContext; !is(sc.RunAsUser, w.uid) || !isBool(sc.RunAsNonRoot, true) || sc.RunAsGroup == nil || *sc.RunAsGroup == 0 {
		errorf("agent runAsUser %v runAsGroup %v runAsNonRoot %v", sc.RunAsUser, sc.RunAsGroup, sc.RunAsNonRoot)
	}
	if got := mounts(agent)["/run/barry"]; got != "barry-run ro" {
		errorf("agent's /run/barry is %q, want barry-run read-only", got)
	}
	if envValue(agent.Env, "BARRY_HOOK_SOCKET") != "unix:/run/barry/hooks.sock" || envValue(agent.Env, "HOME") == "" {
		errorf("agent env %v", agent.Env)
	}

	// Credentials: no variable of theirs in the agent's spec (a literal
	// would be the value), the trust variables naming the sidecar's
	// bundle, the command wrapped to read the placeholders.
	var envs []string
	for _, c := range w.credentials {
		envs = append(envs, c[0])
		for _, e := range agent.Env {
			if e.Name == c[0] {
				errorf("agent env holds %s: %+v", c[0], e)
			}
		}
	}
	for _, v := range []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"} {
		if got := envValue(agent.Env, v); (got == "/run/barry/trust/ca-bundle.pem") != (len(envs) > 0) {
			errorf("agent %s = %q with credentials %v", v, got, envs)
		}
	}
	if len(envs) > 0 {
		if !strings.HasSuffix(envValue(agent.Env, "JAVA_TOOL_OPTIONS"), "-Djavax.net.ssl.trustStore=/run/barry/trust/truststore.jks -Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=JKS") {
			errorf("agent JAVA_TOOL_OPTIONS %q", envValue(agent.Env, "JAVA_TOOL_OPTIONS"))
		}
		if len(agent.Command) < 4 || agent.Command[0] != "/bin/sh" || agent.Command[1] != "-c" || agent.Command[2] != PlaceholderWrapper(envs) {
			errorf("agent command %q: not wrapped to read %v", agent.Command, envs)
		}
	} else if len(agent.Command) > 0 && agent.Command[0] == "/bin/sh" && len(agent.Command) > 2 && strings.Contains(agent.Command[2], PlaceholderDir) {
		errorf("agent command %q wrapped without credentials", agent.Command)
	}

	// The Secret: a volume mounted by barry-proxy alone; with
	// credentials, their keys alone.
	secretVols := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == w.secret {
			secretVols[v.Name] = true
			var keys, wantKeys []string
			for _, it := range v.Secret.Items {
				if it.Path != it.Key {
					errorf("Secret item %s at %s", it.Key, it.Path)
				}
				keys = append(keys, it.Key)
			}
			for _, c := range w.credentials {
				if !slices.Contains(wantKeys, c[1]) {
					wantKeys = append(wantKeys, c[1])
				}
			}
			if !slices.Equal(keys, wantKeys) {
				errorf("Secret items %v, want %v", keys, wantKeys)
			}
		}
	}
	if w.secret != "" && len(secretVols) != 1 {
		errorf("credential Secret %s in %d volumes", w.secret, len(secretVols))
	}
	for _, c := range all {
		for _, mt := range c.VolumeMounts {
			if secretVols[mt.Name] && c.Name != ProxyName {
				errorf("%s mounts the credential Secret", c.Name)
			}
		}
	}

	// No other container runs as the agent's uid.
	for _, c := range all {
		if c.Name == agent.Name {
			continue
		}
		if u := containerUID(&c, psc); u == nil || *u == w.uid {
			errorf("%s runs as %v (agent %d)", c.Name, u, w.uid)
		}
	}
}

func is(p *int64, v int64) bool   { return p != nil && *p == v }
func isBool(p *bool, v bool) bool { return p != nil && *p == v }

func TestRenderGolden(t *testing.T) {
	for _, tc := range []struct {
		harness string
		o       Options
		w       want
	}{
		{"claude-code", Options{Image: testImage, Namespace: "agents", CredentialSecret: "github-token"},
			want{name: "barry-claude-code", namespace: "agents", uid: 1000, secret: "github-token", allowDomains: "api.anthropic.com,api.github.com,github.com",
				credentials: [][2]string{{"GITHUB_TOKEN", "github-token"}}}},
		{"codex", Options{Image: testImage, AgentImage: "ghcr.io/example/codex:1", AgentUID: new(int64(2000)), Name: "fix-42", Kind: KindJob, WorkspaceClaim: "fix-42-workspace"},
			want{name: "fix-42", uid: 2000, allowDomains: "api.openai.com,proxy.golang.org"}},
	} {
		t.Run(tc.harness, func(t *testing.T) {
			tc.o.Policy = readPolicy(t, tc.harness)
			m, err := Render(tc.o)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := m.WriteYAML(&b); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", tc.harness+".golden.yaml")
			if *update {
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			g, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update)", err)
			}
			if diff := cmp.Diff(string(g), b.String()); diff != "" {
				t.Errorf("%s differs (-golden +rendered; go test -update rewrites it):\n%s", golden, diff)
			}
			tc.w.agentName, tc.w.rendered = AgentName, true
			checkManifests(t, roundTrip(t, m), tc.w)
			if got := m.ConfigMap.Data[PolicyKey]; got != string(tc.o.Policy) {
				t.Errorf("ConfigMap holds %q, want the file's bytes", got)
			}
		})
	}
}

// TestRenderKinds renders every kind for both harnesses and checks each.
func TestRenderKinds(t *testing.T) {
	for _, h := range []string{"claude-code", "codex"} {
		for _, kind := range []Kind{KindPod, KindDeployment, KindJob} {
			for _, secret := range []string{"", "creds"} {
				t.Run(h+"/"+string(kind)+"/"+secret, func(t *testing.T) {
					m, err := Render(Options{Policy: readPolicy(t, h), Image: testImage, Kind: kind, CredentialSecret: secret})
					// claude-code's policy names a credential: no Secret
					// to read it from refuses.
					if h == "claude-code" && secret == "" {
						if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), "--credential-secret is required") {
							t.Fatalf("err = %v, want the Secret asked for", err)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					var creds [][2]string
					var prefix []string
					if h == "claude-code" {
						creds = [][2]string{{"GITHUB_TOKEN", "github-token"}}
						prefix = []string{"/bin/sh", "-c", PlaceholderWrapper([]string{"GITHUB_TOKEN"})}
					}
					checkManifests(t, roundTrip(t, m), want{name: "barry-" + h, uid: DefaultAgentUID, secret: secret,
						allowDomains: m.NetworkPolicy.Annotations[AllowedDomainsAnnotation], agentName: AgentName, rendered: true, credentials: creds})
					_, _, spec := parts(m.Workload)
					agent := spec.Containers[0]
					if wantProg := map[string]string{"claude-code": "claude", "codex": "codex"}[h]; !slices.Equal(agent.Command, append(prefix, wantProg)) || len(agent.Args) != 0 {
						t.Errorf("agent command %q args %q", agent.Command, agent.Args)
					}
					if agent.WorkingDir != WorkspaceDir || agent.Image != testImage {
						t.Errorf("agent workingDir %q image %q", agent.WorkingDir, agent.Image)
					}
					wantRestart := corev1.RestartPolicyNever
					if kind == KindDeployment {
						wantRestart = corev1.RestartPolicyAlways
					}
					if spec.RestartPolicy != wantRestart {
						t.Errorf("restartPolicy %s", spec.RestartPolicy)
					}
				})
			}
		}
	}
}

func TestRenderWarnings(t *testing.T) {
	pol := []byte("version: 1\nharness: claude-code\nmode: hosted\nbags: {}\ntools: []\ntraits: {}\nbounds:\n  egress: {network: {allowDomains: [github.com], enforce: sandbox}}\nidentity: {name: dev, bounds: [egress]}\n")
	m, err := Render(Options{Policy: pol, Image: testImage})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"harness claude-code: the policy does not allow its API host api.anthropic.com (add it to allowDomains)"}
	if !slices.Equal(m.Warnings, want) {
		t.Errorf("warnings %q, want %q", m.Warnings, want)
	}
}

func TestRenderRefusals(t *testing.T) {
	good := readPolicy(t, "codex")
	for _, tc := range []struct {
		name string
		o    Options
		is   error
		want string
	}{
		{"no image", Options{Policy: good}, ErrOptions, `invalid options: --image "": sandboxd's image is required (no spaces)`},
		{"agent uid 0", Options{Policy: good, Image: testImage, AgentUID: new(int64(0))}, ErrOptions, "invalid options: agent uid 0: the agent must not be root"},
		{"agent uid 1337", Options{Policy: good, Image: testImage, AgentUID: new(ProxyUID)}, ErrOptions, "invalid options: agent uid 1337: the proxy's uid; the agent's must differ"},
		{"agent uid negative", Options{Policy: good, Image: testImage, AgentUID: new(int64(-1))}, ErrOptions, "invalid options: agent uid -1: out of range"},
		{"bad name", Options{Policy: good, Image: testImage, Name: "Not_A_Label"}, ErrOptions, `invalid options: name "Not_A_Label": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`},
		{"bad kind", Options{Policy: good, Image: testImage, Kind: "cronjob"}, ErrOptions, `invalid options: --kind "cronjob": want pod, deployment or job`},
		{"other harness", Options{Policy: good, Image: testImage, Harness: "claude-code"}, ErrOptions, "invalid options: --harness claude-code: the policy's harness is codex"},
		{"bad policy", Options{Policy: []byte("version: 2\n"), Image: testImage}, ErrPolicy, ""},
		{"bad claim", Options{Policy: good, Image: testImage, WorkspaceClaim: "A B"}, ErrOptions, ""},
		{"credentials without a Secret", Options{Policy: credPolicy("{env: GITHUB_TOKEN, hosts: [api.github.com]}"), Image: testImage}, ErrOptions,
			"invalid options: the policy names credentials (GITHUB_TOKEN): --credential-secret is required, the Secret the sidecar reads their values from"},
		{"credential file outside the Secret", Options{Policy: credPolicy("{env: GITHUB_TOKEN, hosts: [api.github.com], file: ~/.config/gh/token}"), Image: testImage, CredentialSecret: "s"}, ErrPolicy,
			"policy: credential GITHUB_TOKEN: file ~/.config/gh/token: in a pod a value is a key of the Secret mounted at /etc/barry/credentials (file /etc/barry/credentials/KEY, or no file for the key GITHUB_TOKEN)"},
		{"credential file below a key", Options{Policy: credPolicy("{env: GITHUB_TOKEN, hosts: [api.github.com], file: /etc/barry/credentials/a/b}"), Image: testImage, CredentialSecret: "s"}, ErrPolicy, ""},
		{"credential the pod sets", Options{Policy: credPolicy("{env: SSL_CERT_FILE, hosts: [api.github.com]}"), Image: testImage, CredentialSecret: "s"}, ErrPolicy,
			"policy: credential SSL_CERT_FILE: the pod sets that variable of the agent itself; name the credential's variable otherwise"},
		{"credential host not allowed", Options{Policy: credPolicy("{env: GITHUB_TOKEN, hosts: [gitlab.com]}"), Image: testImage, CredentialSecret: "s"}, ErrPolicy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(tc.o)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			if tc.want != "" && err.Error() != tc.want {
				t.Errorf("err = %q\nwant  %q", err, tc.want)
			}
		})
	}
}

// credPolicy is a codex policy allowing api.github.com with one
// credential (a flow mapping).
func credPolicy(cred string) []byte {
	return []byte("version: 1\nharness: codex\nmode: hooks\nbags: {}\ntools: []\ntraits: {}\nbounds:\n  egress: {network: {allowDomains: [api.github.com], enforce: sandbox}}\n" +
		"identity: {name: dev, bounds: [egress]}\ncredentials:\n  - " + cred + "\n")
}

// TestObjectMetaNamespace checks the workload and the other objects share
// the namespace given.
func TestObjectMetaNamespace(t *testing.T) {
	m, err := Render(Options{Policy: readPolicy(t, "codex"), Image: testImage, Namespace: "ns1", Kind: KindDeployment})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Objects() {
		acc, err := metaOf(o)
		if err != nil {
			t.Fatal(err)
		}
		if acc.Namespace != "ns1" || acc.Labels[SessionLabel] != "barry-codex" {
			t.Errorf("%T namespace %q labels %v", o, acc.Namespace, acc.Labels)
		}
	}
}

func metaOf(o runtime.Object) (*metav1.ObjectMeta, error) {
	switch x := o.(type) {
	case *corev1.ConfigMap:
		return &x.ObjectMeta, nil
	case *corev1.ServiceAccount:
		return &x.ObjectMeta, nil
	case *networkingv1.NetworkPolicy:
		return &x.ObjectMeta, nil
	}
	m, _, _ := parts(o)
	return m, nil
}
