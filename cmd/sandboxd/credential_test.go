package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

func runMainCLI(main func(context.Context, cli.IO, []string) int, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := main(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	return code, out.String(), errb.String()
}

// TestCredentialFlagSyntax: a --credential that does not read as
// ENV@HOST[,HOST...] refuses the start with one line and exit 125, as the
// other flags of run and launch do; nothing is started.
func TestCredentialFlagSyntax(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	for _, tc := range []struct{ flag, want string }{
		{"GITHUB_TOKEN", `--credential: "GITHUB_TOKEN": want ENV@HOST[,HOST...]`},
		{"GITHUB_TOKEN@", `--credential: "GITHUB_TOKEN@": empty host`},
		{"GIT-HUB@github.com", `--credential: "GIT-HUB" is not a variable name`},
		{"T@*.github.com", `--credential: "*.github.com": a credential host is exact, not a pattern`},
		{"T@github.com:443", `--credential: "github.com:443": a credential host has no port`},
		{"T@github.com,", `empty host`},
	} {
		for _, cmd := range []struct {
			name string
			main func(context.Context, cli.IO, []string) int
			args []string
		}{
			{"run", runMain, []string{"--credential", tc.flag, "--", "touch", marker}},
			{"launch", launchMain, []string{"claude-code", "--policy", "p.yaml", "--credential", tc.flag}},
		} {
			code, _, stderr := runMainCLI(cmd.main, cmd.args...)
			if code != 125 || !strings.HasPrefix(stderr, "sandboxd: sandbox could not start: ") || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%s --credential %q: exit %d, stderr %q; want 125 and one line with %q", cmd.name, tc.flag, code, stderr, tc.want)
			}
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}

// TestCredentialHostNotAllowed: a credential whose host the session does
// not allow refuses the session: exit 125, the reason in one line, the
// command never run.
func TestCredentialHostNotAllowed(t *testing.T) {
	testenv.NeedRoot(t)
	ws, err := os.MkdirTemp("/run", "sandboxd-credcli-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(ws)
	marker := filepath.Join(ws, "ran")
	t.Setenv("CRED_CLI_TOKEN", "ghp_0123456789abcdefghijABCDEFGHIJ")
	code, _, stderr := runMainCLI(runMain, "--cwd", ws, "--allow-domain", "api.example.test",
		"--credential", "CRED_CLI_TOKEN@api.example.test,elsewhere.example.test", "--", "touch", marker)
	want := "sandboxd: sandbox could not start: credential CRED_CLI_TOKEN: host elsewhere.example.test is not allowed by the session's network policy: not in allowlist: elsewhere.example.test\n"
	if code != 125 || stderr != want {
		t.Errorf("exit %d, stderr %q; want 125 and %q", code, stderr, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}

// TestExplainEnvCredential: sandboxd explain --env lists a credential's
// variable as a credential with its hosts, and never its value.
func TestExplainEnvCredential(t *testing.T) {
	const value = "ghp_0123456789abcdefghijABCDEFGHIJ"
	t.Setenv("CRED_EXPLAIN_TOKEN", value)
	code, out, stderr := runMainCLI(explainMain, "--env", "--credential", "CRED_EXPLAIN_TOKEN@github.com,api.github.com")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "CRED_EXPLAIN_TOKEN\tcredential for github.com, api.github.com\n") || !strings.Contains(out, "SSL_CERT_FILE\tsandboxd\n") {
		t.Errorf("explain --env:\n%s", out)
	}
	code, out, _ = runMainCLI(explainMain, "--env", "--json", "--credential", "CRED_EXPLAIN_TOKEN@github.com")
	if code != 0 || !strings.Contains(out, `"from": "credential"`) || strings.Contains(out, value) {
		t.Errorf("explain --env --json: exit %d\n%s", code, out)
	}
	if code, _, _ := runMainCLI(explainMain, "--credential", "CRED_EXPLAIN_TOKEN@github.com", "github.com"); code != 2 {
		t.Errorf("--credential without --env: exit %d, want 2", code)
	}
	if code, _, stderr := runMainCLI(explainMain, "--env", "--credential", "nope"); code != 2 || !strings.Contains(stderr, "want ENV@HOST") {
		t.Errorf("a bad --credential: exit %d, %q", code, stderr)
	}
}
