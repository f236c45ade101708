package kube

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/policy"
)

// Options are what Render and Inject make a session's manifests from.
type Options struct {
	// Policy is the policy file's bytes: the ConfigMap holds them as they
	// are, and they are resolved as the sidecar will read them (YAML).
	Policy []byte
	// Harness is the agent's harness; "" is the policy's. One that is not
	// the policy's harness is refused, as sandboxd launch refuses it.
	Harness hooks.Harness
	// Image is sandboxd's image (netinit and the sidecar); required.
	Image string
	// AgentImage is the agent container's image; "" is Image. Inject keeps
	// the user's agent image and ignores it.
	AgentImage string
	// AgentUID is the agent's uid (and gid); nil is DefaultAgentUID, or for
	// Inject the agent container's own runAsUser when it has one. 0 and
	// ProxyUID are refused.
	AgentUID *int64
	// Name is the session's name: the objects' names and the SessionLabel's
	// value, a DNS label. "" is "barry-HARNESS" for Render and the object's
	// name for Inject.
	Name string
	// Namespace is the objects' namespace; "" leaves it to kubectl (Inject:
	// the object's own; one that differs is refused).
	Namespace string
	// Kind is the workload Render makes; "" is KindPod. Inject ignores it.
	Kind Kind
	// WorkspaceClaim is a PersistentVolumeClaim mounted at WorkspaceDir in
	// the agent container; "" is an emptyDir (Render) or nothing (Inject).
	WorkspaceClaim string
	// CredentialSecret is a Secret mounted at CredentialDir in the sidecar
	// only; "" mounts none.
	CredentialSecret string
}

// Kind is the kind of workload Render makes.
type Kind string

// The workloads Render makes.
const (
	KindPod        Kind = "pod"
	KindDeployment Kind = "deployment"
	KindJob        Kind = "job"
)

// session is Options checked and resolved: everything the builders read.
type session struct {
	name, namespace  string
	harness          hooks.Harness
	program          string // "" where sandboxd knows no program for the harness
	image            string
	uid              int64
	policy           []byte
	allowDomains     []string
	workspaceClaim   string
	credentialSecret string
	warnings         []string
}

// newSession checks o with the session's name and agent uid already
// chosen ("" names it barry-HARNESS), and resolves its policy. Its checks,
// in order: the image, the agent uid, the policy (it resolves, the sidecar
// can enforce it), the harness, the name and namespace, the claim and
// Secret names.
func newSession(o Options, name string, uid int64) (*session, error) {
	s := &session{name: name, namespace: o.Namespace, image: o.Image, uid: uid, policy: o.Policy,
		workspaceClaim: o.WorkspaceClaim, credentialSecret: o.CredentialSecret}
	if o.Image == "" || strings.ContainsFunc(o.Image, isSpace) {
		return nil, fmt.Errorf("%w: --image %q: sandboxd's image is required (no spaces)", ErrOptions, o.Image)
	}
	if err := CheckAgentUID(uid); err != nil {
		return nil, err
	}

	pf, err := policy.DecodePolicyFile(o.Policy, policy.FormatYAML)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	r, err := policy.ResolveSession(pf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	if err := policy.CheckSandboxEnforceable(r.Bound); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	ph, err := hooks.ParseHarness(r.Harness)
	if err != nil {
		return nil, fmt.Errorf("%w: harness: %w", ErrPolicy, err)
	}
	s.harness = ph
	if o.Harness != "" && o.Harness != ph {
		return nil, fmt.Errorf("%w: --harness %s: the policy's harness is %s", ErrOptions, o.Harness, ph)
	}
	if name == "" {
		name = "barry-" + string(ph)
	}
	s.name = name
	if errs := validation.IsDNS1123Label(s.name); len(errs) > 0 {
		return nil, fmt.Errorf("%w: name %q: %s", ErrOptions, s.name, errs[0])
	}
	if s.namespace != "" {
		if errs := validation.IsDNS1123Label(s.namespace); len(errs) > 0 {
			return nil, fmt.Errorf("%w: namespace %q: %s", ErrOptions, s.namespace, errs[0])
		}
	}
	for _, n := range []struct{ flag, v string }{{"workspace-claim", o.WorkspaceClaim}, {"credential-secret", o.CredentialSecret}} {
		if n.v == "" {
			continue
		}
		if errs := validation.IsDNS1123Subdomain(n.v); len(errs) > 0 {
			return nil, fmt.Errorf("%w: --%s %q: %s", ErrOptions, n.flag, n.v, errs[0])
		}
	}

	var network *policy.NetworkRules
	if r.Bound != nil && r.Bound.Network != nil {
		network = r.Bound.Network
		s.allowDomains = network.AllowDomains
	}

	// Warnings: what the manifests cannot fix but the user should know.
	info, ok := hooks.LaunchInfoOf(s.harness, AgentHome)
	if !ok {
		s.warnings = append(s.warnings, fmt.Sprintf("harness %s: sandboxd knows no program for it; the agent container runs its image's entrypoint", s.harness))
	} else {
		s.program = info.Program
		// The sidecar reads the policy as it is: sandboxd launch's
		// addition of the harness's API hosts does not happen in a pod.
		if d, err := policy.CompileNetwork(network, true); err == nil {
			for _, h := range info.APIHosts {
				if !d.DecideHostName(h).Allowed() {
					s.warnings = append(s.warnings, fmt.Sprintf("harness %s: the policy does not allow its API host %s (add it to allowDomains)", s.harness, h))
				}
			}
		}
	}
	if len(r.Credentials) > 0 && o.CredentialSecret == "" {
		s.warnings = append(s.warnings, "the policy names credentials but no --credential-secret is mounted in the sidecar")
	}
	return s, nil
}

// CheckAgentUID refuses an agent uid the pod cannot confine: root (the
// init container's, and one the rules would not hold), the proxy's
// ProxyUID, and negative ones.
func CheckAgentUID(uid int64) error {
	switch {
	case uid == 0:
		return fmt.Errorf("%w: agent uid 0: the agent must not be root", ErrOptions)
	case uid == ProxyUID:
		return fmt.Errorf("%w: agent uid %d: the proxy's uid; the agent's must differ", ErrOptions, ProxyUID)
	case uid < 0 || uid > 1<<31-1:
		return fmt.Errorf("%w: agent uid %d: out of range", ErrOptions, uid)
	}
	return nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }
