//go:build !unix

package policy

import "io/fs"

// fileIdentity is not known on this platform: no file has other names
// the plan looks for.
func fileIdentity(fs.FileInfo) (fileKey, uint64, bool) { return fileKey{}, 0, false }
