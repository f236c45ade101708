//go:build !linux

package procjail

// LandlockABI is 0 where there is no Landlock.
func LandlockABI() int { return 0 }
