//go:build linux

package procjail

import (
	"strconv"
	"strings"
	"syscall"
)

// parseIdentityMappings turns the lines of a uid_map or gid_map ("inside
// outside count") into identity mappings of the inside ranges, for a child
// user namespace. Malformed lines are skipped; none at all gives id 0 only.
func parseIdentityMappings(content string) []syscall.SysProcIDMap {
	var m []syscall.SysProcIDMap
	for _, line := range strings.Split(content, "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		in, err1 := strconv.ParseUint(f[0], 10, 32)
		count, err2 := strconv.ParseUint(f[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 {
			continue
		}
		m = append(m, syscall.SysProcIDMap{ContainerID: int(in), HostID: int(in), Size: int(count)})
	}
	if len(m) == 0 {
		m = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1}}
	}
	return m
}
