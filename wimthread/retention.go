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

// RetentionOptions tune the purge of finished actions; zero fields take
// the defaults, but a zero Retention turns the purge off.
type RetentionOptions struct {
	// Retention is how long a finished action of a deleted instance is
	// kept after its last change; 0 keeps them forever.
	Retention time.Duration
	// Interval is the time between two purges; default Retention/10,
	// between 1 s and 1 h.
	Interval time.Duration
	// Batch is the most rows one transaction deletes; default 1,000.
	Batch int
}

func (o RetentionOptions) withDefaults() RetentionOptions {
	if o.Interval <= 0 {
		o.Interval = min(max(o.Retention/10, time.Second), time.Hour)
	}
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	return o
}

// Retention purges the history of deleted instances (their finished
// actions and instance actions) once it is older than the retention: at
// Start, then every Interval, in batches until a batch comes back short.
// Processes sharing the database may all run one: a batch that finds
// another process purging skips (persistence.PurgeFinishedActions), so
// running it on one process only is an optimisation, not a need.
type Retention struct {
	db     *persistence.DB
	logger *slog.Logger
	opts   RetentionOptions

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

// NewRetention returns a stopped purge.
func NewRetention(db *persistence.DB, logger *slog.Logger, opts RetentionOptions) *Retention {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Retention{db: db, logger: logger, opts: opts.withDefaults()}
}

// Start begins purging in the background; with no retention it does
// nothing. ctx only bounds the start: Stop ends the purge.
func (r *Retention) Start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done != nil {
		return errors.New("wimthread: retention already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.done = make(chan struct{})
	if r.opts.Retention <= 0 {
		r.logger.Info("finished actions are kept forever (no retention)")
		r.cancel = func() {}
		close(r.done)
		return nil
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go r.run(runCtx, r.done)
	return nil
}

// Stop ends the purge, abandoning (rolling back) a batch in flight, and
// waits for it until ctx ends.
func (r *Retention) Stop(ctx context.Context) error {
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
		return fmt.Errorf("wimthread: stop retention: %w", ctx.Err())
	}
}

func (r *Retention) run(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(r.opts.Interval)
	defer t.Stop()
	for {
		r.purge(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purge deletes batches until one comes back short, and logs the total.
func (r *Retention) purge(ctx context.Context) {
	var actions, instanceActions int64
	defer func() {
		if actions > 0 || instanceActions > 0 {
			r.logger.Info("purged finished actions", slog.Int64("actions", actions),
				slog.Int64("instance_actions", instanceActions), slog.Duration("retention", r.opts.Retention))
		}
	}()
	batch := int64(r.opts.Batch)
	for ctx.Err() == nil {
		a, ia, err := r.db.PurgeFinishedActions(ctx, r.opts.Retention, r.opts.Batch)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Error("purge finished actions", slog.Any("error", err))
			}
			return
		}
		actions += a
		instanceActions += ia
		if a < batch && ia < batch {
			return
		}
	}
}
