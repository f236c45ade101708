package supervisor

import (
	"os"
	"reflect"
	"sync"
	"syscall"
	"testing"
)

type recorder struct {
	mu   sync.Mutex
	sigs []os.Signal
}

func (r *recorder) Signal(sig os.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sigs = append(r.sigs, sig)
	return nil
}

// TestSigRelay walks the relay's states without a jail: during setup a
// terminating signal aborts once and the window or user signals do not;
// after Commit signals are held until Attach, then forwarded, SIGHUP
// reloading instead when a reload is set.
func TestSigRelay(t *testing.T) {
	aborts, reloads := 0, 0
	r := newSigRelay(func() { aborts++ }, func() { reloads++ })
	r.handle(syscall.SIGWINCH)
	r.handle(syscall.SIGUSR1)
	if aborts != 0 || r.Aborted() != nil {
		t.Fatal("SIGWINCH or SIGUSR1 aborted the setup")
	}
	r.handle(syscall.SIGTERM)
	r.handle(syscall.SIGINT)
	if aborts != 1 || r.Aborted() == nil || r.Aborted().Error() != "interrupted by terminated before the command started" {
		t.Fatalf("aborts %d, %v", aborts, r.Aborted())
	}
	if err := r.Commit(); err == nil {
		t.Fatal("an aborted setup committed")
	}

	r = newSigRelay(func() { aborts++ }, func() { reloads++ })
	if err := r.Commit(); err != nil {
		t.Fatal(err)
	}
	r.handle(syscall.SIGINT)
	r.handle(syscall.SIGHUP)
	r.handle(syscall.SIGUSR2)
	var sb recorder
	r.Attach(&sb)
	r.handle(syscall.SIGTERM)
	r.handle(syscall.SIGHUP)
	if want := []os.Signal{syscall.SIGINT, syscall.SIGUSR2, syscall.SIGTERM}; !reflect.DeepEqual(sb.sigs, want) {
		t.Fatalf("forwarded %v, want %v", sb.sigs, want)
	}
	if reloads != 2 || aborts != 1 {
		t.Fatalf("reloads %d aborts %d", reloads, aborts)
	}

	// Without a policy file SIGHUP is the command's.
	r = newSigRelay(func() {}, nil)
	r.Commit()
	sb = recorder{}
	r.Attach(&sb)
	r.handle(syscall.SIGHUP)
	if !reflect.DeepEqual(sb.sigs, []os.Signal{syscall.SIGHUP}) {
		t.Fatalf("forwarded %v", sb.sigs)
	}
	r.Stop() // never notified: nothing to stop
}

// TestSigRelayStopTwice: Run stops the relay once the command is gone and
// its cleanup stops it again; the second Stop does nothing (a second close
// of the relay's channel would panic).
func TestSigRelayStopTwice(t *testing.T) {
	r := newSigRelay(func() {}, nil)
	r.Notify()
	r.Stop()
	r.Stop()
}
