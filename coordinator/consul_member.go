package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"
)

// keepMembership holds this process's membership key with the live
// session while the process is healthy: acquired as soon as a session
// exists, watched, and acquired again when it is lost (the key deleted, or
// held by no session or another one). When Health fails the key is
// deleted: the leader then takes this process for gone and moves its
// accounts once their leases, which it can no longer renew, have expired.
func (c *Consul) keepMembership(ctx context.Context) {
	for {
		if !c.healthy.wait(ctx) {
			return
		}
		sess := c.sessions.current(ctx)
		if sess == nil {
			return
		}
		hctx, cancel := c.healthy.whileOn(ctx)
		c.holdMembership(hctx, sess)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if on, _ := c.healthy.get(); !on {
			c.release(ctx, sess, "membership key", c.keys.member(c.cfg.InstanceID))
		}
	}
}

// holdMembership acquires the membership key with sess and watches it
// until it is lost, sess ends or ctx ends.
func (c *Consul) holdMembership(ctx context.Context, sess *session) {
	ctx, cancel := withStop(ctx, sess.done)
	defer cancel()
	key := c.keys.member(c.cfg.InstanceID)
	value, err := json.Marshal(memberRecord{Member: c.self(), Layout: c.layout})
	if err != nil {
		panic(err) // plain strings and a time
	}
	var refused backoff
	var other foreignHolder
	for {
		ok, alive := c.acquireRetry(ctx, "membership key", key, value, sess.id)
		if !alive {
			return
		}
		if ok {
			break
		}
		// Held by a session of ours given up earlier, or under lock-delay
		// after one was invalidated, or held by another process.
		if err := c.checkHolder(ctx, key, &other); err != nil {
			c.logger.Error("refusing to run", slog.Any("error", err))
			c.fail(err)
			return
		}
		c.logger.Debug("membership key not free yet; retrying", slog.String("session_id", sess.id))
		if !refused.wait(ctx, nil) {
			return
		}
	}
	c.logger.Info("joined the cluster", slog.String("session_id", sess.id))
	c.member.set(true, nil)
	defer c.member.set(false, nil)
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

// foreignHolder is a session of another process seen holding this
// process's membership key, and since when.
type foreignHolder struct {
	session string
	since   time.Time
}

// checkHolder reads who holds the membership key this process could not
// acquire. A session of another boot is either a previous run of this
// instance that died (Consul invalidates its session at the latest two
// TTLs after its last renewal) or another live process started with the
// same instance id. Held by the same such session for longer than that,
// it is the latter: the error says so, and this process must not run (two
// processes under one id would follow one assignment folder).
func (c *Consul) checkHolder(ctx context.Context, key string, seen *foreignHolder) error {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	q := (&api.QueryOptions{RequireConsistent: true}).WithContext(cctx)
	pair, _, err := c.api.KV().Get(key, q)
	if err != nil || pair == nil || pair.Session == "" {
		*seen = foreignHolder{}
		return nil
	}
	info, _, err := c.api.Session().Info(pair.Session, q)
	if err != nil || info == nil || info.Name == c.sessions.name {
		*seen = foreignHolder{}
		return nil
	}
	if seen.session != pair.Session {
		*seen = foreignHolder{session: pair.Session, since: time.Now()}
		c.logger.Warn("membership key held by another process's session; waiting for it to expire",
			slog.String("key", key), slog.String("holder_session", pair.Session), slog.String("holder", info.Name))
	}
	ttl := c.cfg.SessionTTL
	if d, perr := time.ParseDuration(info.TTL); perr == nil && d > ttl {
		ttl = d
	}
	bound := 2*ttl + c.cfg.LockDelay + c.timeout
	held := time.Since(seen.since)
	if held < bound {
		return nil
	}
	var m Member
	_ = json.Unmarshal(pair.Value, &m) // best effort, for the message
	return fmt.Errorf("instance id %q is in use by another live process (API address %s, started %s): "+
		"its membership key %s has been held by its Consul session %s for %s, longer than that session could outlive a dead process; "+
		"give every wimd its own --instance-id",
		c.cfg.InstanceID, m.Address, m.StartedAt.Format(time.RFC3339), key, pair.Session, held.Round(time.Second))
}

// self is this process's membership record.
func (c *Consul) self() Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Member{ID: c.cfg.InstanceID, Address: c.cfg.APIAddress, StartedAt: c.started, Version: c.cfg.Version}
}
