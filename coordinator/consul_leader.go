package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// lead runs the leader's duties for one term: it follows membership and
// the account list, lets changes settle for LeaderSoak, and then writes
// the assignments; pending moves are tried again when a lease is released,
// when the first lease they wait for expires, and every LeaderSoak;
// everything is checked again every Relist. A clean leave is handled at
// once: it is final, there is nothing to let settle. prev is the leader
// this process saw before its term ("" if none).
func (c *Consul) lead(ctx context.Context, sessionID, prev string) {
	members := make(chan memberList)
	accounts := make(chan []string)
	done := make(chan struct{}, 2)
	go func() { c.watchMembers(ctx, members); done <- struct{}{} }()
	go func() { c.followAccounts(ctx, accounts); done <- struct{}{} }()
	defer func() { <-done; <-done }()

	var (
		view = clusterView{start: time.Now(), left: map[string]time.Time{}, grace: c.cfg.SessionTTL,
			self: c.cfg.InstanceID, prevLeader: prev, signals: &c.signals}
		soak      = newSettler(c.cfg.LeaderSoak)
		retry     <-chan time.Time
		check     = time.NewTicker(c.cfg.Relist)
		lastCount = -1
	)
	defer check.Stop()
	pass := func() {
		soak.stop()
		retry = nil
		pending, expiry, err := c.reassign(ctx, sessionID, &view)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, errNotHeld):
			// Deposed: the election loop sees it and ends the term.
			c.logger.Warn("assignments not written: the leader key is no longer ours")
		case err != nil:
			c.logger.Warn("write assignments failed; retrying after the soak", slog.Any("error", err))
			retry = time.After(c.cfg.LeaderSoak)
		case pending > 0:
			if pending != lastCount {
				c.logger.Info("moves waiting for their previous owner to let go", slog.Int("accounts", pending))
				c.signals.MovesWaiting.Send(pending)
			}
			wait := c.cfg.LeaderSoak
			if expiry > 0 {
				// The database's clock said how long is left; a few ms
				// more make sure it has passed there too.
				wait = min(wait, expiry+20*time.Millisecond)
			}
			retry = time.After(wait)
		}
		lastCount = pending
	}
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-members:
			changed, leavesOnly := view.setMembers(m, c.logger)
			c.forgetLeft(ctx, m.left)
			switch {
			case leavesOnly:
				pass()
			case changed:
				soak.changed()
			}
		case a := <-accounts:
			if view.setAccounts(a) {
				soak.changed()
			}
		case <-soak.C():
			pass()
		case <-retry:
			pass()
		case <-c.released:
			if lastCount > 0 && !soak.pending() {
				pass()
			}
		case <-check.C:
			if !soak.pending() {
				pass()
			}
		}
	}
}

// forgetLeft deletes the membership keys of clean leaves once the leader
// has seen them, each only if unchanged (the process may be back).
func (c *Consul) forgetLeft(ctx context.Context, left []leftKey) {
	for len(left) > 0 {
		n := min(len(left), txnMaxOps)
		ops := make(api.KVTxnOps, 0, n)
		for _, l := range left[:n] {
			ops = append(ops, &api.KVTxnOp{Verb: api.KVDeleteCAS, Key: c.keys.member(l.id), Index: l.index})
		}
		if _, err := c.txn(ctx, ops); err != nil && ctx.Err() == nil {
			c.logger.Debug("clear the keys of members that left", slog.Any("error", err))
		}
		left = left[n:]
	}
}

// clusterView is what the leader knows: the live members and the
// accounts, each once read, and when members left.
type clusterView struct {
	members     []Member
	perAccount  []string // live members that read the per-account layout alone
	accounts    []string
	haveMembers bool
	haveAccts   bool
	start       time.Time            // of the term
	left        map[string]time.Time // member → when it was last seen leaving
	grace       time.Duration
	self        string // this process's id
	prevLeader  string // the leader before this term, if another
	signals     *testSignals
}

// departed reports whether member has been gone for the grace period (a
// session TTL) — long enough that it is not merely re-creating its
// session, as every member does after Consul restarts. Its leases then no
// longer hold moves back (they expire on their own). A member never seen
// in this term left, at the latest, when the term started.
func (v *clusterView) departed(member string) bool {
	if _, live := slices.BinarySearch(v.memberIDs(), member); live {
		return false
	}
	since, ok := v.left[member]
	if !ok {
		since = v.start
	}
	return time.Since(since) >= v.grace
}

func (v *clusterView) memberIDs() []string {
	ids := make([]string, len(v.members))
	for i, m := range v.members {
		ids[i] = m.ID
	}
	return ids
}

// setMembers records the members and logs who joined and who left, a
// clean leave (the member released its key marked as left) apart from a
// loss (its key went with its session: a crash, a hang, a process cut off
// from Consul or unable to keep its leases). It reports whether the set of
// ids changed, and whether the change is only clean leaves.
func (v *clusterView) setMembers(list memberList, logger *slog.Logger) (changed, leavesOnly bool) {
	old := v.memberIDs()
	first := !v.haveMembers
	layoutChanged := !slices.Equal(v.perAccount, list.perAccount)
	v.members, v.haveMembers, v.perAccount = list.live, true, list.perAccount
	now := v.memberIDs()
	clean := map[string]bool{}
	for _, l := range list.left {
		clean[l.id] = true
	}
	if first {
		// The previous leader is gone if it is no member: say how.
		if p := v.prevLeader; p != "" && p != v.self && !slices.Contains(now, p) {
			logDeparture(logger, p, clean[p], "the previous leader")
			v.signals.MemberGone.Send(departure{p, clean[p]})
		}
		logger.Info("cluster membership", slog.Int("members", len(now)), slog.String("members_ids", strings.Join(now, ",")))
		return true, false
	}
	if slices.Equal(old, now) {
		return layoutChanged, false
	}
	joined, left := diff(old, now)
	at := time.Now()
	leavesOnly = len(joined) == 0
	for _, m := range left {
		v.left[m] = at
		logDeparture(logger, m, clean[m], "a member")
		v.signals.MemberGone.Send(departure{m, clean[m]})
		leavesOnly = leavesOnly && clean[m]
	}
	for _, m := range joined {
		delete(v.left, m)
	}
	logger.Info("cluster membership changed", slog.Int("members", len(now)),
		slog.String("joined", strings.Join(joined, ",")), slog.String("left", strings.Join(left, ",")))
	return true, leavesOnly
}

// logDeparture logs a member gone: a clean leave, or a loss.
func logDeparture(logger *slog.Logger, member string, clean bool, role string) {
	if clean {
		logger.Info("member left the cluster", slog.String("member", member), slog.String("departure", "clean leave"),
			slog.String("role", role))
		return
	}
	logger.Warn("member lost: its session ended without it leaving", slog.String("member", member),
		slog.String("departure", "session invalidated"), slog.String("role", role))
}

func (v *clusterView) setAccounts(accounts []string) bool {
	if v.haveAccts && slices.Equal(v.accounts, accounts) {
		return false
	}
	v.accounts, v.haveAccts = accounts, true
	return true
}

// diff returns what is in b and not a, and in a and not b (both sorted).
func diff(a, b []string) (added, removed []string) {
	in := func(list []string, s string) bool {
		_, found := slices.BinarySearch(list, s)
		return found
	}
	for _, s := range b {
		if !in(a, s) {
			added = append(added, s)
		}
	}
	for _, s := range a {
		if !in(b, s) {
			removed = append(removed, s)
		}
	}
	return added, removed
}
