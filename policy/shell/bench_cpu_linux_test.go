package shell

import (
	"runtime"
	"syscall"
	"testing"
)

// threadCPU returns the calling thread's user+system CPU time in ns.
func threadCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkClassifyCPU reports the thread CPU time per line (cpu-ns/op)
// next to the wall time: on a shared, overloaded machine the wall time
// counts the time other processes hold the core, the CPU time does not.
func BenchmarkClassifyCPU(b *testing.B) {
	for _, l := range benchLines {
		b.Run(l[:min(len(l), 24)], func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			start := threadCPU(b)
			n := 0
			for b.Loop() {
				_ = Classify(l)
				n++
			}
			b.ReportMetric(float64(threadCPU(b)-start)/float64(n), "cpu-ns/op")
		})
	}
}
