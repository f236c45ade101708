package cli

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		linked string
		bi     *debug.BuildInfo
		want   string
	}{
		{"", nil, "dev"},
		{"v1.2.3", nil, "v1.2.3"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")}, "dev (commit 0123456789ab)"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")}, "dev (commit 0123456789ab, modified)"},
		{"dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "v0.4.0"},
		{"", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206070000-0123456789ab"}, Settings: vcs(rev, "false")}, "v0.0.0-20261206070000-0123456789ab"},
		{"v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}, Settings: vcs(rev, "false")}, "v1.2.3 (commit 0123456789ab)"},
	} {
		if got := versionOf(c.linked, c.bi); got != c.want {
			t.Errorf("versionOf(%q, %+v) = %q, want %q", c.linked, c.bi, got, c.want)
		}
	}
}
