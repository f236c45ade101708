package procjail

import (
	"strings"
	"syscall"
	"testing"
)

// TestUsernsHint: the refusal names the setting that blocks user
// namespaces, in the order they are checked.
func TestUsernsHint(t *testing.T) {
	cases := []struct {
		name   string
		sysctl map[string]string
		errno  syscall.Errno
		want   string
	}{
		{"debian clone sysctl", map[string]string{"/proc/sys/kernel/unprivileged_userns_clone": "0"}, syscall.EPERM, "kernel.unprivileged_userns_clone=0"},
		{"max user namespaces", map[string]string{"/proc/sys/user/max_user_namespaces": "0"}, syscall.ENOSPC, "user.max_user_namespaces=0"},
		{"ubuntu apparmor", map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, syscall.EACCES, "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1)"},
		{"limit reached", map[string]string{"/proc/sys/user/max_user_namespaces": "10"}, syscall.ENOSPC, "limit is reached"},
		{"unknown", map[string]string{}, syscall.EPERM, "check kernel.unprivileged_userns_clone, user.max_user_namespaces, kernel.apparmor_restrict_unprivileged_userns"},
		{"container seccomp", map[string]string{"/proc/self/status": "Name:\tsandboxd\nSeccomp:\t2\nSeccomp_filters:\t1"}, syscall.EPERM, "--security-opt seccomp=seccomp.json"},
		{"no filter", map[string]string{"/proc/self/status": "Name:\tsandboxd\nSeccomp:\t0"}, syscall.EPERM, "check kernel.unprivileged_userns_clone"},
		{"apparmor before seccomp", map[string]string{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1", "/proc/self/status": "Seccomp:\t2"}, syscall.EACCES, "deploy/apparmor/sandboxd"},
		{"clone sysctl first", map[string]string{"/proc/sys/kernel/unprivileged_userns_clone": "0", "/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}, syscall.EPERM, "kernel.unprivileged_userns_clone=0"},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
		got := usernsHint(func(p string) string { return c.sysctl[p] }, c.errno)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q does not name %q", c.name, got, c.want)
		}
	}
}
