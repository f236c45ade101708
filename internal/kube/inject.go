package kube

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// MaxInput is the most Inject reads: larger input is refused, not cut.
const MaxInput = 4 << 20

// Inject reads one Pod, Deployment, StatefulSet or Job (YAML or JSON) from
// r, decoded strictly (unknown and duplicate fields fail), and returns it
// with the session's parts added to its pod spec (the first container is
// the agent: its image and command are kept), beside the session's other
// objects. A spec it cannot make safe is an ErrUnsafe error naming the
// first reason; the object is not returned then.
func Inject(o Options, r io.Reader) (*Manifests, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInput+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if len(data) > MaxInput {
		return nil, fmt.Errorf("%w: input larger than %d bytes", ErrDecode, MaxInput)
	}
	obj, err := Decode(data)
	if err != nil {
		return nil, err
	}
	meta, podMeta, spec := parts(obj)
	if err := selects(obj, podMeta.Labels); err != nil {
		return nil, err
	}

	name := o.Name
	if name == "" {
		name = meta.Name
	}
	if name == "" {
		return nil, fmt.Errorf("%w: the object has no metadata.name; give --name", ErrOptions)
	}
	if o.Namespace != "" && meta.Namespace != "" && o.Namespace != meta.Namespace {
		return nil, fmt.Errorf("%w: --namespace %s: the object's namespace is %s", ErrOptions, o.Namespace, meta.Namespace)
	}
	if o.Namespace == "" {
		o.Namespace = meta.Namespace
	}
	if len(spec.Containers) == 0 {
		return nil, fmt.Errorf("%w: no containers: the first container is the agent", ErrUnsafe)
	}
	var uid int64
	switch own := containerUID(&spec.Containers[0], spec.SecurityContext); {
	case o.AgentUID != nil:
		uid = *o.AgentUID
	case own != nil:
		uid = *own
	default:
		uid = DefaultAgentUID
	}
	s, err := newSession(o, name, uid)
	if err != nil {
		return nil, err
	}
	if sa := spec.ServiceAccountName; sa != "" && sa != s.name {
		s.warnings = append(s.warnings, fmt.Sprintf("serviceAccountName %s replaced by the session's %s (no token mounted)", sa, s.name))
	}
	if ss, ok := obj.(*appsv1.StatefulSet); ok {
		// A claim template is a volume of the pod by its name.
		for _, c := range ss.Spec.VolumeClaimTemplates {
			if slices.Contains(reservedVolumes, c.Name) || (s.workspaceClaim != "" && c.Name == volWorkspace) {
				return nil, fmt.Errorf("%w: volumeClaimTemplates %s: the name is the session's own", ErrUnsafe, c.Name)
			}
		}
	}
	if err := addSession(podMeta, spec, s); err != nil {
		return nil, err
	}
	meta.Namespace = s.namespace
	m := s.manifests()
	m.Workload = obj
	return m, nil
}

// selects refuses a Deployment or StatefulSet whose selector's labels do
// not select its own pod template's (the API server refuses it: the
// session label that Inject adds would not make it right).
func selects(obj runtime.Object, labels map[string]string) error {
	var sel *metav1.LabelSelector
	switch w := obj.(type) {
	case *appsv1.Deployment:
		sel = w.Spec.Selector
	case *appsv1.StatefulSet:
		sel = w.Spec.Selector
	}
	if sel == nil {
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		if v, ok := labels[k]; !ok || v != sel.MatchLabels[k] {
			return fmt.Errorf("%w: spec.selector.matchLabels %s=%s does not select the pod template's labels", ErrDecode, k, sel.MatchLabels[k])
		}
	}
	return nil
}

// Decode decodes data as one Pod (v1), Deployment or StatefulSet
// (apps/v1) or Job (batch/v1), in YAML or JSON, strictly as the API
// server's strict field validation reads it (sigs.k8s.io/json): unknown
// fields, fields spelled in another case, duplicate fields, a second
// document and any other kind fail, with ErrDecode.
func Decode(data []byte) (runtime.Object, error) {
	var doc []byte
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		chunk, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDecode, err)
		}
		js, err := yaml.YAMLToJSONStrict(chunk)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDecode, err)
		}
		if s := string(bytes.TrimSpace(js)); s == "null" || s == "" {
			continue // an empty document, or only comments
		}
		if doc != nil {
			return nil, fmt.Errorf("%w: more than one document: give one object", ErrDecode)
		}
		doc = js
	}
	if doc == nil {
		return nil, fmt.Errorf("%w: no object", ErrDecode)
	}
	var tm metav1.TypeMeta
	if err := kjson.UnmarshalCaseSensitivePreserveInts(doc, &tm); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	var obj runtime.Object
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Pod":
		obj = &corev1.Pod{}
	case "apps/v1 Deployment":
		obj = &appsv1.Deployment{}
	case "apps/v1 StatefulSet":
		obj = &appsv1.StatefulSet{}
	case "batch/v1 Job":
		obj = &batchv1.Job{}
	default:
		return nil, fmt.Errorf("%w: apiVersion %q kind %q: want a v1 Pod, an apps/v1 Deployment or StatefulSet, or a batch/v1 Job", ErrDecode, tm.APIVersion, tm.Kind)
	}
	if err := unmarshalStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDecode, tm.Kind, err)
	}
	return obj, nil
}
