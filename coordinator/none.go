package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wimro/wimro/internal/startstop"
	"github.com/wimro/wimro/persistence"
)

// NoneConfig configures None.
type NoneConfig struct {
	DB *persistence.DB
	// AccountList follows persistence.ChannelAccountList.
	AccountList *persistence.Subscription
	Runner      Runner
	Chores      []Chore
	InstanceID  string
	Address     string
	Version     string
	Logger      *slog.Logger
	// Retry is the delay before listing the accounts again after a failure
	// (default 1 s).
	Retry time.Duration
}

// None is the single-process policy: this process owns every account, now
// and as accounts come and go, and runs every chore.
type None struct {
	cfg     NoneConfig
	started time.Time

	mu       sync.Mutex
	accounts []string
	svc      startstop.Service // follows the account list
	chores   chores
	ready    atomic.Bool
	signals  testSignals
}

// NewNone returns a stopped None.
func NewNone(cfg NoneConfig) *None {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	return &None{cfg: cfg, svc: startstop.Service{Name: "coordinator none"}, chores: chores{list: cfg.Chores, logger: cfg.Logger}}
}

// Start gives the runner every account and starts the chores; it then
// follows the account list until Stop.
func (n *None) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started.IsZero() {
		return errors.New("coordinator: already started")
	}
	start := time.Now()
	if err := n.refresh(ctx); err != nil {
		return err
	}
	if err := n.chores.start(ctx); err != nil {
		return err
	}
	// Like the old goroutine: a ctx cancelled now does not undo a start.
	if err := n.svc.Start(context.WithoutCancel(ctx), n.follow); err != nil {
		return err
	}
	// Set last: a None runs once (a failed Start may be tried again).
	n.started = start
	return nil
}

// refresh lists the accounts and hands them to the runner.
func (n *None) refresh(ctx context.Context) error {
	accts, err := n.cfg.DB.ListAccounts(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, len(accts))
	for i, a := range accts {
		ids[i] = a.UUID
	}
	sort.Strings(ids)
	n.cfg.Runner.SetAccounts(ids)
	n.accounts = ids
	n.ready.Store(true)
	n.signals.Assigned.Send(ids)
	return nil
}

// follow lists the accounts again whenever the list may have changed (a
// notification, or a resync after the listener reconnected).
func (n *None) follow(ctx context.Context) {
	sub := n.cfg.AccountList
	var notify <-chan persistence.Notification
	var resync <-chan struct{}
	if sub != nil {
		notify, resync = sub.C, sub.Resync
	}
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-notify:
		case <-resync:
		case <-retry:
		}
		retry = nil
		n.mu.Lock()
		err := n.refresh(ctx)
		n.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			n.cfg.Logger.Error("list accounts", slog.Any("error", err))
			retry = time.After(n.cfg.Retry)
		}
	}
}

// Stop stops following the account list and the chores. The runner keeps
// its accounts: the caller stops it.
func (n *None) Stop(ctx context.Context) error {
	if !n.svc.Started() {
		return nil
	}
	if err := n.svc.Stop(ctx); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.chores.stop(ctx)
}

// Ready reports whether the accounts were handed to the runner once.
func (n *None) Ready() bool { return n.ready.Load() }

// Failed never fires: without a cluster nothing tells whether another
// process uses the same instance id (their lease owners differ by the boot
// nonce, so they never share a lease).
func (n *None) Failed() <-chan error { return nil }

// Status shows this process as the leader and only member, assigned every
// account.
func (n *None) Status(context.Context) (Status, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	id := n.cfg.InstanceID
	return Status{
		Coordinator: "none",
		InstanceID:  id,
		Leader:      id,
		Members:     []Member{{ID: id, Address: n.cfg.Address, StartedAt: n.started, Version: n.cfg.Version}},
		Assignments: map[string][]string{id: append([]string{}, n.accounts...)},
	}, nil
}

// Gauges shows this process as the leader and only member, once started;
// its assignment has no generation.
func (n *None) Gauges() Gauges {
	started := n.svc.Started()
	members := 0
	if started {
		members = 1
	}
	return Gauges{Leader: started, Members: members}
}
