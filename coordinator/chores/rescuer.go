package chores

import (
	"context"
	"log/slog"
	"time"

	"github.com/wimro/wimro/persistence"
)

// Rescuer returns the actions whose claim expired (their process died,
// hung, or gave them up) to the queue, every interval. It is a
// cluster-wide chore: one process runs it (the leader; the only process
// without a cluster), though more would do no harm.
type Rescuer struct {
	Periodic
	db     *persistence.DB
	logger *slog.Logger
}

// NewRescuer returns a stopped rescuer sweeping every interval (default
// 10 s, a third of the default claim lease). It may be started again after
// Stop.
func NewRescuer(db *persistence.DB, logger *slog.Logger, interval time.Duration) *Rescuer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if interval <= 0 {
		interval = 10 * time.Second
	}
	r := &Rescuer{db: db, logger: logger}
	r.Periodic = Periodic{Name: "rescuer", Interval: interval, Job: r.sweep}
	return r
}

func (r *Rescuer) sweep(ctx context.Context) {
	n, err := r.db.SweepExpiredClaims(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		r.logger.Error("sweep expired claims", slog.Any("error", err))
	case n > 0:
		r.logger.Info("returned expired claims to the queue", slog.Int64("actions", n))
	}
}
