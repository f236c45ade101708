package cli

import (
	"runtime/debug"
	"strings"
)

// Version is the version a binary reports: linked (set with -ldflags "-X
// main.version=...") when the build set one, else the module version Go
// recorded (a `go install ...@v1.2.3` build's), else "dev"; followed by
// the commit it was built from, when Go recorded one (a build in a git
// checkout), with ", modified" for a checkout with uncommitted changes.
func Version(linked string) string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(linked, bi)
}

func versionOf(linked string, bi *debug.BuildInfo) string {
	v := linked
	if v == "" || v == "dev" {
		v = "dev"
		if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
	}
	if bi == nil {
		return v
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" || strings.Contains(v, rev[:min(12, len(rev))]) {
		return v
	}
	rev = rev[:min(12, len(rev))]
	if modified {
		rev += ", modified"
	}
	return v + " (commit " + rev + ")"
}
