package supervisor

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/barry-rocks/sandbox/internal/audit"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// unsetPatterns are the variables the sandbox does not get: --unset-env,
// then the policy file's environment.unset.
func (o *Options) unsetPatterns(r *policy.Resolved) []string {
	p := append([]string{}, o.UnsetEnv...)
	if r != nil && r.Environment != nil {
		p = append(p, r.Environment.Unset...)
	}
	return p
}

// hostEnv is what of sandboxd's environment the sandbox gets: all of it
// less what --unset-env and environment.unset remove (policy.FilterEnv),
// with what they removed. The session computes it once (resolve); the
// launch's configuration and the command's environment both read it.
func (o *Options) hostEnv(r *policy.Resolved) ([]string, []policy.EnvRemoval) {
	return policy.FilterEnv(os.Environ(), o.unsetPatterns(r))
}

// sandboxEnv is the command's environment before a launch adds its own:
// host (hostEnv), then the proxy variables with the sandbox's credentials
// and BARRY_SANDBOX_ID, which no pattern removes.
func sandboxEnv(host []string, id, secret, self string) []string {
	env := procjail.ProxyEnv(host, procjail.ProxyEnvArgs{
		Port: ProxyInsidePort, User: id, Password: secret, ConnectHelper: self,
	})
	return append(withoutEnv(env, "BARRY_SANDBOX_ID"), "BARRY_SANDBOX_ID="+id)
}

// envAuditAttrs name, on the session's start line, the variables left out
// of the command's environment and the credentials (names only).
func (s *session) envAuditAttrs() []slog.Attr {
	if len(s.envRemoved) == 0 {
		return s.credAuditAttrs()
	}
	names := make([]string, len(s.envRemoved))
	for i, r := range s.envRemoved {
		names[i] = r.Name
	}
	return append([]slog.Attr{slog.Any(audit.AttrEnvRemoved, names)}, s.credAuditAttrs()...)
}

// envLookup is os.Getenv over env (NAME=value entries; the last wins).
func envLookup(env []string) func(string) string {
	return func(name string) string {
		v := ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == name {
				v = val
			}
		}
		return v
	}
}

// EnvVariable is one variable the sandbox's command would get, by name:
// its value is never shown (it may be a secret).
type EnvVariable struct {
	Name string `json:"name"`
	// From is "host" (sandboxd's environment, passed through),
	// "sandboxd" (set or replaced by sandboxd: the proxy variables, the
	// sandbox's id, the hook socket, the trust variables) or "credential"
	// (a placeholder; the proxy puts the real value into requests to
	// Hosts).
	From  string   `json:"from"`
	Hosts []string `json:"hosts,omitempty"`
}

// EnvExplanation is what sandboxd explain --env reports.
type EnvExplanation struct {
	Variables []EnvVariable       `json:"variables"`
	Removed   []policy.EnvRemoval `json:"removed"`
	Patterns  []string            `json:"patterns"`
}

// ExplainEnv says, by name only, which variables a sandbox started now
// with opts would give its command (sandboxd run's, without a launch),
// which ones --unset-env and the policy's environment.unset remove, and
// which are credentials. No credential's value is read.
func ExplainEnv(opts Options) (*EnvExplanation, error) {
	sp, err := opts.resolveNow()
	if err != nil {
		return nil, err
	}
	specs, err := opts.credentialSpecs(sp.resolved)
	if err != nil {
		return nil, err
	}
	patterns := opts.unsetPatterns(sp.resolved)
	self, _ := os.Executable()
	host := os.Environ()
	kept, removed := opts.hostEnv(sp.resolved)
	for _, c := range specs {
		kept = append(withoutEnv(kept, c.Env), c.Env+"=placeholder")
	}
	env := sandboxEnv(kept, "sandboxd-explain", "secret", self)
	if opts.PolicyFile != "" {
		env = append(withoutEnv(env, "BARRY_HOOK_SOCKET"), fmt.Sprintf("BARRY_HOOK_SOCKET=tcp:127.0.0.1:%d", HookInsidePort))
	}
	if len(specs) > 0 {
		trust := filepath.Join(RuntimeBase(), runtimePrefix+"ID", "trust")
		env = trustEnv(env, filepath.Join(trust, "ca-bundle.pem"), filepath.Join(trust, "truststore.jks"))
	}
	e := &EnvExplanation{Variables: []EnvVariable{}, Removed: notCredentials(removed, specs), Patterns: patterns}
	if e.Removed == nil {
		e.Removed = []policy.EnvRemoval{}
	}
	for _, kv := range env {
		from := "sandboxd"
		if slices.Contains(host, kv) {
			from = "host"
		}
		name, _, _ := strings.Cut(kv, "=")
		v := EnvVariable{Name: name, From: from}
		for _, c := range specs {
			if c.Env == name {
				v.From, v.Hosts = "credential", c.Hosts
			}
		}
		e.Variables = append(e.Variables, v)
	}
	slices.SortFunc(e.Variables, func(a, b EnvVariable) int { return strings.Compare(a.Name, b.Name) })
	return e, nil
}

// withoutEnv drops every NAME=... entry from env.
func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
