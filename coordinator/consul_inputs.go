package coordinator

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/consul/api"
)

// memberRecord is the value of a membership key: the member, and when it
// left the cluster cleanly (Stop releases its key marked so; a crash
// deletes the key with the session).
type memberRecord struct {
	Member
	// Layout is the assignment layout the member reads (layoutShards);
	// absent in the records of processes of before that layout.
	Layout int        `json:"assignment_layout,omitempty"`
	LeftAt *time.Time `json:"left_at,omitempty"`
}

// memberList is what the membership keys say: the live members (keys held
// by a session), sorted by id, and the members that left cleanly and
// whose key the leader has not cleared yet.
type memberList struct {
	live []Member
	left []leftKey
	// perAccount lists the live members that read the per-account
	// layout alone (sorted): while there is one, the leader writes that
	// layout.
	perAccount []string
}

// leftKey is a membership key released by a clean leave.
type leftKey struct {
	id    string
	index uint64 // its ModifyIndex: cleared only if unchanged
}

// watchMembers sends the membership each time it changes.
func (c *Consul) watchMembers(ctx context.Context, out chan<- memberList) {
	w := newWatch()
	var last memberList
	sent := false
	for {
		pairs, ok := blockingRead(ctx, w, c.logger, "watch members", func(q *api.QueryOptions) (api.KVPairs, *api.QueryMeta, error) {
			return c.api.KV().List(c.keys.members(), q)
		})
		if !ok {
			return
		}
		list := c.parseMembers(pairs)
		if sent && slices.Equal(list.live, last.live) && slices.Equal(list.left, last.left) && slices.Equal(list.perAccount, last.perAccount) {
			continue
		}
		if !send(ctx, out, list) {
			return
		}
		last, sent = list, true
	}
}

// parseMembers reads the membership keys: those held by a session are
// live members, those released marked as left are clean leaves.
func (c *Consul) parseMembers(pairs api.KVPairs) memberList {
	var out memberList
	for _, p := range pairs {
		id := strings.TrimPrefix(p.Key, c.keys.members())
		if id == "" || strings.Contains(id, "/") {
			continue
		}
		var rec memberRecord
		if err := json.Unmarshal(p.Value, &rec); err != nil {
			c.logger.Warn("unreadable membership record", slog.String("key", p.Key), slog.Any("error", err))
		}
		if p.Session == "" {
			if rec.LeftAt != nil {
				out.left = append(out.left, leftKey{id: id, index: p.ModifyIndex})
			}
			continue
		}
		m := rec.Member
		m.ID = id // the key is the truth
		out.live = append(out.live, m)
		if rec.Layout != layoutShards {
			out.perAccount = append(out.perAccount, id)
		}
	}
	sort.Strings(out.perAccount)
	sort.Slice(out.live, func(i, j int) bool { return out.live[i].ID < out.live[j].ID })
	sort.Slice(out.left, func(i, j int) bool { return out.left[i].id < out.left[j].id })
	return out
}

// countMembers keeps the number of live members for the
// wimro_cluster_members gauge, on every process (the leader's view lives
// only as long as its term).
func (c *Consul) countMembers(ctx context.Context) {
	w := newWatch()
	for {
		pairs, ok := blockingRead(ctx, w, c.logger, "count members", func(q *api.QueryOptions) (api.KVPairs, *api.QueryMeta, error) {
			return c.api.KV().List(c.keys.members(), q)
		})
		if !ok {
			return
		}
		live := c.parseMembers(pairs).live
		c.members.Store(int64(len(live)))
		now := time.Now().UTC()
		c.mu.Lock()
		if c.seen == nil {
			c.seen = map[string]time.Time{}
		}
		for _, m := range live {
			c.seen[m.ID] = now
		}
		c.mu.Unlock()
	}
}

// followReleases folds the notifications of released leases into one
// signal for the leader, consumed or not (a process that does not lead
// drops them).
func (c *Consul) followReleases(ctx context.Context) {
	sub := c.cfg.LeaseReleases
	if sub == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-sub.C:
		case <-sub.Resync:
		}
		select {
		case c.released <- struct{}{}:
		default:
		}
	}
}

// followAccounts sends the account list (sorted ids) when it changes: it
// lists it at once, on every notification of the account-list channel, on
// every resync (notifications were lost) and every Relist.
func (c *Consul) followAccounts(ctx context.Context, out chan<- []string) {
	var notify <-chan struct{}
	var resync <-chan struct{}
	if sub := c.cfg.AccountList; sub != nil {
		resync = sub.Resync
		n := make(chan struct{}, 1)
		notify = n
		// Notifications carry nothing worth reading: fold them into one.
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-sub.C:
					select {
					case n <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	tick := time.NewTicker(c.cfg.Relist)
	defer tick.Stop()
	var b backoff
	var last []string
	sent := false
	var retry <-chan time.Time
	for {
		accts, err := c.listAccounts(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			logFailure(c.logger, &b, "list accounts", err)
			retry = time.After(b.next())
		default:
			b.reset()
			retry = nil
			if !sent || !slices.Equal(accts, last) {
				select {
				case out <- accts:
					last, sent = accts, true
				case <-ctx.Done():
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-resync:
		case <-tick.C:
		case <-retry:
		}
	}
}

func (c *Consul) listAccounts(ctx context.Context) ([]string, error) {
	accts, err := c.cfg.DB.ListAccounts(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(accts))
	for i, a := range accts {
		ids[i] = a.UUID
	}
	sort.Strings(ids)
	return ids, nil
}
