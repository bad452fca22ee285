package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/wimro/wimro/internal/startstop"
	"github.com/wimro/wimro/persistence"
)

// keeper holds the leases and the claims of the process: one goroutine
// that renews the process lease, takes and releases the account leases
// held under it and renews the claims in flight, on a connection of its own outside the pool
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
	// proc is the process lease every account lease is held under; a
	// zero Epoch: none yet, or lost (the next round starts another).
	proc persistence.ProcessLease
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
	// Nothing is held under it any more; ended, a lease the release
	// missed frees at once, and a restart starts another epoch.
	if k.proc.Epoch != 0 {
		if err := k.db.EndProcessLease(ctx, k.proc); err != nil {
			return fmt.Errorf("wimthread: end process lease: %w", err)
		}
		k.proc = persistence.ProcessLease{}
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

// timeout bounds each statement of the keeper: four of them (renew the
// process lease, renew claims, release, take a chunk) fit in one lease.
func (k *keeper) timeout() time.Duration { return k.lease / 4 }

// do runs fn on the keeper's connection, within timeout.
func (k *keeper) do(ctx context.Context, fn func(ctx context.Context, st *persistence.Store) error) error {
	ctx, cancel := context.WithTimeout(ctx, k.timeout())
	defer cancel()
	return k.conn.Do(ctx, func(st *persistence.Store) error { return fn(ctx, st) })
}

// renew extends the process lease, and so every account lease held under
// it, and the claims in the record: one row for the leases, whatever
// their number. When the process lease was lost (it expired, and its
// accounts may be another process's now) every account stops at once (no
// new claims, running actions cancelled) and a new epoch starts:
// PostgreSQL, not this process's memory, says who may drive an account.
// A renewal moves the local bound to the start of the statement plus the
// lease, minus the margin; without one the bound stays, and every lease
// is dropped when it passes (table.expire).
func (k *keeper) renew(ctx context.Context) {
	k.renewProcess(ctx)
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

// renewProcess renews the process lease, or starts one when the process
// has none (first round, or lost), and checks that the account leases it
// holds are those the database has under it.
func (k *keeper) renewProcess(ctx context.Context) {
	start := time.Now()
	if k.proc.Epoch == 0 {
		var p persistence.ProcessLease
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
			var err error
			p, err = st.StartProcessLease(ctx, k.owner, k.lease)
			return err
		})
		k.recordRenewal(start, err)
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Error("start process lease", slog.Any("error", err))
			}
			return
		}
		k.proc = p
		k.t.mu.Lock()
		k.t.renewed(start)
		k.t.mu.Unlock()
		k.logger.Info("process lease started", slog.Int64("epoch", p.Epoch))
		return
	}
	var held int64
	err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
		var err error
		held, err = st.RenewProcessLease(ctx, k.proc, k.lease)
		return err
	})
	if errors.Is(err, persistence.ErrLeaseLost) {
		k.lost()
		k.renewProcess(ctx)
		return
	}
	k.recordRenewal(start, err)
	if err != nil {
		if ctx.Err() == nil {
			k.logger.Error("renew process lease", slog.Int64("epoch", k.proc.Epoch), slog.Any("error", err))
		}
		return
	}
	k.t.mu.Lock()
	k.t.renewed(start)
	n := len(k.t.leases)
	k.t.mu.Unlock()
	if held != int64(n) {
		k.reconcile(ctx, start)
	}
}

// lost drops every lease: the process lease was not renewed, so its
// accounts may be another process's now.
func (k *keeper) lost() {
	k.t.mu.Lock()
	n := k.t.dropAll(lostRenewal)
	k.t.mu.Unlock()
	k.logger.Warn("process lease lost; its accounts are no longer driven here", slog.Int64("epoch", k.proc.Epoch), slog.Int("accounts", n))
	k.proc = persistence.ProcessLease{}
}

// reconcile makes the leases held match those the database has under the
// process lease, when their numbers differ: a lease missing there was lost
// (taken by hand, or its account deleted) and its account stops; one there
// and not here (a release that failed, or leases dropped with a local
// bound that passed while the process lease held) is held again when its
// account is wanted, or released. Renewed at start, the process lease held
// them all when they were read.
func (k *keeper) reconcile(ctx context.Context, start time.Time) {
	var there []persistence.Lease
	err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
		var err error
		there, err = st.LeasesOf(ctx, k.proc)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			k.logger.Warn("read the account leases held", slog.Any("error", err))
		}
		return
	}
	byID := make(map[string]persistence.Lease, len(there))
	for _, l := range there {
		byID[l.AccountID] = l
	}
	var release []persistence.Lease
	t := k.t
	t.mu.Lock()
	for id, l := range t.leases {
		if byID[id] == l {
			continue
		}
		t.dropLease(id)
		t.metrics.leaseLost(lostRenewal)
		k.signals.LeaseLost.Send(leaseLoss{id, lostRenewal})
		k.logger.Warn("account lease lost; the account is no longer driven here", slog.String("account_id", id), slog.Int64("epoch", l.Epoch))
	}
	for id, l := range byID {
		if _, ok := t.leases[id]; ok {
			continue
		}
		if t.want[id] && t.proc != nil && t.proc.valid() {
			t.leases[id] = l
		} else if _, busy := t.accounts[id]; !busy {
			release = append(release, l)
		}
	}
	t.mu.Unlock()
	k.releaseLeases(ctx, release)
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

// releaseLeases gives leases back, a chunk at a time (as take); one that
// fails stays held in the database under the process lease, and the next
// renewal, counting it, releases it again (reconcile).
func (k *keeper) releaseLeases(ctx context.Context, release []persistence.Lease) {
	// In account order, chunk after chunk, as takes lock them.
	slices.SortFunc(release, func(a, b persistence.Lease) int { return strings.Compare(a.AccountID, b.AccountID) })
	released := 0
	for chunk := range slices.Chunk(release, takeChunk) {
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error { return st.ReleaseLeases(ctx, chunk) })
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Warn("release account leases", slog.Int("accounts", len(release)-released), slog.Any("error", err))
			}
			break
		}
		released += len(chunk)
	}
	if released > 0 {
		k.logger.Info("released account leases", slog.Int("accounts", released))
		k.signals.LeasesReleased.Send(release[:released])
	}
}

// takeChunk is how many account leases one statement takes: 100,000 in
// one statement would outlast the keeper's timeout (a quarter of the
// lease) and hold their rows locked all along; each chunk is its own
// transaction within its own timeout, and renews the process lease.
const takeChunk = 2000

// take takes the leases it can of missing, under the process lease, a
// chunk at a time, for up to one SweepEvery: the rest waits for the next
// round, which starts at once while takes succeed, so the claims in
// flight are renewed every SweepEvery however many accounts arrive
// together.
func (k *keeper) take(ctx context.Context, missing []string) {
	slices.Sort(missing) // in account order, as releases lock them
	tried, taken := 0, 0
	var took []persistence.Lease
	until := time.Now().Add(k.every)
	for chunk := range slices.Chunk(missing, takeChunk) {
		if k.proc.Epoch == 0 || ctx.Err() != nil {
			break
		}
		if time.Now().After(until) {
			if taken > 0 {
				signal(k.kick) // progress: go on at once, else at the next tick
			}
			break
		}
		start := time.Now()
		var got []persistence.Lease
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
			var err error
			got, err = st.TakeLeases(ctx, k.proc, chunk, k.lease)
			return err
		})
		if errors.Is(err, persistence.ErrLeaseLost) {
			k.lost()
			break
		}
		if err != nil {
			if ctx.Err() == nil {
				k.logger.Error("take account leases", slog.Int("accounts", len(chunk)), slog.Any("error", err))
			}
			break
		}
		t := k.t
		t.mu.Lock()
		t.renewed(start)
		for _, l := range got {
			t.leases[l.AccountID] = l
		}
		t.mu.Unlock()
		tried += len(chunk)
		taken += len(got)
		took = append(took, got...)
	}
	if taken > 0 {
		k.logger.Info("took account leases", slog.Int("accounts", taken), slog.Int64("epoch", k.proc.Epoch))
		k.signals.LeasesTaken.Send(took)
	}
	if n := tried - taken; n > 0 {
		k.logger.Debug("account leases held elsewhere; waiting for their release", slog.Int("accounts", n))
	}
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

	k.releaseLeases(ctx, release)
	k.take(ctx, missing)

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
