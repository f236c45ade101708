package kube

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/truststore"
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
	// credentials are the policy's credential variables, in its order,
	// and the Secret key each is read from.
	credentials []credential
	warnings    []string
}

// credential is one of the policy's credentials as the pod carries it.
type credential struct{ env, key string }

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
	if err := s.checkCredentials(r, network); err != nil {
		return nil, err
	}
	return s, nil
}

// reservedCredentialEnv are variables a credential cannot be: the agent's
// that the pod sets itself, and those the placeholder wrapper's shell
// reads.
var reservedCredentialEnv = append([]string{"HOME", "PATH", "IFS", "BARRY_HOOK_SOCKET", "JAVA_TOOL_OPTIONS"}, truststore.BundleVars...)

// checkCredentials takes the policy's credentials: each needs the Secret
// (--credential-secret), a key of it (its file CredentialDir/KEY, or none
// for the key named as its variable), hosts the policy allows, a variable
// the pod does not set itself, and a program to wrap (the agent's command
// reads the placeholders the sidecar writes).
func (s *session) checkCredentials(r *policy.Resolved, network *policy.NetworkRules) error {
	if len(r.Credentials) == 0 {
		return nil
	}
	if s.credentialSecret == "" {
		return fmt.Errorf("%w: the policy names credentials (%s): --credential-secret is required, the Secret the sidecar reads their values from", ErrOptions, r.Credentials[0].Env)
	}
	d, err := policy.CompileNetwork(network, true)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	for _, c := range r.Credentials {
		key := c.Env
		if c.File != "" {
			dir, base := path.Split(path.Clean(c.File))
			if path.Clean(dir) != CredentialDir || !path.IsAbs(c.File) {
				return fmt.Errorf("%w: credential %s: file %s: in a pod a value is a key of the Secret mounted at %s (file %s/KEY, or no file for the key %s)", ErrPolicy, c.Env, c.File, CredentialDir, CredentialDir, c.Env)
			}
			key = base
		}
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("%w: credential %s: Secret key %q: %s", ErrPolicy, c.Env, key, errs[0])
		}
		if slices.Contains(reservedCredentialEnv, c.Env) {
			return fmt.Errorf("%w: credential %s: the pod sets that variable of the agent itself; name the credential's variable otherwise", ErrPolicy, c.Env)
		}
		if dec := d.DecideCredential(c); !dec.Allowed() {
			return fmt.Errorf("%w: %s", ErrPolicy, dec.Reason)
		}
		s.credentials = append(s.credentials, credential{env: c.Env, key: key})
	}
	return nil
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
