package policy

import (
	"slices"
	"sort"
)

// Network action tags, the values of network.actions.
const (
	ActionAll       = "all"
	ActionWrite     = "write"
	ActionRead      = "read"
	ActionGitPush   = "git:push"
	ActionGitFetch  = "git:fetch"
	ActionHTTPWrite = "http:write"
	ActionHTTPRead  = "http:read"
	ActionSSHWrite  = "ssh:write"
	ActionSSHRead   = "ssh:read"
	ActionDNS       = "dns"
)

// NetworkActions lists every valid network action tag, in the bounds SDK's order.
var NetworkActions = []string{
	ActionAll, ActionDNS, ActionGitFetch, ActionGitPush, ActionHTTPRead,
	ActionHTTPWrite, ActionRead, ActionSSHRead, ActionSSHWrite, ActionWrite,
}

// actionChildren is the action hierarchy: a parent tag implies its children.
// "read" also covers ssh:read: the bounds SDK calls read "all outbound reads", and
// an ssh connection is one, so denying read and leaving ssh open would
// surprise the person who wrote it.
var actionChildren = map[string][]string{
	ActionAll:   {ActionWrite, ActionRead},
	ActionWrite: {ActionGitPush, ActionHTTPWrite, ActionSSHWrite},
	ActionRead:  {ActionGitFetch, ActionHTTPRead, ActionSSHRead, ActionDNS},
}

// IsNetworkAction reports whether s is a valid network action tag.
func IsNetworkAction(s string) bool { return slices.Contains(NetworkActions, s) }

// ExpandActions returns the tags with all their descendants, sorted:
// ["write"] → [git:push http:write ssh:write write].
func ExpandActions(actions []string) []string {
	set := map[string]bool{}
	var add func(string)
	add = func(a string) {
		if set[a] {
			return
		}
		set[a] = true
		for _, c := range actionChildren[a] {
			add(c)
		}
	}
	for _, a := range actions {
		add(a)
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// NetworkToolActions maps a tool's bare name, as its bag or harness defines
// it, to the network action tags calling it performs. Every key must name a
// real tool in GitBagTools or a harness's native tools (a test checks it): a
// key naming no tool is silently inert.
var NetworkToolActions = map[string][]string{
	// The git bag's tools.
	"push":  {ActionGitPush},
	"fetch": {ActionGitFetch},
	"pull":  {ActionGitFetch},
	"clone": {ActionGitFetch},
	// Native web tools.
	"WebFetch":          {ActionHTTPRead},
	"WebSearch":         {ActionHTTPRead},
	"web_fetch":         {ActionHTTPRead},
	"google_web_search": {ActionHTTPRead},
	"web_search":        {ActionHTTPRead},
}

// NetworkToolURLParams maps a tool's bare name to the parameter holding the
// URL that domain rules apply to. Without it, domains would only constrain
// the shell, and denying *.internal.co would leave WebFetch to it open.
var NetworkToolURLParams = map[string]string{
	"WebFetch":  "url",
	"web_fetch": "prompt",
	"clone":     "url",
}

// GitBagTools is the git bag's tool set: the names NetworkToolActions' git
// entries must match.
var GitBagTools = []string{
	"add", "branch", "checkout", "clone", "commit", "diff", "fetch", "log",
	"merge", "pull", "push", "rebase", "remote", "reset", "show", "stash",
	"status", "tag",
}

// GetImpliedDeniedTools returns the bare tool names, sorted, whose network
// actions a denial of actions covers: denying "write" withholds push.
func GetImpliedDeniedTools(actions []string) []string {
	if len(actions) == 0 {
		return nil
	}
	denied := ExpandActions(actions)
	var out []string
	for tool, tags := range NetworkToolActions {
		for _, t := range tags {
			if slices.Contains(denied, t) {
				out = append(out, tool)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// IsActionDenied reports the denied tag (from the expanded set of denied
// actions) that covers action, or "" when it is not denied.
func IsActionDenied(action string, denied []string) string {
	exp := ExpandActions(denied)
	if slices.Contains(exp, action) {
		return action
	}
	return ""
}
