package wimthread

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/startstop"
	"github.com/wimro/wimro/persistence"
)

// keeper holds the leases and the claims of the process: one goroutine
// that takes, renews and releases the account leases and renews the
// claims in flight, on a connection of its own outside the pool
// (persistence.Session), and starts and stops driving accounts to match
// what the process should own (table.want).
type keeper struct {
	db     *persistence.DB
	logger *slog.Logger
	owner  string
	lease  time.Duration
	every  time.Duration
	t      *table
	claims *claims
	// renewal is the last claim renewal that succeeded, for the claims'
	// local bounds (actionFence).
	renewal *claimRenewal
	// kick asks for a round now (ownership changed, a lease may go).
	kick chan struct{}
	// wakeClaim wakes the claimer (accounts newly driven, claims released).
	wakeClaim chan struct{}
	svc       startstop.Service

	// conn is the keeper's connection, outside the pool: the renewal
	// never queues behind the pool's other users (issue 30).
	conn *persistence.Session
	// health is the outcome of the last renewal round (LeaseHealth).
	health leaseHealth

	signals *testSignals
}

// leaseHealth remembers when the keeper last reached PostgreSQL and the
// error of its latest round, for LeaseHealth.
type leaseHealth struct {
	mu      sync.Mutex
	started time.Time // monotonic: when the keeper started
	lastOK  time.Time // monotonic: start of the last round that succeeded
	err     error     // error of the latest round; nil after a success
}

func (k *keeper) start(ctx context.Context) error {
	k.health.mu.Lock()
	k.health.started, k.health.lastOK, k.health.err = time.Now(), time.Time{}, nil
	k.health.mu.Unlock()
	k.conn = k.db.Session()
	return k.svc.Start(ctx, k.run)
}

// release ends the keeper's work after every outcome is written: every
// claim of the owner, including any given up while the database was
// away, goes back to the queue, and the leases are released.
func (k *keeper) release(ctx context.Context) error {
	k.conn.Close(ctx)
	n, err := k.db.ReleaseClaims(ctx, k.owner)
	if err != nil {
		return fmt.Errorf("wimthread: release claims: %w", err)
	}
	k.claims.reset()
	if n > 0 {
		k.logger.Info("released claims", slog.Int64("actions", n))
	}
	leases := k.t.clear()
	if err := k.db.ReleaseLeases(ctx, leases); err != nil {
		return fmt.Errorf("wimthread: release account leases: %w", err)
	}
	if len(leases) > 0 {
		k.logger.Info("released account leases", slog.Int("accounts", len(leases)))
		k.signals.LeasesReleased.Send(leases)
	}
	return nil
}

// leaseHealth is Supervisor.LeaseHealth.
func (k *keeper) leaseHealth() error {
	k.health.mu.Lock()
	defer k.health.mu.Unlock()
	since := k.health.lastOK
	if since.IsZero() {
		since = k.health.started
	}
	if since.IsZero() || time.Since(since) < k.lease {
		return nil
	}
	if k.health.err != nil {
		return fmt.Errorf("account leases not renewed for %s: %w", time.Since(since).Round(time.Second), k.health.err)
	}
	return fmt.Errorf("account leases not renewed for %s", time.Since(since).Round(time.Second))
}

func (k *keeper) recordRenewal(start time.Time, err error) {
	k.health.mu.Lock()
	defer k.health.mu.Unlock()
	k.health.err = err
	if err == nil {
		k.health.lastOK = start
	}
}

// run holds the leases and the claims: every SweepEvery (or when kicked)
// it renews the leases held and the claims in flight, releases the
// claims given up after a failed outcome write, takes the leases of the
// accounts it should own, and starts and stops driving accounts to match.
// Every statement runs on the keeper's own connection (never the pool's)
// and within timeout, so a round ends well within one lease whatever the
// pool, the controllers or the database do.
func (k *keeper) run(ctx context.Context) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		k.renew(ctx)
		k.releaseGivenUp(ctx)
		k.apply(ctx)
		k.signals.KeeperRound.Send(struct{}{})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.kick:
		}
	}
}

// timeout bounds each statement of the keeper: four of them (renew
// leases, renew claims, release, take) fit in one lease.
func (k *keeper) timeout() time.Duration { return k.lease / 4 }

// do runs fn on the keeper's connection, within timeout.
func (k *keeper) do(ctx context.Context, fn func(ctx context.Context, st *persistence.Store) error) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout())
	defer cancel()
	return k.conn.Do(ctx, func(st *persistence.Store) error { return fn(ctx, st) })
}

// renew extends the leases held and the claims in the record. A lease
// that could not be renewed (it expired and may be another process's now)
// stops the account at once (no new claims, running actions cancelled):
// PostgreSQL, not this process's memory, says who may drive the account.
// A lease that is renewed has its local bound moved to the start of the
// statement plus the lease, minus the margin; one that is not keeps its
// bound, and is dropped when that passes (table.expire).
func (k *keeper) renew(ctx context.Context) {
	k.t.mu.Lock()
	held := make([]persistence.Lease, 0, len(k.t.leases))
	for _, l := range k.t.leases {
		held = append(held, l)
	}
	k.t.mu.Unlock()
	start := time.Now()
	if len(held) > 0 {
		var kept []persistence.Lease
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
			var err error
			kept, err = st.RenewLeases(ctx, held, k.lease)
			return err
		})
		k.recordRenewal(start, err)
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Error("renew account leases", slog.Int("accounts", len(held)), slog.Any("error", err))
			}
		} else {
			k.dropLost(held, kept, start)
		}
	} else {
		// Holding nothing, the keeper still proves it can reach the
		// database: a process that cannot would take no lease either.
		pctx, cancel := context.WithTimeout(ctx, k.timeout())
		k.recordRenewal(start, k.conn.Ping(pctx))
		cancel()
	}
	// A claim recorded before snapshot is in keys, and renewed from start.
	snapshot := time.Now()
	if keys := k.claims.Running(); len(keys) > 0 {
		start := time.Now()
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
			_, err := st.ExtendClaims(ctx, keys, k.lease)
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Error("renew claim leases", slog.Int("actions", len(keys)), slog.Any("error", err))
			}
		} else {
			k.renewal.renewed(start, snapshot)
		}
	}
}

// dropLost stops the accounts whose lease was not renewed, and moves the
// bounds of those renewed from start.
func (k *keeper) dropLost(held, kept []persistence.Lease, start time.Time) {
	ok := make(map[string]bool, len(kept))
	for _, l := range kept {
		ok[l.AccountID] = true
	}
	t := k.t
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range held {
		if t.leases[l.AccountID] != l {
			continue
		}
		if ok[l.AccountID] {
			if b := t.bounds[l.AccountID]; b != nil {
				b.extend(start)
				b.timer.Reset(b.left())
			}
			continue
		}
		t.dropLease(l.AccountID)
		t.metrics.leaseLost(lostRenewal)
		k.signals.LeaseLost.Send(leaseLoss{l.AccountID, lostRenewal})
		k.logger.Warn("account lease lost; the account is no longer driven here", slog.String("account_id", l.AccountID), slog.Int64("epoch", l.Epoch))
	}
}

// releaseGivenUp releases the claims whose outcome could not be written.
func (k *keeper) releaseGivenUp(ctx context.Context) {
	keys := k.claims.Releasing()
	if len(keys) == 0 {
		return
	}
	var n int64
	err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
		var err error
		n, err = st.ReleaseClaimsOf(ctx, keys)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			k.logger.Warn("release claims whose outcome could not be written", slog.Int("actions", len(keys)), slog.Any("error", err))
		}
		return
	}
	k.claims.released(keys)
	k.logger.Info("released claims whose outcome could not be written; the actions will run again", slog.Int64("actions", n))
	signal(k.wakeClaim)
}

// apply makes the accounts driven match the accounts wanted: it stops
// those no longer wanted (their lease is released once their actions in
// flight are written), takes the leases it can of the wanted ones, and
// drives them.
func (k *keeper) apply(ctx context.Context) {
	t := k.t
	t.mu.Lock()
	for id, a := range t.accounts {
		if !t.want[id] && !a.stopping {
			a.stop()
		}
		if a.stopping && a.inflight == 0 {
			delete(t.accounts, id)
		}
	}
	// The leases may change below: give the accounts skipped for a lease
	// this process did not know another look.
	clear(t.foreign)
	// A lease no longer wanted goes once none of its actions runs.
	var release []persistence.Lease
	for id, l := range t.leases {
		_, busy := t.accounts[id]
		if !t.want[id] && !busy {
			release = append(release, l)
			t.dropLease(id)
		}
	}
	var missing []string
	for id := range t.want {
		if _, ok := t.leases[id]; !ok {
			missing = append(missing, id)
		}
	}
	t.mu.Unlock()

	if len(release) > 0 {
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error { return st.ReleaseLeases(ctx, release) })
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Warn("release account leases", slog.Int("accounts", len(release)), slog.Any("error", err))
			}
		} else {
			k.logger.Info("released account leases", slog.Int("accounts", len(release)))
			k.signals.LeasesReleased.Send(release)
		}
	}
	if len(missing) > 0 {
		start := time.Now()
		var got []persistence.Lease
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
			var err error
			got, err = st.AcquireLeases(ctx, k.owner, missing, k.lease)
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Error("take account leases", slog.Int("accounts", len(missing)), slog.Any("error", err))
			}
		} else {
			t.mu.Lock()
			for _, l := range got {
				t.holdLease(l, start)
			}
			t.mu.Unlock()
			if len(got) > 0 {
				k.logger.Info("took account leases", slog.Int("accounts", len(got)))
				k.signals.LeasesTaken.Send(got)
			}
			if n := len(missing) - len(got); n > 0 {
				k.logger.Debug("account leases held elsewhere; waiting for their release", slog.Int("accounts", n))
			}
		}
	}

	t.mu.Lock()
	started := false
	for id, l := range t.leases {
		if !t.want[id] {
			continue
		}
		if _, ok := t.accounts[id]; ok {
			continue // driven, or its previous run is still writing
		}
		if ctx.Err() != nil || t.closed() {
			break
		}
		t.accounts[id] = t.newAccount(l)
		started = true
	}
	t.mu.Unlock()
	if started {
		signal(k.wakeClaim)
	}
}
