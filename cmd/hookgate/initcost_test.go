package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// initBudget is the most one package's initialisation may cost hookgate,
// which a harness starts on every tool call (issue 18). The runtime's own
// packages stay well under it; a table or regular expression built at
// package level does not.
const initBudget = 50 * time.Microsecond

// initRuns is how many times TestInitCost starts hookgate. Each package is
// judged by its fastest run, so one run slowed by the machine fails
// nothing.
const initRuns = 25

// initAllowances are the packages hookgate cannot make cheaper to start,
// each with the budget it gets instead of initBudget and why. Every other
// package, ours and our dependencies', gets initBudget.
var initAllowances = map[string]struct {
	budget time.Duration
	why    string
}{
	// Measured 40-55 µs on a 2-vCPU VM (15 KB, 104 allocations).
	"mvdan.cc/sh/v3/fileutil": {100 * time.Microsecond, "a dependency (mvdan.cc/sh/v3/syntax imports it) that compiles two " +
		"regular expressions at package level; as the process's first regexp compilation it also pays regexp's cold start"},
	// Measured 30-45 µs; the minimal Go hook pays the same.
	"internal/godebug": {100 * time.Microsecond, "the standard library's, in every Go program: it parses GODEBUG, " +
		"which this measurement sets"},
}

// initLine is one line of GODEBUG=inittrace=1: "init PKG @T ms, D ms
// clock, B bytes, A allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, ([0-9.]+) ms clock, (\d+) bytes, (\d+) allocs$`)

// TestInitCost: no package linked into hookgate spends more than initBudget
// in its initialisation (initAllowances lists the exceptions, with theirs),
// measured with GODEBUG=inittrace=1 on the built binary: each package's
// minimum over initRuns runs.
func TestInitCost(t *testing.T) {
	type cost struct {
		clock         time.Duration
		bytes, allocs int
	}
	best := map[string]*cost{}
	for range initRuns {
		cmd := exec.Command(bin, "version")
		cmd.Env = []string{"GODEBUG=inittrace=1"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("hookgate version: %v\n%s", err, stderr.String())
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
				t.Fatalf("inittrace line %q: %v", line, err)
			}
			d := time.Duration(ms * float64(time.Millisecond))
			b, _ := strconv.Atoi(m[3])
			a, _ := strconv.Atoi(m[4])
			if c := best[m[1]]; c != nil {
				c.clock, c.bytes, c.allocs = min(c.clock, d), min(c.bytes, b), min(c.allocs, a)
			} else {
				best[m[1]] = &cost{d, b, a}
			}
		}
		if n == 0 {
			t.Fatalf("GODEBUG=inittrace=1 printed no init lines:\n%s", stderr.String())
		}
	}
	var over []string
	for pkg, c := range best {
		budget := initBudget
		if a, ok := initAllowances[pkg]; ok {
			budget = a.budget
			if c.clock > initBudget {
				t.Logf("%s: %s, over %s but within its allowance of %s: %s", pkg, c.clock, initBudget, a.budget, a.why)
			}
		}
		if c.clock > budget {
			over = append(over, fmt.Sprintf("%s: %s (%d bytes, %d allocs; budget %s)", pkg, c.clock, c.bytes, c.allocs, budget))
		}
	}
	if len(over) > 0 {
		slices.Sort(over)
		t.Errorf("packages whose init costs hookgate more than their budget (fastest of %d runs; make the work lazy, issue 18):\n\t%s",
			initRuns, strings.Join(over, "\n\t"))
	}
	if testing.Verbose() {
		names := make([]string, 0, len(best))
		for pkg := range best {
			names = append(names, pkg)
		}
		slices.SortFunc(names, func(a, b string) int { return int(best[b].clock - best[a].clock) })
		for _, pkg := range names[:min(8, len(names))] {
			t.Logf("%-50s %s", pkg, best[pkg].clock)
		}
	}
}
