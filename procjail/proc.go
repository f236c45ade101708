package procjail

// ProcMode is which /proc the sandbox's processes see (Linux).
type ProcMode string

const (
	// ProcFresh is a procfs mounted for the sandbox's own PID namespace:
	// it lists only the sandbox's processes.
	ProcFresh ProcMode = "fresh"
	// ProcContainer keeps, read-only, the /proc of the container sandboxd
	// runs in, where the kernel refuses a fresh one: a container runtime
	// masks parts of its /proc, and a new procfs may not show what a mask
	// hides. The sandbox then sees the container's processes (their pids,
	// command lines, status and mount tables); their environment, memory,
	// descriptors, working directory, root and namespaces stay closed to
	// it: the kernel lets a process reach those of another only from the
	// same user namespace with at least its capabilities, or with
	// CAP_SYS_PTRACE over it (the sandbox's namespace is a child of the
	// container's, its capabilities are dropped), and Landlock's scope
	// refuses it a second time where the kernel has Landlock.
	// docs/limits.md has the measurements.
	ProcContainer ProcMode = "container"
)

// FreshProcFix is how a container gives the sandbox a fresh /proc: its
// runtime stops masking parts of the container's own.
const FreshProcFix = "run the container with --security-opt systempaths=unconfined (Podman: --security-opt unmask=ALL; Kubernetes: securityContext.procMount: Unmasked)"
