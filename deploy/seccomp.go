package deploy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Profile is a seccomp profile in the JSON format that Docker, Podman and
// containerd read: the runtime spec's seccomp fields plus Docker's archMap
// and conditional rules. The field order is the one Docker's own profile is
// written in, so a base profile decoded and encoded again is unchanged. It
// is a plain value, safe for concurrent reads.
type Profile struct {
	DefaultAction    string   `json:"defaultAction"`
	DefaultErrnoRet  *uint    `json:"defaultErrnoRet,omitempty"`
	Architectures    []string `json:"architectures,omitempty"`
	Flags            []string `json:"flags,omitempty"`
	ListenerPath     string   `json:"listenerPath,omitempty"`
	ListenerMetadata string   `json:"listenerMetadata,omitempty"`
	ArchMap          []Arch   `json:"archMap,omitempty"`
	Syscalls         []Rule   `json:"syscalls"`
}

// Arch is one entry of a profile's archMap: a native architecture and the
// ones it also runs (x86 and x32 on x86_64). It is a plain value.
type Arch struct {
	Architecture     string   `json:"architecture"`
	SubArchitectures []string `json:"subArchitectures"`
}

// Rule is one entry of a profile's syscalls: the action for the named
// system calls when every argument condition holds, applied only where
// Includes holds and Excludes does not (the engine decides that once, when
// it creates the container). It is a plain value.
type Rule struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []Arg    `json:"args,omitempty"`
	Comment  string   `json:"comment,omitempty"`
	Includes *Filter  `json:"includes,omitempty"`
	Excludes *Filter  `json:"excludes,omitempty"`
}

// Arg is one argument condition of a Rule: argument Index compared by Op
// with Value (for SCMP_CMP_MASKED_EQ: the argument masked with Value equals
// ValueTwo). It is a plain value.
type Arg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo,omitempty"`
	Op       string `json:"op"`
}

// Filter is a Rule's condition on the container: its capabilities, the
// host's architecture (Go's names: amd64, s390x) and the host's kernel
// version ("major.minor"). It is a plain value.
type Filter struct {
	Caps      []string `json:"caps,omitempty"`
	Arches    []string `json:"arches,omitempty"`
	MinKernel string   `json:"minKernel,omitempty"`
}

// Addition is one rule sandboxd's profile adds to the base, with the one
// line that says why sandboxd needs it. The reason is also the rule's
// comment in the profile. It is a plain value.
type Addition struct {
	Rule   Rule
	Reason string
}

// Seccomp actions and argument operators of the profile format.
const (
	ActAllow     = "SCMP_ACT_ALLOW"
	CmpMaskedEq  = "SCMP_CMP_MASKED_EQ"
	reasonPrefix = "sandboxd: "
)

// cloneNewCgroup is Linux's CLONE_NEWCGROUP, the one namespace flag of
// clone(2) that sandboxd does not use (spelled out here because this file
// builds on every platform).
const cloneNewCgroup = 0x02000000

// additions is the specification: everything sandboxd's profile has beyond
// Docker's default, in the order it is appended. deploy/README.md ("The diff
// explained") says what fails without each.
var additions = []Addition{
	{
		Rule: Rule{
			Names: []string{"clone"}, Action: ActAllow,
			// flags&CLONE_NEWCGROUP == 0; clone's flags are argument 0
			// everywhere but s390, which keeps the base's rules.
			Args:     []Arg{{Index: 0, Value: cloneNewCgroup, ValueTwo: 0, Op: CmpMaskedEq}},
			Excludes: &Filter{Arches: []string{"s390", "s390x"}},
		},
		Reason: "the init is cloned into new user, mount, PID, network, IPC and UTS namespaces (procjail.namespaceAttr); a new cgroup namespace stays refused",
	},
	{
		Rule:   Rule{Names: []string{"mount"}, Action: ActAllow},
		Reason: "the init builds the sandbox's file system in its own mount namespace: private propagation, /proc, /dev, tmpfs, the home overlay, binds and remounts",
	},
	{
		Rule:   Rule{Names: []string{"umount2"}, Action: ActAllow},
		Reason: "the init detaches its staging tmpfs (mounted over /dev while it builds the file system)",
	},
	{
		Rule:   Rule{Names: []string{"open_tree"}, Action: ActAllow},
		Reason: "the init clones the host's trees (OPEN_TREE_CLONE) to place them in the sandbox",
	},
	{
		Rule:   Rule{Names: []string{"move_mount"}, Action: ActAllow},
		Reason: "the init attaches those cloned trees at their places in the sandbox",
	},
	{
		Rule:   Rule{Names: []string{"mount_setattr"}, Action: ActAllow},
		Reason: "the init makes binds read-only with their whole subtree (MOUNT_ATTR_RDONLY, AT_RECURSIVE)",
	},
	{
		Rule:   Rule{Names: []string{"sethostname"}, Action: ActAllow},
		Reason: "the init names the sandbox's own UTS namespace",
	},
	{
		Rule:   Rule{Names: []string{"pidfd_getfd"}, Action: ActAllow},
		Reason: "with --allow-unix-socket the init takes its own copy of the command's socket to connect it (procjail/unixgate_linux.go)",
	},
}

// Additions returns the rules sandboxd's profile adds to Docker's default,
// in order, each with its reason. The slice is a fresh copy; Additions is
// safe for concurrent use.
func Additions() []Addition {
	out := make([]Addition, len(additions))
	for i, a := range additions {
		out[i] = Addition{Rule: a.Rule.clone(), Reason: a.Reason}
	}
	return out
}

// ParseProfile decodes a profile strictly: an unknown field (one this
// package would drop when writing the profile again), the deprecated
// single "name" form or trailing data is an error. It is safe for
// concurrent use.
func ParseProfile(data []byte) (Profile, error) {
	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Profile{}, fmt.Errorf("seccomp profile: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Profile{}, errors.New("seccomp profile: data after the profile")
	}
	return p, nil
}

// Encode writes p as the engines read it and as it is committed: indented
// with tabs like Docker's own profile, fields in their fixed order, rules
// in the profile's order, no HTML escaping, one final newline. It is safe
// for concurrent use.
func (p Profile) Encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "\t")
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("seccomp profile: %w", err)
	}
	return b.Bytes(), nil
}

// SeccompProfile derives sandboxd's profile from base (Docker's default
// profile, as JSON) in the format Docker and Podman read: base unchanged,
// followed by one rule per Addition. It checks, in order:
//
//  1. base parses strictly (ParseProfile);
//  2. base's default action refuses (an allowing default leaves nothing to
//     add);
//  3. no addition is already allowed by base without any condition (it
//     would not be needed).
//
// It is safe for concurrent use.
func SeccompProfile(base []byte) ([]byte, error) {
	p, err := derive(base)
	if err != nil {
		return nil, err
	}
	return p.Encode()
}

// ContainerdProfile derives sandboxd's profile as SeccompProfile does and
// resolves it (Resolve) for a container with DefaultCapabilities on goarch
// ("amd64" or "arm64"), on a kernel new enough for Landlock (5.13): the
// plain runtime-spec profile that containerd (ctr, nerdctl, Kubernetes'
// localhost profiles) reads. containerd ignores archMap, includes and
// excludes, so given the Docker form it would apply every rule, the ones
// for CAP_SYS_ADMIN included. It is safe for concurrent use.
func ContainerdProfile(base []byte, goarch string) ([]byte, error) {
	p, err := derive(base)
	if err != nil {
		return nil, err
	}
	r, err := p.Resolve(goarch, DefaultCapabilities(), landlockKernel)
	if err != nil {
		return nil, err
	}
	return r.Encode()
}

func derive(base []byte) (Profile, error) {
	p, err := ParseProfile(base)
	if err != nil {
		return Profile{}, fmt.Errorf("base %w", err)
	}
	if p.DefaultAction == ActAllow || p.DefaultAction == "SCMP_ACT_LOG" {
		return Profile{}, fmt.Errorf("base seccomp profile: default action %s allows every system call", p.DefaultAction)
	}
	for _, a := range additions {
		for _, name := range a.Rule.Names {
			if AllowsUnconditionally(p, name) {
				return Profile{}, fmt.Errorf("addition %s: the base profile already allows it unconditionally", name)
			}
		}
	}
	p.Syscalls = append(p.Syscalls[:len(p.Syscalls):len(p.Syscalls)], additionRules()...)
	return p, nil
}

// landlockKernel is the oldest kernel sandboxd runs on (Landlock, 5.13):
// ContainerdProfile resolves minKernel conditions for it.
const landlockKernel = "5.13"

// DefaultCapabilities returns the capability set Docker and containerd
// give a container by default (Podman's is a subset): the set
// ContainerdProfile resolves the rules' capability conditions against.
// It is safe for concurrent use.
func DefaultCapabilities() []string {
	return []string{
		"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
		"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
		"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
	}
}

// seccompArch maps the Go architectures sandboxd runs on to their
// libseccomp names.
var seccompArch = map[string]string{"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}

// Resolve does what Docker does to p when it creates a container on goarch
// whose bounding set is caps, on a kernel of version kernel ("major.minor"):
// architectures becomes the archMap entry for goarch, and each rule is kept
// (without its conditions and comment) only where includes holds and
// excludes does not. The result is a plain runtime-spec profile. It checks,
// in order:
//
//  1. goarch is one sandboxd runs on (amd64, arm64);
//  2. p uses archMap, not architectures (Docker refuses both);
//  3. every minKernel, and kernel, is "major.minor".
//
// It is safe for concurrent use.
func (p Profile) Resolve(goarch string, caps []string, kernel string) (Profile, error) {
	native, ok := seccompArch[goarch]
	if !ok {
		return Profile{}, fmt.Errorf("resolve seccomp profile: architecture %q: sandboxd runs on amd64 and arm64 only", goarch)
	}
	if len(p.Architectures) != 0 {
		return Profile{}, errors.New("resolve seccomp profile: architectures: the profile must use archMap")
	}
	out := p
	out.ArchMap, out.Architectures, out.Syscalls = nil, nil, []Rule{}
	for _, a := range p.ArchMap {
		if a.Architecture == native {
			out.Architectures = append([]string{a.Architecture}, a.SubArchitectures...)
			break
		}
	}
	for i, r := range p.Syscalls {
		keep, err := r.appliesTo(goarch, caps, kernel)
		if err != nil {
			return Profile{}, fmt.Errorf("resolve seccomp profile: syscalls[%d] %v: %w", i, r.Names, err)
		}
		if keep {
			r = r.clone()
			r.Comment, r.Includes, r.Excludes = "", nil, nil
			out.Syscalls = append(out.Syscalls, r)
		}
	}
	return out, nil
}

// appliesTo reports whether Docker would keep r for a container on goarch
// with capabilities caps on kernel: not excluded by any of the excludes
// (an architecture, a capability the container has, a kernel at least
// minKernel) and included by all of the includes.
func (r Rule) appliesTo(goarch string, caps []string, kernel string) (bool, error) {
	if f := r.Excludes; f != nil {
		if slices.Contains(f.Arches, goarch) || slices.ContainsFunc(f.Caps, func(c string) bool { return slices.Contains(caps, c) }) {
			return false, nil
		}
		if f.MinKernel != "" {
			if at, err := kernelAtLeast(kernel, f.MinKernel); err != nil || at {
				return false, err
			}
		}
	}
	if f := r.Includes; f != nil {
		if len(f.Arches) > 0 && !slices.Contains(f.Arches, goarch) ||
			slices.ContainsFunc(f.Caps, func(c string) bool { return !slices.Contains(caps, c) }) {
			return false, nil
		}
		if f.MinKernel != "" {
			if at, err := kernelAtLeast(kernel, f.MinKernel); err != nil || !at {
				return false, err
			}
		}
	}
	return true, nil
}

// kernelAtLeast reports whether kernel version have is at least want, both
// "major.minor".
func kernelAtLeast(have, want string) (bool, error) {
	h, err := parseKernel(have)
	if err != nil {
		return false, err
	}
	w, err := parseKernel(want)
	if err != nil {
		return false, err
	}
	return h[0] > w[0] || h[0] == w[0] && h[1] >= w[1], nil
}

func parseKernel(v string) ([2]uint64, error) {
	major, minor, ok := strings.Cut(v, ".")
	a, err1 := strconv.ParseUint(major, 10, 16)
	b, err2 := strconv.ParseUint(minor, 10, 16)
	if !ok || err1 != nil || err2 != nil || a == 0 && b == 0 {
		return [2]uint64{}, fmt.Errorf("kernel version %q: want \"major.minor\"", v)
	}
	return [2]uint64{a, b}, nil
}

// additionRules is the tail SeccompProfile appends: each addition's rule
// with its reason as the comment.
func additionRules() []Rule {
	rules := make([]Rule, len(additions))
	for i, a := range additions {
		rules[i] = a.Rule.clone()
		rules[i].Comment = reasonPrefix + a.Reason
	}
	return rules
}

// AllowsUnconditionally reports whether p has a rule that allows the
// system call name whatever its arguments, the container's capabilities,
// the architecture and the kernel. It is safe for concurrent use.
func AllowsUnconditionally(p Profile, name string) bool {
	for _, r := range p.Syscalls {
		if r.Action == ActAllow && len(r.Args) == 0 && r.Includes == nil && r.Excludes == nil && slices.Contains(r.Names, name) {
			return true
		}
	}
	return false
}

func (r Rule) clone() Rule {
	r.Names = slices.Clone(r.Names)
	r.Args = slices.Clone(r.Args)
	if r.Includes != nil {
		f := r.Includes.clone()
		r.Includes = &f
	}
	if r.Excludes != nil {
		f := r.Excludes.clone()
		r.Excludes = &f
	}
	return r
}

func (f Filter) clone() Filter {
	f.Caps = slices.Clone(f.Caps)
	f.Arches = slices.Clone(f.Arches)
	return f
}
