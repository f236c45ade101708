//go:build unix

package testenv

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LeftBehind names what a test process killed before its cleanups ran (a
// test binary's timeout, ^C) left in dir: the entries named prefix + PID +
// "-" + anything whose process PID no longer exists. A PID that a new
// process has taken since keeps its entry until a later call; a live
// process's entries (this one's included) are never named.
func LeftBehind(dir, prefix string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		s, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(s)
		if !ok || err != nil || pid <= 0 {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			out = append(out, e.Name())
		}
	}
	return out
}
