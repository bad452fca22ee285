package wimthread

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/internal/startstop"
	"github.com/wimro/wimro/persistence"
)

const (
	// maxBatch caps the outcomes written in one transaction.
	maxBatch = 500
	// maxFlushes is how many batches are written at once while the next
	// one accumulates.
	maxFlushes = 2
	// linger is how long a batch waits for more outcomes while actions are
	// still running: actions claimed together finish nearly together, and
	// without it the first outcome went out alone and the rest in a second
	// statement.
	linger = time.Millisecond
)

// outcome is one action's outcome on its way to the completer.
type outcome struct {
	persistence.Finished
	acct *account
}

// completer is the one writer of action outcomes of the process: it writes
// whatever has accumulated, of every account, in one transaction
// (persistence.FinishActions), with up to maxFlushes transactions in
// flight, each on a connection of its own (persistence.Pinned).
type completer struct {
	db      *persistence.DB
	logger  *slog.Logger
	lease   time.Duration
	metrics *Metrics
	runner  *actions.Runner
	t       *table
	claims  *claims
	// pending counts the actions whose outcome is still to come
	// (claimer.pending): a batch lingers for more while there are some.
	pending *atomic.Int64
	// wakeClaim and kick are told of the slots, links and leases a
	// written batch frees.
	wakeClaim, kick chan struct{}
	svc             startstop.Service

	in chan outcome // from start to finish

	signals *testSignals
}

// start begins writing and returns where outcomes go.
func (c *completer) start(ctx context.Context) (chan<- outcome, error) {
	// Room for every action that may run at once is not needed: a full
	// channel only makes finished actions wait for the completer.
	in := make(chan outcome, maxBatch)
	if err := c.svc.Start(ctx, func(context.Context) { c.run(in) }); err != nil {
		return nil, err
	}
	c.in = in
	return in, nil
}

// finish waits, once every action ended and nothing more is sent, for
// every outcome to be written.
func (c *completer) finish(ctx context.Context) error {
	close(c.in)
	return c.svc.Stop(ctx)
}

// run writes until outcomes is closed, after every action finished: it
// ignores the cancellation of Stop, since a write is never cancelled (it
// would lose a service just created).
func (c *completer) run(outcomes <-chan outcome) {
	var wg sync.WaitGroup
	slots := make(chan *persistence.Pinned, maxFlushes)
	for range maxFlushes {
		slots <- c.db.Pin()
	}
	defer func() {
		wg.Wait()
		for range maxFlushes {
			(<-slots).Release()
		}
	}()
	for {
		// Wait for a free flush first: meanwhile outcomes pile up and go
		// out together.
		conn := <-slots
		first, ok := <-outcomes
		if !ok {
			slots <- conn
			return
		}
		batch := []outcome{first}
		var lingered <-chan time.Time
	more:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-outcomes:
				if !ok {
					break more
				}
				batch = append(batch, o)
				continue
			default:
			}
			if c.pending.Load() == 0 {
				break more // nothing else will come soon
			}
			if lingered == nil {
				lingered = time.After(linger)
			}
			select {
			case o, ok := <-outcomes:
				if !ok {
					break more
				}
				batch = append(batch, o)
			case <-lingered:
				break more
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { slots <- conn }()
			c.flush(conn, batch)
			// The batch's slots and links are free, and a stopping account
			// with nothing left in flight lets its lease go.
			drained := c.t.settle(batch)
			signal(c.wakeClaim)
			if drained {
				signal(c.kick)
			}
		}()
	}
}

// flush writes a batch of outcomes so that no claim is left behind:
//   - the database is away: retry, with back-off, for up to one lease
//     (the claims stay renewed, so the write lands when it comes back);
//   - the database refuses the batch: write it in halves, down to the one
//     bad outcome, so it cannot hold back the others, and for that one
//     write the runner's "could not be recorded" outcome instead;
//   - still nothing written: give the claims up (no longer renewed, and
//     released as soon as the database answers). The actions run again,
//     which they are written to survive.
func (c *completer) flush(conn *persistence.Pinned, batch []outcome) {
	err := c.commit(conn, batch)
	if err == nil {
		return
	}
	if !transient(err) {
		if len(batch) > 1 {
			half := len(batch) / 2
			c.flush(conn, batch[:half])
			c.flush(conn, batch[half:])
			return
		}
		o := batch[0]
		o.acct.actionLog(o.Action).Error("the database refused an action outcome; recording the failure to record it instead", slog.Any("error", err))
		reached := o.Outcome.Reached
		o.Outcome = c.runner.Unrecorded(o.Action, err)
		o.Outcome.Reached = reached // the run's call to the controller still counts
		if c.commit(conn, []outcome{o}) == nil {
			return
		}
	}
	for _, o := range batch {
		c.claims.giveUp(persistence.KeyOf(o.Action))
		o.acct.actionLog(o.Action).Error("action outcome not written; the claim is given up and the action will run again", slog.Any("error", err))
	}
	c.signals.ClaimsGivenUp.Send(len(batch))
}

// commit writes a batch in one statement, retrying while the database is
// unavailable for up to one lease, and settles each claim it wrote or
// found lost.
func (c *completer) commit(conn *persistence.Pinned, batch []outcome) error {
	items := make([]persistence.Finished, len(batch))
	for i, o := range batch {
		items[i] = o.Finished
	}
	start := time.Now()
	deadline := start.Add(c.lease)
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), min(c.lease, 30*time.Second))
		// One statement, atomic by itself: no BEGIN and COMMIT round trips.
		var errs []error
		err := conn.Do(ctx, func(st *persistence.Store) error {
			var err error
			errs, err = st.FinishActions(ctx, items)
			return err
		})
		cancel()
		if err == nil {
			c.metrics.batchWritten(len(batch), time.Since(start))
			// actionLog formats its attributes for every action: only
			// when the debug line would be written.
			debug := c.logger.Enabled(context.Background(), slog.LevelDebug)
			var lost []persistence.ClaimKey
			for i, o := range batch {
				a := o.Action
				c.claims.done(persistence.KeyOf(a))
				if errors.Is(errs[i], persistence.ErrClaimLost) {
					lost = append(lost, persistence.KeyOf(a))
					o.acct.actionLog(a).Warn("claim or account lease lost before the outcome was written; the action will run again")
				} else if debug {
					o.acct.actionLog(a).Debug("action ran", slog.String("action", a.Action), slog.String("status", o.Outcome.Status))
				}
			}
			c.countFinished(batch, errs)
			// A claim still held under its name but refused because the
			// account's lease was lost goes back to the queue now, for the
			// account's new owner; one lost to another claim is untouched.
			if len(lost) > 0 {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if _, err := c.db.ReleaseClaimsOf(rctx, lost); err != nil {
					c.logger.Warn("release claims after a lost lease", slog.Int("actions", len(lost)), slog.Any("error", err))
				}
				cancel()
			}
			c.signals.OutcomesWritten.Send(len(batch))
			return nil
		}
		if !transient(err) || time.Now().Add(delay).After(deadline) {
			return err
		}
		c.logger.Warn("writing action outcomes failed; retrying", slog.Int("actions", len(batch)), slog.Int("attempt", attempt), slog.Any("error", err))
		c.signals.WriteRetried.Send(attempt)
		time.Sleep(delay) // back-off between retries of an I/O call, not synchronisation
		delay = min(2*delay, 2*time.Second)
	}
}

// transient reports whether a failed write may succeed if tried again
// unchanged: anything but the database refusing the statement itself.
func transient(err error) bool { return !persistence.Refused(err) }
