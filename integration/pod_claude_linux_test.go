//go:build linux

package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/fakemodel"
	"github.com/barry-rocks/sandbox/internal/kube"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

// TestPodClaude: Claude Code (the pinned CLI, node from the host's /usr)
// runs in the agent's container of an emulated pod, as rendered (its uid,
// no capability, a read-only root, the wrapper, the rendered
// environment), with hookgate installed by `hookgate install` and ruling
// through BARRY_HOOK_SOCKET on the sidecar's socket. The fake model is
// api.model.test of the pod's world, reached only through the sidecar's
// capture and proxy (the policy allows it, and nothing else); its API key
// is a credential of the pod's Secret, so the agent holds a placeholder
// and the model sees the real key. The model asks for two Bash calls: one
// the policy allows (its marker appears in the workspace, seen from the
// host) and one it denies (git push: no marker, hookgate's reason back to
// the model).
func TestPodClaude(t *testing.T) {
	requireDocker(t)
	testenv.NeedRoot(t)
	claude := claudeCLI(t)
	harnesses := harnessesDir(claude)
	containerImage(t)

	pol := "version: 1\nharness: claude-code\nsession:\n  bound:\n" +
		"    bash: {denyPrograms: [\"git:push\"]}\n" +
		"    network: {enforce: sandbox, allowDomains: [" + launchModelHost + "]}\n" +
		"credentials:\n  - {env: ANTHROPIC_API_KEY, hosts: [" + launchModelHost + "]}\n"
	p := startPodWith(t, "pod-claude", pol, podOpts{secret: map[string]string{"ANTHROPIC_API_KEY": claudeAPIKey}})

	ws := sharedDir(t)
	allowed, denied := filepath.Join(ws, "allowed-marker"), filepath.Join(ws, "denied-marker")
	bash := func(cmd string) fakemodel.ToolCall {
		return fakemodel.ToolCall{Name: "Bash", Input: map[string]any{"command": cmd, "description": "fakemodel"}}
	}
	in := "/workspace/"
	log := newTestLog(t)
	srv, err := fakemodel.AnthropicWith([]fakemodel.ToolCall{
		bash("touch " + in + "allowed-marker"),
		bash("touch " + in + "denied-marker && git push origin main"),
	}, fakemodel.AnthropicOptions{Logf: log.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		log.Stop()
	})
	model := &launchModel{}
	model.set(srv, nil)
	p.w.serveHTTPS(t, launchModelHost, launchModelAddr, model)

	script := `set -e
hookgate install --harness claude-code
exec timeout 150 "$0" -p "Run the tool calls you are given." --dangerously-skip-permissions --no-session-persistence`
	r := p.renderedAgentRun(t, agentRun{workspace: ws, flags: []string{"-v", harnesses + ":" + harnesses + ":ro",
		"--env", "ANTHROPIC_BASE_URL=https://" + launchModelHost, "--env", "DISABLE_AUTOUPDATER=1",
		"--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "--env", "DISABLE_TELEMETRY=1", "--env", "DISABLE_ERROR_REPORTING=1",
		"--env", "LANG=C.UTF-8", "--env", "USER=agent"}}, "sh", "-c", script, claude)
	reqs := srv.Requests()
	res := claudeResult{code: r.code, stdout: r.stdout, stderr: r.stderr,
		exchanges: fakemodel.AnthropicTranscript(reqs), tools: fakemodel.AnthropicToolNames(reqs)}
	t.Logf("claude in the pod: exit %d, %d model requests\nstdout %q\nstderr %q", r.code, len(reqs), r.stdout, r.stderr)
	for i, e := range res.exchanges {
		t.Logf("  call %d %s %s -> is_error=%v answered=%v: %q", i, e.Name, e.Input, e.IsError, e.Answered, e.Result)
	}
	if r.code != 0 || len(reqs) == 0 {
		t.Fatalf("claude in the pod's agent container: exit %d, %d model requests\nsidecar: %s", r.code, len(reqs), p.logs(t))
	}

	res.requireRan(t, 0, "Bash")
	res.requireDenied(t, 1, "Bash", `hookgate: shell command runs git push, denied by bash.denyPrograms "git:push"`)
	if _, err := os.Stat(allowed); err != nil {
		t.Errorf("the allowed call's marker: %v", err)
	}
	claudeRequireAbsent(t, denied)

	// The model's traffic went through the sidecar: its proxy's decision
	// for the model's host, its rulings on the two calls, and the world
	// saw the turns; the key the model saw is the Secret's, the agent's a
	// placeholder.
	logs := p.logs(t)
	for _, want := range []string{`"msg":"proxy decision"`, `"host":"` + launchModelHost + `"`, `"terminated"`, `"credentials":["ANTHROPIC_API_KEY"]`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the sidecar's audit lacks %s", want)
		}
	}
	rulings := 0
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"tool":"Bash"`) && strings.Contains(l, `"pod":"pod-claude"`) {
			rulings++
		}
	}
	if rulings < 2 {
		t.Errorf("%d Bash rulings of the pod in the sidecar's audit, want 2:\n%s", rulings, logs)
	}
	if _, seen, _, _ := p.w.seen(); !strings.Contains(strings.Join(seen, "\n"), launchModelHost+" /v1/messages") {
		t.Errorf("the world saw no model turn (it saw %q)", seen)
	}
	if !model.sawKey(claudeAPIKey) {
		t.Errorf("the model never saw the Secret's key")
	}
	ph, err := os.ReadFile(filepath.Join(p.dir, "run", strings.TrimPrefix(kube.PlaceholderDir, kube.RunDir), "ANTHROPIC_API_KEY"))
	if err != nil || strings.TrimSpace(string(ph)) == claudeAPIKey || strings.Contains(logs, claudeAPIKey) {
		t.Errorf("the agent's placeholder %q (%v), or the key in the audit", ph, err)
	}
}
