package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/barry-rocks/sandbox/internal/cli"
	"github.com/barry-rocks/sandbox/internal/doctor"
)

const doctorUsage = `sandboxd doctor [--policy FILE] [--agent-uid UID[:GID]] [--json]

Say which sandbox "sandboxd run" and "sandboxd launch" would start here (on
this machine, or in this container), and for each missing piece its fix: the
sysctl, the AppArmor or seccomp profile, the container runtime's flag or the
Kubernetes securityContext field. doctor starts one real sandbox the way run
does, so it agrees with run. Exits 0 when run would start, 1 when it would
refuse. With --policy, the policy's own requirements (sandbox.proc) count.`

func doctorCommand() *cli.Command {
	return &cli.Command{Name: "doctor", Summary: "say which sandbox run and launch would start here, and what is missing", Run: doctorMain}
}

func doctorMain(ctx context.Context, io cli.IO, args []string) int {
	fs := cli.NewFlagSet(io, "doctor", doctorUsage)
	policyFile := ""
	fs.Var(&onceString{p: &policyFile}, "policy", "the session policy `FILE` run would use")
	asJSON := fs.Bool("json", false, "print JSON")
	agentUID := fs.String("agent-uid", "", "run's --agent-uid `UID[:GID]` (container mode)")
	if code, done := cli.Parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(io.Err, "sandboxd doctor: unexpected argument %q (see sandboxd doctor --help)\n", fs.Arg(0))
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(io.Err, "sandboxd doctor: own executable: %v\n", err)
		return 1
	}
	r := doctor.Diagnose(doctor.Options{PolicyFile: policyFile, AgentUID: *agentUID, Command: []string{self, "version"}})
	if *asJSON {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		enc.Encode(r)
	} else {
		doctor.Print(io.Out, r)
	}
	if r.Mode == doctor.ModeNone {
		return 1
	}
	return 0
}
