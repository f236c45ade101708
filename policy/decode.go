package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDocumentBytes caps a policy document; nothing legitimate comes close.
const maxDocumentBytes = 4 << 20

// Format is a document's encoding.
type Format int

const (
	// FormatYAML is YAML 1.2 (which JSON documents also parse as).
	FormatYAML Format = iota
	// FormatJSON is strict JSON.
	FormatJSON
)

// FormatForPath picks the format by file extension: .json is JSON, anything
// else YAML.
func FormatForPath(path string) Format {
	if strings.HasSuffix(strings.ToLower(path), ".json") {
		return FormatJSON
	}
	return FormatYAML
}

// DecodeBound decodes one bound strictly: an unknown field, a value of the
// wrong type, a network action outside the enum, an enforce value other than
// guard or sandbox, a refused domain pattern, or allowDomains without
// enforce: sandbox is an error naming its field path, never an empty bound.
// path prefixes every error path ("bounds.readonly"); it may be empty.
func DecodeBound(data []byte, format Format, path string) (*Bound, error) {
	root, err := parseDocument(data, format)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	b := d.bound(root, path)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return b, nil
}

// parseDocument parses YAML or JSON into a node tree. JSON is first checked
// to be valid JSON, so a .json file cannot smuggle YAML-only syntax.
func parseDocument(data []byte, format Format) (*yaml.Node, error) {
	if len(data) > maxDocumentBytes {
		return nil, FieldErrors{{Msg: fmt.Sprintf("document larger than %d bytes", maxDocumentBytes)}}
	}
	if format == FormatJSON && !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		return nil, FieldErrors{{Msg: fmt.Sprintf("not valid JSON: %v", err)}}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if err.Error() == "EOF" {
			msg = "empty document"
		}
		return nil, FieldErrors{{Msg: msg}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, FieldErrors{{Line: extra.Line, Column: extra.Column, Msg: "more than one document"}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, FieldErrors{{Msg: "empty document"}}
	}
	return doc.Content[0], nil
}

// decoder walks a node tree, collecting every problem with its path.
type decoder struct {
	errs FieldErrors
}

func (d *decoder) errf(n *yaml.Node, path, format string, args ...any) {
	e := &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolveAlias(n)
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// fields decodes a mapping strictly: each key must be in handlers, at most
// once; unknown keys are errors. It returns false when n is not a mapping.
func (d *decoder) fields(n *yaml.Node, path string, handlers map[string]func(v *yaml.Node, p string)) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		d.errf(n, path, "must be a mapping, got %s", kindName(n))
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errf(k, path, "keys must be strings")
			continue
		}
		if k.Tag == "!!merge" {
			d.errf(k, path, "merge keys (<<) are not supported")
			continue
		}
		p := join(path, k.Value)
		if seen[k.Value] {
			d.errf(k, p, "duplicate field")
			continue
		}
		seen[k.Value] = true
		h, ok := handlers[k.Value]
		if !ok {
			d.errf(k, p, "unknown field")
			continue
		}
		h(v, p)
	}
	return true
}

// entries iterates a mapping with free-form keys, rejecting duplicates.
func (d *decoder) entries(n *yaml.Node, path string, each func(key string, v *yaml.Node, p string)) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.MappingNode {
		d.errf(n, path, "must be a mapping, got %s", kindName(n))
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			d.errf(k, path, "keys must be strings")
			continue
		}
		p := join(path, k.Value)
		if seen[k.Value] {
			d.errf(k, p, "duplicate key")
			continue
		}
		seen[k.Value] = true
		each(k.Value, v, p)
	}
	return true
}

func kindName(n *yaml.Node) string {
	n = resolveAlias(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int", "!!float":
			return "a number"
		case "!!str":
			return "a string"
		}
		return "a scalar"
	}
	return "an unknown node"
}

func (d *decoder) str(n *yaml.Node, path string) string {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.errf(n, path, "must be a string, got %s", kindName(n))
		return ""
	}
	return n.Value
}

func (d *decoder) integer(n *yaml.Node, path string) int {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.errf(n, path, "must be an integer, got %s", kindName(n))
		return 0
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		d.errf(n, path, "must be an integer: %v", err)
	}
	return v
}

func (d *decoder) boolean(n *yaml.Node, path string) bool {
	n = resolveAlias(n)
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		d.errf(n, path, "must be a boolean, got %s", kindName(n))
		return false
	}
	return n.Value == "true"
}

// strList decodes a list of non-empty strings. A present list is never nil,
// so an empty allowlist stays distinguishable from an absent one.
func (d *decoder) strList(n *yaml.Node, path string) []string {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "must be a list of strings, got %s", kindName(n))
		return []string{}
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		s := d.str(e, index(path, i))
		if s == "" && resolveAlias(e).Tag == "!!str" {
			d.errf(e, index(path, i), "must not be empty")
			continue
		}
		out = append(out, s)
	}
	return out
}

func (d *decoder) strListMap(n *yaml.Node, path string) map[string][]string {
	out := map[string][]string{}
	d.entries(n, path, func(k string, v *yaml.Node, p string) { out[k] = d.strList(v, p) })
	return out
}

func (d *decoder) strMap(n *yaml.Node, path string) map[string]string {
	out := map[string]string{}
	d.entries(n, path, func(k string, v *yaml.Node, p string) { out[k] = d.str(v, p) })
	return out
}

// bound decodes a Bound at path.
func (d *decoder) bound(n *yaml.Node, path string) *Bound {
	b := &Bound{}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"bash": func(v *yaml.Node, p string) {
			b.Bash = &BashRules{}
			d.fields(v, p, map[string]func(*yaml.Node, string){
				"deny":         func(v *yaml.Node, p string) { b.Bash.Deny = d.strList(v, p) },
				"denyPrograms": func(v *yaml.Node, p string) { b.Bash.DenyPrograms = d.programRules(v, p) },
			})
		},
		"deniedAccess": func(v *yaml.Node, p string) { b.DeniedAccess = d.strList(v, p) },
		"deniedTools":  func(v *yaml.Node, p string) { b.DeniedTools = d.strList(v, p) },
		"description":  func(v *yaml.Node, p string) { b.Description = d.str(v, p) },
		"files": func(v *yaml.Node, p string) {
			b.Files = &FileRules{}
			d.fields(v, p, map[string]func(*yaml.Node, string){
				"allowOnly": func(v *yaml.Node, p string) { b.Files.AllowOnly = d.fileGlobs(v, p) },
				"deny":      func(v *yaml.Node, p string) { b.Files.Deny = d.fileGlobs(v, p) },
			})
		},
		"name":        func(v *yaml.Node, p string) { b.Name = d.str(v, p) },
		"nativeTools": func(v *yaml.Node, p string) { b.NativeTools = d.strListMap(v, p) },
		"network":     func(v *yaml.Node, p string) { b.Network = d.network(v, p) },
		"nodes": func(v *yaml.Node, p string) {
			b.Nodes = &NodeRules{}
			d.fields(v, p, map[string]func(*yaml.Node, string){
				"allow": func(v *yaml.Node, p string) { b.Nodes.Allow = d.strList(v, p) },
				"deny":  func(v *yaml.Node, p string) { b.Nodes.Deny = d.strList(v, p) },
			})
		},
	})
	return b
}

func (d *decoder) network(n *yaml.Node, path string) *NetworkRules {
	nr := &NetworkRules{}
	var allowNode *yaml.Node
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"actions": func(v *yaml.Node, p string) {
			nr.Actions = d.strList(v, p)
			for i, a := range nr.Actions {
				if !IsNetworkAction(a) {
					d.errf(resolveAlias(v).Content[i], index(p, i), "%q is not a network action (one of %s)", a, strings.Join(NetworkActions, ", "))
				}
			}
		},
		"allowDomains": func(v *yaml.Node, p string) {
			allowNode = v
			nr.AllowDomains = d.domainList(v, p, true)
		},
		"domains": func(v *yaml.Node, p string) { nr.Domains = d.domainList(v, p, false) },
		"enforce": func(v *yaml.Node, p string) {
			s := d.str(v, p)
			switch Enforce(s) {
			case EnforceGuard, EnforceSandbox:
				nr.Enforce = Enforce(s)
			default:
				if resolveAlias(v).Tag == "!!str" {
					d.errf(v, p, "%q is not an enforcement level (guard or sandbox)", s)
				}
			}
		},
	})
	if allowNode != nil && nr.Enforce != EnforceSandbox {
		d.errf(allowNode, join(path, "allowDomains"), "%s", AllowDomainsNeedsSandbox)
	}
	return nr
}

// AllowDomainsNeedsSandbox is the refusal for an allowlist without the
// sandbox, in the bounds SDK's words.
const AllowDomainsNeedsSandbox = `network.allowDomains is enforced only by the egress sandbox: add network.enforce: "sandbox", or deny hosts with network.domains instead`

func (d *decoder) domainList(n *yaml.Node, path string, allow bool) []string {
	list := d.strList(n, path)
	for i, s := range list {
		if _, err := ParseDomainPattern(s, allow); err != nil {
			d.errf(resolveAlias(n).Content[i], index(path, i), "%s", strings.TrimPrefix(err.Error(), ErrInvalidPattern.Error()+": "))
		}
	}
	return list
}

func (d *decoder) fileGlobs(n *yaml.Node, path string) []string {
	list := d.strList(n, path)
	for i, s := range list {
		if err := ValidateFileGlob(s); err != nil {
			d.errf(resolveAlias(n).Content[i], index(path, i), "%v", err)
		}
	}
	return list
}

func (d *decoder) programRules(n *yaml.Node, path string) []string {
	list := d.strList(n, path)
	for i, s := range list {
		if err := ValidateProgramRule(s); err != nil {
			d.errf(resolveAlias(n).Content[i], index(path, i), "%v", err)
		}
	}
	return list
}

// ValidateProgramRule checks a bash.denyPrograms rule: one to three
// colon-separated parts (program, subcommand, sub-subcommand), none empty,
// no whitespace, and a program name without a slash (rules match basenames).
func ValidateProgramRule(s string) error {
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return fmt.Errorf("%q: a rule has at most three parts (program:sub:subsub)", s)
	}
	for _, p := range parts {
		if p == "" {
			return fmt.Errorf("%q: empty part in rule", s)
		}
		if strings.ContainsAny(p, " \t\r\n\x00") {
			return fmt.Errorf("%q: whitespace in rule", s)
		}
	}
	if strings.Contains(parts[0], "/") {
		return fmt.Errorf("%q: name the program, not a path (rules match the basename)", s)
	}
	return nil
}

// EncodeBound returns the bound's canonical JSON: the SDK's field names,
// empty fields omitted, allowlists kept when present.
func EncodeBound(b *Bound) ([]byte, error) { return json.Marshal(b) }

// validateBoundSemantics applies the checks that need a whole bound, after
// merging: an allowlist needs the sandbox.
func validateBoundSemantics(b *Bound) error {
	if b != nil && b.Network != nil && b.Network.AllowDomains != nil && b.Network.Enforce != EnforceSandbox {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, AllowDomainsNeedsSandbox)
	}
	return nil
}
