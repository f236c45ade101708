package kube

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/testenv"
)

const thisPackage = "github.com/barry-rocks/sandbox/internal/kube"

// TestOnlySandboxdImportsKube keeps k8s.io out of hookgate, which a
// harness starts on every tool call: no package of hookgate's build is
// this one or from k8s.io, and only cmd/sandboxd imports this package.
func TestOnlySandboxdImportsKube(t *testing.T) {
	goBin := testenv.NeedCommand(t, "go")
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	for _, p := range list("-deps", "github.com/barry-rocks/sandbox/cmd/hookgate") {
		if p == thisPackage || strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/") {
			t.Errorf("hookgate links %s", p)
		}
	}
	for _, line := range list("-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "github.com/barry-rocks/sandbox/...") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if imp == thisPackage && f[0] != "github.com/barry-rocks/sandbox/cmd/sandboxd" {
				t.Errorf("%s imports %s: only cmd/sandboxd may", f[0], thisPackage)
			}
		}
	}
}
