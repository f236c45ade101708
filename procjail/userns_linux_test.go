//go:build linux

package procjail

import (
	"syscall"
	"testing"
)

func TestParseIdentityMappings(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []syscall.SysProcIDMap
	}{
		{"         0          0 4294967295\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 4294967295}}},
		{"0 100000 65536\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 65536}}},
		{"0 1000 1\n1 100000 65535\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}, {ContainerID: 1, HostID: 1, Size: 65535}}},
		{"garbage\n", []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}},
	} {
		got := parseIdentityMappings(c.in)
		if len(got) != len(c.want) {
			t.Fatalf("%q: got %v, want %v", c.in, got, c.want)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %v, want %v", c.in, got, c.want)
			}
		}
	}
}
