package procjail

import (
	"os"
	"strings"
	"syscall"
)

// SeccompProfileFix is how a container's seccomp profile lets sandboxd make
// its namespaces: the profile sandboxd ships (Docker's default plus what
// the sandbox needs; deploy/seccomp.json for Docker, Podman and CRI-O, and
// deploy/containerd/ resolved per architecture, since containerd ignores
// the capability conditions of Docker's format).
const SeccompProfileFix = "start the container with sandboxd's seccomp profile: --security-opt seccomp=seccomp.json (deploy/seccomp.json in sandboxd's source and releases; on containerd and Kubernetes: securityContext.seccompProfile type Localhost with deploy/containerd/seccomp-<arch>.json)"

// AppArmorProfileFix is how Ubuntu's AppArmor lets sandboxd make user
// namespaces: the profile sandboxd ships.
const AppArmorProfileFix = "install sandboxd's AppArmor profile (deploy/apparmor/sandboxd into /etc/apparmor.d, then apparmor_parser -r it), or set the sysctl kernel.apparmor_restrict_unprivileged_userns=0"

// SeccompFiltered says whether this process runs under a seccomp filter
// (a container runtime's profile).
func SeccompFiltered() bool { return underSeccomp(readFile("/proc/self/status")) }

// underSeccomp says whether a /proc/self/status shows a seccomp filter on
// the process (a container runtime's profile).
func underSeccomp(status string) bool {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			return strings.TrimSpace(v) == "2"
		}
	}
	return false
}

// usernsHint names the setting that most likely refused a new user
// namespace, and its fix. read returns a file's trimmed content ("" if
// absent): the sysctls, and /proc/self/status for a seccomp filter.
func usernsHint(read func(path string) string, errno syscall.Errno) string {
	switch {
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "sysctl kernel.unprivileged_userns_clone=0 forbids unprivileged user namespaces (set it to 1)"
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "sysctl user.max_user_namespaces=0 forbids user namespaces (set it above 0)"
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1): " + AppArmorProfileFix
	case errno == syscall.ENOSPC || errno == syscall.EUSERS:
		return "the user.max_user_namespaces limit is reached"
	case underSeccomp(read("/proc/self/status")):
		return "the seccomp filter sandboxd runs under (a container's profile) refuses a new user namespace: " + SeccompProfileFix
	}
	return "the kernel or a seccomp filter of the calling container refused a new user namespace " +
		"(check kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)"
}

// UserNamespaceFix names what most likely refuses user namespaces on this
// machine, and its fix (errno: the kernel's refusal).
func UserNamespaceFix(errno syscall.Errno) string { return usernsHint(readFile, errno) }

// readFile returns a file's trimmed content, "" if it cannot be read.
func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
