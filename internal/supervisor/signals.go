package supervisor

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// relayed are the signals a session takes from its caller.
var relayed = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGWINCH,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// signaler is what signals are forwarded to (a *procjail.Sandbox).
type signaler interface{ Signal(os.Signal) error }

// sigRelay is the session's signal state machine (the shape of rootlesskit's
// sigproxy). During setup, SIGINT, SIGTERM, SIGHUP or SIGQUIT abort it: the
// command never starts. Once committed (the sandbox is told to start the
// command), every signal is for the command: held until Attach, then
// forwarded, except SIGHUP when reload is set, which reloads the policy.
type sigRelay struct {
	abort  func() // cancels the setup
	reload func() // nil: SIGHUP is forwarded like the others

	mu        sync.Mutex
	running   signaler
	committed bool
	aborted   os.Signal
	pending   []os.Signal

	sigs       chan os.Signal
	subscribed chan struct{} // closed once signal.Notify returned
	done       chan struct{}
	stopped    bool // Stop ran (Stop is for one goroutine)
}

// newSigRelay makes a relay that is not yet receiving; Notify starts it.
func newSigRelay(abort, reload func()) *sigRelay {
	return &sigRelay{abort: abort, reload: reload}
}

// Notify starts taking the caller's signals, on a goroutine of its own:
// the process's first subscription costs ~0.7 ms (os/signal starts its
// thread and enables each signal with a round trip to it), which the
// sandbox's setup does not wait for. Until it is done the
// signals keep their default handling, as before any Notify; Commit, the
// end of the setup, waits for it, so no signal meant for the command is
// missed.
func (r *sigRelay) Notify() {
	r.sigs, r.subscribed, r.done = make(chan os.Signal, 32), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		signal.Notify(r.sigs, relayed...)
		close(r.subscribed)
		for sig := range r.sigs {
			r.handle(sig)
		}
	}()
}

// Subscribed waits until Notify's subscription is in place: from then on
// no relayed signal has its default action (ending sandboxd). The session
// waits for it before it makes anything a signal's default action would
// leave behind (its runtime directory).
func (r *sigRelay) Subscribed() {
	if r.subscribed != nil {
		<-r.subscribed
	}
}

// Stop stops taking signals; the caller's default handling returns. A
// second Stop does nothing.
func (r *sigRelay) Stop() {
	if r.sigs == nil || r.stopped {
		return
	}
	r.stopped = true
	r.Subscribed()
	signal.Stop(r.sigs)
	close(r.sigs)
	<-r.done
}

// handle is one signal's fate.
func (r *sigRelay) handle(sig os.Signal) {
	r.mu.Lock()
	sb := r.running
	reload := r.committed && sig == syscall.SIGHUP && r.reload != nil
	switch {
	case reload:
		sb = nil
	case sb != nil:
	case r.committed:
		r.pending = append(r.pending, sig)
	case r.aborted == nil && sig != syscall.SIGWINCH && sig != syscall.SIGUSR1 && sig != syscall.SIGUSR2:
		r.aborted = sig
		r.abort()
	}
	r.mu.Unlock()
	if reload {
		r.reload()
	}
	if sb != nil {
		sb.Signal(sig)
	}
}

// Commit ends the setup: from now on signals are the command's. It fails
// when a signal already aborted the setup.
func (r *sigRelay) Commit() error {
	r.Subscribed()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted != nil {
		return r.interrupted()
	}
	r.committed = true
	return nil
}

// Aborted is the error of a setup a signal aborted, or nil.
func (r *sigRelay) Aborted() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aborted == nil {
		return nil
	}
	return r.interrupted()
}

func (r *sigRelay) interrupted() error {
	return fmt.Errorf("interrupted by %v before the command started", r.aborted)
}

// Attach forwards the signals held since Commit to sb, then every later one.
func (r *sigRelay) Attach(sb signaler) {
	r.mu.Lock()
	r.running = sb
	held := r.pending
	r.pending = nil
	r.mu.Unlock()
	for _, sig := range held {
		sb.Signal(sig)
	}
}
