package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/consul/api"

	"github.com/wimro/wimro/persistence"
)

// Defaults of ConsulConfig.
const (
	DefaultConsulPrefix   = "service/wimro"
	DefaultService        = "wimro"
	DefaultSessionTTL     = 10 * time.Second
	DefaultCheckTTL       = 3 * time.Second
	DefaultLeaderSoak     = time.Second
	DefaultAssignmentSoak = 100 * time.Millisecond
	// DefaultLockDelay is the least Consul takes (0 would be its own 15 s
	// default): no delay in effect. A dead leader's key is free again as
	// soon as its session is invalidated; what a deposed leader could
	// still do in that moment is refused anyway (its assignment writes
	// check the leader key's session, its chores' writes are fenced in
	// PostgreSQL).
	DefaultLockDelay = time.Millisecond
	DefaultRelist    = time.Minute
)

// ConsulConfig configures Consul; zero durations take the defaults.
type ConsulConfig struct {
	// Addr is the Consul agent's HTTP address (host:port); empty takes
	// CONSUL_HTTP_ADDR, else 127.0.0.1:8500.
	Addr string
	// Token is the ACL token; empty takes CONSUL_HTTP_TOKEN.
	Token string
	// InstanceID names this process in the cluster: its membership key,
	// its assignment folder, the leader key's value. wimd runs the
	// Runner's account leases under LeaseOwner(InstanceID, Boot), which is
	// how the leader tells whether an account's previous owner let it go.
	// It must be unique per process (a second live process with the same
	// id is refused: see Failed) and contain neither '/' nor '#'.
	InstanceID string
	// Boot is this start's nonce (NewBoot; empty makes one): it names the
	// session, which tells this process's own sessions from another's
	// holding the same membership key.
	Boot string
	// Prefix is the root of every key (default "service/wimro").
	Prefix string
	// SessionTTL is the TTL of the Consul session (default 10 s; Consul
	// refuses less than its session_ttl_min, 10 s unless lowered). With a
	// check it is only the backstop of the check.
	SessionTTL time.Duration
	// CheckTTL is the TTL of this process's service check in Consul's
	// catalog, passed every CheckTTL/3 while Health is nil; the session is
	// bound to it and to serfHealth, so it is invalidated within CheckTTL
	// of a process that died, hangs or is unhealthy (default 3 s). A
	// negative value registers no service and binds the session to
	// serfHealth alone: a dead process is then noticed by its session TTL.
	CheckTTL time.Duration
	// Service is the name of the service in Consul's catalog (default
	// "wimro"); its id is "<Service>-<InstanceID>".
	Service string
	// LeaderSoak is how long membership and the account list must stay
	// unchanged before the leader computes owners (default 3 s).
	LeaderSoak time.Duration
	// AssignmentSoak is how long this process's assignment must stay
	// unchanged before it is handed to the Runner (default 500 ms).
	AssignmentSoak time.Duration
	// LockDelay is the session's lock-delay (default 1 s; sent to Consul
	// explicitly, whose own default is 15 s).
	LockDelay time.Duration
	// Relist is the period of the leader's safety net: it lists the
	// accounts again and checks every assignment (default 1 min).
	Relist time.Duration
	// APIAddress is this process's API address, shown to the others.
	APIAddress string
	Version    string
	// DB lists the accounts and tells who holds their leases.
	DB *persistence.DB
	// AccountList follows persistence.ChannelAccountList (nil: the
	// periodic re-list alone sees accounts come and go).
	AccountList *persistence.Subscription
	// LeaseReleases follows persistence.ChannelAccounts, on which a
	// released lease is announced: the leader then gives at once the
	// accounts whose move waited for it (nil: it tries again every
	// LeaderSoak, and when a lease it waits for expires).
	LeaseReleases *persistence.Subscription
	Runner        Runner
	// Chores run on the leader only.
	Chores []Chore
	// Health says whether the Runner can keep its account leases (wimd:
	// the supervisor's LeaseHealth); nil means it always can. While it
	// returns an error this process is no leader and no member: it ends
	// its term, releases the leader key and its membership key, and
	// applies no assignment; it rejoins once Health is nil again.
	Health func() error
	Logger *slog.Logger
}

func (c ConsulConfig) withDefaults() ConsulConfig {
	if c.Prefix == "" {
		c.Prefix = DefaultConsulPrefix
	}
	c.Prefix = strings.Trim(c.Prefix, "/")
	if c.SessionTTL <= 0 {
		c.SessionTTL = DefaultSessionTTL
	}
	if c.CheckTTL == 0 {
		c.CheckTTL = DefaultCheckTTL
	}
	if c.Service == "" {
		c.Service = DefaultService
	}
	if c.LeaderSoak <= 0 {
		c.LeaderSoak = DefaultLeaderSoak
	}
	if c.AssignmentSoak <= 0 {
		c.AssignmentSoak = DefaultAssignmentSoak
	}
	if c.LockDelay <= 0 {
		c.LockDelay = DefaultLockDelay
	}
	if c.Relist <= 0 {
		c.Relist = DefaultRelist
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Boot == "" {
		c.Boot = NewBoot()
	}
	return c
}

// Consul is the cluster policy: processes split the accounts through
// Consul (see doc.go for the keys, the timings and the failure cases).
type Consul struct {
	cfg  ConsulConfig
	api  *api.Client
	keys keys
	// layout is the assignment layout this process reads and, leading,
	// writes when every member reads it: layoutShards (tests set
	// layoutPerAccount to play a process of before the sharded layout).
	layout   int
	logger   *slog.Logger
	timeout  time.Duration // per Consul call that does not block
	sessions *sessions
	check    *serviceCheck // nil without a check (CheckTTL < 0)
	ready    atomic.Bool
	leading  atomic.Bool // a term is running
	healthy  *flag       // cfg.Health answers nil
	member   *flag       // this process holds its membership key
	failed   chan error  // the reason this process must not run (Failed)
	failOnce sync.Once
	// released is signalled when a lease was released (LeaseReleases).
	released chan struct{}
	// generation is the Consul index of the assignment last applied;
	// members counts the live members as last seen (Gauges).
	generation atomic.Uint64
	members    atomic.Int64

	mu       sync.Mutex
	started  time.Time
	leaderID string
	// prevLeader is the last other process seen leading: a new leader
	// tells how it went (a clean leave or a loss).
	prevLeader string
	seen       map[string]time.Time // member → when last seen live (countMembers)
	cancel     context.CancelFunc
	wg         sync.WaitGroup

	// Owned by the election loop, and by Stop once that loop ended.
	term   *term
	chores chores

	signals testSignals
}

// NewConsul checks cfg and returns a stopped Consul. It contacts nothing.
func NewConsul(cfg ConsulConfig) (*Consul, error) {
	cfg = cfg.withDefaults()
	if err := CheckInstanceID(cfg.InstanceID); err != nil {
		return nil, fmt.Errorf("coordinator: consul: %w", err)
	}
	switch {
	case cfg.DB == nil:
		return nil, errors.New("coordinator: consul: no database")
	case cfg.Runner == nil:
		return nil, errors.New("coordinator: consul: no runner")
	case cfg.LockDelay < time.Millisecond:
		return nil, errors.New("coordinator: consul: lock-delay must be at least 1 ms")
	case cfg.CheckTTL > 0 && cfg.CheckTTL < 300*time.Millisecond:
		return nil, errors.New("coordinator: consul: check TTL must be at least 300 ms")
	}
	ac := api.DefaultConfig()
	if cfg.Addr != "" {
		ac.Address = cfg.Addr
	}
	if cfg.Token != "" {
		ac.Token = cfg.Token
	}
	client, err := api.NewClient(ac)
	if err != nil {
		return nil, fmt.Errorf("coordinator: consul client: %w", err)
	}
	logger := cfg.Logger.With(slog.String("instance_id", cfg.InstanceID))
	timeout := max(cfg.SessionTTL/3, time.Second)
	healthy := newFlag(true)
	c := &Consul{
		cfg: cfg, api: client, keys: keys{prefix: cfg.Prefix}, layout: layoutShards, logger: logger, timeout: timeout,
		chores:  chores{list: cfg.Chores, logger: logger},
		healthy: healthy, member: newFlag(false), failed: make(chan error, 1), released: make(chan struct{}, 1),
	}
	if cfg.CheckTTL > 0 {
		c.check = newServiceCheck(client, cfg, healthy, c.fail, logger)
	}
	c.sessions = newSessions(client, sessionName(cfg.InstanceID, cfg.Boot), cfg.SessionTTL, cfg.LockDelay, c.check, logger)
	c.sessions.signals = &c.signals
	return c, nil
}

// Start begins the work and returns at once: it does not wait for Consul,
// which may not answer yet. Ready says when the first assignment was
// handed to the Runner.
func (c *Consul) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return errors.New("coordinator: already started")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.started = time.Now().UTC()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	loops := []func(context.Context){c.sessions.run, c.followHealth, c.keepMembership, c.elect, c.followAssignments, c.countMembers, c.followReleases}
	if c.check != nil {
		loops = append(loops, c.check.run)
	}
	for _, loop := range loops {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			loop(runCtx)
		}()
	}
	c.logger.Info("consul coordinator started", slog.String("prefix", c.cfg.Prefix),
		slog.Duration("session_ttl", c.cfg.SessionTTL), slog.Duration("check_ttl", max(c.cfg.CheckTTL, 0)),
		slog.Duration("leader_soak", c.cfg.LeaderSoak), slog.Duration("lock_delay", c.cfg.LockDelay))
	return nil
}

// Stop leaves the cluster so that the others take over at once rather
// than after a check or session TTL: it stops the loops and the chores,
// deletes the leader key (if held), releases the membership key marked as
// left (the leader tells a clean leave from a crash by it, and hands the
// accounts over without a soak), destroys the session and removes the
// service from Consul's catalog. The Runner keeps its accounts: the caller stops it after
// Stop (see doc.go for the order). Consul being away only makes Stop
// give up on those deletions (bounded by ctx); the session then expires.
func (c *Consul) Stop(ctx context.Context) error {
	c.mu.Lock()
	cancel := c.cancel
	c.cancel = nil
	c.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("coordinator: stop: %w", ctx.Err())
	}
	var errs []error
	reason, err := c.endTerm(ctx, "stopping")
	c.logEndTerm(reason, nil)
	if err != nil {
		errs = append(errs, fmt.Errorf("stop leader chores: %w", err))
	}
	// The chores are stopped: the leader key can go (a successor starts
	// its own chores), then the membership key, then the session, which
	// would delete both anyway but arm the lock-delay on them.
	// Each step is retried (a slow or briefly absent Consul) until ctx,
	// the caller's stop deadline, ends.
	if id := c.sessions.id(); id != "" {
		key := c.keys.leader()
		if err := c.retryUntil(ctx, "delete "+key, func() error { return c.deleteHeld(ctx, key, id) }); err != nil {
			errs = append(errs, fmt.Errorf("delete %s: %w", key, err))
		}
		key = c.keys.member(c.cfg.InstanceID)
		if err := c.retryUntil(ctx, "leave "+key, func() error { return c.leave(ctx, key, id) }); err != nil {
			errs = append(errs, fmt.Errorf("leave %s: %w", key, err))
		}
	}
	if err := c.retryUntil(ctx, "destroy the session", func() error { return c.sessions.close(ctx) }); err != nil {
		errs = append(errs, fmt.Errorf("destroy session: %w", err))
	}
	if c.check != nil {
		if err := c.retryUntil(ctx, "deregister the service", func() error { return c.check.deregister(ctx, c.timeout) }); err != nil {
			errs = append(errs, fmt.Errorf("deregister service: %w", err))
		}
	}
	c.setLeader("")
	c.logger.Info("left the cluster")
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("coordinator: stop: %w", err)
	}
	return nil
}

// retryUntil runs op until it succeeds or ctx ends, backing off between
// attempts; it returns op's last error when ctx ended first.
func (c *Consul) retryUntil(ctx context.Context, what string, op func() error) error {
	var b backoff
	for {
		err := op()
		if err == nil {
			return nil
		}
		logFailure(c.logger, &b, what, err)
		if !b.wait(ctx, nil) {
			return err
		}
	}
}

// Ready reports whether an assignment confirmed by a leader was handed to
// the Runner (an empty one included) since this process last joined the
// cluster; it is false while Health fails.
func (c *Consul) Ready() bool {
	healthy, _ := c.healthy.get()
	return healthy && c.ready.Load()
}

// Failed delivers, once, why this process must not go on: another live
// process uses its instance id (see keepMembership). wimd exits with it.
func (c *Consul) Failed() <-chan error { return c.failed }

func (c *Consul) fail(err error) {
	c.failOnce.Do(func() { c.failed <- err })
}

// sessionName names this boot's sessions: a membership key held by a
// session of another name is another process's.
func sessionName(instanceID, boot string) string {
	return "wimro " + instanceID + " boot " + boot
}

func (c *Consul) setLeader(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leaderID = id
}

// errNotHeld says a transaction's check-session failed: the key it
// guards is no longer held by the session (a deposed leader's write).
var errNotHeld = errors.New("key not held by this session")

// txn runs ops as one Consul transaction (at most 64 ops).
func (c *Consul) txn(ctx context.Context, ops api.KVTxnOps) (*api.KVTxnResponse, error) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ok, resp, _, err := c.api.KV().Txn(ops, (&api.QueryOptions{}).WithContext(cctx))
	if err != nil {
		return nil, err
	}
	if !ok {
		for _, e := range resp.Errors {
			if ops[e.OpIndex].Verb == api.KVCheckSession {
				return nil, errNotHeld
			}
		}
		if len(resp.Errors) > 0 {
			return nil, fmt.Errorf("consul transaction: %s", resp.Errors[0].What)
		}
		return nil, errors.New("consul transaction refused")
	}
	return resp, nil
}

// deleteHeld deletes key if the session holds it.
func (c *Consul) deleteHeld(ctx context.Context, key, sessionID string) error {
	_, err := c.txn(ctx, api.KVTxnOps{
		{Verb: api.KVCheckSession, Key: key, Session: sessionID},
		{Verb: api.KVDelete, Key: key},
	})
	if errors.Is(err, errNotHeld) {
		return nil
	}
	return err
}

// leave releases the membership key held by the session, its value
// marked as left: the key stays, held by no session, until the leader has
// seen it (a crash deletes the key with the session instead).
func (c *Consul) leave(ctx context.Context, key, sessionID string) error {
	now := time.Now().UTC()
	value, err := json.Marshal(memberRecord{Member: c.self(), Layout: c.layout, LeftAt: &now})
	if err != nil {
		return err
	}
	_, err = c.txn(ctx, api.KVTxnOps{
		{Verb: api.KVCheckSession, Key: key, Session: sessionID},
		{Verb: api.KVUnlock, Key: key, Value: value, Session: sessionID},
	})
	if errors.Is(err, errNotHeld) {
		return nil
	}
	return err
}

// acquireRetry acquires key for the session, retrying failed calls with
// back-off until Consul answers: true (taken, or already ours) or false
// (held by another session, or under lock-delay). alive is false once
// ctx ended.
func (c *Consul) acquireRetry(ctx context.Context, what, key string, value []byte, sessionID string) (ok, alive bool) {
	var b backoff
	for {
		ok, err := c.acquire(ctx, key, value, sessionID)
		if ctx.Err() != nil {
			return false, false
		}
		if err == nil {
			return ok, true
		}
		logFailure(c.logger, &b, "acquire "+what, err)
		if !b.wait(ctx, nil) {
			return false, false
		}
	}
}

// acquire takes key for the session (true) or says it is held by another
// session or under lock-delay (false).
func (c *Consul) acquire(ctx context.Context, key string, value []byte, sessionID string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ok, _, err := c.api.KV().Acquire(&api.KVPair{Key: key, Value: value, Session: sessionID},
		(&api.WriteOptions{}).WithContext(cctx))
	return ok, err
}
