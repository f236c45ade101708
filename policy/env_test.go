package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestDecodeEnvironmentSection(t *testing.T) {
	doc := "version: 1\nharness: claude-code\nenvironment:\n  unset: [GITHUB_TOKEN, \"AWS_*\", \"?_SECRET\"]\n"
	pf, err := DecodePolicyFile([]byte(doc), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	if pf.Environment == nil || fmt.Sprint(pf.Environment.Unset) != "[GITHUB_TOKEN AWS_* ?_SECRET]" {
		t.Fatalf("environment = %+v", pf.Environment)
	}
	r, err := ResolveSession(pf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Environment == nil || len(r.Environment.Unset) != 3 {
		t.Errorf("resolved environment = %+v", r.Environment)
	}
	for bad, want := range map[string]string{
		"environment:\n  unset: [\"A=B\"]\n":    "environment.unset[0]",
		"environment:\n  unset: [ok, \"[x\"]\n": "environment.unset[1]",
		"environment:\n  unset: [\"\"]\n":       "environment.unset[0]",
		"environment:\n  unst: [x]\n":           "environment.unst",
		"environment:\n  unset: GITHUB_TOKEN\n": "environment.unset",
	} {
		_, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"+bad), FormatYAML)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one naming %s", bad, err, want)
		}
	}
}

func TestFilterEnv(t *testing.T) {
	env := []string{"PATH=/usr/bin", "GITHUB_TOKEN=ghp_x", "GITHUB_ENTERPRISE_TOKEN=y", "AWS_SECRET_ACCESS_KEY=z",
		"AWSOME=kept", "NOEQUALS", "=oddity", "A_SECRET=s"}
	kept, removed := FilterEnv(env, []string{"GITHUB_*", "AWS_*", "?_SECRET"})
	if want := []string{"PATH=/usr/bin", "AWSOME=kept", "NOEQUALS", "=oddity"}; !slices.Equal(kept, want) {
		t.Errorf("kept %q, want %q", kept, want)
	}
	want := []EnvRemoval{{"GITHUB_TOKEN", "GITHUB_*"}, {"GITHUB_ENTERPRISE_TOKEN", "GITHUB_*"}, {"AWS_SECRET_ACCESS_KEY", "AWS_*"}, {"A_SECRET", "?_SECRET"}}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if kept, removed := FilterEnv(env, nil); len(kept) != len(env) || removed != nil {
		t.Errorf("no patterns: kept %d of %d, removed %v", len(kept), len(env), removed)
	}
}
