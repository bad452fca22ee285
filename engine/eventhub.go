package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/persistence"
)

// EventHub wakes the event streams of this process when events of the
// instance action they follow commit. It reads one subscription of the
// process's Listener (persistence.ChannelEvents, whose payload is the
// instance action's uuid), so a process holds one LISTEN connection
// however many streams it serves, and a stream reads the database only
// when woken (and on its slow safety poll). A resync of the subscription
// (the listener reconnected, or this hub fell behind) wakes every stream:
// notifications may have been lost.
//
// Writers notify only the instance actions some process watches
// (persistence.WatchEvents): the hub registers a watch when its first
// stream of an instance action opens, renews its watches every
// EventWatchRenew while it has streams, and drops those it no longer
// needs at the next renewal (an extra notification meanwhile costs a
// read of nothing). A process that dies leaves watches that expire after
// EventWatchTTL.
type EventHub struct {
	db     *persistence.DB
	sub    *persistence.Subscription
	logger *slog.Logger
	owner  string // this process's watches, a random id
	renew  time.Duration

	// reg orders the database writes of watches: a registration and a
	// renewal never cross (a renewal would drop a watch registered after
	// it listed the actions).
	reg      sync.Mutex
	mu       sync.Mutex
	byAction map[string]*actionWatch
}

// The watches' timing: renewed every EventWatchRenew, they last
// EventWatchTTL if not renewed.
const (
	EventWatchRenew = 30 * time.Second
	EventWatchTTL   = 2 * time.Minute
)

// actionWatch is this process's streams of one instance action; ready is
// closed once its watch is registered (err says if it failed).
type actionWatch struct {
	streams map[*eventWatch]struct{}
	ready   chan struct{}
	err     error
}

// eventWatch is one stream's wake-up: a buffer of one, so a wake-up that
// comes while the stream reads is kept, and many make one read.
type eventWatch struct {
	c chan struct{}
}

func (w *eventWatch) wake() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// NewEventHub returns a hub over sub, a subscription to
// persistence.ChannelEvents on db's server. renew is how often it renews
// its watches (0: EventWatchRenew).
func NewEventHub(db *persistence.DB, sub *persistence.Subscription, logger *slog.Logger, renew time.Duration) *EventHub {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if renew <= 0 {
		renew = EventWatchRenew
	}
	return &EventHub{db: db, sub: sub, logger: logger, owner: uuid.NewString(), renew: renew, byAction: map[string]*actionWatch{}}
}

// Run delivers the notifications and renews the watches until ctx ends,
// then drops this process's watches. The caller runs it in a goroutine of
// its own, once.
func (h *EventHub) Run(ctx context.Context) {
	renew := time.NewTicker(h.renew)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			// Let the watches go now rather than at their expiry.
			stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = h.db.UnwatchEvents(stop, h.owner, nil)
			cancel()
			return
		case n := <-h.sub.C:
			h.wake(n.Payload)
		case <-h.sub.Resync:
			h.wakeAll()
		case <-renew.C:
			h.renewWatches(ctx)
		}
	}
}

// renewWatches extends the watches of the instance actions this process
// still follows and drops the others. A failure is logged: the watches
// last EventWatchTTL, and a stream reads on its safety poll anyway.
func (h *EventHub) renewWatches(ctx context.Context) {
	h.reg.Lock()
	defer h.reg.Unlock()
	h.mu.Lock()
	ids := make([]string, 0, len(h.byAction))
	for id := range h.byAction {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, h.renew)
	defer cancel()
	err := h.db.UnwatchEvents(ctx, h.owner, ids)
	if err == nil && len(ids) > 0 {
		err = h.db.WatchEvents(ctx, h.owner, ids, EventWatchTTL)
	}
	if err != nil && ctx.Err() == nil {
		h.logger.Warn("renew the event watches", slog.Any("error", err))
	}
}

func (h *EventHub) wake(actionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a := h.byAction[actionID]; a != nil {
		for w := range a.streams {
			w.wake()
		}
	}
}

func (h *EventHub) wakeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.byAction {
		for w := range a.streams {
			w.wake()
		}
	}
}

// watch registers a wake-up for the events of an instance action, once
// the process's watch of it is in place (the first stream of the action
// registers it; the others wait for that): an event committed after watch
// returns wakes the channel, unless its writer checked the watches just
// before the watch was written (the stream's safety poll reads that one).
// The caller must call the returned func when it stops following it.
func (h *EventHub) watch(ctx context.Context, actionID string) (<-chan struct{}, func(), error) {
	w := &eventWatch{c: make(chan struct{}, 1)}
	h.mu.Lock()
	a := h.byAction[actionID]
	first := a == nil
	if first {
		a = &actionWatch{streams: map[*eventWatch]struct{}{}, ready: make(chan struct{})}
		h.byAction[actionID] = a
	}
	a.streams[w] = struct{}{}
	h.mu.Unlock()
	unwatch := func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(a.streams, w)
		if len(a.streams) == 0 && h.byAction[actionID] == a {
			// The watch in the database goes at the next renewal.
			delete(h.byAction, actionID)
		}
	}
	if first {
		h.reg.Lock()
		a.err = h.db.WatchEvents(ctx, h.owner, []string{actionID}, EventWatchTTL)
		h.reg.Unlock()
		if a.err != nil {
			// The next stream of the action tries again.
			h.mu.Lock()
			if h.byAction[actionID] == a {
				delete(h.byAction, actionID)
			}
			h.mu.Unlock()
		}
		close(a.ready)
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		unwatch()
		return nil, nil, ctx.Err()
	}
	if a.err != nil {
		unwatch()
		return nil, nil, a.err
	}
	return w.c, unwatch, nil
}
