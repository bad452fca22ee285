package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/internal/startstop"
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
	// Notifications follows persistence.ChannelAccounts: wake-ups of the
	// claimer and rebuilds of the accounts' connectors. Nil: the poll
	// alone finds work.
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
// connection, the lease keeper's two (its renewals, which never queue
// behind the pool nor behind its takes and releases, and those) and the
// connector locks' (persistence.Lock: a lock held while a controller
// answers holds no pooled connection).
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

// Supervisor drives the accounts it owns: it is told which accounts to
// own (SetAccounts); it drives one only while it holds the account's
// lease in PostgreSQL (see doc.go). It assembles the parts that do the
// work, each with its own lifecycle (internal/startstop): the keeper
// (leases and claims), the claimer (claims and runs actions), the
// completer (writes their outcomes) and its own monitors (notifications,
// the poll, credentials and links), around the table of accounts they
// share.
type Supervisor struct {
	db     *persistence.DB
	logger *slog.Logger
	opts   Options
	claims *claims

	table     *table
	targets   *targets
	keeper    *keeper
	claimer   *claimer
	completer *completer
	// monitors follows notifications, polls, and checks the credentials
	// and the links of the accounts driven.
	monitors startstop.Service

	life    sync.Mutex // Start and Stop
	started bool

	// signals are shared by the parts, each announcing its own progress.
	signals *testSignals
}

// New returns a stopped supervisor. conns builds the accounts' connectors
// (with the process's User-Agent, Locker and call instrumentation).
func New(db *persistence.DB, conns *accountconn.Factory, logger *slog.Logger, opts Options) *Supervisor {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	opts = opts.withDefaults()
	runner := actions.NewRunner(&db.Store, opts.Policy, logger)
	cl := newClaims()
	sig := &testSignals{}
	t := newTable(opts.Lease, logger, opts.Metrics)
	t.signals = sig
	wakeClaim := make(chan struct{}, 1)
	kick := make(chan struct{}, 1)
	renewal := &claimRenewal{}
	targets := &targets{conns: conns, logger: logger, metrics: opts.Metrics}
	c := &claimer{
		db: db, logger: logger, owner: opts.Owner, lease: opts.Lease, parallel: opts.Parallel, metrics: opts.Metrics,
		runner: runner, t: t, claims: cl, targets: targets, renewal: renewal, wake: wakeClaim,
		svc: startstop.Service{Name: "wimthread claimer"}, signals: sig,
	}
	return &Supervisor{
		db: db, logger: logger, opts: opts, claims: cl, table: t, targets: targets,
		keeper: &keeper{
			db: db, logger: logger, owner: opts.Owner, lease: opts.Lease, every: opts.SweepEvery,
			t: t, claims: cl, renewal: renewal, kick: kick, renewNow: make(chan struct{}, 1), wakeClaim: wakeClaim,
			svc:     startstop.Service{Name: "wimthread lease keeper"},
			renewer: startstop.Service{Name: "wimthread lease renewer"}, signals: sig,
		},
		claimer: c,
		completer: &completer{
			db: db, logger: logger, lease: opts.Lease, metrics: opts.Metrics, runner: runner,
			t: t, claims: cl, pending: &c.pending, wakeClaim: wakeClaim, kick: kick,
			svc: startstop.Service{Name: "wimthread completer"}, signals: sig,
		},
		monitors: startstop.Service{Name: "wimthread monitors"},
		signals:  sig,
	}
}

// Owner is the name this supervisor takes leases and claims under.
func (s *Supervisor) Owner() string { return s.opts.Owner }

// Start begins keeping the leases, completing, claiming, following
// notifications, polling for due work and monitoring, in that order.
// Accounts are driven once SetAccounts names them.
func (s *Supervisor) Start(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	if s.started {
		return errors.New("wimthread: supervisor already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Checked once here: a part does not fail to start halfway because
	// ctx ended meanwhile (startstop keeps its values, not its end).
	ctx = context.WithoutCancel(ctx)
	s.table.open(ctx)
	if err := s.keeper.start(ctx); err != nil {
		return err
	}
	out, err := s.completer.start(ctx)
	if err != nil {
		return err
	}
	if err := s.claimer.start(ctx, out); err != nil {
		return err
	}
	if err := s.monitors.Start(ctx, s.watch); err != nil {
		return err
	}
	s.started = true
	return nil
}

// watch runs the Supervisor's own goroutines until ctx ends.
func (s *Supervisor) watch(ctx context.Context) {
	var wg sync.WaitGroup
	for _, run := range []func(context.Context){s.follow, s.poll, s.monitor, s.monitorLinks} {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx) }()
	}
	wg.Wait()
}

// SetAccounts makes the accounts this process should own exactly ids. It
// does not wait: the supervisor takes the leases it can get (those free,
// now or as soon as their holder releases them) and drives those accounts;
// it stops driving the others and releases their leases once their
// running actions are written.
func (s *Supervisor) SetAccounts(ids []string) {
	s.table.setWant(ids)
	signal(s.keeper.kick)
}

// Accounts returns the accounts this process drives (their lease is held
// and their actions are claimed).
func (s *Supervisor) Accounts() []string { return s.table.driven() }

// Owned returns the accounts whose lease this process holds now: taken or
// renewed recently enough that it is within its local validity bound (a
// lease past it may be another process's already).
func (s *Supervisor) Owned() []string { return s.table.owned() }

// LeaseHealth reports why this process cannot keep account leases: nil
// while a renewal round (or, holding none, a ping) reached PostgreSQL
// within the last Lease. A process whose LeaseHealth is not nil drives
// nothing it can prove it owns; the coordinator steps down as leader and
// /readyz says why.
func (s *Supervisor) LeaseHealth() error { return s.keeper.leaseHealth() }

// Stop stops claiming, cancels the running actions, waits for them and
// for their outcomes to be written, returns the claims still held to the
// queue and releases the leases.
func (s *Supervisor) Stop(ctx context.Context) error {
	s.life.Lock()
	defer s.life.Unlock()
	if !s.started {
		return nil
	}
	s.started = false
	// Every account stops: no new claim, the running actions see their
	// context cancelled.
	s.table.close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		bg := context.Background()
		// The claimer first (no new action), the monitors and the keeper's
		// rounds, then the actions, then the completer (every outcome
		// written); the keeper's renewer renews the leases and claims
		// until they are released. Their Stop waits without a bound; this
		// one is bounded by ctx below.
		_ = s.claimer.svc.Stop(bg)
		_ = s.monitors.Stop(bg)
		_ = s.keeper.svc.Stop(bg)
		s.claimer.running.Wait()
		_ = s.completer.finish(bg)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		// Left to expire: nothing renews what the goroutine above
		// still waits for.
		s.keeper.stopRenewals()
		return fmt.Errorf("wimthread: stop: %w", ctx.Err())
	}
	// Nothing runs any more: the claims and the leases go.
	return s.keeper.release(ctx)
}

// poll is the fallback for lost notifications: it wakes the claimer,
// whose one statement looks at every owned account. (Due retries wake it
// by themselves: each claim says when the next action is due.)
func (s *Supervisor) poll(ctx context.Context) {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		signal(s.claimer.wake)
	}
}

// follow turns account notifications into wake-ups: a driven account's
// WIM, mappings or actions changed (rebuild its connector before its next
// action and wake the claimer), leases were released while this process
// waits for one (take what is free), or notifications were lost (rebuild
// every connector and look for due work).
func (s *Supervisor) follow(ctx context.Context) {
	sub := s.opts.Notifications
	if sub == nil {
		<-ctx.Done()
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-sub.C:
			s.onNotify(n.Payload)
		case <-sub.Resync:
			s.reloadAll()
			signal(s.keeper.kick)
		}
	}
}

func (s *Supervisor) onNotify(payload string) {
	switch payload {
	case persistence.NotifyAll:
		s.reloadAll()
		return
	case persistence.NotifyReleased:
		if s.table.waiting() {
			signal(s.keeper.kick)
		}
		return
	}
	t := s.table
	t.mu.Lock()
	a := t.accounts[payload]
	if a != nil && a.stopping {
		a = nil
	}
	waiting := t.want[payload] && a == nil
	t.mu.Unlock()
	switch {
	case a != nil:
		a.stale.Store(true)
		signal(s.claimer.wake)
	case waiting:
		signal(s.keeper.kick)
	}
}

// reloadAll marks every account to rebuild its connector before its next
// action, and wakes the claimer.
func (s *Supervisor) reloadAll() {
	s.table.mu.Lock()
	for _, a := range s.table.accounts {
		a.stale.Store(true)
	}
	s.table.mu.Unlock()
	signal(s.claimer.wake)
}
