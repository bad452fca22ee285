package coordinator

import (
	"context"
	"log/slog"
	"time"

	"github.com/hashicorp/consul/api"
)

// term is one term of leadership: the leader's duties run until it ends.
type term struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// elect competes for the leader key with each session in turn, for as
// long as ctx lasts, while this process is healthy and a member. A term
// ends when the key is seen held by another session or vacant, when the
// session ends (Consul said it is gone, or it could not be renewed within
// TTL minus the margin), or when Health fails: the term's chores are then
// stopped and the leader key deleted, so that a healthy member takes it at
// once rather than after a session TTL.
func (c *Consul) elect(ctx context.Context) {
	for {
		if !c.healthy.wait(ctx) {
			return
		}
		sess := c.sessions.current(ctx)
		if sess == nil {
			return
		}
		// Only a member leads: a leader the membership does not list
		// would assign itself nothing, and a process refused its
		// membership key (another uses its id) must not lead either.
		if c.waitMember(ctx, sess) {
			hctx, cancel := c.healthy.whileOn(ctx)
			c.campaign(hctx, sess)
			cancel()
		}
		if ctx.Err() != nil {
			return // Stop ends the term
		}
		if on, _ := c.healthy.get(); !on {
			c.logEndTerm(c.endTerm(ctx, "account leases cannot be kept: "+errString(c.healthy.reason())))
			c.setLeader("")
			c.release(ctx, sess, "leader key", c.keys.leader())
			continue
		}
		c.logEndTerm(c.endTerm(ctx, "consul session ended"))
		c.setLeader("")
	}
}

// waitMember waits until this process holds its membership key with sess;
// false if sess, ctx or health ended first.
func (c *Consul) waitMember(ctx context.Context, sess *session) bool {
	for {
		on, changed := c.member.get()
		if on && c.sessions.id() == sess.id {
			return true
		}
		healthy, sick := c.healthy.get()
		if !healthy {
			return false
		}
		select {
		case <-changed:
		case <-sick:
		case <-sess.done:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "unknown"
	}
	return err.Error()
}

// campaign acquires the leader key with sess when it is vacant and
// follows it with blocking reads until sess or ctx ends. Vacant means
// missing or held by no session: the key is tried again at once, and
// again after the lock-delay if Consul refused (the delay is in force
// after a holder's session was invalidated). Never waiting for a change
// of a vacant key is what keeps the cluster from staying leaderless.
func (c *Consul) campaign(ctx context.Context, sess *session) {
	ctx, cancel := withStop(ctx, sess.done)
	defer cancel()
	key := c.keys.leader()
	w := newWatch()
	w.consistent = true
	acquire, refused := true, false
	for {
		if acquire {
			ok, alive := c.acquireRetry(ctx, "leader key", key, []byte(c.cfg.InstanceID), sess.id)
			if !alive {
				return
			}
			acquire, refused = false, !ok
			w.reset()
		}
		pair, ok := blockingRead(ctx, w, c.logger, "watch leader key", func(q *api.QueryOptions) (*api.KVPair, *api.QueryMeta, error) {
			return c.api.KV().Get(key, q)
		})
		if !ok {
			return
		}
		switch {
		case pair != nil && pair.Session == sess.id:
			refused = false
			c.setLeader(c.cfg.InstanceID)
			c.beginTerm(ctx, sess)
		case pair != nil && pair.Session != "":
			// Held: once it is vacant again, try at once.
			refused = false
			c.logEndTerm(c.endTerm(ctx, "another process holds the leader key"))
			c.noteLeader(string(pair.Value))
		default:
			c.logEndTerm(c.endTerm(ctx, "leader key vacant"))
			c.noteLeader("")
			if refused && !sleep(ctx, nil, c.cfg.LockDelay) {
				return
			}
			acquire = true
		}
	}
}

// noteLeader records the leader another process is (or none) and logs a
// change.
func (c *Consul) noteLeader(id string) {
	c.mu.Lock()
	prev := c.leaderID
	c.leaderID = id
	if id != "" {
		c.prevLeader = id
	}
	c.mu.Unlock()
	if prev != id {
		if id == "" {
			c.logger.Info("cluster has no leader")
		} else {
			c.logger.Info("cluster leader changed", slog.String("leader_id", id))
		}
	}
}

// beginTerm starts the leader's chores and duties, once per term.
func (c *Consul) beginTerm(ctx context.Context, sess *session) {
	if c.term != nil {
		return
	}
	c.mu.Lock()
	prev := c.prevLeader
	c.mu.Unlock()
	c.logger.Info("leadership gained", slog.String("session_id", sess.id), slog.String("previous_leader", prev))
	tctx, cancel := withStop(ctx, sess.done)
	t := &term{cancel: cancel, done: make(chan struct{})}
	if err := c.chores.start(tctx); err != nil {
		c.logger.Error("start leader chores", slog.Any("error", err))
	}
	go func() {
		defer close(t.done)
		c.lead(tctx, sess.id, prev)
	}()
	c.term = t
	c.leading.Store(true)
	c.signals.Leading.Send(true)
}

// endTerm stops the leader's duties and chores; it reports whether a term
// ended and the chores' stop error. ctx may have ended (Stop, or a session
// given up): the chores get a bounded context of their own.
func (c *Consul) endTerm(ctx context.Context, reason string) (string, error) {
	t := c.term
	if t == nil {
		return "", nil
	}
	c.term = nil
	c.leading.Store(false)
	t.cancel()
	<-t.done
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	defer c.signals.Leading.Send(false) // once the chores stopped
	return reason, c.chores.stop(sctx)
}

func (c *Consul) logEndTerm(reason string, err error) {
	if reason == "" {
		return
	}
	c.logger.Info("leadership lost", slog.String("reason", reason))
	if err != nil {
		c.logger.Error("stop leader chores", slog.Any("error", err))
	}
}
