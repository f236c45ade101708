//go:build !linux

package procjail

// AccessAs refuses: container mode is Linux's.
func AccessAs(uid, gid uint32, paths []string, mode uint32) ([]string, error) {
	return nil, ErrUnsupported
}

// UIDProcesses refuses: container mode is Linux's.
func UIDProcesses(uid uint32) ([]int, error) { return nil, ErrUnsupported }

// CheckDescriptorCopy refuses: container mode is Linux's.
func CheckDescriptorCopy() error { return ErrUnsupported }

// KillUID refuses: container mode is Linux's.
func KillUID(uid uint32) error { return ErrUnsupported }
