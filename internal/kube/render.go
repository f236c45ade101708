package kube

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Manifests are a session's objects, in the order they are applied: the
// ConfigMap, the ServiceAccount and the NetworkPolicy before the workload
// whose pods need them.
type Manifests struct {
	ConfigMap      *corev1.ConfigMap
	ServiceAccount *corev1.ServiceAccount
	NetworkPolicy  *networkingv1.NetworkPolicy
	// Workload is a *corev1.Pod, *appsv1.Deployment, *appsv1.StatefulSet
	// or *batchv1.Job.
	Workload runtime.Object
	// Warnings are what the manifests cannot fix (a policy that does not
	// allow the harness's API host, a replaced ServiceAccount), one line
	// each.
	Warnings []string
}

// Objects returns m's objects in order.
func (m *Manifests) Objects() []runtime.Object {
	return []runtime.Object{m.ConfigMap, m.ServiceAccount, m.NetworkPolicy, m.Workload}
}

// Render makes a new session's manifests: the agent container runs the
// harness's program (args left to the user) in WorkspaceDir, as Kind.
func Render(o Options) (*Manifests, error) {
	uid := DefaultAgentUID
	if o.AgentUID != nil {
		uid = *o.AgentUID
	}
	kind := o.Kind
	if kind == "" {
		kind = KindPod
	}
	if kind != KindPod && kind != KindDeployment && kind != KindJob {
		return nil, fmt.Errorf("%w: --kind %q: want pod, deployment or job", ErrOptions, kind)
	}
	s, err := newSession(o, o.Name, uid)
	if err != nil {
		return nil, err
	}
	image := o.AgentImage
	if image == "" {
		image = o.Image
	}
	agent := corev1.Container{Name: AgentName, Image: image, WorkingDir: WorkspaceDir}
	if s.program != "" {
		agent.Command = []string{s.program}
	}
	spec := corev1.PodSpec{Containers: []corev1.Container{agent}, RestartPolicy: corev1.RestartPolicyNever}
	if kind == KindDeployment {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.workspaceClaim == "" {
		spec.Volumes = []corev1.Volume{emptyDirVolume(volWorkspace)}
		spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: volWorkspace, MountPath: WorkspaceDir}}
	}
	meta := metav1.ObjectMeta{Name: s.name, Namespace: s.namespace, Labels: map[string]string{SessionLabel: s.name}}
	podMeta := metav1.ObjectMeta{}
	if err := addSession(&podMeta, &spec, s); err != nil {
		return nil, err
	}
	m := s.manifests()
	switch kind {
	case KindPod:
		meta.Labels = podMeta.Labels
		m.Workload = &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"), ObjectMeta: meta, Spec: spec}
	case KindDeployment:
		m.Workload = &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{SessionLabel: s.name}},
			// Recreate: a session's workspace claim is one pod's at a time.
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{ObjectMeta: podMeta, Spec: spec},
		}}
	case KindJob:
		m.Workload = &batchv1.Job{TypeMeta: typeMeta("batch/v1", "Job"), ObjectMeta: meta, Spec: batchv1.JobSpec{
			// An agent session retried would do its actions again.
			BackoffLimit: new(int32(0)),
			Template:     corev1.PodTemplateSpec{ObjectMeta: podMeta, Spec: spec},
		}}
	}
	return m, nil
}

// manifests are the session's objects beside its workload.
func (s *session) manifests() *Manifests {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: s.namespace, Labels: map[string]string{SessionLabel: s.name}}
	}
	m := &Manifests{Warnings: s.warnings}
	m.ConfigMap = &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(s.name + "-policy"),
		Data: map[string]string{PolicyKey: string(s.policy)}}
	m.ServiceAccount = &corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(s.name),
		AutomountServiceAccountToken: new(false)}

	np := meta(s.name)
	np.Annotations = map[string]string{
		AllowedDomainsAnnotation: strings.Join(s.allowDomains, ","),
		EgressNoteAnnotation: "defence in depth: the barry-proxy sidecar decides every host; TCP 443 and 80 go to any address " +
			"because NetworkPolicy has no hostnames: a CNI with FQDN policies can narrow them to " + AllowedDomainsAnnotation,
	}
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := func(p *corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
		return networkingv1.NetworkPolicyPort{Protocol: p, Port: new(intstr.FromInt32(n))}
	}
	m.NetworkPolicy = &networkingv1.NetworkPolicy{TypeMeta: typeMeta("networking.k8s.io/v1", "NetworkPolicy"), ObjectMeta: np,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{SessionLabel: s.name}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{
					To: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
						PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{port(&udp, 53), port(&tcp, 53)},
				},
				{Ports: []networkingv1.NetworkPolicyPort{port(&tcp, 443), port(&tcp, 80)}},
			},
		}}
	return m
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// parts are obj's own metadata, its pod's (a template's) metadata and its
// pod spec, for one of the kinds Decode returns.
func parts(obj runtime.Object) (meta, podMeta *metav1.ObjectMeta, spec *corev1.PodSpec) {
	switch o := obj.(type) {
	case *corev1.Pod:
		return &o.ObjectMeta, &o.ObjectMeta, &o.Spec
	case *appsv1.Deployment:
		return &o.ObjectMeta, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *appsv1.StatefulSet:
		return &o.ObjectMeta, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	case *batchv1.Job:
		return &o.ObjectMeta, &o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec
	}
	panic(fmt.Sprintf("kube: parts of %T", obj))
}
