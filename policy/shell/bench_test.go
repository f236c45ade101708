package shell

import "testing"

// Typical agent command lines, 30–200 bytes.
var benchLines = []string{
	`cd /work/repo && git status --short && git diff --stat HEAD~1`,
	`npm test -- --runInBand 2>&1 | tail -n 50`,
	`grep -rn "func Classify" --include='*.go' . | head -20`,
	`git add -A && git commit -m "fix: handle empty input" && git push origin HEAD:feature/x`,
	`curl -sSL -H 'Accept: application/json' https://api.example.com/v1/items?limit=10 | jq '.items[].id'`,
	`bash -lc 'source .venv/bin/activate && pytest -q tests/test_api.py -k "not slow"'`,
	`find . -name '*.tmp' -mtime +7 -exec rm -f {} \; && echo cleaned > /tmp/clean.log`,
}

func BenchmarkClassify(b *testing.B) {
	for _, l := range benchLines {
		b.Run(l[:min(len(l), 24)], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Classify(l)
			}
		})
	}
}

// BenchmarkIsProgramDenied is the hook gate's hot path: classify and match.
func BenchmarkIsProgramDenied(b *testing.B) {
	rules := []string{"git:push", "gh:pr:create", "rm", "npm:publish"}
	for _, l := range benchLines {
		b.Run(l[:min(len(l), 24)], func(b *testing.B) {
			for b.Loop() {
				_, _ = IsProgramDenied(l, rules)
			}
		})
	}
}
