package hooks

import (
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/policy/shell"
)

// ClassifierShell rules on shell commands with shell.Decide, the static
// classifier's ruling of package policy/shell, which "sandboxd policy
// classify" explains with. It is the engine's default ShellRuler and is
// safe for concurrent use.
type ClassifierShell struct{}

// RuleCommand implements ShellRuler with shell.Decide.
func (ClassifierShell) RuleCommand(command, cwd string, b *policy.Bound, net *policy.NetworkDecider, m policy.FileMatcher) policy.Decision {
	return shell.Decide(command, cwd, b, net, m)
}

// ShellRuleIn names the first kind of rule in b that a shell command could
// break ("bash", "files", "network"), or "" when there is none: shell.RuleIn.
func ShellRuleIn(b *policy.Bound) string { return shell.RuleIn(b) }
