//go:build unix

package policy

import (
	"io/fs"
	"syscall"
)

// fileIdentity is fi's device and inode and its number of names (hard
// links); ok is false when the platform does not say.
func fileIdentity(fi fs.FileInfo) (id fileKey, nlink uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileKey{}, 0, false
	}
	return fileKey{dev: uint64(st.Dev), ino: uint64(st.Ino)}, uint64(st.Nlink), true
}
