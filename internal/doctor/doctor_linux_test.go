//go:build linux

package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/barry-rocks/sandbox/internal/testenv"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// TestMain lets the test binary serve as the sandbox's init, as sandboxd
// does, so that Diagnose's trial can start a real sandbox.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == procjail.InitCommand {
		procjail.CreateDecider = policy.CreateDeciderFor
		procjail.OpenGuardDecider = policy.OpenDeciderFor
		os.Exit(procjail.RunInit())
	}
	if os.Getenv(maskedEnv) != "" {
		os.Exit(maskedProcInside())
	}
	os.Exit(m.Run())
}

// trialCommand exits 0 inside any sandbox.
var trialCommand = []string{"/bin/sh", "-c", "exit 0"}

func TestDiagnoseHere(t *testing.T) {
	testenv.NeedRoot(t)
	r := Diagnose(Options{Command: trialCommand})
	if r.Mode != ModeNested || r.Proc != string(procjail.ProcFresh) || len(r.Missing) != 0 || r.Refusal != "" {
		t.Fatalf("on this host: %+v; want nested with a fresh /proc and nothing missing", r)
	}
	// The trial is run's: a command that fails inside fails the verdict.
	r = Diagnose(Options{Command: []string{"/bin/sh", "-c", "exit 3"}})
	if r.Mode != ModeNone || !strings.Contains(r.Refusal, "exited 3") {
		t.Errorf("a failing trial: %+v; want mode none naming the exit", r)
	}
}

// maskedEnv: the test binary runs in a mount namespace whose /proc is
// masked as a container runtime masks it (TestDiagnoseMaskedProc).
const maskedEnv = "BARRY_TEST_DOCTOR_MASKED"

func TestDiagnoseMaskedProc(t *testing.T) {
	testenv.NeedRoot(t)
	unshare := testenv.NeedCommand(t, "unshare")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--mount", "--propagation", "private", "/bin/sh", "-c",
		`mount --bind /dev/null /proc/timer_list && exec "$0"`, os.Args[0])
	cmd.Env = append(os.Environ(), maskedEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "masked /proc: ok") {
		t.Fatalf("in a masked /proc: %v\n%s", err, out)
	}
}

// maskedProcInside is TestDiagnoseMaskedProc's check, in the test binary
// re-executed in the masked mount namespace; it returns the exit status.
func maskedProcInside() int {
	r := Diagnose(Options{Command: trialCommand})
	if r.Mode != ModeNested || r.Proc != string(procjail.ProcContainer) || len(r.Notes) == 0 || !strings.Contains(r.Notes[0].Fix, "systempaths=unconfined") {
		fmt.Printf("masked /proc: %+v; want nested with the container's /proc and a note naming the fix\n", r)
		return 1
	}
	// A policy that requires a fresh /proc: run refuses, and doctor says
	// which piece and its fix.
	dir, err := os.MkdirTemp("", "doctor-")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nharness: claude-code\nsandbox:\n  proc: fresh\n"), 0o644); err != nil {
		fmt.Println(err)
		return 1
	}
	r = Diagnose(Options{PolicyFile: pol, Command: trialCommand})
	if r.Mode != ModeNone || len(r.Missing) != 1 || !strings.Contains(r.Missing[0].Piece, "sandbox.proc: fresh") ||
		!strings.Contains(r.Missing[0].Fix, "systempaths=unconfined") || !strings.Contains(r.Refusal, "sandbox.proc: fresh") {
		fmt.Printf("sandbox.proc: fresh under a masked /proc: %+v; want mode none, the piece and its fix\n", r)
		return 1
	}
	fmt.Println("masked /proc: ok")
	return 0
}
