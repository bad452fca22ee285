package wimthread

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/wimro/wimro/persistence"
)

// table is what the keeper, the claimer, the completer and the monitors
// share about the accounts: which ones the process should own, the leases
// it holds with their local bounds, the accounts it drives and the links
// with an action in flight. One mutex guards it all (and the inflight,
// running and stopping fields of each account).
type table struct {
	lease   time.Duration
	logger  *slog.Logger
	metrics *Metrics

	mu     sync.Mutex
	want   map[string]bool
	leases map[string]persistence.Lease
	// bounds are the local validity bounds of the leases held (fence.go):
	// a lease past its bound is dropped, its account stopped.
	bounds map[string]*leaseBound
	// base is the monotonic origin of the bounds.
	base time.Time
	// accounts are the accounts driven, and those stopping (no new claims)
	// until their actions in flight are written.
	accounts map[string]*account
	busy     map[string]bool // links with an action in flight
	foreign  map[string]bool // claimed under a lease not known here; skipped until the next apply
	// ctx is the parent of the accounts' contexts, from open to close.
	ctx    context.Context
	cancel context.CancelFunc

	signals *testSignals
}

func newTable(lease time.Duration, logger *slog.Logger, metrics *Metrics) *table {
	t := &table{
		lease: lease, logger: logger, metrics: metrics,
		want:     map[string]bool{},
		leases:   map[string]persistence.Lease{},
		bounds:   map[string]*leaseBound{},
		base:     time.Now(),
		accounts: map[string]*account{},
		busy:     map[string]bool{},
		foreign:  map[string]bool{},
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.cancel() // closed until open
	return t
}

// open lets accounts be driven again, their contexts children of ctx's
// values (not its cancellation: close ends them).
func (t *table) open(ctx context.Context) {
	t.mu.Lock()
	t.ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
	t.mu.Unlock()
}

// close stops every account (no new claims, running actions cancelled)
// and drives no new one.
func (t *table) close() {
	t.mu.Lock()
	t.cancel()
	for _, a := range t.accounts {
		a.stop()
	}
	t.mu.Unlock()
}

// closed reports whether close was called since the last open. Call with
// t.mu held.
func (t *table) closed() bool { return t.ctx.Err() != nil }

// clear forgets the leases and the accounts once they are released.
func (t *table) clear() []persistence.Lease {
	t.mu.Lock()
	defer t.mu.Unlock()
	leases := make([]persistence.Lease, 0, len(t.leases))
	for _, l := range t.leases {
		leases = append(leases, l)
	}
	clear(t.leases)
	for _, b := range t.bounds {
		b.timer.Stop()
	}
	clear(t.bounds)
	clear(t.accounts)
	clear(t.busy)
	clear(t.foreign)
	return leases
}

func (t *table) setWant(ids []string) {
	t.mu.Lock()
	t.want = make(map[string]bool, len(ids))
	for _, id := range ids {
		t.want[id] = true
	}
	t.mu.Unlock()
}

// driven returns the accounts driven and within their lease's bound.
func (t *table) driven() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, 0, len(t.accounts))
	for id, a := range t.accounts {
		if !a.stopping && a.bound.valid() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// owned returns the accounts whose lease is held within its bound.
func (t *table) owned() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := make([]string, 0, len(t.leases))
	for id := range t.leases {
		if b := t.bounds[id]; b != nil && b.valid() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// active returns the account id when it is driven and not stopping.
func (t *table) active(id string) *account {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.accounts[id]
	if a != nil && a.stopping {
		return nil
	}
	return a
}

// dropLease forgets the lease of account id and stops driving it. Call
// with t.mu held.
func (t *table) dropLease(id string) {
	delete(t.leases, id)
	if b := t.bounds[id]; b != nil {
		b.timer.Stop()
		delete(t.bounds, id)
	}
	if a := t.accounts[id]; a != nil {
		a.stop()
		if a.inflight == 0 {
			delete(t.accounts, id)
		}
	}
}

// holdLease records lease l, taken or renewed by a statement sent at
// start, with its local bound. Call with t.mu held.
func (t *table) holdLease(l persistence.Lease, start time.Time) {
	id := l.AccountID
	if old := t.bounds[id]; old != nil {
		old.timer.Stop()
	}
	t.leases[id] = l
	b := newLeaseBound(t.base, start, t.lease)
	b.timer = time.AfterFunc(b.left(), func() { t.expire(id, b) })
	t.bounds[id] = b
}

// expire drops a lease whose local bound passed without a renewal: this
// process can no longer prove it holds it (the database may be away, or
// the process was paused), so it stops the account now (no new claims,
// its running actions cancelled and written back as interrupted) and
// stops reporting it as owned. The keeper's next round takes the lease
// again if it can (under the same epoch if it is still its own). Its
// actions' controller calls check the same bound (actionFence), so none
// is sent past it even before this runs.
func (t *table) expire(id string, b *leaseBound) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bounds[id] != b || b.valid() {
		return // renewed, or dropped already
	}
	l := t.leases[id]
	t.dropLease(id)
	t.metrics.leaseLost(lostLocalBound)
	t.signals.LeaseLost.Send(leaseLoss{id, lostLocalBound})
	t.logger.Warn("account lease not renewed within its local bound; the account is no longer driven here",
		slog.String("account_id", id), slog.Int64("epoch", l.Epoch), slog.Duration("bound", b.ttl))
}

// newAccount starts driving the account of lease l. Call with t.mu held
// (a test told of it finds it in the table).
func (t *table) newAccount(l persistence.Lease) *account {
	ctx, cancel := context.WithCancel(t.ctx)
	t.signals.AccountDriven.Send(l.AccountID)
	return &account{id: l.AccountID, lease: l, bound: t.bounds[l.AccountID], ctx: ctx, cancel: cancel,
		log: t.logger.With(slog.String("account_id", l.AccountID)), signals: t.signals}
}

// settle forgets the actions whose outcome is written (or given up):
// their slots and links are free. It reports whether a stopping account
// has nothing left in flight, so its lease may go.
func (t *table) settle(batch []outcome) (drained bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, o := range batch {
		o.acct.inflight--
		delete(t.busy, o.Action.ItemID)
		if o.acct.stopping && o.acct.inflight == 0 {
			drained = true
		}
	}
	return drained
}

// signal wakes the goroutine waiting on c, if it is not awake already.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}
