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

// watchMembers sends the live members (those whose key is held by a
// session) each time the list changes.
func (c *Consul) watchMembers(ctx context.Context, out chan<- []Member) {
	w := newWatch()
	var last []Member
	sent := false
	for {
		pairs, ok := blockingRead(ctx, w, c.logger, "watch members", func(q *api.QueryOptions) (api.KVPairs, *api.QueryMeta, error) {
			return c.api.KV().List(c.keys.members(), q)
		})
		if !ok {
			return
		}
		members := c.parseMembers(pairs)
		if sent && slices.Equal(members, last) {
			continue
		}
		select {
		case out <- members:
			last, sent = members, true
		case <-ctx.Done():
			return
		}
	}
}

// parseMembers reads the membership keys held by a session, sorted by id.
func (c *Consul) parseMembers(pairs api.KVPairs) []Member {
	var out []Member
	for _, p := range pairs {
		id := strings.TrimPrefix(p.Key, c.keys.members())
		if p.Session == "" || id == "" || strings.Contains(id, "/") {
			continue
		}
		var m Member
		if err := json.Unmarshal(p.Value, &m); err != nil {
			c.logger.Warn("unreadable membership record", slog.String("key", p.Key), slog.Any("error", err))
		}
		m.ID = id // the key is the truth
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
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
