package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestExpandActions(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"write"}, "git:push,http:write,ssh:write,write"},
		{[]string{"read"}, "dns,git:fetch,http:read,read,ssh:read"},
		{[]string{"all"}, "all,dns,git:fetch,git:push,http:read,http:write,read,ssh:read,ssh:write,write"},
		{[]string{"git:push"}, "git:push"},
		{[]string{"dns", "dns"}, "dns"},
		{[]string{"http:read", "write"}, "git:push,http:read,http:write,ssh:write,write"},
	}
	for _, c := range cases {
		if got := strings.Join(ExpandActions(c.in), ","); got != c.want {
			t.Errorf("ExpandActions(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIsActionDenied(t *testing.T) {
	cases := []struct {
		action string
		denied []string
		want   bool
	}{
		{"git:push", []string{"write"}, true},
		{"git:fetch", []string{"write"}, false},
		{"dns", []string{"read"}, true},
		{"ssh:read", []string{"read"}, true},
		{"http:write", []string{"all"}, true},
		{"http:write", []string{"http:read"}, false},
		{"write", []string{"git:push"}, false},
	}
	for _, c := range cases {
		if got := IsActionDenied(c.action, c.denied) != ""; got != c.want {
			t.Errorf("IsActionDenied(%q, %v) = %v, want %v", c.action, c.denied, got, c.want)
		}
	}
}

func TestGetImpliedDeniedTools(t *testing.T) {
	cases := []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"write"}, "push"},
		{[]string{"git:fetch"}, "clone,fetch,pull"},
		{[]string{"http:read"}, "WebFetch,WebSearch,google_web_search,web_fetch,web_search"},
		{[]string{"all"}, "WebFetch,WebSearch,clone,fetch,google_web_search,pull,push,web_fetch,web_search"},
		{[]string{"dns"}, ""},
	}
	for _, c := range cases {
		if got := strings.Join(GetImpliedDeniedTools(c.in), ","); got != c.want {
			t.Errorf("GetImpliedDeniedTools(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestNetworkToolTablesNameRealTools fails when a table key names no tool of
// the git bag or of any harness: such a key is silently inert.
func TestNetworkToolTablesNameRealTools(t *testing.T) {
	real := map[string]bool{}
	for _, n := range GitBagTools {
		real[n] = true
	}
	for _, h := range Harnesses() {
		for _, n := range h.NativeTools {
			real[n] = true
		}
	}
	for k, tags := range NetworkToolActions {
		if !real[k] {
			t.Errorf("NetworkToolActions key %q names no real tool", k)
		}
		for _, tag := range tags {
			if !IsNetworkAction(tag) {
				t.Errorf("NetworkToolActions[%q] has unknown tag %q", k, tag)
			}
		}
	}
	for k := range NetworkToolURLParams {
		if !real[k] {
			t.Errorf("NetworkToolURLParams key %q names no real tool", k)
		}
	}
	if NetworkToolURLParams["WebFetch"] != "url" {
		t.Error("WebFetch's URL parameter must be url")
	}
	for _, git := range []string{"push", "fetch", "pull", "clone"} {
		if !slices.Contains(GitBagTools, git) {
			t.Errorf("git bag lacks %s", git)
		}
	}
}
