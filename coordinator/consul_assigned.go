package coordinator

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	"github.com/hashicorp/consul/api"
)

// ownSet is this process's assignment as its folder shows it. Without the
// folder's marker the leader has not (or no longer) confirmed anything:
// a new member before the leader's first pass, a member the leader took
// for gone, a Consul that came back empty.
type ownSet struct {
	marker   bool
	accounts []string
	index    uint64 // Consul's index of the read: the assignment's generation
}

// followAssignments hands this process's assignment to the Runner: it
// watches the folder, lets a change settle for AssignmentSoak, and calls
// SetAccounts. Only a confirmed folder (its marker present) is applied,
// and only while this process holds its membership key (a process that
// left for want of health, or that another live process with its id keeps
// out, applies nothing); otherwise, and while Consul does not answer, the
// Runner keeps what it has (the PostgreSQL leases go on fencing it). The
// folder is applied again on rejoining, changed or not: that is what makes
// the process ready again.
func (c *Consul) followAssignments(ctx context.Context) {
	updates := make(chan ownSet)
	done := make(chan struct{})
	go func() { defer close(done); c.watchOwnFolder(ctx, updates) }()
	defer func() { <-done }()
	soak := newSettler(c.cfg.AssignmentSoak)
	var applied []string
	var seen ownSet // the folder as last read
	everApplied := false
	member, joined := c.member.get()
	consider := func() {
		switch {
		case !seen.marker || !member:
			soak.stop()
		case everApplied && c.ready.Load() && slices.Equal(seen.accounts, applied):
			soak.stop()
		default:
			soak.changed()
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-joined:
			member, joined = c.member.get()
			consider()
		case seen = <-updates:
			consider()
		case <-soak.C():
			soak.stop()
			if on, _ := c.member.get(); !on {
				continue // applied when the membership key is held again
			}
			next := seen.accounts
			added, removed := diff(applied, next)
			c.cfg.Runner.SetAccounts(slices.Clone(next))
			applied, everApplied = next, true
			c.generation.Store(seen.index)
			if on, _ := c.healthy.get(); on {
				c.ready.Store(true)
			}
			c.logger.Info("account assignment applied", slog.Int("accounts", len(next)),
				slog.Int("added", len(added)), slog.Int("removed", len(removed)))
			c.signals.Assigned.Send(next)
		}
	}
}

// watchOwnFolder sends this process's assignment each time it changes:
// its per-account folder while that folder's marker is there, else its
// shards (doc.go, "Consul keys"). A process of the per-account layout
// reads that folder alone.
func (c *Consul) watchOwnFolder(ctx context.Context, out chan<- ownSet) {
	perAccount, shards := make(chan ownSet), make(chan ownSet)
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(1)
	go func() { defer wg.Done(); c.watchPerAccountFolder(ctx, perAccount) }()
	if c.layout == layoutShards {
		wg.Add(1)
		go func() { defer wg.Done(); c.watchShards(ctx, shards) }()
	}
	var folder, sharded, last ownSet
	haveFolder, haveShards := false, c.layout != layoutShards
	sent := false
	for {
		select {
		case <-ctx.Done():
			return
		case folder = <-perAccount:
			haveFolder = true
		case sharded = <-shards:
			haveShards = true
		}
		if !haveFolder || !haveShards {
			continue // the first answer of both, before choosing
		}
		set := sharded
		if folder.marker || c.layout != layoutShards {
			set = folder
		}
		if sent && set.marker == last.marker && slices.Equal(set.accounts, last.accounts) {
			continue
		}
		if !send(ctx, out, set) {
			return
		}
		last, sent = set, true
	}
}

// watchPerAccountFolder sends this process's per-account folder each time
// it is read.
func (c *Consul) watchPerAccountFolder(ctx context.Context, out chan<- ownSet) {
	prefix := c.keys.folder(c.cfg.InstanceID)
	w := newWatch()
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
		set.index = w.index
		if !send(ctx, out, set) {
			return
		}
	}
}

// watchShards sends this process's shards each time they are read.
func (c *Consul) watchShards(ctx context.Context, out chan<- ownSet) {
	prefix := c.keys.shardsFolder(c.cfg.InstanceID)
	w := newWatch()
	for {
		pairs, ok := blockingRead(ctx, w, c.logger, "watch own assignment shards", func(q *api.QueryOptions) (api.KVPairs, *api.QueryMeta, error) {
			return c.api.KV().List(prefix, q)
		})
		if !ok {
			return
		}
		var set ownSet
		if own := c.keys.parseStored(pairs).shards[c.cfg.InstanceID]; own != nil {
			set = ownSet{marker: own.marker, accounts: sortedSet(own.accounts)}
		}
		set.index = w.index
		if !send(ctx, out, set) {
			return
		}
	}
}

// send delivers v on out unless ctx ends first.
func send[T any](ctx context.Context, out chan<- T, v T) bool {
	select {
	case out <- v:
		return true
	case <-ctx.Done():
		return false
	}
}
