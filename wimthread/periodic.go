package wimthread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Periodic runs a job every interval, in the background, between Start
// and Stop; it may be started again after Stop (a chore follows
// leadership, which comes and goes). The cluster's chores are built on it:
// the claim rescuer and the retention purge here, drift reconcile in wimd.
type Periodic struct {
	Name     string
	Interval time.Duration // <= 0: Start does nothing
	Job      func(ctx context.Context)
	// WaitFirst makes the first run come one interval after Start instead
	// of at once (for a chore that should let the workers settle first).
	WaitFirst bool

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start begins the runs; ctx only bounds the start, Stop ends them.
func (p *Periodic) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return errors.New("wimthread: " + p.Name + " already started")
	}
	if err := ctx.Err(); err != nil || p.Interval <= 0 {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(runCtx, p.done)
	return nil
}

// Stop ends the runs, cancelling one in flight, and waits for it until ctx
// ends. Stopping a stopped Periodic does nothing.
func (p *Periodic) Stop(ctx context.Context) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.cancel, p.done = nil, nil
	p.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wimthread: stop %s: %w", p.Name, ctx.Err())
	}
}

func (p *Periodic) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for first := true; ; first = false {
		if !first || !p.WaitFirst {
			p.Job(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
