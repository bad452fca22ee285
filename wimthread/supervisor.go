package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/persistence"
)

// Options tune the supervisor; zero fields take the defaults.
type Options struct {
	Owner      string        // lease and claim owner; default host:pid:random
	Parallel   int           // links run at once per account; default 8
	Lease      time.Duration // account lease and claim lease, renewed while the work runs; default 30 s
	Poll       time.Duration // poll fallback when no notification comes; default 5 s
	SweepEvery time.Duration // lease and claim renewal interval; default Lease/3
	Policy     actions.Policy
	// UserAgent is sent with every connector request ("wimro/<version>
	// (<instance id>)"), so a controller's log shows which process called.
	UserAgent string
	// Notifications follows persistence.ChannelAccounts: wake-ups and
	// reloads of the accounts' workers. Nil: the poll alone finds work.
	Notifications *persistence.Subscription
	// MonitorInterval is how often the credentials of each account driven
	// are checked (CheckCredentials; the status is recorded on the
	// account), and how often each of their created WAN links is re-read
	// from the controller (links.go). 0 checks none.
	MonitorInterval time.Duration
	// Metrics records finished actions, connector calls and the link
	// transitions monitoring finds; nil records nothing (NewMetrics).
	Metrics *Metrics
}

// PoolSize is the PostgreSQL pool a process needs for a supervisor
// running parallel links per account beside the API: the claimer 1, the
// completer's flushes 2, cluster chores 1, connector reads parallel, and 9
// for API requests. Not in the pool, one connection each: the LISTEN
// connection, the lease keeper's (lease and claim renewal never queue
// behind the pool) and the connector locks' (persistence.Lock: a lock held
// while a controller answers holds no pooled connection).
func PoolSize(parallel int) int { return parallel + 13 }

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

// Supervisor drives the accounts it owns: one claimer and one completer
// for all of them. It is told which accounts to own (SetAccounts); it
// drives one only while it holds the account's lease in PostgreSQL (see
// doc.go).
type Supervisor struct {
	db       *persistence.DB
	box      *secret.Box
	registry *connectors.Registry
	runner   *actions.Runner
	logger   *slog.Logger
	opts     Options
	claims   *claims

	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
	want   map[string]bool
	leases map[string]persistence.Lease
	// bounds are the local validity bounds of the leases held (fence.go):
	// a lease past its bound is dropped, its account stopped.
	bounds map[string]*leaseBound
	// base is the monotonic origin of the bounds.
	base time.Time
	// keeper is the connection of the lease keeper, outside the pool: the
	// renewal never queues behind the pool's other users (issue 30).
	keeper *persistence.Session
	// claimRenewal is the last claim renewal that succeeded, for the
	// claims' local bounds.
	claimRenewal claimRenewal
	// accounts are the accounts driven, and those stopping (no new claims)
	// until their actions in flight are written.
	accounts  map[string]*account
	busy      map[string]bool // links with an action in flight
	foreign   map[string]bool // claimed under a lease not known here; skipped until the next apply
	wg        sync.WaitGroup  // the long-lived goroutines but the completer
	running   sync.WaitGroup  // actions running
	runningN  atomic.Int64    // actions claimed whose outcome is not yet handed to the completer
	started   bool
	outcomes  chan outcome
	written   chan struct{} // closed when the completer has written everything
	pollNow   chan struct{}
	kick      chan struct{} // take leases / apply ownership now
	wakeClaim chan struct{}

	// health is the outcome of the last renewal round (leaseHealth).
	health leaseHealth
}

// leaseHealth remembers when the keeper last reached PostgreSQL and the
// error of its latest round, for LeaseHealth.
type leaseHealth struct {
	mu      sync.Mutex
	started time.Time // monotonic: when the supervisor started
	lastOK  time.Time // monotonic: start of the last round that succeeded
	err     error     // error of the latest round; nil after a success
}

// New returns a stopped supervisor.
func New(db *persistence.DB, box *secret.Box, registry *connectors.Registry, logger *slog.Logger, opts Options) *Supervisor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = opts.withDefaults()
	return &Supervisor{
		db: db, box: box, registry: registry, logger: logger, opts: opts,
		runner:   actions.NewRunner(&db.Store, opts.Policy, logger),
		claims:   newClaims(),
		want:     map[string]bool{},
		leases:   map[string]persistence.Lease{},
		bounds:   map[string]*leaseBound{},
		base:     time.Now(),
		accounts: map[string]*account{},
		busy:     map[string]bool{},
		foreign:  map[string]bool{},
	}
}

// Owner is the name this supervisor takes leases and claims under.
func (s *Supervisor) Owner() string { return s.opts.Owner }

// Start begins following notifications, polling for due work, keeping the
// leases, claiming and completing. Accounts are driven once SetAccounts
// names them.
func (s *Supervisor) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return errors.New("wimthread: supervisor already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.started = true
	s.health.mu.Lock()
	s.health.started, s.health.lastOK, s.health.err = time.Now(), time.Time{}, nil
	s.health.mu.Unlock()
	s.pollNow = make(chan struct{}, 1)
	s.kick = make(chan struct{}, 1)
	s.wakeClaim = make(chan struct{}, 1)
	// Room for every action that may run at once is not needed: a full
	// channel only makes finished actions wait for the completer.
	s.outcomes = make(chan outcome, maxBatch)
	s.written = make(chan struct{})
	s.keeper = s.db.Session()
	s.wg.Add(6)
	go func() { defer s.wg.Done(); s.follow() }()
	go func() { defer s.wg.Done(); s.monitor() }()
	go func() { defer s.wg.Done(); s.monitorLinks() }()
	go func() { defer s.wg.Done(); s.keep() }()
	go func() { defer s.wg.Done(); s.poll() }()
	go func() { defer s.wg.Done(); s.claimer() }()
	outcomes, written := s.outcomes, s.written
	go func() { defer close(written); s.completer(outcomes) }()
	return nil
}

// SetAccounts makes the accounts this process should own exactly ids. It
// does not wait: the supervisor takes the leases it can get (those free,
// now or as soon as their holder releases them) and drives those accounts;
// it stops driving the others and releases their leases once their
// running actions are written.
func (s *Supervisor) SetAccounts(ids []string) {
	s.mu.Lock()
	s.want = make(map[string]bool, len(ids))
	for _, id := range ids {
		s.want[id] = true
	}
	s.mu.Unlock()
	s.signal(s.kick)
}

// Accounts returns the accounts this process drives (their lease is held
// and their actions are claimed).
func (s *Supervisor) Accounts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.accounts))
	for id, a := range s.accounts {
		if !a.stopping && a.bound.valid() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// Owned returns the accounts whose lease this process holds now: taken or
// renewed recently enough that it is within its local validity bound (a
// lease past it may be another process's already).
func (s *Supervisor) Owned() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.leases))
	for id := range s.leases {
		if b := s.bounds[id]; b != nil && b.valid() {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// LeaseHealth reports why this process cannot keep account leases: nil
// while a renewal round (or, holding none, a ping) reached PostgreSQL
// within the last Lease. A process whose LeaseHealth is not nil drives
// nothing it can prove it owns; the coordinator steps down as leader and
// /readyz says why.
func (s *Supervisor) LeaseHealth() error {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	since := s.health.lastOK
	if since.IsZero() {
		since = s.health.started
	}
	if since.IsZero() || time.Since(since) < s.opts.Lease {
		return nil
	}
	if s.health.err != nil {
		return fmt.Errorf("account leases not renewed for %s: %w", time.Since(since).Round(time.Second), s.health.err)
	}
	return fmt.Errorf("account leases not renewed for %s", time.Since(since).Round(time.Second))
}

func (s *Supervisor) recordRenewal(start time.Time, err error) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	s.health.err = err
	if err == nil {
		s.health.lastOK = start
	}
}

// Wake asks the claimer to look for work of an account now.
func (s *Supervisor) Wake(accountID string) {
	s.mu.Lock()
	a := s.accounts[accountID]
	s.mu.Unlock()
	if a != nil {
		s.signal(s.wakeClaim)
	}
}

func (s *Supervisor) signal(c chan struct{}) {
	if c == nil {
		return
	}
	select {
	case c <- struct{}{}:
	default:
	}
}

// Stop stops claiming, cancels the running actions, waits for them and
// for their outcomes to be written, returns the claims still held to the
// queue and releases the leases.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.mu.Unlock()
		return nil
	}
	s.cancel()
	for _, a := range s.accounts {
		a.stop()
	}
	s.started = false
	outcomes, written := s.outcomes, s.written
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		// The claimer first (no new action), then the actions (they see
		// ctx cancelled), then the completer (every outcome written).
		s.wg.Wait()
		s.running.Wait()
		close(outcomes)
		<-written
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("wimthread: stop: %w", ctx.Err())
	}
	s.keeper.Close(ctx)
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
	s.mu.Lock()
	leases := make([]persistence.Lease, 0, len(s.leases))
	for _, l := range s.leases {
		leases = append(leases, l)
	}
	clear(s.leases)
	for _, b := range s.bounds {
		b.timer.Stop()
	}
	clear(s.bounds)
	clear(s.accounts)
	clear(s.busy)
	clear(s.foreign)
	s.mu.Unlock()
	if err := s.db.ReleaseLeases(ctx, leases); err != nil {
		return fmt.Errorf("wimthread: release account leases: %w", err)
	}
	if len(leases) > 0 {
		s.logger.Info("released account leases", slog.Int("accounts", len(leases)))
	}
	return nil
}

// poll is the fallback for lost notifications: it wakes the claimer,
// whose one statement looks at every owned account. (Due retries wake it
// by themselves: each claim says when the next action is due.)
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
		s.signal(s.wakeClaim)
	}
}

// follow turns account notifications into wake-ups: a driven account's
// WIM, mappings or actions changed (rebuild its connector before its next
// action and wake the claimer), a lease this process waits for was
// released (take it), or notifications were lost (rebuild every
// connector and look for due work).
func (s *Supervisor) follow() {
	sub := s.opts.Notifications
	if sub == nil {
		<-s.ctx.Done()
		return
	}
	for {
		select {
		case <-s.ctx.Done():
			return
		case n := <-sub.C:
			s.onNotify(n.Payload)
		case <-sub.Resync:
			s.reloadAll()
			s.signal(s.kick)
		}
	}
}

func (s *Supervisor) onNotify(payload string) {
	if payload == persistence.NotifyAll {
		s.reloadAll()
		return
	}
	s.mu.Lock()
	a := s.accounts[payload]
	if a != nil && a.stopping {
		a = nil
	}
	waiting := s.want[payload] && a == nil
	s.mu.Unlock()
	switch {
	case a != nil:
		a.stale.Store(true)
		s.signal(s.wakeClaim)
	case waiting:
		s.signal(s.kick)
	}
}

// reloadAll marks every account to rebuild its connector before its next
// action, and wakes the claimer.
func (s *Supervisor) reloadAll() {
	s.mu.Lock()
	for _, a := range s.accounts {
		a.stale.Store(true)
	}
	s.mu.Unlock()
	s.signal(s.wakeClaim)
}

// keep holds the leases and the claims: every SweepEvery (or when kicked)
// it renews the leases held and the claims in flight, releases the
// claims given up after a failed outcome write, takes the leases of the
// accounts it should own, and starts and stops driving accounts to match.
// Every statement runs on the keeper's own connection (never the pool's)
// and within keeperTimeout, so a round ends well within one lease whatever
// the pool, the controllers or the database do.
func (s *Supervisor) keep() {
	t := time.NewTicker(s.opts.SweepEvery)
	defer t.Stop()
	for {
		s.renew()
		s.releaseGivenUp()
		s.apply()
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.kick:
		}
	}
}

// keeperTimeout bounds each statement of the keeper: four of them (renew
// leases, renew claims, release, take) fit in one lease.
func (s *Supervisor) keeperTimeout() time.Duration { return s.opts.Lease / 4 }

// onKeeper runs fn on the keeper's connection, within keeperTimeout.
func (s *Supervisor) onKeeper(fn func(ctx context.Context, st *persistence.Store) error) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.keeperTimeout())
	defer cancel()
	return s.keeper.Do(ctx, func(st *persistence.Store) error { return fn(ctx, st) })
}

// renew extends the leases held and the claims in the record. A lease
// that could not be renewed (it expired and may be another process's now)
// stops the account at once (no new claims, running actions cancelled):
// PostgreSQL, not this process's memory, says who may drive the account.
// A lease that is renewed has its local bound moved to the start of the
// statement plus the lease, minus the margin; one that is not keeps its
// bound, and is dropped when that passes (expire).
func (s *Supervisor) renew() {
	s.mu.Lock()
	held := make([]persistence.Lease, 0, len(s.leases))
	for _, l := range s.leases {
		held = append(held, l)
	}
	s.mu.Unlock()
	start := time.Now()
	if len(held) > 0 {
		var kept []persistence.Lease
		err := s.onKeeper(func(ctx context.Context, st *persistence.Store) error {
			var err error
			kept, err = st.RenewLeases(ctx, held, s.opts.Lease)
			return err
		})
		s.recordRenewal(start, err)
		if err != nil {
			if s.ctx.Err() == nil {
				s.logger.Error("renew account leases", slog.Int("accounts", len(held)), slog.Any("error", err))
			}
		} else {
			s.dropLost(held, kept, start)
		}
	} else {
		// Holding nothing, the keeper still proves it can reach the
		// database: a process that cannot would take no lease either.
		ctx, cancel := context.WithTimeout(s.ctx, s.keeperTimeout())
		s.recordRenewal(start, s.keeper.Ping(ctx))
		cancel()
	}
	// A claim recorded before snapshot is in keys, and renewed from start.
	snapshot := time.Now()
	if keys := s.claims.Running(); len(keys) > 0 {
		start := time.Now()
		err := s.onKeeper(func(ctx context.Context, st *persistence.Store) error {
			_, err := st.ExtendClaims(ctx, keys, s.opts.Lease)
			return err
		})
		if err != nil {
			if s.ctx.Err() == nil {
				s.logger.Error("renew claim leases", slog.Int("actions", len(keys)), slog.Any("error", err))
			}
		} else {
			s.claimRenewal.renewed(start, snapshot)
		}
	}
}

// dropLost stops the accounts whose lease was not renewed, and moves the
// bounds of those renewed from start.
func (s *Supervisor) dropLost(held, kept []persistence.Lease, start time.Time) {
	ok := make(map[string]bool, len(kept))
	for _, l := range kept {
		ok[l.AccountID] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range held {
		if s.leases[l.AccountID] != l {
			continue
		}
		if ok[l.AccountID] {
			if b := s.bounds[l.AccountID]; b != nil {
				b.extend(start)
				b.timer.Reset(b.left())
			}
			continue
		}
		s.dropLease(l.AccountID)
		s.logger.Warn("account lease lost; the account is no longer driven here", slog.String("account_id", l.AccountID), slog.Int64("epoch", l.Epoch))
	}
}

// dropLease forgets the lease of account id and stops driving it. Call
// with s.mu held.
func (s *Supervisor) dropLease(id string) {
	delete(s.leases, id)
	if b := s.bounds[id]; b != nil {
		b.timer.Stop()
		delete(s.bounds, id)
	}
	if a := s.accounts[id]; a != nil {
		a.stop()
		if a.inflight == 0 {
			delete(s.accounts, id)
		}
	}
}

// holdLease records lease l, taken or renewed by a statement sent at
// start, with its local bound. Call with s.mu held.
func (s *Supervisor) holdLease(l persistence.Lease, start time.Time) {
	id := l.AccountID
	if old := s.bounds[id]; old != nil {
		old.timer.Stop()
	}
	s.leases[id] = l
	b := newLeaseBound(s.base, start, s.opts.Lease)
	b.timer = time.AfterFunc(b.left(), func() { s.expire(id, b) })
	s.bounds[id] = b
}

// expire drops a lease whose local bound passed without a renewal: this
// process can no longer prove it holds it (the database may be away, or
// the process was paused), so it stops the account now (no new claims,
// its running actions cancelled and written back as interrupted) and
// stops reporting it as owned. The keeper's next round takes the lease
// again if it can (under the same epoch if it is still its own). Its actions' controller calls
// check the same bound (actionFence), so none is sent past it even
// before this runs.
func (s *Supervisor) expire(id string, b *leaseBound) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bounds[id] != b || b.valid() {
		return // renewed, or dropped already
	}
	l := s.leases[id]
	s.dropLease(id)
	s.logger.Warn("account lease not renewed within its local bound; the account is no longer driven here",
		slog.String("account_id", id), slog.Int64("epoch", l.Epoch), slog.Duration("bound", b.ttl))
}

// releaseGivenUp releases the claims whose outcome could not be written.
func (s *Supervisor) releaseGivenUp() {
	keys := s.claims.Releasing()
	if len(keys) == 0 {
		return
	}
	var n int64
	err := s.onKeeper(func(ctx context.Context, st *persistence.Store) error {
		var err error
		n, err = st.ReleaseClaimsOf(ctx, keys)
		return err
	})
	if err != nil {
		if s.ctx.Err() == nil {
			s.logger.Warn("release claims whose outcome could not be written", slog.Int("actions", len(keys)), slog.Any("error", err))
		}
		return
	}
	s.claims.released(keys)
	s.logger.Info("released claims whose outcome could not be written; the actions will run again", slog.Int64("actions", n))
	s.signal(s.pollNow)
}

// apply makes the accounts driven match the accounts wanted: it stops
// those no longer wanted (their lease is released once their actions in
// flight are written), takes the leases it can of the wanted ones, and
// drives them.
func (s *Supervisor) apply() {
	s.mu.Lock()
	for id, a := range s.accounts {
		if !s.want[id] && !a.stopping {
			a.stop()
		}
		if a.stopping && a.inflight == 0 {
			delete(s.accounts, id)
		}
	}
	// The leases may change below: give the accounts skipped for a lease
	// this process did not know another look.
	clear(s.foreign)
	// A lease no longer wanted goes once none of its actions runs.
	var release []persistence.Lease
	for id, l := range s.leases {
		_, busy := s.accounts[id]
		if !s.want[id] && !busy {
			release = append(release, l)
			s.dropLease(id)
		}
	}
	var missing []string
	for id := range s.want {
		if _, ok := s.leases[id]; !ok {
			missing = append(missing, id)
		}
	}
	s.mu.Unlock()

	if len(release) > 0 {
		err := s.onKeeper(func(ctx context.Context, st *persistence.Store) error { return st.ReleaseLeases(ctx, release) })
		if err != nil {
			if s.ctx.Err() == nil {
				s.logger.Warn("release account leases", slog.Int("accounts", len(release)), slog.Any("error", err))
			}
		} else {
			s.logger.Info("released account leases", slog.Int("accounts", len(release)))
		}
	}
	if len(missing) > 0 {
		start := time.Now()
		var got []persistence.Lease
		err := s.onKeeper(func(ctx context.Context, st *persistence.Store) error {
			var err error
			got, err = st.AcquireLeases(ctx, s.opts.Owner, missing, s.opts.Lease)
			return err
		})
		if err != nil {
			if s.ctx.Err() == nil {
				s.logger.Error("take account leases", slog.Int("accounts", len(missing)), slog.Any("error", err))
			}
		} else {
			s.mu.Lock()
			for _, l := range got {
				s.holdLease(l, start)
			}
			s.mu.Unlock()
			if len(got) > 0 {
				s.logger.Info("took account leases", slog.Int("accounts", len(got)))
			}
			if n := len(missing) - len(got); n > 0 {
				s.logger.Debug("account leases held elsewhere; waiting for their release", slog.Int("accounts", n))
			}
		}
	}

	s.mu.Lock()
	started := false
	for id, l := range s.leases {
		if !s.want[id] {
			continue
		}
		if _, ok := s.accounts[id]; ok {
			continue // driven, or its previous run is still writing
		}
		if s.ctx.Err() != nil {
			break
		}
		s.accounts[id] = s.newAccount(l)
		started = true
	}
	s.mu.Unlock()
	if started {
		s.signal(s.wakeClaim)
	}
}
