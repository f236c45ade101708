package kube

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes m's objects as YAML documents separated by "---", in
// the order of Objects. Fields Kubernetes reads as absent when null (an
// unset creationTimestamp) and an empty status are left out.
func (m *Manifests) WriteYAML(w io.Writer) error {
	var b bytes.Buffer
	for i, obj := range m.Objects() {
		if i > 0 {
			b.WriteString("---\n")
		}
		doc, err := marshalYAML(obj)
		if err != nil {
			return err
		}
		b.Write(doc)
	}
	_, err := w.Write(b.Bytes())
	return err
}

func marshalYAML(obj runtime.Object) ([]byte, error) {
	js, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("kube: %T: %w", obj, err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("kube: %T: %w", obj, err)
	}
	dropNulls(v)
	if st, ok := v["status"].(map[string]any); ok && len(st) == 0 {
		delete(v, "status")
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("kube: %T: %w", obj, err)
	}
	return out, nil
}

// dropNulls removes null values from v's objects, at every depth.
func dropNulls(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
				continue
			}
			dropNulls(e)
		}
	case []any:
		for _, e := range x {
			dropNulls(e)
		}
	}
}

// unmarshalStrict decodes the JSON js into v as the API server's strict
// field validation does: case-sensitive, every strict error (an unknown
// or duplicate field, by its path) reported.
func unmarshalStrict(js []byte, v any) error {
	strict, err := kjson.UnmarshalStrict(js, v)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}
