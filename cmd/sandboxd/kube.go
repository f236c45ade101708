package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/barry-rocks/sandbox/hooks"
	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/kube"
	"github.com/barry-rocks/sandbox/policy"
)

const kubeFlagsUsage = `--policy FILE --image IMG [--harness H] [--agent-image IMG] [--agent-uid UID]
       [--name NAME] [--namespace NS] [--workspace-claim PVC] [--credential-secret NAME]`

const kubeRenderUsage = `sandboxd kube render ` + kubeFlagsUsage + ` [--kind pod|deployment|job]

Print a session's manifests as YAML documents separated by "---": the policy
ConfigMap, the ServiceAccount, the NetworkPolicy, and the Pod (or Deployment,
or Job): the barry-netinit init container, the barry-proxy native sidecar and
the agent container running the harness's program, confined (see
docs/kubernetes.md). Warnings go to stderr.`

const kubeInjectUsage = `sandboxd kube inject ` + kubeFlagsUsage + ` < OBJECT

Read one Pod, Deployment, StatefulSet or Job (YAML or JSON, decoded strictly)
on stdin and print it with the session's init container, sidecar, volumes and
security fields added (its first container is the agent), after the session's
ConfigMap, ServiceAccount and NetworkPolicy. A spec that cannot be made safe
(hostNetwork, a privileged container, a second container as the agent's uid,
...) is refused with one line, exit 1.`

// kubeCommand is "sandboxd kube render|inject".
func kubeCommand() *cli.Command {
	sub := &cli.App{
		Name:    "sandboxd kube",
		Summary: "render or inject a session's Kubernetes manifests",
		Commands: []*cli.Command{
			{Name: "render", Summary: "print a session's manifests (Pod, Deployment or Job)", Run: func(ctx context.Context, io cli.IO, args []string) int {
				return kubeMain(io, args, "render", kubeRenderUsage)
			}},
			{Name: "inject", Summary: "add a session's parts to a Pod, Deployment, StatefulSet or Job on stdin", Run: func(ctx context.Context, io cli.IO, args []string) int {
				return kubeMain(io, args, "inject", kubeInjectUsage)
			}},
		},
	}
	return &cli.Command{Name: "kube", Summary: sub.Summary, Run: func(ctx context.Context, io cli.IO, args []string) int {
		return sub.Main(ctx, io, args)
	}}
}

func kubeMain(io cli.IO, args []string, verb, usage string) int {
	fs := cli.NewFlagSet(io, verb, usage)
	var o kube.Options
	policyFile := fs.String("policy", "", "the session's policy `FILE` (required)")
	fs.Var(harnessFlag{&o.Harness}, "harness", "the agent's harness `H` (default: the policy's)")
	fs.StringVar(&o.Image, "image", "", "sandboxd's image `IMG`, for barry-netinit and barry-proxy (required)")
	fs.StringVar(&o.AgentImage, "agent-image", "", "the agent container's image `IMG` (default: --image; inject keeps the object's)")
	fs.Func("agent-uid", "the agent's `UID` (default 1000; inject: the agent container's runAsUser, else 1000)", func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return errors.New("not a number")
		}
		o.AgentUID = &n
		return nil
	})
	fs.StringVar(&o.Name, "name", "", "the session's `NAME` (default: render barry-HARNESS, inject the object's name)")
	fs.StringVar(&o.Namespace, "namespace", "", "the objects' namespace `NS`")
	fs.StringVar(&o.WorkspaceClaim, "workspace-claim", "", "a PersistentVolumeClaim `PVC` for the agent's /workspace")
	fs.StringVar(&o.CredentialSecret, "credential-secret", "", "a Secret `NAME` mounted in the sidecar only")
	var kind *string
	if verb == "render" {
		kind = fs.String("kind", "pod", "the workload: pod, deployment or job")
	}
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 || *policyFile == "" {
		fs.Usage()
		return 2
	}
	fail := func(err error) int {
		var fes policy.FieldErrors
		if errors.As(err, &fes) {
			printPolicyError(io.Err, *policyFile, err)
			return 1
		}
		fmt.Fprintf(io.Err, "sandboxd kube %s: %s\n", verb, policy.OneLine(err.Error()))
		return 1
	}
	data, err := os.ReadFile(*policyFile)
	if err != nil {
		return fail(fmt.Errorf("policy: %w", err))
	}
	o.Policy = data
	var m *kube.Manifests
	if verb == "render" {
		o.Kind = kube.Kind(*kind)
		m, err = kube.Render(o)
	} else {
		m, err = kube.Inject(o, io.In)
	}
	if err != nil {
		return fail(err)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(io.Err, "sandboxd kube %s: warning: %s\n", verb, w)
	}
	if err := m.WriteYAML(io.Out); err != nil {
		return fail(err)
	}
	return 0
}

// harnessFlag parses --harness.
type harnessFlag struct{ h *hooks.Harness }

func (f harnessFlag) String() string {
	if f.h == nil {
		return ""
	}
	return string(*f.h)
}

func (f harnessFlag) Set(v string) error {
	h, err := hooks.ParseHarness(v)
	if err != nil {
		return err
	}
	*f.h = h
	return nil
}

var _ flag.Value = harnessFlag{}
