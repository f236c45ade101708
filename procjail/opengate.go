package procjail

// OpenDecider decides one open the open gate sees: the opened file's path
// as the kernel names it (canonical, in the sandbox's mount namespace,
// which shows host paths at the same places) and its identity. It returns
// refused with the rule and the reason. known says whether id is the
// host's identity of the file (a device of the host's, or an overlay's
// lower file mapped to it); when it is not, the device is the sandbox's
// own and only the inode number can be compared. sandboxd's is policy's
// OpenGuard.DecideOpen; it must be safe for concurrent use.
type OpenDecider func(path string, id FileID, known bool) (refused bool, rule, reason string)

// OpenRefusal is one open the open gate refused: the opened file's path,
// the process (its pid inside the sandbox and its name) and why.
type OpenRefusal struct {
	Path   string `json:"path"`
	Pid    int    `json:"pid"`
	Comm   string `json:"comm"`
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
}

// OpenGateOptions are what NewOpenGate needs.
type OpenGateOptions struct {
	// Roots are the sandbox's paths below which (and at which) every
	// mount is marked: each open of a file on those mounts is decided.
	Roots []string
	// PreMark are the directories (the workspace, the write roots) whose
	// files existing at start are decided, and marked when allowed, by a
	// walk beside the command rather than at their first open (see
	// opengate_premark_linux.go); each must be below one of Roots.
	PreMark []string
	// Decide decides each open (required).
	Decide OpenDecider
	// Refused, when set, is told each refusal (on the gate's goroutine).
	Refused func(OpenRefusal)
}
