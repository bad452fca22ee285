package wimthread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// periodic runs a job at once and then every interval, in the background,
// between Start and Stop; it may be started again after Stop (a chore
// follows leadership, which comes and goes).
type periodic struct {
	name     string
	interval time.Duration
	job      func(ctx context.Context)

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// Start begins the runs; ctx only bounds the start, Stop ends them.
func (p *periodic) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done != nil {
		return errors.New("wimthread: " + p.name + " already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel, p.done = cancel, make(chan struct{})
	go p.run(runCtx, p.done)
	return nil
}

// Stop ends the runs, cancelling one in flight, and waits for it until ctx
// ends. Stopping a stopped periodic does nothing.
func (p *periodic) Stop(ctx context.Context) error {
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
		return fmt.Errorf("wimthread: stop %s: %w", p.name, ctx.Err())
	}
}

func (p *periodic) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		p.job(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
