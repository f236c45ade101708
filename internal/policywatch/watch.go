package policywatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/barry-rocks/sandbox/policy"
	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long a Watcher waits after the last event of a
// burst before it reloads.
const DefaultDebounce = 50 * time.Millisecond

// Change is one outcome of a reload: either a new policy (Old and New set,
// Err nil) or a refused edit (Err set; the last good policy stays).
type Change struct {
	Old, New *policy.Resolved
	Err      error
	// Time is when the reload finished.
	Time time.Time
}

// Watcher keeps the last good resolution of a policy file and reloads it
// when the file changes. It watches the file's directory, not the file, so
// editors that write a temporary file and rename it over the original, and
// symlink swaps (a ConfigMap's ..data), are seen; bursts of events are
// debounced, and a reload applies only when the file's bytes changed. An
// edit that fails to decode or resolve, and a deleted file, keep the last
// good policy and are reported. It is safe for concurrent use.
type Watcher struct {
	path     string
	root     *os.Root // the policy's directory, held open
	name     string   // the policy's name in root
	debounce time.Duration
	onChange func(Change)

	mu      sync.Mutex
	current *policy.Resolved
	raw     []byte
	lastErr string

	fsw     *fsnotify.Watcher
	reload  chan struct{}
	done    chan struct{}
	stopped sync.Once
}

// WatchFile resolves path once (an error here is returned: there is no last
// good policy to keep) and then watches it until ctx ends or Close is
// called. onChange is called, from the watcher's goroutine, for every
// applied change and every refused edit.
func WatchFile(ctx context.Context, path string, debounce time.Duration, onChange func(Change)) (*Watcher, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", policy.ErrInvalidPolicy, err)
	}
	// The directory is opened once and every reload reads the policy's
	// name inside that same directory: renaming or replacing an ancestor
	// directory later cannot substitute another file, and a symlinked
	// policy must point inside its directory (as a ConfigMap's ..data does).
	root, err := os.OpenRoot(filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", policy.ErrInvalidPolicy, err)
	}
	w := &Watcher{path: abs, root: root, name: filepath.Base(abs), onChange: onChange}
	raw, r, err := w.load()
	if err != nil {
		root.Close()
		return nil, err
	}
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("watching %s: %w", abs, err)
	}
	if err := fsw.Add(filepath.Dir(abs)); err != nil {
		fsw.Close()
		root.Close()
		return nil, fmt.Errorf("watching %s: %w", filepath.Dir(abs), err)
	}
	w.debounce, w.current, w.raw, w.fsw = debounce, r, raw, fsw
	w.reload, w.done = make(chan struct{}, 1), make(chan struct{})
	go w.loop(ctx)
	return w, nil
}

// load reads and resolves the policy through the held directory.
func (w *Watcher) load() ([]byte, *policy.Resolved, error) {
	raw, err := w.root.ReadFile(w.name)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", policy.ErrInvalidPolicy, err)
	}
	pf, err := policy.DecodePolicyFile(raw, policy.FormatForPath(w.name))
	if err != nil {
		return raw, nil, err
	}
	r, err := policy.ResolveSession(pf)
	if err != nil {
		return raw, nil, err
	}
	return raw, r, nil
}

// Current returns the last good resolution.
func (w *Watcher) Current() *policy.Resolved {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.current
}

// Path returns the absolute path watched.
func (w *Watcher) Path() string { return w.path }

// Reload re-reads and re-resolves the file now (for SIGHUP) and reports the
// outcome even when the content did not change, so a reload is visible.
func (w *Watcher) Reload() {
	select {
	case w.reload <- struct{}{}:
	default:
	}
}

// Close stops watching.
func (w *Watcher) Close() error {
	var err error
	w.stopped.Do(func() {
		err = w.fsw.Close()
		<-w.done
		w.root.Close()
	})
	return err
}

func (w *Watcher) loop(ctx context.Context) {
	defer close(w.done)
	var timer *time.Timer
	var fire <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			w.fsw.Close()
			return
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			// Any event in the directory may be a symlink swap; the content
			// comparison in apply decides whether anything changed.
			_ = ev
			if timer == nil {
				timer = time.NewTimer(w.debounce)
			} else {
				timer.Reset(w.debounce)
			}
			fire = timer.C
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.emit(Change{Err: fmt.Errorf("watching %s: %w; keeping the last good policy", w.path, err)})
		case <-w.reload:
			w.applyForced(true)
		case <-fire:
			fire = nil
			w.apply()
		}
	}
}

func (w *Watcher) apply() { w.applyForced(false) }

func (w *Watcher) applyForced(force bool) {
	raw, r, err := w.load()
	w.mu.Lock()
	if force {
		w.raw, w.lastErr = nil, ""
	}
	if err == nil && bytes.Equal(raw, w.raw) {
		w.mu.Unlock()
		return
	}
	if err != nil {
		if raw != nil && bytes.Equal(raw, w.raw) {
			w.mu.Unlock()
			return
		}
		if raw != nil {
			w.raw = raw // report a broken edit once, not on every event
		}
		if errors.Is(err, os.ErrNotExist) || raw == nil {
			err = fmt.Errorf("policy file %s cannot be read (%v); keeping the last good policy", w.path, err)
		}
		if err.Error() == w.lastErr {
			w.mu.Unlock()
			return
		}
		w.lastErr = err.Error()
		w.mu.Unlock()
		w.emit(Change{Err: err})
		return
	}
	w.lastErr = ""
	old := w.current
	w.current, w.raw = r, raw
	w.mu.Unlock()
	w.emit(Change{Old: old, New: r})
}

func (w *Watcher) emit(c Change) {
	c.Time = time.Now()
	if w.onChange != nil {
		w.onChange(c)
	}
}
