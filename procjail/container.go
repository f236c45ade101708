package procjail

// ContainerMode runs the command without namespaces of its own, in the
// container sandboxd runs in (Linux): where the container refuses user
// namespaces (the default seccomp profile of Docker, Podman and
// containerd) but sandboxd is root there with CAP_NET_ADMIN. The command
// runs under a uid of its own (UID, GID, no supplementary groups), with
// no_new_privs, no capabilities, the filesystem's Landlock domain and
// the seccomp filter, and netfilter rules matched on UID in the
// container's network namespace (UIDRules) send its TCP to the capture,
// its DNS to the DNS proxy and drop the rest; the forwards listen on the
// container's loopback. There is no mount layer: the file rules hold as
// far as Landlock and UID's own permissions hold them (sandboxd checks
// what they cannot hold before the start, see AccessAs). When the command
// exits every process of UID is killed and the rules are removed (by the
// init, or by Sandbox's wait when the init died first); a supervisor
// killed before that leaves them, and UID with no network.
type ContainerMode struct {
	// UID and GID are the command's identity: a uid no other process of
	// the container runs as (every process of UID is confined, and
	// killed at the end); neither 0.
	UID, GID uint32
}

// The modes AccessAs checks (access(2)'s R_OK and W_OK).
const (
	AccessRead  uint32 = 4
	AccessWrite uint32 = 2
)
