//go:build linux

package procjail

// LandlockABI is the Landlock ABI version the kernel offers (0: none); the
// sandbox's command runs under the best of it.
func LandlockABI() int {
	abi, _ := landlockVersion(landlockKernelABI())
	return abi
}
