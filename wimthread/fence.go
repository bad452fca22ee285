package wimthread

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wimro/wimro/connectors"
)

// ErrFenced is why a controller call was not made: the process can no
// longer prove it holds the account's lease or the action's claim (see
// doc.go, "What a lease guarantees"). The action comes back "interrupted".
var ErrFenced = errors.New("lease or claim past its local validity bound; nothing sent")

// boundMargin is what the local validity bound of a lease or a claim
// keeps short of the lease the database gave: the time between a check
// and the request reaching the controller, and the drift between this
// machine's clock and the database's over one lease.
func boundMargin(lease time.Duration) time.Duration { return lease / 5 }

// leaseBound is the local validity bound of the process lease, and so of
// every account lease held under it: until when this process may act on
// them without hearing from the database again. It is measured on the
// monotonic clock from the start of the statement that last renewed the
// process lease (the database set expires_at = now() + Lease after that
// start), minus boundMargin.
type leaseBound struct {
	base  time.Time     // monotonic origin of until
	until atomic.Int64  // nanoseconds after base
	ttl   time.Duration // the lease minus the margin
	// timer stops the accounts when the bound passes (table.expire);
	// reset by each renewal, under table.mu.
	timer *time.Timer
}

func newLeaseBound(base, start time.Time, lease time.Duration) *leaseBound {
	b := &leaseBound{base: base, ttl: lease - boundMargin(lease)}
	b.until.Store(int64(start.Sub(base) + b.ttl))
	return b
}

// deadBound is the until of a retired bound: it never holds again.
const deadBound = math.MinInt64

// extend moves the bound to start + the lease minus the margin, start
// being when the renewal that succeeded was sent, and reports true; it
// never moves it back. It reports false, moving nothing, once the bound
// passed or was retired: the accounts stopped under it stay stopped, and
// the caller starts another bound (table.renewed). Lock-free, so the
// keeper's renewer never waits for the table's mutex to move a bound that
// holds.
func (b *leaseBound) extend(start time.Time) bool {
	u := int64(start.Sub(b.base) + b.ttl)
	for {
		old := b.until.Load()
		if old == deadBound || time.Duration(old) <= time.Since(b.base) {
			return false
		}
		if u <= old || b.until.CompareAndSwap(old, u) {
			return true
		}
	}
}

// retire ends the bound for good (its leases were dropped).
func (b *leaseBound) retire() { b.until.Store(deadBound) }

// left is how long the bound still holds (<= 0: passed).
func (b *leaseBound) left() time.Duration {
	u := b.until.Load()
	if u == deadBound {
		return -1
	}
	return time.Duration(u) - time.Since(b.base)
}

func (b *leaseBound) valid() bool { return b.left() > 0 }

// claimRenewal remembers the last claim renewal round that succeeded: a
// claim recorded before its snapshot was renewed by it.
type claimRenewal struct {
	mu              sync.Mutex
	start, snapshot time.Time
}

func (c *claimRenewal) renewed(start, snapshot time.Time) {
	c.mu.Lock()
	c.start, c.snapshot = start, snapshot
	c.mu.Unlock()
}

// since returns when the last statement that took or renewed a claim
// began: claimed (its claim statement) or the last renewal round that
// included it (it was recorded at recorded).
func (c *claimRenewal) since(claimed, recorded time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.snapshot.IsZero() && recorded.Before(c.snapshot) && c.start.After(claimed) {
		return c.start
	}
	return claimed
}

// actionFence is what an action's controller calls check right before
// they change the controller (connectors.WithFence): the account's lease
// and the action's claim both within their local bound.
type actionFence struct {
	t                 *table
	renewal           *claimRenewal
	lease             time.Duration
	a                 *account
	claimed, recorded time.Time
	cancel            context.CancelCauseFunc
}

// check returns nil while the lease and the claim hold. Otherwise it
// cancels the action (so it comes back "interrupted", never failed), stops
// the account when the lease is the one past its bound, and returns
// ErrFenced.
func (f *actionFence) check() error {
	var err error
	switch {
	case !f.a.bound.valid():
		err = fmt.Errorf("account lease (epoch %d): %w", f.a.lease.Epoch, ErrFenced)
		f.t.expire(f.a.bound)
	case time.Since(f.renewal.since(f.claimed, f.recorded)) >= f.lease-boundMargin(f.lease):
		err = fmt.Errorf("action claim: %w", ErrFenced)
	default:
		return nil
	}
	f.cancel(err)
	return err
}

// fenced is the account's connector with its fence checked right before
// every call that changes the controller (the rest client checks again
// as each request's first byte is written).
type fenced struct{ connectors.Connector }

func (c fenced) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if err := connectors.Fence(ctx); err != nil {
		return "", nil, connectors.Errorf(connectors.KindRetryable, "create: %w", err)
	}
	return c.Connector.CreateService(ctx, req)
}

func (c fenced) EditService(ctx context.Context, id string, connInfo map[string]any, req connectors.Request) (map[string]any, error) {
	if err := connectors.Fence(ctx); err != nil {
		return nil, connectors.Errorf(connectors.KindRetryable, "edit: %w", err)
	}
	return c.Connector.EditService(ctx, id, connInfo, req)
}

func (c fenced) DeleteService(ctx context.Context, id string, connInfo map[string]any) error {
	if err := connectors.Fence(ctx); err != nil {
		return connectors.Errorf(connectors.KindRetryable, "delete: %w", err)
	}
	return c.Connector.DeleteService(ctx, id, connInfo)
}

func (c fenced) ClearAll(ctx context.Context) error {
	if err := connectors.Fence(ctx); err != nil {
		return connectors.Errorf(connectors.KindRetryable, "clear: %w", err)
	}
	return c.Connector.ClearAll(ctx)
}
