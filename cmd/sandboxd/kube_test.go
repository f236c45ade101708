package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/kube"
	"github.com/barry-rocks/sandbox/internal/supervisor"
)

// TestKubeSidecarPaths: the paths the manifests give the agent are the
// ones the sidecar writes under --run-dir.
func TestKubeSidecarPaths(t *testing.T) {
	for got, want := range map[string]string{
		kube.PlaceholderDir: kube.RunDir + "/" + supervisor.SidecarPlaceholders,
		kube.TrustBundle:    kube.RunDir + "/" + supervisor.SidecarTrust + "/" + supervisor.TrustBundle,
		kube.TrustStore:     kube.RunDir + "/" + supervisor.SidecarTrust + "/" + supervisor.TrustStore,
	} {
		if got != want {
			t.Errorf("kube's %s, the sidecar's %s", got, want)
		}
	}
}

func runKube(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{kubeCommand()}}
	code := app.Main(context.Background(), cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb}, append([]string{"kube"}, args...))
	return code, out.String(), errb.String()
}

// TestKubeCLI checks the wiring: flags reach the package, documents reach
// stdout, warnings and refusals reach stderr as one line each, and the exit
// codes (0, 1 refusal, 2 usage).
func TestKubeCLI(t *testing.T) {
	const pol = "../../internal/kube/testdata/codex.policy.yaml"
	code, out, stderr := runKube(t, "", "render", "--policy", pol, "--image", "img:1", "--kind", "job", "--agent-uid", "2000", "--name", "s1")
	if code != 0 || stderr != "" {
		t.Fatalf("render: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"kind: ConfigMap", "kind: ServiceAccount", "kind: NetworkPolicy", "kind: Job", "name: s1-policy", `- "2000"`, "- codex"} {
		if !strings.Contains(out, want) {
			t.Errorf("render output lacks %q", want)
		}
	}
	if n := strings.Count(out, "\n---\n"); n != 3 {
		t.Errorf("%d document separators, want 3", n)
	}

	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: team}\nspec:\n  serviceAccountName: other\n  containers: [{name: a, image: a}]\n"
	code, out, stderr = runKube(t, pod, "inject", "--policy", pol, "--image", "img:1")
	if code != 0 || !strings.Contains(out, "name: barry-proxy") || !strings.Contains(out, "namespace: team") {
		t.Fatalf("inject: exit %d: %s\n%s", code, stderr, out)
	}
	if want := "sandboxd kube inject: warning: serviceAccountName other replaced by the session's p (no token mounted)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}

	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		code  int
		err   string
	}{
		{"refusal", strings.Replace(pod, "spec:\n", "spec:\n  hostNetwork: true\n", 1), []string{"inject", "--policy", pol, "--image", "i"}, 1,
			"sandboxd kube inject: cannot be made safe: hostNetwork: true: the agent would be in the node's network namespace, outside the pod's rules\n"},
		{"duplicate key on one line", "apiVersion: v1\nkind: Pod\nkind: Pod\n", []string{"inject", "--policy", pol, "--image", "i"}, 1,
			"sandboxd kube inject: decode: yaml: unmarshal errors:   line 3: key \"kind\" already set in map\n"},
		{"agent uid 0", "", []string{"render", "--policy", pol, "--image", "i", "--agent-uid", "0"}, 1,
			"sandboxd kube render: invalid options: agent uid 0: the agent must not be root\n"},
		{"policy problem", "", []string{"render", "--policy", "../../internal/kube/testdata/claude-code.golden.yaml", "--image", "i"}, 1, ""},
		{"no policy", "", []string{"render", "--image", "i"}, 2, ""},
		{"bad uid", "", []string{"render", "--policy", pol, "--agent-uid", "x"}, 2, ""},
		{"bad harness", "", []string{"render", "--policy", pol, "--harness", "vim"}, 2, ""},
		{"kind on inject", "", []string{"inject", "--policy", pol, "--kind", "pod"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runKube(t, tc.stdin, tc.args...)
			if code != tc.code || out != "" {
				t.Fatalf("exit %d, want %d; stdout %q; stderr %q", code, tc.code, out, stderr)
			}
			if tc.err != "" && stderr != tc.err {
				t.Errorf("stderr %q\nwant   %q", stderr, tc.err)
			}
			if tc.code == 1 && tc.err == "" && !strings.HasPrefix(stderr, "../../internal/kube/testdata/claude-code.golden.yaml:") {
				t.Errorf("stderr %q: want the policy file's problems by line", stderr)
			}
		})
	}
}
