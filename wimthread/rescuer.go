package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wimro/wimro/persistence"
)

// Rescuer returns the actions whose claim expired (their process died,
// hung, or gave the claim up) to the queue, every Interval. It is a
// cluster-wide chore: one process runs it (the leader; the only process
// without a cluster), though more would do no harm.
type Rescuer struct {
	db       *persistence.DB
	logger   *slog.Logger
	interval time.Duration

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRescuer returns a stopped rescuer sweeping every interval (default
// 10 s, a third of the default claim lease).
func NewRescuer(db *persistence.DB, logger *slog.Logger, interval time.Duration) *Rescuer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if interval <= 0 {
		interval = 10 * time.Second
	}
	return &Rescuer{db: db, logger: logger, interval: interval}
}

// Start begins sweeping; ctx only bounds the start. A stopped rescuer may
// be started again (leadership comes and goes).
func (r *Rescuer) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return errors.New("wimthread: rescuer already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel, r.done = cancel, make(chan struct{})
	go r.run(runCtx, r.done)
	return nil
}

// Stop ends the sweeping and waits for it until ctx ends.
func (r *Rescuer) Stop(ctx context.Context) error {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wimthread: stop rescuer: %w", ctx.Err())
	}
}

func (r *Rescuer) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		if n, err := r.db.SweepExpiredClaims(ctx); err != nil {
			if ctx.Err() == nil {
				r.logger.Error("sweep expired claims", slog.Any("error", err))
			}
		} else if n > 0 {
			r.logger.Info("returned expired claims to the queue", slog.Int64("actions", n))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
