//go:build !linux

package procjail

// InstallUIDRules refuses: uid-matched netfilter rules are Linux's.
func InstallUIDRules(r UIDRules) error {
	return &SetupError{Step: "uid network rules", Err: ErrUnsupported}
}

// RemoveUIDRules refuses: no rules are ever installed on this platform.
func RemoveUIDRules(uid uint32) error {
	return &SetupError{Step: "uid network rules", Err: ErrUnsupported}
}

// CheckUIDRules reports that uid-matched netfilter rules are Linux's.
func CheckUIDRules() error {
	return &UIDRulesUnavailableError{Missing: "netfilter", Fix: "container mode needs Linux", Err: ErrUnsupported}
}

// HasNetAdmin is false: container mode is Linux's.
func HasNetAdmin() bool { return false }

// ServeForwards refuses: the capture and its relays are Linux's.
func ServeForwards(fs []Forward) error {
	return &SetupError{Step: "forwards", Err: ErrUnsupported}
}
