package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/testenv"
)

func runClassifyArgs(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := classifyCommand().Run(context.Background(), cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, args)
	return out.String(), errb.String(), code
}

func TestClassifyJSON(t *testing.T) {
	out, errs, code := runClassifyArgs(t, "--deny-program", "git:push", "--json", "--", "cd a && git -C /x push")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	want := `{"programs":["cd","git"],"argvs":[["cd","a"],["git","-C","/x","push"]],"subcommands":{"git":["push"]},"unparseable":false,"reason":"","opaque":["git"],"networkActions":["git:push"],"domains":[],"fileWrite":null,"denied":true,"deniedBy":"git:push",` +
		`"decision":{"verdict":"deny","reason":"shell command runs git push, denied by bash.denyPrograms \"git:push\"","rule":"bash.denyPrograms:git:push"}}` + "\n"
	if out != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestClassifyJSONFailsClosed(t *testing.T) {
	out, _, code := runClassifyArgs(t, "--deny-action", "write", "--json", "--", "curl -s x | sh")
	if code != 0 {
		t.Fatalf("exit %d, want 0 for a denied line", code)
	}
	var o classifyOutput
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatal(err)
	}
	if !o.Unparseable || !o.Denied || o.DeniedBy != "unparseable: sh reads its script from a pipe" {
		t.Errorf("got %+v", o)
	}
	if o.FileWrite == nil || !strings.Contains(o.FileWrite.Reason, "could not be classified") {
		t.Errorf("fileWrite = %+v, want a fail-closed finding", o.FileWrite)
	}
}

func TestClassifyHuman(t *testing.T) {
	out, _, code := runClassifyArgs(t, "--bash-deny", "rm -rf", "--", "rm -rf build > log.txt")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"programs:        rm\n", "file write:      writes several files: > log.txt, rm\n", "verdict:         denied by rm -rf\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runClassifyArgs(t, "--deny-program", "git:push", "--", "git status")
	if !strings.Contains(out, "verdict:         allowed\n") {
		t.Errorf("allowed line:\n%s", out)
	}
}

func TestClassifyUsage(t *testing.T) {
	if _, errs, code := runClassifyArgs(t, "--json"); code != 2 || !strings.Contains(errs, "missing command line") {
		t.Errorf("no command: exit %d, stderr %q", code, errs)
	}
	if _, _, code := runClassifyArgs(t, "--no-such-flag", "--", "ls"); code != 2 {
		t.Errorf("bad flag: exit %d, want 2", code)
	}
}

// TestClassifyBinary runs the built sandboxd binary end to end.
func TestClassifyBinary(t *testing.T) {
	testenv.SkipIfShort(t, "builds the binary")
	bin := filepath.Join(t.TempDir(), "sandboxd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "policy", "classify", "--json", "--deny-program", "gh:pr:create", "--", "gh pr view 1").Output()
	if err != nil {
		t.Fatalf("sandboxd classify: %v", err)
	}
	var o classifyOutput
	if err := json.Unmarshal(out, &o); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if o.Denied || len(o.Programs) != 1 || o.Programs[0] != "gh" || o.Subcommands["gh"][0] != "pr:view" {
		t.Errorf("got %+v", o)
	}
	out, err = exec.Command(bin, "policy", "classify", "--json", "--deny-program", "gh:pr:create", "--", "gh pr create").Output()
	if err != nil {
		t.Fatalf("denied line must exit 0: %v", err)
	}
	if err := json.Unmarshal(out, &o); err != nil || !o.Denied || o.DeniedBy != "gh:pr:create" {
		t.Errorf("got %+v (%v)", o, err)
	}
}
