package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/consultest"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/logtest"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/tcpproxy"
	"github.com/wimro/wimro/persistence"
)

// recorder is a Runner that remembers what it was told.
type recorder struct {
	mu    sync.Mutex
	calls [][]string
}

func (r *recorder) SetAccounts(ids []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, slices.Clone(ids))
}

// current returns the last set given and whether one was.
func (r *recorder) current() ([]string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) == 0 {
		return nil, false
	}
	return r.calls[len(r.calls)-1], true
}

func (r *recorder) history() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// leasingRunner takes the PostgreSQL leases of the accounts it is given
// under its member id, like wimthread's supervisor (without retrying a
// lease held elsewhere). It releases those no longer given at once, or,
// with hold, only when the test calls letGo.
type leasingRunner struct {
	recorder
	db    *persistence.DB
	owner string
	hold  bool
	t     testing.TB

	leasesMu sync.Mutex
	leases   map[string]persistence.Lease // taken, with their epochs
}

func (r *leasingRunner) SetAccounts(ids []string) {
	r.recorder.SetAccounts(ids)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !r.hold {
		if err := r.letGo(ctx); err != nil {
			r.t.Errorf("%s: release leases: %v", r.owner, err)
		}
	}
	taken, err := r.db.AcquireLeases(ctx, r.owner, ids, time.Hour)
	if err != nil {
		r.t.Errorf("%s: take leases: %v", r.owner, err)
	}
	r.leasesMu.Lock()
	defer r.leasesMu.Unlock()
	if r.leases == nil {
		r.leases = map[string]persistence.Lease{}
	}
	for _, l := range taken {
		r.leases[l.AccountID] = l
	}
}

// letGo releases the leases of the accounts no longer given.
func (r *leasingRunner) letGo(ctx context.Context) error {
	cur, _ := r.current()
	r.leasesMu.Lock()
	defer r.leasesMu.Unlock()
	var release []persistence.Lease
	for acct, l := range r.leases {
		if !slices.Contains(cur, acct) {
			release = append(release, l)
			delete(r.leases, acct)
		}
	}
	return r.db.ReleaseLeases(ctx, release)
}

// testChore records whether it runs.
type testChore struct {
	running atomic.Bool
	starts  atomic.Int32
}

func (c *testChore) Start(context.Context) error {
	c.running.Store(true)
	c.starts.Add(1)
	return nil
}

func (c *testChore) Stop(context.Context) error {
	c.running.Store(false)
	return nil
}

// harness is a cluster of coordinators on one Consul agent and one
// database.
type harness struct {
	t      *testing.T
	agent  *consultest.Agent
	db     *persistence.DB
	prefix string
	ttl    time.Duration
	logs   *logtest.Buffer
	wim    wimro.WIM

	mu    sync.Mutex
	nodes []*node
}

type node struct {
	id      string
	coord   *Consul
	runner  interface{ current() ([]string, bool) }
	chore   *testChore
	stopped bool
}

const (
	testLeaderSoak     = 200 * time.Millisecond
	testAssignmentSoak = 100 * time.Millisecond
	testLockDelay      = 300 * time.Millisecond
)

func newHarness(t *testing.T, ttl time.Duration) *harness {
	t.Helper()
	h := &harness{
		t: t, agent: consultest.Start(t), ttl: ttl, logs: &logtest.Buffer{},
		db:     persistence.NewDB(pgtest.NewPool(t), nil),
		prefix: "test/" + strings.ReplaceAll(t.Name(), "/", "_"),
	}
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("coordinator logs:\n%s", h.logs.String())
		}
	})
	ctx := context.Background()
	w, err := h.db.CreateWIM(ctx, wimro.WIM{Name: "wim0", Type: "fake", URL: "http://wim0.example"})
	if err != nil {
		t.Fatal(err)
	}
	h.wim = w
	return h
}

// leasing returns a leasingRunner for member id.
func (h *harness) leasing(id string, hold bool) *leasingRunner {
	return &leasingRunner{db: h.db, owner: id, hold: hold, t: h.t}
}

// start starts a coordinator named id, with a recorder unless runner is
// given.
func (h *harness) start(id string, runner Runner) *node {
	h.t.Helper()
	return h.startOn(id, runner, h.db, nil)
}

// cuttable returns a handle on the harness's database that reaches it
// through a proxy the test can cut.
func (h *harness) cuttable() (*persistence.DB, *tcpproxy.Proxy) {
	h.t.Helper()
	cfg := h.db.Pool().Config().Copy()
	proxy := tcpproxy.Start(h.t, net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))))
	host, port, err := net.SplitHostPort(proxy.Addr())
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		h.t.Fatal(err)
	}
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = host, uint16(p)
	cfg.ConnConfig.ConnectTimeout = time.Second
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(pool.Close)
	return persistence.NewDB(pool, nil), proxy
}

// startOn starts a coordinator named id on db, with health as its
// Health check.
func (h *harness) startOn(id string, runner Runner, db *persistence.DB, health func() error) *node {
	h.t.Helper()
	return h.startLayout(id, runner, db, health, layoutShards)
}

// startLayout is startOn for a process that reads (and, leading, writes)
// the given assignment layout: layoutPerAccount plays a process of
// before the sharded layout.
func (h *harness) startLayout(id string, runner Runner, db *persistence.DB, health func() error, layout int) *node {
	h.t.Helper()
	if runner == nil {
		runner = &recorder{}
	}
	ctx := context.Background()
	listener := persistence.NewListener(h.db, nil)
	sub := listener.Subscribe(persistence.ChannelAccountList)
	if err := listener.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = listener.Stop(context.Background()) })
	logger := slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	chore := &testChore{}
	c, err := NewConsul(ConsulConfig{
		Addr: h.agent.Addr(), InstanceID: id, Prefix: h.prefix,
		SessionTTL: h.ttl, LeaderSoak: testLeaderSoak, AssignmentSoak: testAssignmentSoak,
		LockDelay: testLockDelay, Relist: 5 * time.Second,
		APIAddress: "127.0.0.1:" + id, Version: "test",
		DB: db, AccountList: sub, Runner: runner, Chores: []Chore{chore}, Health: health, Logger: logger,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	c.signals.Init()
	c.layout = layout
	if err := c.Start(ctx); err != nil {
		h.t.Fatal(err)
	}
	n := &node{id: id, coord: c, runner: runner.(interface{ current() ([]string, bool) }), chore: chore}
	h.t.Cleanup(func() { h.stop(n) })
	h.mu.Lock()
	h.nodes = append(h.nodes, n)
	h.mu.Unlock()
	return n
}

// startConverged starts n coordinators with recorders (wimd-0, wimd-1,
// ...) and waits until they agree.
func (h *harness) startConverged(n int) {
	h.t.Helper()
	for i := range n {
		h.start(fmt.Sprintf("wimd-%d", i), nil)
	}
	eventually.Until(h.t, convergeTimeout, fmt.Sprintf("%d coordinators to split the accounts", n), h.converged)
}

func (h *harness) stop(n *node) {
	h.t.Helper()
	h.mu.Lock()
	stopped := n.stopped
	n.stopped = true
	h.mu.Unlock()
	if stopped {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n.coord.Stop(ctx); err != nil {
		h.t.Errorf("stop %s: %v", n.id, err)
	}
}

func (h *harness) alive() []*node {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*node
	for _, n := range h.nodes {
		if !n.stopped {
			out = append(out, n)
		}
	}
	return out
}

func (h *harness) createAccounts(n int) []string {
	h.t.Helper()
	ids := make([]string, n)
	for i := range ids {
		name := fmt.Sprintf("acct-%d-%d", time.Now().UnixNano(), i)
		a, err := h.db.CreateAccount(context.Background(), wimro.WIMAccount{Name: &name, WIMID: h.wim.UUID})
		if err != nil {
			h.t.Fatal(err)
		}
		ids[i] = a.UUID
	}
	return ids
}

func (h *harness) accounts() []string {
	h.t.Helper()
	accts, err := h.db.ListAccounts(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	ids := make([]string, len(accts))
	for i, a := range accts {
		ids[i] = a.UUID
	}
	slices.Sort(ids)
	return ids
}

func (h *harness) leaders() []*node {
	var out []*node
	for _, n := range h.alive() {
		if n.coord.leading.Load() {
			out = append(out, n)
		}
	}
	return out
}

// converged reports whether the live coordinators agree: one leader,
// running the chores alone; every one ready; Consul listing every live
// member, and assigning every account to exactly the member rendezvous
// hashing picks, whose runner was given it. It reads Consul's keys and
// several coordinators at once, which no one signal announces: the tests
// poll it.
func (h *harness) converged() (bool, string) {
	alive := h.alive()
	leaders := h.leaders()
	if len(leaders) != 1 {
		return false, fmt.Sprintf("%d leaders", len(leaders))
	}
	ids := make([]string, len(alive))
	for i, n := range alive {
		ids[i] = n.id
	}
	slices.Sort(ids)
	want := owners(ids, h.accounts())
	st, err := leaders[0].coord.Status(context.Background())
	if err != nil {
		return false, "status: " + err.Error()
	}
	if st.Leader != leaders[0].id || len(st.Members) != len(alive) || len(st.Assignments) != len(alive) {
		return false, fmt.Sprintf("consul: leader %q, %d members, %d assignment folders", st.Leader, len(st.Members), len(st.Assignments))
	}
	for _, id := range ids {
		if !slices.Equal(st.Assignments[id], want[id]) {
			return false, fmt.Sprintf("consul assigns %d accounts to %s, want %d", len(st.Assignments[id]), id, len(want[id]))
		}
	}
	for _, n := range alive {
		if !n.coord.Ready() {
			return false, n.id + " not ready"
		}
		if got, _ := n.runner.current(); !slices.Equal(got, want[n.id]) {
			return false, fmt.Sprintf("%s runs %d accounts, should run %d", n.id, len(got), len(want[n.id]))
		}
		if lead := n == leaders[0]; n.chore.running.Load() != lead {
			return false, fmt.Sprintf("%s: chores running %v, leader %v", n.id, !lead, lead)
		}
	}
	return true, ""
}
