package coordinator

import (
	"context"
	"log/slog"
	"slices"

	"github.com/hashicorp/consul/api"
)

// ownSet is this process's assignment as its folder shows it. Without the
// folder's marker the leader has not (or no longer) confirmed anything:
// a new member before the leader's first pass, a member the leader took
// for gone, a Consul that came back empty.
type ownSet struct {
	marker   bool
	accounts []string
}

// followAssignments hands this process's assignment to the Runner: it
// watches the folder, lets a change settle for AssignmentSoak, and calls
// SetAccounts. Only a confirmed folder (its marker present) is applied;
// while the folder is unconfirmed or Consul does not answer, the Runner
// keeps what it has (the PostgreSQL leases go on fencing it).
func (c *Consul) followAssignments(ctx context.Context) {
	updates := make(chan ownSet)
	done := make(chan struct{})
	go func() { defer close(done); c.watchOwnFolder(ctx, updates) }()
	defer func() { <-done }()
	soak := newSettler(c.cfg.AssignmentSoak)
	var applied, next []string
	everApplied := false
	for {
		select {
		case <-ctx.Done():
			return
		case u := <-updates:
			switch {
			case !u.marker:
				soak.stop()
			case everApplied && slices.Equal(u.accounts, applied):
				soak.stop()
			default:
				next = u.accounts
				soak.changed()
			}
		case <-soak.C():
			soak.stop()
			added, removed := diff(applied, next)
			c.cfg.Runner.SetAccounts(slices.Clone(next))
			applied, everApplied = next, true
			c.ready.Store(true)
			c.logger.Info("account assignment applied", slog.Int("accounts", len(next)),
				slog.Int("added", len(added)), slog.Int("removed", len(removed)))
		}
	}
}

// watchOwnFolder sends this process's folder each time it changes.
func (c *Consul) watchOwnFolder(ctx context.Context, out chan<- ownSet) {
	prefix := c.keys.folder(c.cfg.InstanceID)
	w := newWatch()
	var last ownSet
	sent := false
	for {
		list, ok := blockingRead(ctx, w, c.logger, "watch own assignments", func(q *api.QueryOptions) ([]string, *api.QueryMeta, error) {
			return c.api.KV().Keys(prefix, "", q)
		})
		if !ok {
			return
		}
		var set ownSet
		if own := c.keys.parseAssignments(list)[c.cfg.InstanceID]; own != nil {
			set = ownSet{marker: own.marker, accounts: sortedSet(own.accounts)}
		}
		if sent && set.marker == last.marker && slices.Equal(set.accounts, last.accounts) {
			continue
		}
		select {
		case out <- set:
			last, sent = set, true
		case <-ctx.Done():
			return
		}
	}
}
