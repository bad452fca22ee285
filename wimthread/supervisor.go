package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Options tune the supervisor; zero fields take the defaults.
type Options struct {
	Owner      string        // claim owner; default host:pid:random
	Parallel   int           // links run at once per account; default 8
	Lease      time.Duration // claim lease, renewed while a worker runs the action; default 30 s
	Poll       time.Duration // poll fallback when no notification comes; default 5 s
	SweepEvery time.Duration // claim renewal and expired-claim sweep interval; default Lease/3
	Policy     actions.Policy
}

func (o Options) withDefaults() Options {
	if o.Owner == "" {
		host, _ := os.Hostname()
		o.Owner = fmt.Sprintf("%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = 5 * time.Second
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = o.Lease / 3
	}
	return o
}

// Supervisor keeps one worker per owned account.
type Supervisor struct {
	db       *persistence.DB
	box      *secret.Box
	registry *connectors.Registry
	runner   *actions.Runner
	logger   *slog.Logger
	opts     Options
	claims   *claims

	mu      sync.Mutex
	ctx     context.Context
	cancel  context.CancelFunc
	ownAll  bool
	workers map[string]*worker
	wg      sync.WaitGroup
	started bool
	pollNow chan struct{}
}

// New returns a stopped supervisor.
func New(db *persistence.DB, box *secret.Box, registry *connectors.Registry, logger *slog.Logger, opts Options) *Supervisor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = opts.withDefaults()
	return &Supervisor{
		db: db, box: box, registry: registry, logger: logger, opts: opts,
		runner:  actions.NewRunner(&db.Store, opts.Policy, logger),
		workers: map[string]*worker{},
		claims:  newClaims(),
	}
}

// Owner is the name this supervisor claims actions under.
func (s *Supervisor) Owner() string { return s.opts.Owner }

// Start begins listening for notifications and sweeping expired claims.
// Workers start with SetAccounts or OwnAll.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("wimthread: supervisor already started")
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.started = true
	listening := make(chan error, 1)
	s.pollNow = make(chan struct{}, 1)
	s.wg.Add(3)
	go func() { defer s.wg.Done(); s.listen(listening) }()
	go func() { defer s.wg.Done(); s.sweep() }()
	go func() { defer s.wg.Done(); s.poll() }()
	select {
	case err := <-listening:
		if err != nil {
			s.cancel()
			return err
		}
	case <-ctx.Done():
		s.cancel()
		return ctx.Err()
	}
	return nil
}

// OwnAll makes this process own every account, now and as they change.
func (s *Supervisor) OwnAll(ctx context.Context) error {
	s.mu.Lock()
	s.ownAll = true
	s.mu.Unlock()
	return s.refreshAll(ctx)
}

func (s *Supervisor) refreshAll(ctx context.Context) error {
	accts, err := s.db.ListAccounts(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, len(accts))
	for i, a := range accts {
		ids[i] = a.UUID
	}
	s.SetAccounts(ids)
	return nil
}

// SetAccounts makes the owned accounts exactly ids: it starts the missing
// workers and stops the others.
func (s *Supervisor) SetAccounts(ids []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx == nil || s.ctx.Err() != nil {
		return
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for id, w := range s.workers {
		if !want[id] {
			w.stop()
			delete(s.workers, id)
		}
	}
	started := false
	for id := range want {
		if _, ok := s.workers[id]; !ok {
			s.workers[id] = s.startWorker(id)
			started = true
		}
	}
	if started {
		s.requestPoll()
	}
}

// requestPoll asks the poll loop to look for due work now.
func (s *Supervisor) requestPoll() {
	select {
	case s.pollNow <- struct{}{}:
	default:
	}
}

// poll is the fallback for lost notifications and the wake-up of due
// retries: one query finds the accounts with work due, and only their
// workers wake. Idle workers never touch the database.
func (s *Supervisor) poll() {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.pollNow:
		}
		due, err := s.db.DueAccounts(s.ctx)
		if err != nil {
			if s.ctx.Err() == nil {
				s.logger.Error("find accounts with due actions", slog.Any("error", err))
			}
			continue
		}
		for _, id := range due {
			s.Wake(id)
		}
	}
}

// Accounts returns the accounts that have a running worker.
func (s *Supervisor) Accounts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.workers))
	for id := range s.workers {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Wake asks the worker of an account to look for work now.
func (s *Supervisor) Wake(accountID string) {
	s.mu.Lock()
	w := s.workers[accountID]
	s.mu.Unlock()
	if w != nil {
		w.poke(false)
	}
}

// Stop stops every worker, waits for them, and returns the claims they
// still hold to the queue.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.cancel()
	for id, w := range s.workers {
		w.stop()
		delete(s.workers, id)
	}
	s.started = false
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("wimthread: stop: %w", ctx.Err())
	}
	// Nothing runs any more: every claim of this process, including any
	// given up while the database was away, goes back to the queue.
	n, err := s.db.ReleaseClaims(ctx, s.opts.Owner)
	if err != nil {
		return fmt.Errorf("wimthread: release claims: %w", err)
	}
	s.claims.reset()
	if n > 0 {
		s.logger.Info("released claims", slog.Int64("actions", n))
	}
	return nil
}

// listen follows the account notifications, reconnecting on failure.
func (s *Supervisor) listen(ready chan<- error) {
	first := true
	for s.ctx.Err() == nil {
		err := s.listenOnce(func() {
			if first {
				ready <- nil
				first = false
			}
		})
		if s.ctx.Err() != nil {
			break
		}
		if first {
			ready <- fmt.Errorf("wimthread: listen: %w", err)
			return
		}
		s.logger.Warn("notification listener failed; reconnecting", slog.Any("error", err))
		select {
		case <-s.ctx.Done():
		case <-time.After(time.Second):
		}
	}
	if first {
		ready <- s.ctx.Err()
	}
}

func (s *Supervisor) listenOnce(onReady func()) error {
	conn, err := s.db.Pool().Acquire(s.ctx)
	if err != nil {
		return err
	}
	// The connection will be in LISTEN state: take it out of the pool for
	// good, and close it when done.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(s.ctx, "LISTEN "+persistence.ChannelAccounts); err != nil {
		return err
	}
	onReady()
	// Anything missed while (re)connecting is caught by one pass now.
	s.reloadAll()
	for {
		n, err := pc.WaitForNotification(s.ctx)
		if err != nil {
			return err
		}
		s.onNotify(n.Payload)
	}
}

func (s *Supervisor) onNotify(payload string) {
	s.mu.Lock()
	ownAll := s.ownAll
	w := s.workers[payload]
	s.mu.Unlock()
	switch {
	case payload == persistence.NotifyAll:
		s.reloadAll()
	case w != nil:
		// The account, its WIM or mappings may have changed, or it may be
		// gone: reload, which also wakes it.
		w.poke(true)
		if ownAll {
			if err := s.refreshAll(s.ctx); err != nil && s.ctx.Err() == nil {
				s.logger.Error("list accounts", slog.Any("error", err))
			}
		}
	case ownAll:
		// An account this process does not run yet: a new one.
		if err := s.refreshAll(s.ctx); err != nil && s.ctx.Err() == nil {
			s.logger.Error("list accounts", slog.Any("error", err))
		}
	}
}

// reloadAll re-reads the account list (when owning all) and marks every
// worker to rebuild its connector before its next action, without waking
// them all at once: the poll wakes those with due work.
func (s *Supervisor) reloadAll() {
	s.mu.Lock()
	ownAll := s.ownAll
	s.mu.Unlock()
	if ownAll {
		if err := s.refreshAll(s.ctx); err != nil && s.ctx.Err() == nil {
			s.logger.Error("list accounts", slog.Any("error", err))
		}
	}
	s.mu.Lock()
	for _, w := range s.workers {
		w.markReload()
	}
	s.mu.Unlock()
	s.requestPoll()
}

// sweep renews the leases of the claims the workers run (and only those),
// releases the claims given up after a failed outcome write, and returns
// expired claims (of dead processes, or given up while the database was
// away) to the queue.
func (s *Supervisor) sweep() {
	t := time.NewTicker(s.opts.SweepEvery)
	defer t.Stop()
	for {
		if keys := s.claims.Running(); len(keys) > 0 {
			if _, err := s.db.ExtendClaims(s.ctx, keys, s.opts.Lease); err != nil && s.ctx.Err() == nil {
				s.logger.Error("renew claim leases", slog.Int("actions", len(keys)), slog.Any("error", err))
			}
		}
		if keys := s.claims.Releasing(); len(keys) > 0 {
			if n, err := s.db.ReleaseClaimsOf(s.ctx, keys); err != nil {
				if s.ctx.Err() == nil {
					s.logger.Warn("release claims whose outcome could not be written", slog.Int("actions", len(keys)), slog.Any("error", err))
				}
			} else {
				s.claims.released(keys)
				s.logger.Info("released claims whose outcome could not be written; the actions will run again", slog.Int64("actions", n))
				s.requestPoll()
			}
		}
		if n, err := s.db.SweepExpiredClaims(s.ctx); err != nil && s.ctx.Err() == nil {
			s.logger.Error("sweep expired claims", slog.Any("error", err))
		} else if n > 0 {
			s.logger.Info("returned expired claims to the queue", slog.Int64("actions", n))
			s.requestPoll()
		}
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}
