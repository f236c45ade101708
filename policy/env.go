package policy

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"
)

// EnvironmentSection is the policy file's environment section (outside
// the SDK's Bound, like filesystem): what of sandboxd's own environment the
// sandbox does not get.
type EnvironmentSection struct {
	// Unset are variable names or globs (path.Match: *, ?, [...]; '*' does
	// not match '/'). Every
	// variable of sandboxd's environment whose name matches one is left
	// out of the sandbox's; what sandboxd itself sets inside (the proxy
	// variables, BARRY_*) is added after and is not affected.
	Unset []string `json:"unset,omitempty"`
}

// CheckEnvPattern reports why p is not a variable name or glob for
// environment.unset and --unset-env.
func CheckEnvPattern(p string) error {
	switch {
	case p == "":
		return errors.New("empty name")
	case strings.ContainsAny(p, "=\x00\r\n"):
		return fmt.Errorf("%q: a variable name or glob has no '=' and no control characters", p)
	}
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q: not a glob (%v)", p, err)
	}
	return nil
}

// EnvRemovedBy returns the first of patterns that matches the variable
// name, or "" when none does: the one rule of which variables the sandbox
// does not get (sandboxd run and sandboxd explain --env both ask it).
func EnvRemovedBy(patterns []string, name string) string {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return p
		}
	}
	return ""
}

// EnvRemoval is one variable left out of the sandbox's environment, and
// the pattern that did it.
type EnvRemoval struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
}

// FilterEnv splits env (NAME=value entries) into the entries the sandbox
// keeps and the variables patterns remove (an entry without '=' is a
// variable of that name). path.Match's '*' does not match '/': a variable
// whose name holds one (rare; shells cannot set it) is matched only by a
// pattern that names the '/'.
func FilterEnv(env, patterns []string) (kept []string, removed []EnvRemoval) {
	kept = []string{}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if p := EnvRemovedBy(patterns, name); p != "" && name != "" {
			removed = append(removed, EnvRemoval{Name: name, Pattern: p})
			continue
		}
		kept = append(kept, kv)
	}
	return kept, removed
}

// envPatterns decodes environment.unset.
func (d *decoder) envPatterns(n *yaml.Node, p string) []string {
	l := d.strList(n, p)
	for i, s := range l {
		if err := CheckEnvPattern(s); err != nil {
			d.errf(n, index(p, i), "%v", err)
		}
	}
	return l
}
