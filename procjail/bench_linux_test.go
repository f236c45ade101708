//go:build linux

package procjail

import (
	"context"
	"os/exec"
	"testing"
)

// BenchmarkStartTrue: a whole sandbox around /bin/true (namespaces, init,
// forwarder, seccomp), from Start to Wait, with its baseline in the same
// run. go test -run '^$' -bench Start -benchtime 200x ./procjail
func BenchmarkStartTrue(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("/bin/true").Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sandbox", func(b *testing.B) {
		for b.Loop() {
			sb, err := Start(context.Background(), Spec{Command: "/bin/true", ResolvConf: ResolvConf()})
			if err != nil {
				b.Fatal(err)
			}
			if code, err := sb.Wait(); code != 0 || err != nil {
				b.Fatal(code, err)
			}
		}
	})
}
