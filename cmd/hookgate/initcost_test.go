package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// initLine is one line of GODEBUG=inittrace=1: "init PKG @T ms, D ms
// clock, B bytes, A allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, ([0-9.]+) ms clock, (\d+) bytes, (\d+) allocs$`)

// BenchmarkInitCost starts the built hookgate (`hookgate version`) b.N
// times with GODEBUG=inittrace=1 and reports what package initialisation
// costs it: the sum of every package's init per start (init-µs/op), and
// each package's least init over the runs for the costliest packages. It
// prints; it judges nothing (a harness starts hookgate once per tool call,
// and these figures are for comparing builds, run against run).
//
//	go test -run '^$' -bench InitCost -benchtime 25x ./cmd/hookgate
func BenchmarkInitCost(b *testing.B) {
	type cost struct {
		clock         time.Duration
		bytes, allocs int
	}
	best := map[string]*cost{}
	var total time.Duration
	for b.Loop() {
		cmd := exec.Command(bin, "version")
		cmd.Env = []string{"GODEBUG=inittrace=1"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("hookgate version: %v\n%s", err, stderr.String())
		}
		n := 0
		for line := range strings.Lines(stderr.String()) {
			m := initLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil {
				continue
			}
			n++
			ms, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				b.Fatalf("inittrace line %q: %v", line, err)
			}
			d := time.Duration(ms * float64(time.Millisecond))
			total += d
			by, _ := strconv.Atoi(m[3])
			a, _ := strconv.Atoi(m[4])
			if c := best[m[1]]; c != nil {
				c.clock, c.bytes, c.allocs = min(c.clock, d), min(c.bytes, by), min(c.allocs, a)
			} else {
				best[m[1]] = &cost{d, by, a}
			}
		}
		if n == 0 {
			b.Fatalf("GODEBUG=inittrace=1 printed no init lines:\n%s", stderr.String())
		}
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "init-µs/op")
	names := make([]string, 0, len(best))
	var sumBest time.Duration
	for pkg, c := range best {
		names = append(names, pkg)
		sumBest += c.clock
	}
	slices.SortFunc(names, func(x, y string) int { return int(best[y].clock - best[x].clock) })
	b.Logf("%d packages; sum of their least inits over %d runs: %s", len(names), b.N, sumBest)
	for _, pkg := range names[:min(8, len(names))] {
		c := best[pkg]
		b.Logf("%-50s %8s %7d bytes %5d allocs", pkg, c.clock, c.bytes, c.allocs)
	}
}
