package wimthread

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/internal/startstop"
	"github.com/wimro/wimro/persistence"
)

// maxClaim caps the actions one claim statement takes, so one round trip
// stays short however many accounts have work: none of the actions a claim
// takes starts before the whole claim is read (500 took 110 ms at start-up
// on the benchmark machine; 200 start work sooner at the same cost per
// action: latency-bound at scale 0.95-0.98 s -> 0.91-0.94 s).
const maxClaim = 200

// claimGap is the least time from one claim statement to the next: the
// actions that finish meanwhile free their slots together and are refilled
// by one claim, instead of a claim each (River's producer has a fetch
// cooldown for the same reason). It adds at most claimGap to an action's
// wait in the queue.
const claimGap = 2 * time.Millisecond

// claimer claims the work of the process: one goroutine that claims due
// actions of every account the process drives in one statement
// (persistence.ClaimDue), then a goroutine per claimed action, whose
// outcome goes to the completer.
type claimer struct {
	db       *persistence.DB
	logger   *slog.Logger
	owner    string
	lease    time.Duration
	parallel int
	metrics  *Metrics
	runner   *actions.Runner
	t        *table
	claims   *claims
	targets  *targets
	// renewal is the keeper's last claim renewal, for the fence.
	renewal *claimRenewal
	// wake asks for a claim now: a notification, a freed slot, the poll.
	wake chan struct{}
	svc  startstop.Service

	// out is the completer's input, from start until every action ended.
	out chan<- outcome
	// running are the actions running; pending those claimed whose
	// outcome is not yet handed to the completer (the completer lingers
	// for more while some are).
	running sync.WaitGroup
	pending atomic.Int64

	signals *testSignals
}

func (c *claimer) start(ctx context.Context, out chan<- outcome) error {
	c.out = out
	return c.svc.Start(ctx, c.run)
}

// run is the one goroutine of the process that claims work: one
// statement (persistence.ClaimDue) across every owned account, then a
// goroutine per claimed action. It sleeps until woken (a notification, a
// freed slot, the poll) or the next queued action is due.
func (c *claimer) run(ctx context.Context) {
	conn := c.db.Pin()
	defer conn.Release()
	backoff := time.Second
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	gap := time.NewTimer(time.Hour)
	defer gap.Stop()
	var last time.Time
	for {
		if d := claimGap - time.Since(last); d > 0 {
			gap.Reset(d)
			select {
			case <-ctx.Done():
				return
			case <-gap.C:
			}
		}
		last = time.Now()
		wait, err := c.claimOnce(ctx, conn)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.logger.Error("claim actions", slog.Any("error", err))
			wait, backoff = backoff, min(backoff*2, time.Minute)
		default:
			backoff = time.Second
		}
		if wait < 0 {
			continue // the claim was full: there may be more
		}
		var timeout <-chan time.Time
		if wait > 0 {
			timer.Reset(wait)
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-timeout:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// claimOnce claims what the free slots allow, on the claimer's own
// connection, and starts it. It returns how long to sleep: 0 until woken,
// < 0 to claim again at once.
func (c *claimer) claimOnce(ctx context.Context, conn *persistence.Pinned) (time.Duration, error) {
	t := c.t
	t.mu.Lock()
	free := map[string]int{}
	slots := 0
	for id, a := range t.accounts {
		n := c.parallel - a.running
		if a.stopping || !a.bound.valid() {
			n = 0
		}
		if n != c.parallel {
			free[id] = max(n, 0)
		}
		slots += max(n, 0)
	}
	// Leases held but not driven (waiting for release or for the previous
	// run of the account to drain), and accounts found under a lease this
	// process does not know: nothing to claim.
	for id := range t.leases {
		if _, ok := t.accounts[id]; !ok {
			free[id] = 0
		}
	}
	for id := range t.foreign {
		free[id] = 0
	}
	busy := make([]string, 0, len(t.busy))
	for id := range t.busy {
		busy = append(busy, id)
	}
	t.mu.Unlock()
	if slots == 0 {
		return 0, nil
	}
	limit := min(slots, maxClaim)
	var res persistence.ClaimResult
	// Not cancelled by Stop: a claim statement cut short by a cancel may
	// still commit, and its claims would be held but in no record. Claimed
	// after Stop, an action runs with its context cancelled and is written
	// back at once as interrupted.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(c.lease, 30*time.Second))
	defer cancel()
	at := claimTimes{claimed: time.Now()}
	err := c.claims.claim(func() ([]persistence.ClaimKey, error) {
		err := conn.Do(ctx, func(st *persistence.Store) error {
			var err error
			res, err = st.ClaimDue(ctx, persistence.ClaimRequest{
				Owner: c.owner, Claim: c.claims.name(c.owner), TTL: c.lease,
				Parallel: c.parallel, Free: free, BusyLinks: busy, Limit: limit,
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		keys := make([]persistence.ClaimKey, len(res.Claimed))
		for i, cl := range res.Claimed {
			keys[i] = persistence.KeyOf(cl.Action)
		}
		return keys, nil
	})
	if err != nil {
		return 0, err
	}
	at.recorded = time.Now()
	c.metrics.claimTook(len(res.Claimed))
	c.signals.Claimed.Send(len(res.Claimed))
	c.targets.buildTargets(ctx, c.accountsOf(res.Claimed))
	var stray []persistence.ClaimKey
	t.mu.Lock()
	for _, cl := range res.Claimed {
		id := deref(cl.Action.WIMAccountID)
		a := t.accounts[id]
		if a == nil || a.stopping || a.lease.Epoch != cl.Epoch {
			// Claimed under a lease this process does not drive (yet, or
			// any more): give it back at once, and claim nothing more of
			// that account until the leases change.
			stray = append(stray, persistence.KeyOf(cl.Action))
			t.foreign[id] = true
			continue
		}
		a.inflight++
		a.running++
		c.pending.Add(1)
		t.busy[cl.Action.ItemID] = true
		c.running.Add(1)
		go c.runAction(a, cl, at)
	}
	t.mu.Unlock()
	if len(stray) > 0 {
		c.releaseStray(ctx, stray)
	}
	if len(res.Claimed) >= limit {
		return -1, nil
	}
	if res.NextDue != nil {
		return max(time.Until(*res.NextDue), 10*time.Millisecond), nil
	}
	return 0, nil
}

// claimTimes are when the claim statement of an action began and when
// its claims were recorded (for the claim's local bound, fence.go).
type claimTimes struct{ claimed, recorded time.Time }

// accountsOf returns the driven accounts of the claimed actions, once each.
func (c *claimer) accountsOf(claimed []persistence.Claimed) []*account {
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	seen := map[*account]bool{}
	var list []*account
	for _, cl := range claimed {
		a := c.t.accounts[deref(cl.Action.WIMAccountID)]
		if a != nil && !a.stopping && !seen[a] {
			seen[a] = true
			list = append(list, a)
		}
	}
	return list
}

// releaseStray returns claims taken under an unknown lease to the queue;
// if that fails they are given up (released by the sweep, or expiring).
func (c *claimer) releaseStray(ctx context.Context, keys []persistence.ClaimKey) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if _, err := c.db.ReleaseClaimsOf(ctx, keys); err != nil {
		for _, k := range keys {
			c.claims.giveUp(k)
		}
		c.logger.Warn("release actions claimed under an unknown account lease", slog.Int("actions", len(keys)), slog.Any("error", err))
		return
	}
	for _, k := range keys {
		c.claims.done(k)
	}
	c.logger.Debug("released actions claimed under an account lease this process does not drive", slog.Int("actions", len(keys)))
}

// runAction runs one claimed action and hands its outcome to the
// completer. The runner turns a panic into a FAILED outcome, so a broken
// connector fails its action and the process goes on.
func (c *claimer) runAction(a *account, cl persistence.Claimed, at claimTimes) {
	defer c.running.Done()
	// The action's calls that change the controller are fenced by its
	// lease and claim (fence.go); a failed check cancels ctx, so the
	// action comes back interrupted.
	actx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	f := &actionFence{t: c.t, renewal: c.renewal, lease: c.lease, a: a, claimed: at.claimed, recorded: at.recorded, cancel: cancel}
	ctx := connectors.WithFence(actx, f.check)
	var o wimro.Outcome
	t, err := c.targets.connector(a)
	if err != nil {
		// The account or its WIM could not be read: the action keeps its
		// status and runs again after a back-off.
		if a.ctx.Err() == nil {
			a.log.Error("build connector", slog.Any("error", err))
		}
		o = c.runner.Postponed(cl.Action, err)
	} else {
		o = c.runner.RunLoaded(ctx, t, cl.Action, &actions.Loaded{Link: cl.Link, Nets: cl.Nets, Datacenters: cl.Datacenters})
	}
	// The controller is done with this link: its slot goes to another
	// link while the outcome waits for the completer (the link itself
	// stays busy until the outcome is written).
	c.t.mu.Lock()
	a.running--
	c.t.mu.Unlock()
	c.pending.Add(-1)
	signal(c.wake)
	c.signals.ActionRan.Send(cl.Action.ItemID)
	c.out <- outcome{Finished: persistence.Finished{Action: cl.Action, Outcome: o, Lease: a.lease}, acct: a}
}
