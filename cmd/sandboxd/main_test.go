package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/cli"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{policyCommand()}}
	code := app.Main(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	return code, out.String(), errb.String()
}

func TestPolicyResolveJSON(t *testing.T) {
	code, out, stderr := runCLI(t, "policy", "resolve", "../../examples/ops.yaml", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r struct {
		Traits   []string
		Tools    []struct{ ID, Access string }
		Withheld []struct{ ID, Reason string }
		Bound    map[string]any
		Native   struct {
			Allowed, Denied       []string
			Refused, Uncontrolled map[string]string
		}
		Warnings    []string
		Fingerprint string
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range r.Tools {
		ids = append(ids, x.ID)
	}
	if strings.Join(ids, ",") != "github:list_issues,slack:read_channel" {
		t.Errorf("tools = %v", ids)
	}
	if len(r.Withheld) != 2 || r.Withheld[0].Reason != "readonly denies write access" {
		t.Errorf("withheld = %+v", r.Withheld)
	}
	if len(r.Fingerprint) != 64 || r.Bound == nil {
		t.Errorf("%+v", r)
	}
}

func TestPolicyCheck(t *testing.T) {
	if code, out, _ := runCLI(t, "policy", "check", "../../examples/ops.yaml"); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("check ops.yaml: %d %s", code, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("version: 1\nharness: claude-code\nbounds:\n  readonly:\n    network: {actoins: [write], enforce: strict}\n"), 0o644)
	code, _, stderr := runCLI(t, "policy", "check", bad)
	want := bad + ":5:15: bounds.readonly.network.actoins: unknown field\n" + bad + `:5:42: bounds.readonly.network.enforce: "strict" is not an enforcement level (guard or sandbox)` + "\n"
	if code != 1 || stderr != want {
		t.Errorf("exit %d, stderr\n%s\nwant\n%s", code, stderr, want)
	}
	if code, _, _ := runCLI(t, "policy", "check"); code != 2 {
		t.Errorf("no file: exit %d, want 2", code)
	}
	if code, _, _ := runCLI(t, "policy", "check", "--help"); code != 0 {
		t.Errorf("--help: exit %d", code)
	}
	if code, _, _ := runCLI(t, "policy", "bogus"); code != 2 {
		t.Errorf("unknown subcommand: exit %d", code)
	}
	// A mode that cannot take back what the bound needs gone fails the check.
	refuse := filepath.Join(t.TempDir(), "codex.yaml")
	os.WriteFile(refuse, []byte("version: 1\nharness: codex\nsession: {bound: {network: {domains: [a.com]}}}\n"), 0o644)
	if code, _, stderr := runCLI(t, "policy", "check", refuse); code != 1 || !strings.Contains(stderr, "native.web_search:") {
		t.Errorf("refused native: %d %s", code, stderr)
	}
}

// An extra argument is a usage error (exit 2, one line naming it), never
// silently ignored.
func TestExtraArgumentRefused(t *testing.T) {
	for _, args := range [][]string{{"status", "extra"}, {"status", "--json", "extra"}, {"version", "extra"}} {
		var out, errb bytes.Buffer
		app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{statusCommand(), versionCommand()}}
		code := app.Main(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
		want := "sandboxd " + args[0] + ": unexpected argument \"extra\" (see sandboxd " + args[0] + " --help)\n"
		if code != 2 || out.Len() != 0 || errb.String() != want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, nothing, %q", args, code, out.String(), errb.String(), want)
		}
	}
}

// A policy with several errors is refused on one stderr line by every
// subcommand that serves it (policy check alone lists one error a line).
func TestPolicyErrorsOneLine(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nharness: claude-code\nbounds:\n  readonly:\n    network: {actoins: [write], enforce: strict}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "h.sock")
	for _, args := range [][]string{
		{"serve-hooks", "--policy", bad, "--socket", sock},
		{"proxy", "--listen", "127.0.0.1:0", "--policy", bad},
	} {
		var out, errb bytes.Buffer
		app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{serveHooksCommand(), proxyCommand()}}
		code := app.Main(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
		want := "sandboxd " + args[0] + ": "
		if code != 1 || !strings.HasPrefix(errb.String(), want) || strings.Count(errb.String(), "\n") != 1 ||
			!strings.Contains(errb.String(), "actoins: unknown field") || !strings.Contains(errb.String(), `"strict" is not an enforcement level`) {
			t.Errorf("%q: exit %d, stderr %q; want 1 and one line starting %q naming both errors", args[0], code, errb.String(), want)
		}
	}
}

// --policy given twice is a usage error in every subcommand that takes it:
// the second would otherwise silently replace the first.
func TestPolicyFlagOnce(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--policy", "a.yaml", "--policy", "b.yaml", "--", "true"},
		{"explain", "--policy", "a.yaml", "--policy", "b.yaml", "example.test"},
		{"proxy", "--listen", "127.0.0.1:0", "--policy", "a.yaml", "--policy", "b.yaml"},
		{"serve-hooks", "--socket", "x.sock", "--policy", "a.yaml", "--policy", "b.yaml"},
	} {
		var out, errb bytes.Buffer
		app := &cli.App{Name: "sandboxd", Commands: []*cli.Command{runCommand(), explainCommand(), proxyCommand(), serveHooksCommand()}}
		code := app.Main(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
		first, _, _ := strings.Cut(errb.String(), "\n")
		const want = `invalid value "b.yaml" for flag -policy: given more than once (policy files do not merge on the command line)`
		if code != 2 || first != want {
			t.Errorf("%q: exit %d, first stderr line %q; want 2, %q", args[0], code, first, want)
		}
	}
}
