package chores

import (
	"context"
	"time"

	"github.com/wimro/wimro/internal/startstop"
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

	svc     startstop.Service
	signals testSignals
}

// Start begins the runs; ctx only bounds the start, Stop ends them.
func (p *Periodic) Start(ctx context.Context) error {
	if p.Interval <= 0 {
		return ctx.Err()
	}
	p.svc.Name = "chores: " + p.Name
	return p.svc.Start(ctx, p.run)
}

// Stop ends the runs, cancelling one in flight, and waits for it until ctx
// ends. Stopping a stopped Periodic does nothing.
func (p *Periodic) Stop(ctx context.Context) error { return p.svc.Stop(ctx) }

func (p *Periodic) run(ctx context.Context) {
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for first := true; ; first = false {
		if !first || !p.WaitFirst {
			p.Job(ctx)
			p.signals.Ran.Send(struct{}{})
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
