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

// keeper holds the leases and the claims of the process, on two paths
// that never wait for each other:
//
//   - the renewer (renewLoop): every SweepEvery it renews the process
//     lease (one row, nothing else read) and the claims in flight, on a
//     connection of its own outside the pool, and moves the local bound.
//     Nothing else runs there: no take, release, reconcile or account
//     start can delay a renewal (issue 31: a member handing 16,000
//     accounts over released them all in one round while nothing renewed,
//     and lost every lease to its local bound).
//   - the rounds (run): every SweepEvery, or when kicked, on a second
//     connection of its own, it releases the claims given up, releases
//     the leases no longer wanted, takes the wanted ones under the
//     current process lease, starts and stops driving accounts to match
//     what the process should own (table.want), and checks the leases
//     held against the database (reconcile).
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
	// kick asks for a round now (ownership changed, a lease may go, a
	// process lease started).
	kick chan struct{}
	// renewNow asks the renewer for a renewal now (a take found the
	// process lease lost).
	renewNow chan struct{}
	// wakeClaim wakes the claimer (accounts newly driven, claims released).
	wakeClaim chan struct{}
	// svc runs the rounds, renewer the renewals.
	svc, renewer startstop.Service

	// conn is the rounds' connection, renewConn the renewer's, both
	// outside the pool: neither queues behind the pool's other users
	// (issue 30), nor the renewals behind the rounds (issue 31).
	conn, renewConn *persistence.Session
	// health is the outcome of the last renewal (LeaseHealth).
	health leaseHealth
	// proc is the renewer's own copy of table.procLease (only the renewer
	// changes it): a renewal reads it without table.mu.
	proc persistence.ProcessLease

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
	k.conn, k.renewConn = k.db.Session(), k.db.Session()
	// The renewer first: its first renewal starts the process lease the
	// rounds take under, and kicks them.
	if err := k.renewer.Start(ctx, k.renewLoop); err != nil {
		return err
	}
	return k.svc.Start(ctx, k.run)
}

// stopRenewals stops the renewer: the leases and claims expire unless
// released.
func (k *keeper) stopRenewals() { _ = k.renewer.Stop(context.Background()) }

// release ends the keeper's work after every outcome is written (the
// renewer renewed the claims and the leases until then): every claim of
// the owner, including any given up while the database was away, goes
// back to the queue, and the leases are released.
func (k *keeper) release(ctx context.Context) error {
	k.stopRenewals()
	k.conn.Close(ctx)
	k.renewConn.Close(ctx)
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
	p := k.proc
	k.proc = persistence.ProcessLease{}
	k.t.mu.Lock()
	k.t.procLease = persistence.ProcessLease{}
	k.t.mu.Unlock()
	if p.Epoch != 0 {
		if err := k.db.EndProcessLease(ctx, p); err != nil {
			return fmt.Errorf("wimthread: end process lease: %w", err)
		}
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

// renewLoop renews the process lease and the claims in flight every
// SweepEvery (or at once when a take found the lease lost). Each
// statement runs on the renewer's own connection within timeout, and
// nothing else runs on this path, so a renewal is never later than
// SweepEvery plus the timeouts of the two statements before it, whatever
// the rounds, the pool, the controllers or the database do.
func (k *keeper) renewLoop(ctx context.Context) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		k.renew(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.renewNow:
		}
	}
}

// run is the rounds: every SweepEvery (or when kicked) it releases the
// claims given up after a failed outcome write, releases and takes
// account leases and starts and stops driving accounts to match
// table.want (apply), then checks the leases held against the database
// (check). Every statement runs on the rounds' own connection and within
// timeout. The rounds renew nothing: however long they take, the
// renewer keeps the leases (renewLoop).
func (k *keeper) run(ctx context.Context) {
	t := time.NewTicker(k.every)
	defer t.Stop()
	for {
		k.releaseGivenUp(ctx)
		k.apply(ctx)
		k.check(ctx)
		k.signals.KeeperRound.Send(struct{}{})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-k.kick:
		}
	}
}

// timeout bounds each statement of the keeper: two of them (renew the
// process lease, renew the claims) fit in half a lease, so a renewal
// that times out leaves time for another within the local bound.
func (k *keeper) timeout() time.Duration { return k.lease / 4 }

// do runs fn on the rounds' connection, within timeout.
func (k *keeper) do(ctx context.Context, fn func(ctx context.Context, st *persistence.Store) error) error {
	return within(ctx, k.conn, k.timeout(), fn)
}

// doRenew runs fn on the renewer's connection, within timeout.
func (k *keeper) doRenew(ctx context.Context, fn func(ctx context.Context, st *persistence.Store) error) error {
	return within(ctx, k.renewConn, k.timeout(), fn)
}

func within(ctx context.Context, conn *persistence.Session, timeout time.Duration, fn func(ctx context.Context, st *persistence.Store) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return conn.Do(ctx, func(st *persistence.Store) error { return fn(ctx, st) })
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
		err := k.doRenew(ctx, func(ctx context.Context, st *persistence.Store) error {
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
// has none (first renewal, or lost). Only the renewer changes
// table.procLease, and it keeps a copy (k.proc): a renewal takes
// table.mu only when the epoch changes or the bound had passed, when no
// lease is held. The other parts hold table.mu over loops of every
// account (the claimer builds its claim from them): at 100,000 accounts
// on a loaded machine, waiting for it is what a renewal must not do.
func (k *keeper) renewProcess(ctx context.Context) {
	start := time.Now()
	p := k.proc
	if p.Epoch == 0 {
		err := k.doRenew(ctx, func(ctx context.Context, st *persistence.Store) error {
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
		k.t.procLease = p
		k.t.renewed(start)
		k.t.mu.Unlock()
		k.logger.Info("process lease started", slog.Int64("epoch", p.Epoch))
		k.signals.ProcessLeaseRenewed.Send(p.Epoch)
		signal(k.kick) // take under it
		return
	}
	err := k.doRenew(ctx, func(ctx context.Context, st *persistence.Store) error {
		return st.RenewProcessLease(ctx, p, k.lease)
	})
	if errors.Is(err, persistence.ErrLeaseLost) {
		k.lost(p)
		k.renewProcess(ctx)
		return
	}
	k.recordRenewal(start, err)
	if err != nil {
		if ctx.Err() == nil {
			k.logger.Error("renew process lease", slog.Int64("epoch", p.Epoch), slog.Any("error", err))
		}
		return
	}
	if b := k.t.cur.Load(); b == nil || !b.valid() {
		// The bound had passed (its leases were dropped): the rounds
		// hold them again once the new bound below holds (reconcile).
		defer signal(k.kick)
	}
	k.t.extend(start)
	k.signals.ProcessLeaseRenewed.Send(p.Epoch)
}

// lost drops every lease: the process lease p was not renewed, so its
// accounts may be another process's now. A take under p that commits
// later adds nothing (the rounds check the epoch under t.mu).
func (k *keeper) lost(p persistence.ProcessLease) {
	k.proc = persistence.ProcessLease{}
	k.t.mu.Lock()
	n := k.t.dropAll(lostRenewal)
	k.t.procLease = persistence.ProcessLease{}
	k.t.mu.Unlock()
	k.logger.Warn("process lease lost; its accounts are no longer driven here", slog.Int64("epoch", p.Epoch), slog.Int("accounts", n))
}

// current returns the process lease the leases are held under (a zero
// Epoch: none).
func (k *keeper) current() persistence.ProcessLease {
	k.t.mu.Lock()
	defer k.t.mu.Unlock()
	return k.t.procLease
}

// check makes the leases held match those the database has under the
// process lease: it counts them there (an index-only read) and, when the
// numbers differ, reads which (reconcile). The rounds are the only path
// that takes and releases, so between their statements the two agree
// unless a lease was lost, dropped with a bound that passed, or a
// release failed.
func (k *keeper) check(ctx context.Context) {
	p := k.current()
	if p.Epoch == 0 {
		return
	}
	var held int64
	err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
		var err error
		held, err = st.CountLeasesOf(ctx, p)
		return err
	})
	if err != nil {
		if ctx.Err() == nil {
			k.logger.Warn("count the account leases held", slog.Any("error", err))
		}
		return
	}
	k.t.mu.Lock()
	n := len(k.t.leases)
	k.t.mu.Unlock()
	if held != int64(n) {
		k.reconcile(ctx, p)
	}
}

// reconcile makes the leases held match those the database has under the
// process lease p: a lease missing there was lost (taken by hand, or its
// account deleted) and its account stops; one there and not here (a
// release that failed, or leases dropped with a local bound that passed
// while the process lease held) is held again when its account is
// wanted, or released. Nothing changes unless p is still the process
// lease and its bound holds (renewed since the rows were read, p held
// them all when they were read): a bound that passed holds nothing, and
// its leases are held again once a renewal starts another bound.
func (k *keeper) reconcile(ctx context.Context, p persistence.ProcessLease) {
	var there []persistence.Lease
	err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
		var err error
		there, err = st.LeasesOf(ctx, p)
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
	if t.procLease != p || !t.boundHolds() {
		t.mu.Unlock()
		return
	}
	for id, l := range t.leases {
		if byID[id] == l {
			continue
		}
		t.dropLease(id)
		t.metrics.leaseLost(lostRenewal)
		k.signals.LeaseLost.Send(leaseLoss{id, lostRenewal})
		k.logger.Warn("account lease lost; the account is no longer driven here", slog.String("account_id", id), slog.Int64("epoch", l.Epoch))
	}
	held := false
	for id, l := range byID {
		if _, ok := t.leases[id]; ok {
			continue
		}
		if t.want[id] {
			t.leases[id] = l
			held = true
		} else if _, busy := t.accounts[id]; !busy {
			release = append(release, l)
		}
	}
	t.mu.Unlock()
	k.releaseLeases(ctx, release)
	if held {
		signal(k.kick) // drive them
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
// transaction within its own timeout.
const takeChunk = 2000

// take takes the leases it can of missing, under the process lease p, a
// chunk at a time, for up to one SweepEvery: the rest waits for the next
// round, which starts at once while takes succeed, so a round looks at
// table.want again at least every SweepEvery however many accounts
// arrive together. A take under p commits only while p is valid; a chunk
// whose leases come back after the renewer found p lost (and dropped
// every lease) is not held: its rows hang from a dead epoch, free to
// anyone.
func (k *keeper) take(ctx context.Context, p persistence.ProcessLease, missing []string) {
	slices.Sort(missing) // in account order, as releases lock them
	tried, taken := 0, 0
	var took []persistence.Lease
	until := time.Now().Add(k.every)
	for chunk := range slices.Chunk(missing, takeChunk) {
		if ctx.Err() != nil {
			break
		}
		if time.Now().After(until) {
			if taken > 0 {
				signal(k.kick) // progress: go on at once, else at the next tick
			}
			break
		}
		var got []persistence.Lease
		err := k.do(ctx, func(ctx context.Context, st *persistence.Store) error {
			var err error
			got, err = st.TakeLeases(ctx, p, chunk)
			return err
		})
		if errors.Is(err, persistence.ErrLeaseLost) {
			signal(k.renewNow) // the renewer finds it lost, and starts another
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
		current := t.procLease == p
		if current {
			for _, l := range got {
				t.leases[l.AccountID] = l
			}
		}
		t.mu.Unlock()
		if !current {
			break
		}
		tried += len(chunk)
		taken += len(got)
		took = append(took, got...)
	}
	if taken > 0 {
		k.logger.Info("took account leases", slog.Int("accounts", taken), slog.Int64("epoch", p.Epoch))
		k.signals.LeasesTaken.Send(took)
	}
	if n := tried - taken; n > 0 {
		k.logger.Debug("account leases held elsewhere; waiting for their release", slog.Int("accounts", n))
		k.signals.LeasesHeldElsewhere.Send(n)
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
	p := t.procLease
	if p.Epoch != 0 {
		for id := range t.want {
			if _, ok := t.leases[id]; !ok {
				missing = append(missing, id)
			}
		}
	}
	t.mu.Unlock()

	k.releaseLeases(ctx, release)
	k.take(ctx, p, missing)
	if k.drive(ctx) {
		signal(k.wakeClaim)
	}
}

// startChunk is how many accounts drive starts under one hold of t.mu:
// the claimer and the completer wait for the mutex meanwhile.
const startChunk = 1000

// drive starts driving the wanted accounts whose lease is held, while
// the process lease's bound holds, startChunk at a time. It reports
// whether it started any.
func (k *keeper) drive(ctx context.Context) bool {
	t := k.t
	t.mu.Lock()
	var start []string
	for id := range t.leases {
		if _, ok := t.accounts[id]; !ok && t.want[id] {
			start = append(start, id) // not driven, nor its previous run still writing
		}
	}
	t.mu.Unlock()
	started := false
	for chunk := range slices.Chunk(start, startChunk) {
		t.mu.Lock()
		for _, id := range chunk {
			if ctx.Err() != nil || t.closed() || !t.boundHolds() {
				break
			}
			l, held := t.leases[id]
			if _, ok := t.accounts[id]; ok || !held || !t.want[id] {
				continue // changed while t.mu was free
			}
			t.accounts[id] = t.newAccount(l)
			started = true
		}
		t.mu.Unlock()
	}
	return started
}
