package coordinator

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// healthPoll is how often ConsulConfig.Health is asked: it only reads what
// the Runner recorded, so asking often costs nothing and keeps a leader
// without its database from holding the leader key a moment longer than
// the Runner's own bound.
const healthPoll = 200 * time.Millisecond

// flag is a boolean whose changes can be waited for.
type flag struct {
	mu      sync.Mutex
	on      bool
	err     error         // why it is off, for a flag that says so
	changed chan struct{} // closed and replaced at every change
}

func newFlag(on bool) *flag { return &flag{on: on, changed: make(chan struct{})} }

// get returns the value and a channel closed at its next change.
func (f *flag) get() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.on, f.changed
}

// set changes the value; it reports whether it changed.
func (f *flag) set(on bool, err error) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	if f.on == on {
		return false
	}
	f.on = on
	close(f.changed)
	f.changed = make(chan struct{})
	return true
}

func (f *flag) reason() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// wait blocks until the flag is on; false if ctx ended first.
func (f *flag) wait(ctx context.Context) bool {
	for {
		on, changed := f.get()
		if on {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

// whileOn returns a context that ends when ctx does or the flag turns off
// (at once if it is off).
func (f *flag) whileOn(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for {
			on, changed := f.get()
			if !on {
				cancel()
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, cancel
}

// followHealth asks cfg.Health every healthPoll and keeps c.healthy. A
// process whose Runner cannot keep its account leases (its database is
// away) is of no use as a member and harmful as a leader: the election and
// membership loops step down and leave while it is unhealthy, and come back
// when it is healthy again (see doc.go, "Failure cases").
func (c *Consul) followHealth(ctx context.Context) {
	if c.cfg.Health == nil {
		return
	}
	tick := time.NewTicker(healthPoll)
	defer tick.Stop()
	for {
		err := c.cfg.Health()
		if c.healthy.set(err == nil, err) {
			if err != nil {
				c.ready.Store(false)
				c.logger.Warn("account leases cannot be kept: leaving leadership and the membership until they can",
					slog.Any("error", err))
			} else {
				c.logger.Info("account leases kept again: rejoining the cluster")
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// release deletes key if sess holds it, retrying until it is done, sess
// ends, or health returns (the key is then wanted again).
func (c *Consul) release(ctx context.Context, sess *session, what, key string) {
	ctx, cancel := withStop(ctx, sess.done)
	defer cancel()
	var b backoff
	for {
		err := c.deleteHeld(ctx, key, sess.id)
		if err == nil {
			c.logger.Debug(what+" deleted if this session held it", slog.String("session_id", sess.id))
			return
		}
		if ctx.Err() != nil {
			return
		}
		logFailure(c.logger, &b, "release "+what, err)
		on, changed := c.healthy.get()
		if on || !sleep(ctx, changed, b.next()) {
			return
		}
	}
}
