// Package doctor tells which sandbox "sandboxd run" and "sandboxd launch"
// would start on this machine or in this container, and for each missing
// piece its fix. It starts one real sandbox the way run does (the same
// session code, with sandboxd's own "version" as the command), so its
// verdict is run's; the machine's facts only explain a refusal and name
// what would make a stronger sandbox.
package doctor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"syscall"

	"github.com/barry-rocks/sandbox/internal/supervisor"
	"github.com/barry-rocks/sandbox/policy"
	"github.com/barry-rocks/sandbox/procjail"
)

// The modes a report names: the session's own (supervisor.ModeNested,
// supervisor.ModeContainer), or none.
const (
	ModeNested    = supervisor.ModeNested
	ModeContainer = supervisor.ModeContainer
	// ModeNone: run and launch refuse here (exit 125).
	ModeNone = "none"
)

// Report is what doctor found.
type Report struct {
	// Mode is ModeNested, ModeContainer or ModeNone.
	Mode string `json:"mode"`
	// Proc is the sandbox's /proc (procjail.ProcMode), on Linux.
	Proc string `json:"proc,omitempty"`
	// Container is the container runtime sandboxd runs in, as far as it
	// shows ("docker", "podman", "kubernetes", "container"); "" none seen.
	Container string `json:"container,omitempty"`
	// UID is sandboxd's user id.
	UID int `json:"uid"`
	// SeccompFiltered: sandboxd itself runs under a seccomp filter (a
	// container's profile).
	SeccompFiltered bool `json:"seccompFiltered"`
	// LandlockABI is the kernel's Landlock version as sandboxd can use it
	// (0: none, or refused by a seccomp profile).
	LandlockABI int `json:"landlockABI"`
	// Refusal is run's own one-line refusal when Mode is ModeNone.
	Refusal string `json:"refusal,omitempty"`
	// Missing are the pieces that keep run from starting, each with its
	// fix; empty when Mode is ModeNested.
	Missing []Piece `json:"missing"`
	// Notes are what a stronger sandbox would need, where the sandbox
	// starts without it.
	Notes []Piece `json:"notes"`
}

// Piece is one missing piece and its fix.
type Piece struct {
	Piece string `json:"piece"`
	Fix   string `json:"fix"`
}

// Options are doctor's inputs.
type Options struct {
	// PolicyFile is the policy run would start with ("" none): its
	// requirements (sandbox.proc) count.
	PolicyFile string
	// AgentUID is run's --agent-uid (container mode's uid for the
	// command).
	AgentUID string
	// Command is what the trial sandbox runs; it must exit 0 (sandboxd
	// passes itself with "version").
	Command []string
}

// Diagnose starts one sandbox as run would and reports.
func Diagnose(o Options) Report {
	r := Report{UID: os.Getuid(), Missing: []Piece{}, Notes: []Piece{}}
	r.Container = containerRuntime()
	r.SeccompFiltered = procjail.SeccompFiltered()
	r.LandlockABI = procjail.LandlockABI()
	if runtime.GOOS == "linux" {
		mode, why := procjail.ProbeProc()
		r.Proc = string(mode)
		if mode == procjail.ProcContainer {
			r.Notes = append(r.Notes, Piece{"a /proc of the sandbox's own (" + why + "; the sandbox gets the container's, read-only)", procjail.FreshProcFix})
		}
		if r.LandlockABI == 0 {
			fix := "Linux 5.13 or later with landlock among the LSMs (lsm= on the kernel command line)"
			if r.SeccompFiltered {
				fix += "; in a container, a seccomp profile that allows landlock_create_ruleset, landlock_add_rule and landlock_restrict_self (deploy/seccomp.json does)"
			}
			r.Notes = append(r.Notes, Piece{"Landlock (file rules are held by the mount layer alone)", fix})
		}
	}
	mode, proc, err := trial(o)
	if err == nil {
		r.Mode, r.Proc = mode, proc
		if mode == ModeContainer {
			r.Notes = []Piece{{"namespaces of the sandbox's own (nested mode: a mount layer, a private /tmp and /proc, its own network namespace)", procjail.SeccompProfileFix}}
		}
		return r
	}
	r.Mode = ModeNone
	r.Proc = ""
	r.Refusal = policy.OneLine(err.Error())
	r.Missing = append(r.Missing, explain(err, r)...)
	return r
}

// trial runs o.Command in a sandbox through the session code run uses,
// and says which mode and /proc the sandbox had.
func trial(o Options) (mode, proc string, err error) {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return "", "", err
	}
	defer null.Close()
	code, err := supervisor.Run(supervisor.Options{PolicyFile: o.PolicyFile, AgentUID: o.AgentUID, Command: o.Command, Stdin: null, Stdout: null, Stderr: null,
		Started: func(m, p string) { mode, proc = m, p }})
	if err != nil {
		return "", "", err
	}
	if code != 0 {
		return "", "", fmt.Errorf("the trial command %s exited %d inside the sandbox", strings.Join(o.Command, " "), code)
	}
	return mode, proc, nil
}

// explain names the pieces a refusal lacks and their fixes.
func explain(err error, r Report) []Piece {
	var errno syscall.Errno
	switch {
	case errors.Is(err, procjail.ErrUserNamespaces):
		errors.As(err, &errno)
		p := []Piece{{"user namespaces (nested mode)", procjail.UserNamespaceFix(errno)}}
		var ce *supervisor.ContainerModeError
		switch {
		case errors.As(err, &ce):
			p = append(p, Piece{ce.Piece + " (" + ce.Reason + ")", ce.Fix})
		case runtime.GOOS == "linux":
			p = append(p, Piece{"container mode: " + containerModeMissing(), supervisor.ContainerModeFix})
		}
		return p
	case errors.Is(err, policy.ErrFreshProcRequired):
		return []Piece{{"a /proc of the sandbox's own (the policy's sandbox.proc: fresh)", procjail.FreshProcFix}}
	}
	var ce *supervisor.ContainerModeError
	if errors.As(err, &ce) {
		return []Piece{{ce.Piece + " (" + ce.Reason + ")", ce.Fix}}
	}
	var se *procjail.SetupError
	if errors.As(err, &se) && errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.EACCES) && r.Container != "" {
		return []Piece{{se.Step, "the container's security profile refused it: " + procjail.SeccompProfileFix + "; where AppArmor confines the container, also --security-opt apparmor=unconfined"}}
	}
	return []Piece{{"the sandbox", policy.OneLine(err.Error())}}
}

// containerModeMissing says what container mode lacks here.
func containerModeMissing() string {
	if os.Geteuid() != 0 {
		return "sandboxd is not root"
	}
	var ue *procjail.UIDRulesUnavailableError
	if err := procjail.CheckUIDRules(); errors.As(err, &ue) {
		return ue.Missing + " is unavailable"
	} else if err != nil {
		return policy.OneLine(err.Error())
	}
	if procjail.LandlockABI() == 0 {
		return "Landlock is unavailable"
	}
	return "see the refusal"
}

// containerRuntime says which container runtime, if any, sandboxd runs in:
// the runtimes' own marker files, on a root filesystem that is a
// container's (an overlay; a VM image built from a container image keeps
// the marker on its own disk), or the cgroup of pid 1.
func containerRuntime() string {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		return "kubernetes"
	}
	if rootIsOverlay() {
		switch {
		case exists("/run/.containerenv"):
			return "podman"
		case exists("/.dockerenv"):
			return "docker"
		}
	}
	if b, err := os.ReadFile("/proc/1/cgroup"); err == nil {
		for _, k := range []string{"kubepods", "docker", "containerd", "libpod", "lxc"} {
			if strings.Contains(string(b), k) {
				return "container"
			}
		}
	}
	return ""
}

// rootIsOverlay says whether / is an overlay filesystem.
func rootIsOverlay() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && f[4] == "/" {
			for i := 6; i+1 < len(f); i++ {
				if f[i] == "-" && f[i+1] == "overlay" {
					return true
				}
			}
		}
	}
	return false
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// Print writes r for a person: the verdict first, then each missing piece
// and note with its fix.
func Print(w io.Writer, r Report) {
	where := "this machine"
	if r.Container != "" {
		where = "this container (" + r.Container + ")"
	}
	switch r.Mode {
	case ModeNested:
		proc := ""
		if r.Proc != "" {
			proc = ", /proc: " + r.Proc
		}
		fmt.Fprintf(w, "sandboxd run and launch start here: %s mode (namespaces of their own%s) on %s\n", r.Mode, proc, where)
	case ModeContainer:
		fmt.Fprintf(w, "sandboxd run and launch start here: %s mode (no namespaces: the command under a uid of its own, uid-matched netfilter rules, Landlock, seccomp) on %s\n", r.Mode, where)
	default:
		fmt.Fprintf(w, "sandboxd run and launch refuse to start on %s (exit 125): %s\n", where, r.Refusal)
	}
	for _, p := range r.Missing {
		fmt.Fprintf(w, "  missing: %s\n    fix: %s\n", p.Piece, p.Fix)
	}
	for _, p := range r.Notes {
		fmt.Fprintf(w, "  weaker: %s\n    for the stronger sandbox: %s\n", p.Piece, p.Fix)
	}
	fmt.Fprintf(w, "  facts: uid %d, seccomp filter on sandboxd: %v, Landlock ABI %d\n", r.UID, r.SeccompFiltered, r.LandlockABI)
}
