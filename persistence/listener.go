package persistence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/startstop"
)

// ChannelAccountList is the NOTIFY channel that says the set of accounts
// changed (one was created or deleted): ownership must be computed again.
// It carries no payload worth reading.
const ChannelAccountList = "wimro_account_list"

// ListenerApplicationName is the application_name of the Listener's
// connection, so pg_stat_activity shows it apart from the pool's: one per
// process, however many event streams the process serves.
const ListenerApplicationName = "wimro listener"

// Notification is one NOTIFY received by the Listener.
type Notification struct {
	Channel string
	Payload string
}

// Subscription delivers the notifications of one channel. C never blocks
// the Listener: when a subscriber falls behind, notifications are dropped
// and Resync is signalled instead, as it is after every (re)connection,
// since notifications sent meanwhile are lost. A subscriber answers Resync
// with one full pass over the state it follows.
type Subscription struct {
	C      <-chan Notification
	Resync <-chan struct{}

	c      chan Notification
	resync chan struct{}
}

func (s *Subscription) deliver(n Notification) {
	select {
	case s.c <- n:
	default:
		s.signalResync()
	}
}

func (s *Subscription) signalResync() {
	select {
	case s.resync <- struct{}{}:
	default:
	}
}

// Listener is the one LISTEN connection of a process. Parts subscribe to
// channels before Start; the Listener holds a dedicated connection (out of
// the pool), reconnects with back-off when it breaks, and tells every
// subscriber to resync after each (re)connection.
type Listener struct {
	db     *DB
	logger *slog.Logger

	mu        sync.Mutex
	subs      map[string][]*Subscription
	started   bool
	connected bool
	svc       startstop.Service
}

// NewListener returns a stopped listener on db's server.
func NewListener(db *DB, logger *slog.Logger) *Listener {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Listener{db: db, logger: logger, subs: map[string][]*Subscription{}}
}

// Subscribe returns a subscription to channel. It must be called before
// Start.
func (l *Listener) Subscribe(channel string) *Subscription {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started {
		panic("persistence: Listener.Subscribe after Start")
	}
	c, r := make(chan Notification, 256), make(chan struct{}, 1)
	s := &Subscription{C: c, Resync: r, c: c, resync: r}
	l.subs[channel] = append(l.subs[channel], s)
	return s
}

// Connected reports whether the listener is listening now (for /readyz).
func (l *Listener) Connected() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.connected
}

// Start connects and listens, and returns once the first LISTEN is in
// place (or fails, or ctx ends); it then keeps listening until Stop.
func (l *Listener) Start(ctx context.Context) error {
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return errors.New("persistence: listener already started")
	}
	l.started = true
	l.mu.Unlock()
	l.svc.Name = "persistence: listener"
	ready := make(chan error, 1)
	if err := l.svc.Start(ctx, func(ctx context.Context) { l.run(ctx, ready) }); err != nil {
		return err
	}
	var err error
	select {
	case err = <-ready:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		_ = l.svc.Stop(context.WithoutCancel(ctx))
	}
	return err
}

// Stop ends the listening and waits for it.
func (l *Listener) Stop(ctx context.Context) error { return l.svc.Stop(ctx) }

func (l *Listener) run(ctx context.Context, ready chan<- error) {
	first := true
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := l.listenOnce(ctx, func() {
			if first {
				ready <- nil
				first = false
			}
			delay = 100 * time.Millisecond
		})
		l.setConnected(false)
		if ctx.Err() != nil {
			break
		}
		if first {
			ready <- fmt.Errorf("persistence: listen: %w", mapError(err))
			return
		}
		l.logger.Warn("notification listener lost its connection; reconnecting", slog.Any("error", err))
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
	if first {
		ready <- ctx.Err()
	}
}

func (l *Listener) setConnected(v bool) {
	l.mu.Lock()
	l.connected = v
	l.mu.Unlock()
}

func (l *Listener) listenOnce(ctx context.Context, onReady func()) error {
	conn, err := l.db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection will be in LISTEN state: take it out of the pool for
	// good, and close it when done.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	l.mu.Lock()
	channels := make([]string, 0, len(l.subs))
	for ch := range l.subs {
		channels = append(channels, ch)
	}
	l.mu.Unlock()
	if _, err := pc.Exec(ctx, "SELECT set_config('application_name', $1, false)", ListenerApplicationName); err != nil {
		return err
	}
	for _, ch := range channels {
		if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return err
		}
	}
	l.setConnected(true)
	onReady()
	// Whatever was sent while (re)connecting is lost: every subscriber
	// makes one full pass.
	l.each(func(s *Subscription) { s.signalResync() })
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		subs := l.subs[n.Channel]
		l.mu.Unlock()
		for _, s := range subs {
			s.deliver(Notification{Channel: n.Channel, Payload: n.Payload})
		}
	}
}

func (l *Listener) each(f func(*Subscription)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, list := range l.subs {
		for _, s := range list {
			f(s)
		}
	}
}
