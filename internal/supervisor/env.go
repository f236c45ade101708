package supervisor

import (
	"fmt"
	"log/slog"
	"os"
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

// sandboxEnv is the command's environment before a launch adds its own:
// sandboxd's environment less what patterns remove (policy.FilterEnv), then
// the proxy variables with the sandbox's credentials and BARRY_SANDBOX_ID,
// which no pattern removes. It returns the variables removed too.
func sandboxEnv(host, patterns []string, id, secret, self string) ([]string, []policy.EnvRemoval) {
	kept, removed := policy.FilterEnv(host, patterns)
	env := procjail.ProxyEnv(kept, procjail.ProxyEnvArgs{
		Port: ProxyInsidePort, User: id, Password: secret, ConnectHelper: self,
	})
	return append(withoutEnv(env, "BARRY_SANDBOX_ID"), "BARRY_SANDBOX_ID="+id), removed
}

// envAuditAttrs name, on the session's start line, the variables left out
// of the command's environment (names only).
func (s *session) envAuditAttrs() []slog.Attr {
	if len(s.envRemoved) == 0 {
		return nil
	}
	names := make([]string, len(s.envRemoved))
	for i, r := range s.envRemoved {
		names[i] = r.Name
	}
	return []slog.Attr{slog.Any(audit.AttrEnvRemoved, names)}
}

// envLookup is os.Getenv over sandboxd's environment less what patterns
// remove.
func envLookup(patterns []string) func(string) string {
	kept, _ := policy.FilterEnv(os.Environ(), patterns)
	return func(name string) string {
		v := ""
		for _, kv := range kept {
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
	// From is "host" (sandboxd's environment, passed through) or
	// "sandboxd" (set or replaced by sandboxd: the proxy variables, the
	// sandbox's id, the hook socket).
	From string `json:"from"`
}

// EnvExplanation is what sandboxd explain --env reports.
type EnvExplanation struct {
	Variables []EnvVariable       `json:"variables"`
	Removed   []policy.EnvRemoval `json:"removed"`
	Patterns  []string            `json:"patterns"`
}

// ExplainEnv says, by name only, which variables a sandbox started now
// with opts would give its command (sandboxd run's, without a launch), and
// which ones --unset-env and the policy's environment.unset remove.
func ExplainEnv(opts Options) (*EnvExplanation, error) {
	sp, err := opts.resolveNow()
	if err != nil {
		return nil, err
	}
	patterns := opts.unsetPatterns(sp.resolved)
	self, _ := os.Executable()
	host := os.Environ()
	env, removed := sandboxEnv(host, patterns, "sandboxd-explain", "secret", self)
	if opts.PolicyFile != "" {
		env = append(withoutEnv(env, "BARRY_HOOK_SOCKET"), fmt.Sprintf("BARRY_HOOK_SOCKET=tcp:127.0.0.1:%d", HookInsidePort))
	}
	e := &EnvExplanation{Variables: []EnvVariable{}, Removed: removed, Patterns: patterns}
	if e.Removed == nil {
		e.Removed = []policy.EnvRemoval{}
	}
	for _, kv := range env {
		from := "sandboxd"
		if slices.Contains(host, kv) {
			from = "host"
		}
		name, _, _ := strings.Cut(kv, "=")
		e.Variables = append(e.Variables, EnvVariable{Name: name, From: from})
	}
	slices.SortFunc(e.Variables, func(a, b EnvVariable) int { return strings.Compare(a.Name, b.Name) })
	return e, nil
}
