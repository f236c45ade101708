package procjail

import "syscall"

// usernsHint names the setting that most likely refused a new user
// namespace. read returns a sysctl file's trimmed content ("" if absent).
func usernsHint(read func(path string) string, errno syscall.Errno) string {
	switch {
	case read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return "sysctl kernel.unprivileged_userns_clone=0 forbids unprivileged user namespaces (set it to 1)"
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return "sysctl user.max_user_namespaces=0 forbids user namespaces (set it above 0)"
	case read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1): " +
			"give sandboxd an AppArmor profile with the userns permission, or set the sysctl to 0"
	case errno == syscall.ENOSPC || errno == syscall.EUSERS:
		return "the user.max_user_namespaces limit is reached"
	}
	return "the kernel or a seccomp filter of the calling container refused a new user namespace " +
		"(check kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns)"
}
