package policy

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The policy file's decoder: LoadFile and DecodePolicyFile, and the
// decoder's methods for each section (bags, tools, traits, identity,
// session) and the cross-field checks.

// LoadFile reads and strictly decodes a policy file (YAML, or JSON for a
// .json name). Errors are FieldErrors naming each problem's path and line.
func LoadFile(path string) (*PolicyFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidPolicy, err)
	}
	return DecodePolicyFile(data, FormatForPath(path))
}

// DecodePolicyFile decodes and validates a policy document.
func DecodePolicyFile(data []byte, format Format) (*PolicyFile, error) {
	root, err := parseDocument(data, format)
	if err != nil {
		return nil, err
	}
	d := &decoder{}
	pf := &PolicyFile{}
	var versionSeen bool
	nodes := map[string]*yaml.Node{}
	d.fields(root, "", map[string]func(*yaml.Node, string){
		"version": func(v *yaml.Node, p string) {
			versionSeen = true
			pf.Version = d.integer(v, p)
			if pf.Version != PolicyFileVersion && len(d.errs) == 0 {
				d.errf(v, p, "unsupported version %d (this build reads version %d)", pf.Version, PolicyFileVersion)
			}
		},
		"harness": func(v *yaml.Node, p string) { nodes[p] = v; pf.Harness = d.str(v, p) },
		"mode":    func(v *yaml.Node, p string) { nodes[p] = v; pf.Mode = d.str(v, p) },
		"bags": func(v *yaml.Node, p string) {
			pf.Bags = map[string]*Bag{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { pf.Bags[k] = d.bag(v, p) })
		},
		"tools": func(v *yaml.Node, p string) { pf.Tools = d.tools(v, p) },
		"traits": func(v *yaml.Node, p string) {
			pf.Traits = map[string]*AgentTrait{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { pf.Traits[k] = d.trait(k, v, p) })
		},
		"bounds": func(v *yaml.Node, p string) {
			pf.Bounds = map[string]*Bound{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { pf.Bounds[k] = d.bound(v, p) })
		},
		"identity": func(v *yaml.Node, p string) { nodes[p] = v; pf.Identity = d.identity(v, p) },
		"session":  func(v *yaml.Node, p string) { pf.Session = d.session(v, p) },
		"environment": func(v *yaml.Node, p string) {
			pf.Environment = &EnvironmentSection{}
			d.fields(v, p, map[string]func(*yaml.Node, string){
				"unset": func(v *yaml.Node, p string) { pf.Environment.Unset = d.envPatterns(v, p) },
			})
		},
		"credentials": func(v *yaml.Node, p string) { pf.Credentials = d.credentials(v, p) },
		"sandbox":     func(v *yaml.Node, p string) { pf.Sandbox = d.sandboxSection(v, p) },
		"filesystem": func(v *yaml.Node, p string) {
			pf.Filesystem = &FilesystemSection{}
			d.fields(v, p, map[string]func(*yaml.Node, string){
				"write":     func(v *yaml.Node, p string) { pf.Filesystem.Write = d.writeRoots(v, p) },
				"allowEdit": func(v *yaml.Node, p string) { pf.Filesystem.AllowEdit = d.allowEdit(v, p) },
				"openGate":  func(v *yaml.Node, p string) { pf.Filesystem.OpenGate = d.openGateMode(v, p) },
			})
		},
	})
	if !versionSeen && resolveAlias(root).Kind == yaml.MappingNode {
		d.errf(root, "version", "missing required field (version: %d)", PolicyFileVersion)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	d.validate(pf, nodes)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return pf, nil
}

func (d *decoder) bag(n *yaml.Node, path string) *Bag {
	b := &Bag{}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"namespaces": func(v *yaml.Node, p string) { b.Namespaces = d.strList(v, p) },
		"skills":     func(v *yaml.Node, p string) { b.Skills = d.strList(v, p) },
		"services":   func(v *yaml.Node, p string) { b.Services = d.strList(v, p) },
		"actions":    func(v *yaml.Node, p string) { b.Actions = d.strList(v, p) },
		"bags":       func(v *yaml.Node, p string) { b.Bags = d.strList(v, p) },
		"extends":    func(v *yaml.Node, p string) { b.Extends = d.str(v, p) },
		"traits": func(v *yaml.Node, p string) {
			b.Traits = map[string]*AgentTrait{}
			d.entries(v, p, func(k string, v *yaml.Node, p string) { b.Traits[k] = d.trait(k, v, p) })
		},
	})
	return b
}

func (d *decoder) tools(n *yaml.Node, path string) []ToolMeta {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		d.errf(n, path, "must be a list of tools, got %s", kindName(n))
		return nil
	}
	var out []ToolMeta
	seen := map[string]bool{}
	for i, e := range n.Content {
		p := index(path, i)
		t := ToolMeta{}
		var got = map[string]bool{}
		d.fields(e, p, map[string]func(*yaml.Node, string){
			"access": func(v *yaml.Node, p string) {
				got["access"] = true
				t.Access = d.str(v, p)
				if t.Access != "read" && t.Access != "write" && resolveAlias(v).Tag == "!!str" {
					d.errf(v, p, "%q is not a tool access (read or write)", t.Access)
				}
			},
			"annotations": func(v *yaml.Node, p string) {
				t.Annotations = &McpAnnotations{}
				b := func(dst **bool) func(*yaml.Node, string) {
					return func(v *yaml.Node, p string) { x := d.boolean(v, p); *dst = &x }
				}
				d.fields(v, p, map[string]func(*yaml.Node, string){
					"destructiveHint": b(&t.Annotations.DestructiveHint),
					"idempotentHint":  b(&t.Annotations.IdempotentHint),
					"openWorldHint":   b(&t.Annotations.OpenWorldHint),
					"readOnlyHint":    b(&t.Annotations.ReadOnlyHint),
					"title":           func(v *yaml.Node, p string) { t.Annotations.Title = d.str(v, p) },
				})
			},
			"contractHash": func(v *yaml.Node, p string) { t.ContractHash = d.str(v, p) },
			"namespace":    func(v *yaml.Node, p string) { got["namespace"] = true; t.Namespace = d.str(v, p) },
			"toolName":     func(v *yaml.Node, p string) { got["toolName"] = true; t.ToolName = d.str(v, p) },
		})
		if resolveAlias(e).Kind != yaml.MappingNode {
			continue
		}
		for _, f := range []string{"access", "namespace", "toolName"} {
			if !got[f] {
				d.errf(e, join(p, f), "missing required field")
			}
		}
		for _, part := range []struct{ name, v string }{{"namespace", t.Namespace}, {"toolName", t.ToolName}} {
			if got[part.name] && (part.v == "" || strings.ContainsAny(part.v, ": \t")) {
				d.errf(e, join(p, part.name), "must be a non-empty name without ':' or spaces")
			}
		}
		if seen[t.ID()] {
			d.errf(e, p, "duplicate tool %s", t.ID())
		}
		seen[t.ID()] = true
		out = append(out, t)
	}
	return out
}

func (d *decoder) trait(key string, n *yaml.Node, path string) *AgentTrait {
	t := &AgentTrait{Name: key}
	accessSeen := false
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"access": func(v *yaml.Node, p string) {
			accessSeen = true
			s := d.str(v, p)
			switch Access(s) {
			case AccessRead, AccessReadWrite:
				t.Access = Access(s)
			default:
				if resolveAlias(v).Tag == "!!str" {
					d.errf(v, p, "%q is not an access level (read or readwrite)", s)
				}
			}
		},
		"bound":         func(v *yaml.Node, p string) { t.Bound = d.bound(v, p) },
		"boundNames":    func(v *yaml.Node, p string) { t.BoundNames = d.strList(v, p) },
		"harnessTraits": func(v *yaml.Node, p string) { t.HarnessTraits = d.strMap(v, p) },
		"includes":      func(v *yaml.Node, p string) { t.Includes = d.strList(v, p) },
		"name": func(v *yaml.Node, p string) {
			if s := d.str(v, p); s != key && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "name %q differs from the trait's key %q", s, key)
			}
		},
		"namespaces":  func(v *yaml.Node, p string) { t.Namespaces = d.strList(v, p) },
		"nativeTools": func(v *yaml.Node, p string) { t.NativeTools = d.strListMap(v, p) },
		"tools":       func(v *yaml.Node, p string) { t.Tools = d.strList(v, p) },
	})
	if !accessSeen && (len(t.Namespaces) > 0 || len(t.Tools) > 0) {
		d.errf(n, join(path, "access"), "missing required field (read or readwrite) for a trait that grants namespaces or tools")
	}
	if t.Access == "" {
		t.Access = AccessRead
	}
	if t.Namespaces == nil {
		t.Namespaces = []string{}
	}
	return t
}

func (d *decoder) identity(n *yaml.Node, path string) *Identity {
	id := &Identity{BagGrant: "session"}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"name":     func(v *yaml.Node, p string) { id.Name = d.str(v, p) },
		"bags":     func(v *yaml.Node, p string) { id.Bags = d.strList(v, p) },
		"traits":   func(v *yaml.Node, p string) { id.Traits = d.strList(v, p) },
		"bounds":   func(v *yaml.Node, p string) { id.Bounds = d.strList(v, p) },
		"optional": func(v *yaml.Node, p string) { id.Optional = d.strList(v, p) },
		"bound":    func(v *yaml.Node, p string) { id.Bound = d.bound(v, p) },
		"bagGrant": func(v *yaml.Node, p string) {
			id.BagGrant = d.str(v, p)
			if id.BagGrant != "session" && id.BagGrant != "identity" && resolveAlias(v).Tag == "!!str" {
				d.errf(v, p, "%q is not a bag grant (session or identity)", id.BagGrant)
			}
		},
	})
	return id
}

func (d *decoder) session(n *yaml.Node, path string) *SessionSelection {
	s := &SessionSelection{}
	d.fields(n, path, map[string]func(*yaml.Node, string){
		"traits": func(v *yaml.Node, p string) { s.Traits = d.strList(v, p) },
		"bounds": func(v *yaml.Node, p string) { s.Bounds = d.strList(v, p) },
		"bound":  func(v *yaml.Node, p string) { s.Bound = d.bound(v, p) },
	})
	return s
}

// validate checks references across the document.
func (d *decoder) validate(pf *PolicyFile, nodes map[string]*yaml.Node) {
	h := catalogHarness(pf.Harness)
	switch {
	case pf.Harness == "":
		d.errf(nil, "harness", "missing required field (one of %s)", strings.Join(harnessIDs(), ", "))
	case h == nil:
		d.errf(nodes["harness"], "harness", "unknown harness %q (one of %s)", pf.Harness, strings.Join(harnessIDs(), ", "))
	default:
		if _, _, err := h.Mode(pf.Mode); err != nil {
			d.errf(nodes["mode"], "mode", "%v", err)
		}
	}
	checkNative := func(path string, m map[string][]string) {
		for _, hid := range sortedKeys(m) {
			hh := catalogHarness(hid)
			if hh == nil {
				d.errf(nil, join(path, hid), "unknown harness %q", hid)
				continue
			}
			for i, n := range m[hid] {
				if !slices.Contains(hh.NativeTools, n) && !slices.Contains(NativeCategories, n) {
					d.errf(nil, index(join(path, hid), i), "%q is not a native tool or category of harness %s", n, hid)
				}
			}
		}
	}
	for _, name := range sortedKeys(pf.Traits) {
		t := pf.Traits[name]
		checkNative("traits."+name+".nativeTools", t.NativeTools)
		if t.Bound != nil {
			checkNative("traits."+name+".bound.nativeTools", t.Bound.NativeTools)
		}
	}
	for _, name := range sortedKeys(pf.Bounds) {
		checkNative("bounds."+name+".nativeTools", pf.Bounds[name].NativeTools)
	}
	for _, name := range sortedKeys(pf.Bags) {
		b := pf.Bags[name]
		if strings.Contains(name, ":") {
			d.errf(nil, "bags."+name, "a bag name cannot contain ':'")
		}
		for i, sub := range b.Bags {
			if _, ok := pf.Bags[sub]; !ok {
				d.errf(nil, index("bags."+name+".bags", i), "unknown bag %q", sub)
			}
		}
		if b.Extends != "" {
			if _, ok := pf.Bags[b.Extends]; !ok {
				d.errf(nil, "bags."+name+".extends", "unknown bag %q", b.Extends)
			}
		}
		for _, tn := range sortedKeys(b.Traits) {
			checkNative("bags."+name+".traits."+tn+".nativeTools", b.Traits[tn].NativeTools)
		}
	}
	if id := pf.Identity; id != nil {
		for i, bn := range id.Bags {
			if _, ok := pf.Bags[bn]; !ok {
				d.errf(nodes["identity"], index("identity.bags", i), "unknown bag %q (declare it under bags)", bn)
			}
		}
		for i, o := range id.Optional {
			if !slices.Contains(BaseDefaultTraits, o) {
				d.errf(nodes["identity"], index("identity.optional", i), "%q is not a base default trait (one of %s)", o, strings.Join(BaseDefaultTraits, ", "))
			}
		}
	}
}
