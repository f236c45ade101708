//go:build !linux

package procjail

import (
	"context"
	"sync"
)

// Prestarted holds what Prestart was given; on this platform nothing
// starts ahead of the spec.
type Prestarted struct {
	mu   sync.Mutex
	o    PrestartOptions
	used bool
}

// Prestart records o for Start.
func Prestart(o PrestartOptions) (*Prestarted, error) { return &Prestarted{o: o}, nil }

// Start starts spec with the descriptors given to Prestart.
func (p *Prestarted) Start(ctx context.Context, spec Spec) (*Sandbox, error) {
	p.mu.Lock()
	used := p.used
	p.used = true
	p.mu.Unlock()
	if used {
		return nil, stepErrf("sandbox init", "already started or closed")
	}
	spec.Stdin, spec.Stdout, spec.Stderr, spec.InitPath = p.o.Stdin, p.o.Stdout, p.o.Stderr, p.o.InitPath
	return Start(ctx, spec)
}

// Close does nothing more than forbid Start.
func (p *Prestarted) Close() {
	p.mu.Lock()
	p.used = true
	p.mu.Unlock()
}
