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

// TestDecodeOpenGate: filesystem.openGate is auto or always; anything
// else is an error at the field's path.
func TestDecodeOpenGate(t *testing.T) {
	for doc, want := range map[string]string{
		"filesystem:\n  openGate: always\n": OpenGateAlways,
		"filesystem:\n  openGate: auto\n":   OpenGateAuto,
		"filesystem:\n  write: [out]\n":     "",
	} {
		pf, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"+doc), FormatYAML)
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if pf.Filesystem == nil || pf.Filesystem.OpenGate != want {
			t.Errorf("%q: filesystem %+v, want openGate %q", doc, pf.Filesystem, want)
		}
	}
	for bad, want := range map[string]string{
		"filesystem:\n  openGate: never\n":    `filesystem.openGate: "never" is not an open gate mode (auto or always)`,
		"filesystem:\n  openGate: Always\n":   `filesystem.openGate: "Always" is not an open gate mode (auto or always)`,
		"filesystem:\n  openGate: true\n":     "filesystem.openGate: must be a string",
		"filesystem:\n  openGate: [always]\n": "filesystem.openGate: must be a string",
		"filesystem:\n  opengate: always\n":   "filesystem.opengate",
	} {
		_, err := DecodePolicyFile([]byte("version: 1\nharness: claude-code\n"+bad), FormatYAML)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want one with %s", bad, err, want)
		}
	}
}
