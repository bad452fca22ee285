package wimthread

import (
	"context"
	"log/slog"
	"time"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
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

// claimer is the one goroutine of the process that claims work: one
// statement (persistence.ClaimDue) across every owned account, then a
// goroutine per claimed action. It sleeps until woken (a notification, a
// freed slot, the poll) or the next queued action is due.
func (s *Supervisor) claimer() {
	conn := s.db.Pin()
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
			case <-s.ctx.Done():
				return
			case <-gap.C:
			}
		}
		last = time.Now()
		wait, err := s.claimOnce(conn)
		switch {
		case s.ctx.Err() != nil:
			return
		case err != nil:
			s.logger.Error("claim actions", slog.Any("error", err))
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
		case <-s.ctx.Done():
			return
		case <-s.wakeClaim:
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
func (s *Supervisor) claimOnce(conn *persistence.Pinned) (time.Duration, error) {
	opts := s.opts
	s.mu.Lock()
	free := map[string]int{}
	slots := 0
	for id, a := range s.accounts {
		n := opts.Parallel - a.running
		if a.stopping || !a.bound.valid() {
			n = 0
		}
		if n != opts.Parallel {
			free[id] = max(n, 0)
		}
		slots += max(n, 0)
	}
	// Leases held but not driven (waiting for release or for the previous
	// run of the account to drain), and accounts found under a lease this
	// process does not know: nothing to claim.
	for id := range s.leases {
		if _, ok := s.accounts[id]; !ok {
			free[id] = 0
		}
	}
	for id := range s.foreign {
		free[id] = 0
	}
	busy := make([]string, 0, len(s.busy))
	for id := range s.busy {
		busy = append(busy, id)
	}
	s.mu.Unlock()
	if slots == 0 {
		return 0, nil
	}
	limit := min(slots, maxClaim)
	var res persistence.ClaimResult
	// Not cancelled by Stop: a claim statement cut short by a cancel may
	// still commit, and its claims would be held but in no record. Claimed
	// after Stop, an action runs with its context cancelled and is written
	// back at once as interrupted.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), min(opts.Lease, 30*time.Second))
	defer cancel()
	at := claimTimes{claimed: time.Now()}
	err := s.claims.claim(func() ([]persistence.ClaimKey, error) {
		err := conn.Do(ctx, func(st *persistence.Store) error {
			var err error
			res, err = st.ClaimDue(ctx, persistence.ClaimRequest{
				Owner: opts.Owner, Claim: s.claims.name(opts.Owner), TTL: opts.Lease,
				Parallel: opts.Parallel, Free: free, BusyLinks: busy, Limit: limit,
			})
			return err
		})
		if err != nil {
			return nil, err
		}
		keys := make([]persistence.ClaimKey, len(res.Claimed))
		for i, c := range res.Claimed {
			keys[i] = persistence.KeyOf(c.Action)
		}
		return keys, nil
	})
	if err != nil {
		return 0, err
	}
	at.recorded = time.Now()
	opts.Metrics.claimTook(len(res.Claimed))
	s.buildTargets(ctx, s.accountsOf(res.Claimed))
	var stray []persistence.ClaimKey
	s.mu.Lock()
	for _, c := range res.Claimed {
		id := deref(c.Action.WIMAccountID)
		a := s.accounts[id]
		if a == nil || a.stopping || a.lease.Epoch != c.Epoch {
			// Claimed under a lease this process does not drive (yet, or
			// any more): give it back at once, and claim nothing more of
			// that account until the leases change.
			stray = append(stray, persistence.KeyOf(c.Action))
			s.foreign[id] = true
			continue
		}
		a.inflight++
		a.running++
		s.runningN.Add(1)
		s.busy[c.Action.ItemID] = true
		s.running.Add(1)
		go s.runAction(a, c, at)
	}
	s.mu.Unlock()
	if len(stray) > 0 {
		s.releaseStray(stray)
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
func (s *Supervisor) accountsOf(claimed []persistence.Claimed) []*account {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[*account]bool{}
	var list []*account
	for _, c := range claimed {
		a := s.accounts[deref(c.Action.WIMAccountID)]
		if a != nil && !a.stopping && !seen[a] {
			seen[a] = true
			list = append(list, a)
		}
	}
	return list
}

// releaseStray returns claims taken under an unknown lease to the queue;
// if that fails they are given up (released by the sweep, or expiring).
func (s *Supervisor) releaseStray(keys []persistence.ClaimKey) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), 10*time.Second)
	defer cancel()
	if _, err := s.db.ReleaseClaimsOf(ctx, keys); err != nil {
		for _, k := range keys {
			s.claims.giveUp(k)
		}
		s.logger.Warn("release actions claimed under an unknown account lease", slog.Int("actions", len(keys)), slog.Any("error", err))
		return
	}
	for _, k := range keys {
		s.claims.done(k)
	}
	s.logger.Debug("released actions claimed under an account lease this process does not drive", slog.Int("actions", len(keys)))
}

// runAction runs one claimed action and hands its outcome to the
// completer. The runner turns a panic into a FAILED outcome, so a broken
// connector fails its action and the process goes on.
func (s *Supervisor) runAction(a *account, c persistence.Claimed, at claimTimes) {
	defer s.running.Done()
	// The action's calls that change the controller are fenced by its
	// lease and claim (fence.go); a failed check cancels ctx, so the
	// action comes back interrupted.
	actx, cancel := context.WithCancelCause(a.ctx)
	defer cancel(nil)
	f := &actionFence{s: s, a: a, claimed: at.claimed, recorded: at.recorded, cancel: cancel}
	ctx := connectors.WithFence(actx, f.check)
	var o persistence.Outcome
	t, err := s.connector(a)
	if err != nil {
		// The account or its WIM could not be read: the action keeps its
		// status and runs again after a back-off.
		if a.ctx.Err() == nil {
			a.log.Error("build connector", slog.Any("error", err))
		}
		o = s.runner.Postponed(c.Action, err)
	} else {
		o = s.runner.RunLoaded(ctx, t, c.Action, &actions.Loaded{Link: c.Link, Nets: c.Nets, Datacenters: c.Datacenters})
	}
	// The controller is done with this link: its slot goes to another
	// link while the outcome waits for the completer (the link itself
	// stays busy until the outcome is written).
	s.mu.Lock()
	a.running--
	s.mu.Unlock()
	s.runningN.Add(-1)
	s.signal(s.wakeClaim)
	s.outcomes <- outcome{Finished: persistence.Finished{Action: c.Action, Outcome: o, Lease: a.lease}, acct: a}
}

// settle forgets the actions whose outcome is written (or given up): their
// slots and links are free, and a stopping account with nothing left in
// flight lets its lease go.
func (s *Supervisor) settle(batch []outcome) {
	kick := false
	s.mu.Lock()
	for _, o := range batch {
		o.acct.inflight--
		delete(s.busy, o.Action.ItemID)
		if o.acct.stopping && o.acct.inflight == 0 {
			kick = true
		}
	}
	s.mu.Unlock()
	s.signal(s.wakeClaim)
	if kick {
		s.signal(s.kick)
	}
}
