package kube

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/barry-rocks/sandbox/internal/truststore"
)

// The pod's parts, one builder each. addSession puts them into a pod
// spec: Render's own (a bare agent container) and Inject's (the user's),
// so the two make the same pod around the agent.

// netinitContainer installs the agent uid's redirect and drop rules in the
// pod's network namespace and exits. It is the only container with a
// capability: NET_ADMIN, as root, and nothing else.
func netinitContainer(s *session) corev1.Container {
	return corev1.Container{
		Name:    NetinitName,
		Image:   s.image,
		Command: []string{"sandboxd", "netinit", "--agent-uid", strconv.FormatInt(s.uid, 10), "--capture-port", strconv.Itoa(CapturePort), "--dns-port", strconv.Itoa(DNSPort)},
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                new(int64(0)),
			RunAsNonRoot:             new(false),
			AllowPrivilegeEscalation: new(false),
			ReadOnlyRootFilesystem:   new(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN"}},
			SeccompProfile:           runtimeDefault(),
		},
	}
}

// proxyContainer is the native sidecar (an init container that restarts
// Always: it starts before the agent, and the startup probe holds the
// agent back until it serves, and it stops after the agent). It runs as
// ProxyUID, never the agent's uid, so the agent's rules do not match its
// own connections; it alone mounts the credential Secret.
func proxyContainer(s *session) corev1.Container {
	loop := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	c := corev1.Container{
		Name:  ProxyName,
		Image: s.image,
		Command: []string{"sandboxd", "proxy", "--sidecar",
			"--policy", PolicyDir + "/" + PolicyKey,
			"--dns-listen", loop(DNSPort),
			"--capture-listen", loop(CapturePort),
			"--hook-socket", HookSocket,
			"--health-listen", "0.0.0.0:" + strconv.Itoa(HealthPort),
			"--audit", "-"},
		RestartPolicy: new(corev1.ContainerRestartPolicyAlways),
		Env: []corev1.EnvVar{
			fieldEnv(EnvPodName, "metadata.name"),
			fieldEnv(EnvPodNamespace, "metadata.namespace"),
			fieldEnv(EnvPodUID, "metadata.uid"),
			fieldEnv(EnvSession, "metadata.labels['"+SessionLabel+"']"),
			{Name: "XDG_RUNTIME_DIR", Value: ProxyRuntimeDir},
			{Name: "TMPDIR", Value: ProxyRuntimeDir},
		},
		StartupProbe:   healthProbe(ReadyPath, 1, 60),
		ReadinessProbe: healthProbe(ReadyPath, 5, 3),
		LivenessProbe:  healthProbe(LivePath, 10, 3),
		SecurityContext: &corev1.SecurityContext{
			RunAsUser:                new(ProxyUID),
			RunAsGroup:               new(ProxyUID),
			RunAsNonRoot:             new(true),
			AllowPrivilegeEscalation: new(false),
			ReadOnlyRootFilesystem:   new(true),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           runtimeDefault(),
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: volPolicy, MountPath: PolicyDir, ReadOnly: true},
			{Name: volRun, MountPath: RunDir},
			{Name: volProxyTmp, MountPath: ProxyRuntimeDir},
		},
	}
	if s.credentialSecret != "" {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volCredentials, MountPath: CredentialDir, ReadOnly: true})
	}
	if len(s.credentials) > 0 {
		c.Command = append(c.Command, "--credential-dir", CredentialDir, "--run-dir", RunDir)
	}
	return c
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// healthProbe asks the sidecar's health server on the pod's IP (no host:
// the kubelet's probes come from outside the pod).
func healthProbe(path string, period, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(HealthPort)}},
		PeriodSeconds:    period,
		FailureThreshold: failures,
	}
}

func runtimeDefault() *corev1.SeccompProfile {
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
}

// sessionVolumes are the volumes the sidecar and the agent share or the
// sidecar alone reads.
func sessionVolumes(s *session) []corev1.Volume {
	v := []corev1.Volume{
		{Name: volPolicy, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: s.name + "-policy"}}}},
		{Name: volRun, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: new(resource.MustParse("1Mi"))}}},
	}
	if s.credentialSecret != "" {
		// 0444: readable by the sidecar's uid whatever the pod's fsGroup;
		// no other container mounts it.
		// With credentials, their keys alone: the sidecar sees no other
		// key of the Secret, and a missing one fails the pod's start.
		var items []corev1.KeyToPath
		for _, c := range s.credentials {
			if !slices.ContainsFunc(items, func(k corev1.KeyToPath) bool { return k.Key == c.key }) {
				items = append(items, corev1.KeyToPath{Key: c.key, Path: c.key})
			}
		}
		v = append(v, corev1.Volume{Name: volCredentials, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s.credentialSecret, Items: items, DefaultMode: new(int32(0o444))}}})
	}
	return v
}

// reservedVolumes are the volume names addSession may add.
var reservedVolumes = []string{volPolicy, volRun, volCredentials, volHome, volTmp, volProxyTmp}

// addSession makes spec (with meta, the pod's or the template's metadata)
// the session's pod: the checks of checkSpec, then the session label, the
// pod's own fields, the init container and the sidecar in front of the
// user's init containers, the agent container (the first) confined, and
// the volumes. spec is changed only when it returns nil.
func addSession(meta *metav1.ObjectMeta, spec *corev1.PodSpec, s *session) error {
	if err := checkSpec(spec, s); err != nil {
		return err
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[SessionLabel] = s.name

	spec.ServiceAccountName = s.name
	spec.DeprecatedServiceAccount = ""
	spec.AutomountServiceAccountToken = new(false)
	spec.EnableServiceLinks = new(false)
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	psc := spec.SecurityContext
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
		psc.SeccompProfile = runtimeDefault()
	}
	// runAsNonRoot is never set at pod level here (the init container runs
	// as root); a user's is kept: each of our containers sets its own.
	if psc.FSGroup == nil {
		// The agent's writable volumes (a claim's too) become its group's,
		// and hooks.sock in barry-run the agent's group's.
		psc.FSGroup = new(s.uid)
	}

	spec.InitContainers = append([]corev1.Container{netinitContainer(s), proxyContainer(s)}, spec.InitContainers...)
	agent := &spec.Containers[0]
	confineAgent(agent, s)
	spec.Volumes = append(spec.Volumes, sessionVolumes(s)...)
	if s.workspaceClaim != "" {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: volWorkspace, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.workspaceClaim}}})
		agent.VolumeMounts = append(agent.VolumeMounts, corev1.VolumeMount{Name: volWorkspace, MountPath: WorkspaceDir})
	}
	if *agent.SecurityContext.ReadOnlyRootFilesystem {
		// Every harness writes its state under HOME (Claude Code ~/.claude
		// and ~/.claude.json, Codex ~/.codex, Gemini CLI ~/.gemini, Pi
		// ~/.pi/agent) and its tools write /tmp: both writable, the root
		// not.
		home := envValue(agent.Env, "HOME")
		if path.IsAbs(home) && !hasMount(agent, home) {
			spec.Volumes = append(spec.Volumes, emptyDirVolume(volHome))
			agent.VolumeMounts = append(agent.VolumeMounts, corev1.VolumeMount{Name: volHome, MountPath: home})
		}
		if !hasMount(agent, "/tmp") {
			spec.Volumes = append(spec.Volumes, emptyDirVolume(volTmp))
			agent.VolumeMounts = append(agent.VolumeMounts, corev1.VolumeMount{Name: volTmp, MountPath: "/tmp"})
		}
	}
	sidecarSees(&spec.InitContainers[1], agent, s)
	spec.Volumes = append(spec.Volumes, emptyDirVolume(volProxyTmp))
	return nil
}

// sidecarSees gives the sidecar what its rulings need of the agent: its
// uid (the only peer of the hook socket besides the sidecar's own), its
// HOME ("~/" in file rules), and its volumes, /tmp included, read-only at
// the same paths (a search is ruled on what exists below it: the pod has
// no filesystem layer of sandboxd's). Its own files are in
// ProxyRuntimeDir, which the agent never mounts; checkSpec keeps the
// agent's volumes off the paths the sidecar runs from.
func sidecarSees(px, agent *corev1.Container, s *session) {
	px.Command = append(px.Command, "--agent-uid", strconv.FormatInt(s.uid, 10))
	if home := envValue(agent.Env, "HOME"); path.IsAbs(home) {
		px.Command = append(px.Command, "--agent-home", home)
	}
	for _, m := range agent.VolumeMounts {
		if m.Name == volRun || hasMount(px, m.MountPath) {
			continue
		}
		m.ReadOnly = true
		px.VolumeMounts = append(px.VolumeMounts, m)
	}
}

// confineAgent makes c the agent: its own non-root uid and gid, no
// capability, no privilege escalation, seccomp, a read-only root unless
// the user's spec asks for a writable one, the hook socket's directory
// read-only and BARRY_HOOK_SOCKET naming it, HOME set.
func confineAgent(c *corev1.Container, s *session) {
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	sc := c.SecurityContext
	sc.RunAsUser = new(s.uid)
	if sc.RunAsGroup == nil || *sc.RunAsGroup == 0 {
		sc.RunAsGroup = new(s.uid)
	}
	sc.RunAsNonRoot = new(true)
	sc.Privileged = nil
	sc.AllowPrivilegeEscalation = new(false)
	sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost {
		sc.SeccompProfile = runtimeDefault()
	}
	if sc.ReadOnlyRootFilesystem == nil {
		sc.ReadOnlyRootFilesystem = new(true)
	}
	c.Env = setEnv(c.Env, "BARRY_HOOK_SOCKET", "unix:"+HookSocket)
	if envValue(c.Env, "HOME") == "" {
		c.Env = setEnv(c.Env, "HOME", AgentHome)
	}
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volRun, MountPath: RunDir, ReadOnly: true})
	if len(s.credentials) > 0 {
		credentialAgent(c, s)
	}
}

// credentialAgent gives the agent its credentials' placeholders and the
// sidecar's trust: no variable of a credential's name is left in its spec
// (a literal there would be the real value, in the pod's spec), the trust
// variables name the bundle and truststore the sidecar writes, and its
// command is wrapped to read the placeholders (PlaceholderWrapper).
func credentialAgent(c *corev1.Container, s *session) {
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool {
		return slices.ContainsFunc(s.credentials, func(cr credential) bool { return cr.env == e.Name })
	})
	for _, v := range truststore.BundleVars {
		c.Env = setEnv(c.Env, v, TrustBundle)
	}
	java := strings.TrimSpace(envValue(c.Env, "JAVA_TOOL_OPTIONS") + " " + truststore.JVMOptions(TrustStore))
	c.Env = setEnv(c.Env, "JAVA_TOOL_OPTIONS", java)
	c.Command = append([]string{PlaceholderShell, "-c", PlaceholderWrapper(s.credentialEnvs())}, c.Command...)
}

// credentialEnvs are the credentials' variables, in the policy's order.
func (s *session) credentialEnvs() []string {
	var out []string
	for _, c := range s.credentials {
		out = append(out, c.env)
	}
	return out
}

// PlaceholderWrapper is the script the agent's command runs under (as
// PlaceholderShell -c SCRIPT COMMAND ARGS...) when the policy names
// credentials: it reads each variable's placeholder from PlaceholderDir
// into its environment, exported, and execs the command; a missing
// placeholder ends it (exit 125) with one line and the command never
// runs. A placeholder is not in the pod's spec: it has the length of a
// value that only the sidecar reads.
func PlaceholderWrapper(envs []string) string {
	var b strings.Builder
	for _, e := range envs {
		f := PlaceholderDir + "/" + e
		fmt.Fprintf(&b, "IFS= read -r %s < %s || { echo \"barry: no placeholder for %s in %s (the %s sidecar writes it)\" >&2; exit 125; }; export %s\n", e, f, e, PlaceholderDir, ProxyName, e)
	}
	b.WriteString(`exec "$0" "$@"`)
	return b.String()
}

func emptyDirVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}

// setEnv sets name to value in env, in place of every entry of that name.
func setEnv(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
	env = slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return e.Name == name })
	return append(env, corev1.EnvVar{Name: name, Value: value})
}

// envValue is the literal value of name in env ("" when unset or not a
// literal).
func envValue(env []corev1.EnvVar, name string) string {
	for _, e := range slices.Backward(env) {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// hasMount reports whether c mounts a volume at dir.
func hasMount(c *corev1.Container, dir string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return path.Clean(m.MountPath) == path.Clean(dir) })
}

// checkSpec refuses a pod spec the session cannot make safe. Its checks,
// in order (the first failing one is the refusal):
//  1. no hostNetwork, hostPID, hostIPC or shareProcessNamespace;
//  2. at least one container (the first is the agent), no ephemeral ones;
//  3. no container named as one of ours;
//  4. no container privileged, allowing privilege escalation or adding a
//     capability;
//  5. the agent container's own runAsUser, when set, is the agent uid;
//  6. every other container runs as a known uid (its own runAsUser or the
//     pod's) that is not the agent's: one whose image's user is unknown
//     could be the agent's uid;
//  7. no volume named as one of ours, none at WorkspaceDir when a claim is
//     added;
//  8. no container mounts a volume of the session's by its name, or reads
//     the credential Secret (as a volume, env or envFrom): only the
//     sidecar does;
//  9. the agent mounts no hostPath, no service account token, nothing at
//     a system path (systemPaths: the sidecar, which sees the agent's
//     volumes at the same paths, runs its programs and reads its roots
//     from there), and keeps the runtime's masked /proc, AppArmor and
//     SELinux confinement;
//  10. the agent's groups (its runAsGroup, the pod's, supplemental groups,
//     fsGroup) do not hold the sidecar's gid;
//  11. with credentials, the agent has a command (it is wrapped to read
//     the placeholders).
func checkSpec(spec *corev1.PodSpec, s *session) error {
	refuse := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrUnsafe, fmt.Sprintf(format, a...))
	}
	switch {
	case spec.HostNetwork:
		return refuse("hostNetwork: true: the agent would be in the node's network namespace, outside the pod's rules")
	case spec.HostPID:
		return refuse("hostPID: true: the agent would see the node's processes")
	case spec.HostIPC:
		return refuse("hostIPC: true: the agent would share the node's IPC namespace")
	case spec.ShareProcessNamespace != nil && *spec.ShareProcessNamespace:
		return refuse("shareProcessNamespace: true: the agent would see the sidecar's processes")
	case len(spec.Containers) == 0:
		return refuse("no containers: the first container is the agent")
	case len(spec.EphemeralContainers) > 0:
		return refuse("ephemeralContainers: %s: not checked for the agent's uid", spec.EphemeralContainers[0].Name)
	}

	all := slices.Concat(spec.InitContainers, spec.Containers)
	for _, c := range all {
		if c.Name == NetinitName || c.Name == ProxyName {
			return refuse("container %s: the name is the session's own %s", c.Name, c.Name)
		}
	}
	for _, c := range all {
		sc := c.SecurityContext
		if sc == nil {
			continue
		}
		switch {
		case sc.Privileged != nil && *sc.Privileged:
			return refuse("container %s: privileged", c.Name)
		case sc.AllowPrivilegeEscalation != nil && *sc.AllowPrivilegeEscalation:
			return refuse("container %s: allowPrivilegeEscalation: true", c.Name)
		case sc.Capabilities != nil && len(sc.Capabilities.Add) > 0:
			return refuse("container %s: adds capability %s", c.Name, sc.Capabilities.Add[0])
		}
	}

	agent := &spec.Containers[0]
	if u := containerUID(agent, nil); u != nil && *u != s.uid {
		return refuse("container %s (the agent): runAsUser %d, not the agent uid %d", agent.Name, *u, s.uid)
	}
	for _, c := range all {
		if c.Name == agent.Name {
			continue
		}
		u := containerUID(&c, spec.SecurityContext)
		switch {
		case u == nil:
			return refuse("container %s: no runAsUser (its image's user could be the agent uid %d); set securityContext.runAsUser", c.Name, s.uid)
		case *u == s.uid:
			return refuse("container %s: runs as the agent uid %d", c.Name, s.uid)
		}
	}

	for _, v := range spec.Volumes {
		if slices.Contains(reservedVolumes, v.Name) || (s.workspaceClaim != "" && v.Name == volWorkspace) {
			return refuse("volume %s: the name is the session's own", v.Name)
		}
	}
	if s.workspaceClaim != "" && hasMount(agent, WorkspaceDir) {
		return refuse("container %s (the agent): already mounts %s, where --workspace-claim goes", agent.Name, WorkspaceDir)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v
	}
	for _, c := range all {
		label := c.Name
		if c.Name == agent.Name {
			label += " (the agent)"
		}
		for _, m := range c.VolumeMounts {
			switch v := vols[m.Name]; {
			case slices.Contains(reservedVolumes, m.Name) || (s.workspaceClaim != "" && m.Name == volWorkspace):
				return refuse("container %s: mounts %s, the session's own volume", label, m.Name)
			case s.credentialSecret != "" && volumeReadsSecret(v, s.credentialSecret):
				return refuse("container %s: mounts the credential Secret %s", label, s.credentialSecret)
			}
		}
		if s.credentialSecret != "" && containerEnvReadsSecret(&c, s.credentialSecret) {
			return refuse("container %s: reads the credential Secret %s in its environment", label, s.credentialSecret)
		}
	}
	for _, m := range agent.VolumeMounts {
		v := vols[m.Name]
		switch {
		case v.HostPath != nil:
			return refuse("container %s (the agent): mounts hostPath %s", agent.Name, v.HostPath.Path)
		case volumeHasToken(v):
			return refuse("container %s (the agent): mounts a service account token (volume %s); the session has no API credentials", agent.Name, m.Name)
		case systemPath(m.MountPath) != "":
			return refuse("container %s (the agent): mounts %s at %s, a system path (%s) the sidecar would run from, seeing the agent's copy", agent.Name, m.Name, m.MountPath, systemPath(m.MountPath))
		}
	}
	if why := weakened(agent, spec.SecurityContext); why != "" {
		return refuse("container %s (the agent): %s", agent.Name, why)
	}
	if g := sidecarGroup(agent, spec.SecurityContext); g != "" {
		return refuse("container %s (the agent): %s is the sidecar's gid %d", agent.Name, g, ProxyUID)
	}
	if len(s.credentials) > 0 && len(agent.Command) == 0 {
		return refuse("container %s (the agent): no command; the policy names credentials (%s) and the agent's command is wrapped to read their placeholders: set command to its image's entrypoint", agent.Name, s.credentials[0].env)
	}
	return nil
}

// containerUID is the uid c runs as by its spec: its own runAsUser, else
// the pod's (psc; nil to ask for the container's own alone); nil when the
// spec leaves it to the image.
func containerUID(c *corev1.Container, psc *corev1.PodSecurityContext) *int64 {
	if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
		return c.SecurityContext.RunAsUser
	}
	if psc != nil {
		return psc.RunAsUser
	}
	return nil
}

// systemPaths are where the sidecar's image keeps its programs, libraries,
// trust roots and runtime: an agent's volume there would be the sidecar's
// too (sidecarSees), its files run or read by uid ProxyUID.
var systemPaths = []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/run", "/var/run", "/proc", "/sys", "/dev"}

// systemPath is the entry of systemPaths that dir is at or below ("/" for
// the root itself), or "".
func systemPath(dir string) string {
	d := path.Clean("/" + dir)
	if d == "/" {
		return "/"
	}
	for _, p := range systemPaths {
		if d == p || strings.HasPrefix(d, p+"/") {
			return p
		}
	}
	return ""
}

// volumeHasToken reports whether v projects a service account token.
func volumeHasToken(v corev1.Volume) bool {
	return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(p corev1.VolumeProjection) bool { return p.ServiceAccountToken != nil })
}

// weakened says how c's (or the pod's, psc) security context lifts the
// runtime's confinement of a container: an unmasked /proc, AppArmor
// unconfined, SELinux's super-privileged type; "" when it does not.
func weakened(c *corev1.Container, psc *corev1.PodSecurityContext) string {
	var aa *corev1.AppArmorProfile
	var se *corev1.SELinuxOptions
	if psc != nil {
		aa, se = psc.AppArmorProfile, psc.SELinuxOptions
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.ProcMount != nil && *sc.ProcMount == corev1.UnmaskedProcMount {
			return "procMount: Unmasked (the runtime's masked /proc paths would be readable)"
		}
		if sc.AppArmorProfile != nil {
			aa = sc.AppArmorProfile
		}
		if sc.SELinuxOptions != nil {
			se = sc.SELinuxOptions
		}
	}
	switch {
	case aa != nil && aa.Type == corev1.AppArmorProfileTypeUnconfined:
		return "appArmorProfile: Unconfined"
	case se != nil && se.Type == "spc_t":
		return "seLinuxOptions type spc_t (a super-privileged container)"
	}
	return ""
}

// sidecarGroup names the agent's group setting that is ProxyUID (the
// sidecar's gid), or "".
func sidecarGroup(c *corev1.Container, psc *corev1.PodSecurityContext) string {
	if c.SecurityContext != nil && c.SecurityContext.RunAsGroup != nil {
		if *c.SecurityContext.RunAsGroup == ProxyUID {
			return "runAsGroup"
		}
	} else if psc != nil && psc.RunAsGroup != nil && *psc.RunAsGroup == ProxyUID {
		return "the pod's runAsGroup"
	}
	if psc != nil {
		if slices.Contains(psc.SupplementalGroups, ProxyUID) {
			return "a supplemental group"
		}
		if psc.FSGroup != nil && *psc.FSGroup == ProxyUID {
			return "fsGroup"
		}
	}
	return ""
}

func volumeReadsSecret(v corev1.Volume, name string) bool {
	if v.Secret != nil && v.Secret.SecretName == name {
		return true
	}
	if v.Projected != nil {
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && src.Secret.Name == name {
				return true
			}
		}
	}
	return false
}

func containerEnvReadsSecret(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == name {
			return true
		}
	}
	for _, e := range c.EnvFrom {
		if e.SecretRef != nil && e.SecretRef.Name == name {
			return true
		}
	}
	return false
}
