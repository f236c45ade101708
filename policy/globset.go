package policy

import (
	"path"
	"strings"
)

// Special segments for the parts of a pattern that stand for several
// segments not known at merge time.
const (
	segHome = "\x00home"
	segCwd  = "\x00cwd"
)

// globSegments turns a file pattern into segments with an explicit root:
// "/a/*" → [a *]; "~/x" → [home x]; "src/**" → [cwd src **]; "*.pem" (no
// slash) → [** *.pem].
func globSegments(p string) []string {
	switch {
	case !strings.Contains(p, "/") && p != "~":
		return []string{"**", p}
	case p == "~" || strings.HasPrefix(p, "~/"):
		return append([]string{segHome}, splitPath(strings.TrimPrefix(p, "~"))...)
	case strings.HasPrefix(p, "/"):
		return splitPath(p)
	default:
		return append([]string{segCwd}, splitPath(p)...)
	}
}

// globCovers reports whether every path pattern p matches (and, since a
// match covers what is below it, every descendant) is matched by q. It is
// sound, not complete: when unsure it says no.
func globCovers(q, p string) bool {
	return segsCover(globSegments(q), globSegments(p))
}

func segsCover(qs, ps []string) bool {
	if len(qs) == 0 {
		return true
	}
	if qs[0] == "**" {
		for i := 0; i <= len(ps); i++ {
			if segsCover(qs[1:], ps[i:]) {
				return true
			}
		}
		return false
	}
	if len(ps) == 0 || ps[0] == "**" {
		return false
	}
	q, p := qs[0], ps[0]
	switch {
	case q == p:
	case p == segHome || p == segCwd || q == segHome || q == segCwd:
		return false
	case !strings.ContainsAny(p, "*?[\\"):
		if ok, _ := path.Match(q, p); !ok {
			return false
		}
	case q == "*":
	default:
		return false
	}
	return segsCover(qs[1:], ps[1:])
}

// intersectGlobs intersects two file allowlists (nil means no list): an
// entry survives when the other list has an entry covering it. Partial
// overlaps ("*.go" and "/w/**") are dropped, so the result may deny more
// than the exact intersection, never less.
func intersectGlobs(a, b []string) []string {
	return intersectAllowlists(a, b, globCovers)
}
