package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// lead runs the leader's duties for one term: it follows membership and
// the account list, lets changes settle for LeaderSoak, and then writes
// the assignments; pending moves are tried again every LeaderSoak, and
// everything is checked again every Relist.
func (c *Consul) lead(ctx context.Context, sessionID string) {
	members := make(chan []Member)
	accounts := make(chan []string)
	done := make(chan struct{}, 2)
	go func() { c.watchMembers(ctx, members); done <- struct{}{} }()
	go func() { c.followAccounts(ctx, accounts); done <- struct{}{} }()
	defer func() { <-done; <-done }()

	var (
		view      = clusterView{start: time.Now(), left: map[string]time.Time{}, grace: c.cfg.SessionTTL}
		soak      = newSettler(c.cfg.LeaderSoak)
		retry     <-chan time.Time
		check     = time.NewTicker(c.cfg.Relist)
		lastCount = -1
	)
	defer check.Stop()
	pass := func() {
		soak.stop()
		retry = nil
		pending, err := c.reassign(ctx, sessionID, &view)
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
			}
			retry = time.After(c.cfg.LeaderSoak)
		}
		lastCount = pending
	}
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-members:
			if view.setMembers(m, c.logger) {
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
		case <-check.C:
			if !soak.pending() {
				pass()
			}
		}
	}
}

// clusterView is what the leader knows: the live members and the
// accounts, each once read, and when members left.
type clusterView struct {
	members     []Member
	accounts    []string
	haveMembers bool
	haveAccts   bool
	start       time.Time            // of the term
	left        map[string]time.Time // member → when it was last seen leaving
	grace       time.Duration
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

// setMembers records the members and logs who joined and who left; it
// reports whether the set of ids changed.
func (v *clusterView) setMembers(members []Member, logger *slog.Logger) bool {
	old := v.memberIDs()
	first := !v.haveMembers
	v.members, v.haveMembers = members, true
	now := v.memberIDs()
	if !first && slices.Equal(old, now) {
		return false
	}
	joined, left := diff(old, now)
	at := time.Now()
	for _, m := range left {
		v.left[m] = at
	}
	for _, m := range joined {
		delete(v.left, m)
	}
	logger.Info("cluster membership changed", slog.Int("members", len(now)),
		slog.String("joined", strings.Join(joined, ",")), slog.String("left", strings.Join(left, ",")))
	return true
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
