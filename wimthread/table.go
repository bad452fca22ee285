package wimthread

import (
	"context"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wimro/wimro/persistence"
)

// table is what the keeper, the claimer, the completer and the monitors
// share about the accounts: which ones the process should own, the leases
// it holds and the local bound of the process lease they hang from, the
// accounts it drives and the links with an action in flight. One mutex guards it all (and the inflight,
// running and stopping fields of each account).
type table struct {
	lease   time.Duration
	logger  *slog.Logger
	metrics *Metrics

	mu     sync.Mutex
	want   map[string]bool
	leases map[string]persistence.Lease
	// proc is the local validity bound of the process lease (fence.go),
	// which every lease held hangs from: once it passes, every lease is
	// dropped and every account stopped. nil while the process holds no
	// valid process lease; a bound that passed is never revived (accounts
	// stopped under it keep it), the next renewal starts another.
	proc *leaseBound
	// cur is proc, for the keeper's renewer to extend without mu
	// (table.extend); written with proc.
	cur atomic.Pointer[leaseBound]
	// procLease is the process lease the leases are held under; a zero
	// Epoch: none yet, or lost. Only the keeper's renewer changes it.
	procLease persistence.ProcessLease
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
	t.retire()
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

// waiting reports whether an account is wanted whose lease is not held.
func (t *table) waiting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.want {
		if _, ok := t.leases[id]; !ok {
			return true
		}
	}
	return false
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
	if !t.boundHolds() {
		return ids
	}
	for id := range t.leases {
		ids = append(ids, id)
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
	if a := t.accounts[id]; a != nil {
		a.stop()
		if a.inflight == 0 {
			delete(t.accounts, id)
		}
	}
}

// renewed moves the bound of the process lease to start (the statement
// that renewed it was sent then), or starts a new bound when there is
// none or it passed. Call with t.mu held.
func (t *table) renewed(start time.Time) {
	if b := t.proc; b != nil {
		if b.extend(start) {
			b.timer.Reset(b.left())
			return
		}
		t.lapse(b) // passed before its timer ran: dropped as if it had
	}
	b := newLeaseBound(t.base, start, t.lease)
	b.timer = time.AfterFunc(b.left(), func() { t.expire(b) })
	t.proc = b
	t.cur.Store(b)
}

// extend is renewed for the keeper's renewer: a bound that holds moves
// without t.mu, so no part holding the mutex (the keeper's rounds
// starting thousands of accounts, a claim) delays a renewal's effect;
// only a bound that passed, or none, takes the mutex (then no lease is
// held, and nothing is at stake in the wait). The bound's timer is not
// reset here: when it fires early, expire re-arms it.
func (t *table) extend(start time.Time) {
	if b := t.cur.Load(); b != nil && b.extend(start) {
		return
	}
	t.mu.Lock()
	t.renewed(start)
	t.mu.Unlock()
}

// boundHolds reports whether the process lease's bound holds. Call with
// t.mu held.
func (t *table) boundHolds() bool { return t.proc != nil && t.proc.valid() }

// retire forgets the bound of the process lease, which never holds
// again. Call with t.mu held.
func (t *table) retire() {
	if t.proc != nil {
		t.proc.timer.Stop()
		t.proc.retire()
		t.proc = nil
		t.cur.Store(nil)
	}
}

// dropAll drops every lease (see dropLease), counting each lost for
// reason, and retires the process lease's bound. It returns how many it
// dropped. Call with t.mu held.
func (t *table) dropAll(reason string) int {
	n := len(t.leases)
	for id := range t.leases {
		t.dropLease(id)
		t.metrics.leaseLost(reason)
		t.signals.LeaseLost.Send(leaseLoss{id, reason})
	}
	t.retire()
	return n
}

// expire drops the leases when the process lease's bound b passed without
// a renewal: this process can no longer prove it holds them (the database
// may be away, or the process was paused), so it stops every account now
// (no new claims, its running actions cancelled and written back as
// interrupted) and stops reporting them as owned. The keeper's next round
// renews the process lease if it can (under the same epoch if it is still
// valid) and holds the leases again. Actions' controller calls check the
// same bound (actionFence), so none is sent past it even before this
// runs.
func (t *table) expire(b *leaseBound) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.proc != b {
		return // retired already
	}
	if b.valid() {
		b.timer.Reset(b.left()) // moved by a renewal without t.mu (extend)
		return
	}
	t.lapse(b)
}

// lapse drops every lease: the process lease's bound b passed. Call with
// t.mu held.
func (t *table) lapse(b *leaseBound) {
	n := t.dropAll(lostLocalBound)
	t.logger.Warn("process lease not renewed within its local bound; no account is driven here until it is",
		slog.Int("accounts", n), slog.Duration("bound", b.ttl))
}

// newAccount starts driving the account of lease l. Call with t.mu held
// (a test told of it finds it in the table).
func (t *table) newAccount(l persistence.Lease) *account {
	ctx, cancel := context.WithCancel(t.ctx)
	t.signals.AccountDriven.Send(l.AccountID)
	return &account{id: l.AccountID, lease: l, bound: t.proc, ctx: ctx, cancel: cancel,
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
