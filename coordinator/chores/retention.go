package chores

import (
	"context"
	"log/slog"
	"time"

	"github.com/wimro/wimro/persistence"
)

// RetentionOptions tune the purge of finished actions and of the audit
// trail; zero fields take the defaults, but a zero Retention (or
// AuditRetention) turns that purge off.
type RetentionOptions struct {
	// Retention is how long a finished action of a deleted instance is
	// kept after its last change; 0 keeps them forever.
	Retention time.Duration
	// AuditRetention is how long an audit entry (GET /openmano/audit) is
	// kept; 0 keeps them forever.
	AuditRetention time.Duration
	// Interval is the time between two purges; default a tenth of the
	// shorter retention, between 1 s and 1 h.
	Interval time.Duration
	// Batch is the most rows one transaction deletes; default 1,000.
	Batch int
}

func (o RetentionOptions) withDefaults() RetentionOptions {
	if o.Interval <= 0 {
		shortest := o.Retention
		if shortest <= 0 || (o.AuditRetention > 0 && o.AuditRetention < shortest) {
			shortest = o.AuditRetention
		}
		o.Interval = min(max(shortest/10, time.Second), time.Hour)
	}
	if o.Batch <= 0 {
		o.Batch = 1000
	}
	return o
}

// Retention purges the history of deleted instances (their finished
// actions and instance actions) once it is older than the retention, and
// the audit entries older than the audit retention: at Start, then every
// Interval, in batches until a batch comes back short.
// Processes sharing the database may all run one: a batch that finds
// another process purging skips (persistence.PurgeFinishedActions), so
// running it on one process only is an optimisation, not a need.
type Retention struct {
	Periodic
	db     *persistence.DB
	logger *slog.Logger
	opts   RetentionOptions
}

// NewRetention returns a stopped purge. It may be started again after
// Stop.
func NewRetention(db *persistence.DB, logger *slog.Logger, opts RetentionOptions) *Retention {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Retention{db: db, logger: logger, opts: opts.withDefaults()}
	r.Periodic = Periodic{Name: "retention", Interval: r.opts.Interval, Job: r.purge}
	return r
}

// Start begins purging in the background; with no retention it does
// nothing. ctx only bounds the start: Stop ends the purge, abandoning
// (rolling back) a batch in flight.
func (r *Retention) Start(ctx context.Context) error {
	if r.opts.Retention <= 0 {
		r.logger.Info("finished actions are kept forever (no retention)")
	}
	if r.opts.AuditRetention <= 0 {
		r.logger.Info("audit entries are kept forever (no audit retention)")
	}
	if r.opts.Retention <= 0 && r.opts.AuditRetention <= 0 {
		return ctx.Err()
	}
	return r.Periodic.Start(ctx)
}

// purge runs the purges that have a retention.
func (r *Retention) purge(ctx context.Context) {
	if r.opts.Retention > 0 {
		r.purgeActions(ctx)
	}
	if r.opts.AuditRetention > 0 {
		r.purgeAudit(ctx)
	}
}

// purgeAudit deletes batches of old audit entries until one comes back
// short, and logs the total.
func (r *Retention) purgeAudit(ctx context.Context) {
	var total int64
	for ctx.Err() == nil {
		n, err := r.db.PurgeAudit(ctx, r.opts.AuditRetention, r.opts.Batch)
		if err != nil {
			if ctx.Err() == nil {
				r.logger.Error("purge audit entries", slog.Any("error", err))
			}
			break
		}
		total += n
		if n < int64(r.opts.Batch) {
			break
		}
	}
	if total > 0 {
		r.logger.Info("purged audit entries", slog.Int64("entries", total), slog.Duration("audit_retention", r.opts.AuditRetention))
	}
}

// purgeActions deletes batches until one comes back short, and logs the total.
func (r *Retention) purgeActions(ctx context.Context) {
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
