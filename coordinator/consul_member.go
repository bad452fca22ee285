package coordinator

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/hashicorp/consul/api"
)

// keepMembership holds this process's membership key with the live
// session: acquired as soon as a session exists, watched, and acquired
// again when it is lost (the key deleted, or held by no session or
// another one).
func (c *Consul) keepMembership(ctx context.Context) {
	for {
		sess := c.sessions.current(ctx)
		if sess == nil {
			return
		}
		c.holdMembership(ctx, sess)
		if ctx.Err() != nil {
			return
		}
	}
}

// holdMembership acquires the membership key with sess and watches it
// until it is lost, sess ends or ctx ends.
func (c *Consul) holdMembership(ctx context.Context, sess *session) {
	ctx, cancel := withStop(ctx, sess.done)
	defer cancel()
	key := c.keys.member(c.cfg.InstanceID)
	value, err := json.Marshal(c.self())
	if err != nil {
		panic(err) // plain strings and a time
	}
	var refused backoff
	for {
		ok, alive := c.acquireRetry(ctx, "membership key", key, value, sess.id)
		if !alive {
			return
		}
		if ok {
			break
		}
		// Held by a session of ours given up earlier, or under lock-delay
		// after one was invalidated.
		c.logger.Debug("membership key not free yet; retrying", slog.String("session_id", sess.id))
		if !refused.wait(ctx, nil) {
			return
		}
	}
	c.logger.Info("joined the cluster", slog.String("session_id", sess.id))
	w := newWatch()
	for {
		pair, ok := blockingRead(ctx, w, c.logger, "watch membership key", func(q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
			return c.api.KV().Get(key, q)
		})
		if !ok {
			return
		}
		if pair == nil || pair.Session != sess.id {
			c.logger.Warn("membership key lost; acquiring it again", slog.String("session_id", sess.id))
			return
		}
	}
}

// self is this process's membership record.
func (c *Consul) self() Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Member{ID: c.cfg.InstanceID, Address: c.cfg.APIAddress, StartedAt: c.started, Version: c.cfg.Version}
}
