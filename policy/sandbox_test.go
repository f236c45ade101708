package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeSandboxSection(t *testing.T) {
	pf, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\nsandbox:\n  proc: fresh\n"), FormatYAML)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ResolveSession(pf)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sandbox == nil || r.Sandbox.Proc != ProcFresh {
		t.Fatalf("resolved sandbox = %+v", r.Sandbox)
	}
	for bad, want := range map[string]string{
		"sandbox:\n  proc: strict\n":  "sandbox.proc",
		"sandbox:\n  proc: [fresh]\n": "sandbox.proc",
		"sandbox:\n  prc: fresh\n":    "sandbox.prc",
		"sandbox: fresh\n":            "sandbox",
	} {
		_, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"+bad), FormatYAML)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one naming %s", bad, err, want)
		}
	}
}

func TestCheckProc(t *testing.T) {
	fresh := &SandboxSection{Proc: ProcFresh}
	for _, tc := range []struct {
		s         *SandboxSection
		container bool
		refused   bool
	}{
		{nil, false, false},
		{nil, true, false},
		{&SandboxSection{}, true, false},
		{&SandboxSection{Proc: ProcAny}, true, false},
		{fresh, false, false},
		{fresh, true, true},
	} {
		err := tc.s.CheckProc(tc.container, "the container covers /proc/kcore", "use systempaths=unconfined")
		if (err != nil) != tc.refused {
			t.Errorf("%+v, container %v: %v; want refused %v", tc.s, tc.container, err, tc.refused)
		}
		if err != nil && (!errors.Is(err, ErrFreshProcRequired) || !strings.Contains(err.Error(), "sandbox.proc: fresh") || !strings.Contains(err.Error(), "/proc/kcore") ||
			!strings.Contains(err.Error(), "systempaths=unconfined") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("refusal %q: want one line naming the field, the reason and the fix", err)
		}
	}
}
