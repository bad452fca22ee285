package wimthread_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/coordinator"
	"github.com/wimro/wimro/coordinator/chores"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/internal/testsignal"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fast keeps the timings of the tests short; the logic is the same.
var fast = actions.Policy{RetryBase: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, MaxAttempts: 3,
	Refresh: 50 * time.Millisecond, Wait: 50 * time.Millisecond}

// bundle is a testfactory database with the tenant t0, and a fake
// controller at url that the "fake" WIMs of the tests point at. ctx, db,
// box and eng are the factory's, by the names the tests use.
type bundle struct {
	f    *testfactory.Factory
	ctx  context.Context
	db   *persistence.DB
	box  *secret.Box
	eng  *engine.Engine
	ctrl *fake.Controller
	url  string
	// sup is the supervisor own started last, its test signals
	// initialised.
	sup *wimthread.Supervisor
}

// setup makes a tenant, two datacenters with exit rules, a WIM of wimType
// mapped to both, and the tenant's account (with accountConfig).
func setup(t testing.TB, wimType string, accountConfig map[string]any) *bundle {
	t.Helper()
	b := newBundle(t)
	b.wan(t, "wan1", wimType, b.url, accountConfig, "dcA", "dcB")
	return b
}

// newBundle makes a database with the tenant t0 and nothing else, and a
// fake controller at b.url.
func newBundle(t testing.TB) *bundle {
	t.Helper()
	f := testfactory.New(t)
	b := &bundle{f: f, ctx: f.Ctx, db: f.DB, box: f.Box, eng: f.Eng, url: "http://fake-" + uuid.NewString()}
	b.ctrl = fake.ControllerFor(b.url)
	t.Cleanup(b.ctrl.Reset)
	f.Tenant(t, "t0")
	return b
}

// wan makes a WIM of wimType at url reaching new datacenters dcs (service
// endpoints "ep-<dc>"), and t0's account on it with accountConfig.
func (b *bundle) wan(t testing.TB, name, wimType, url string, accountConfig map[string]any, dcs ...string) {
	t.Helper()
	b.f.WAN(t, testfactory.WAN{WIM: engine.WIMInput{Name: &name, Type: &wimType, URL: &url}, Tenant: "t0",
		Account: engine.AccountInput{User: ptr("u"), Password: ptr(engine.Secret("p")), Config: accountConfig}, Datacenters: dcs})
}

func ptr[T any](v T) *T { return &v }

func registry() *connectors.Registry {
	r := connectors.NewRegistry()
	fake.Register(r)
	failing.Register(r)
	return r
}

// conns builds the workers' connectors from r as wimd does, timing their
// calls in m (nil: untimed).
func (b *bundle) conns(r *connectors.Registry, logger *slog.Logger, m *wimthread.Metrics) *accountconn.Factory {
	return accountconn.New(accountconn.Config{Registry: r, Box: b.box, DB: b.db, Logger: logger, UserAgent: testfactory.UserAgent, Instrument: m.Instrument})
}

// start runs a supervisor owning every account until the test ends.
func (b *bundle) start(t testing.TB, r *connectors.Registry, opts wimthread.Options) *wimthread.Supervisor {
	t.Helper()
	return b.startWith(t, r, nil, opts)
}

// startWith is start with a logger.
func (b *bundle) startWith(t testing.TB, r *connectors.Registry, logger *slog.Logger, opts wimthread.Options) *wimthread.Supervisor {
	t.Helper()
	s := b.own(t, r, logger, opts)
	stopCheck := watchClaims(t, s)
	t.Cleanup(stopCheck) // runs before own's cleanup stops the supervisor
	return s
}

// own starts a supervisor wired as wimd wires it without a cluster: one
// listener, the supervisor following account notifications, and the
// "none" coordinator giving it every account and running the expired-claim
// rescue every SweepEvery. It is stopped when the test ends.
func (b *bundle) own(t testing.TB, r *connectors.Registry, logger *slog.Logger, opts wimthread.Options) *wimthread.Supervisor {
	t.Helper()
	if opts.Policy == (actions.Policy{}) {
		opts.Policy = fast
	}
	if opts.Poll == 0 {
		// Longer than any test: a wake-up the claimer misses makes a test
		// time out instead of being covered by the poll fallback.
		opts.Poll = time.Hour
	}
	stop := func(what string, f func(context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := f(ctx); err != nil {
			t.Errorf("stop %s: %v", what, err)
		}
	}
	l := persistence.NewListener(b.db, logger)
	opts.Notifications = l.Subscribe(persistence.ChannelAccounts)
	list := l.Subscribe(persistence.ChannelAccountList)
	if err := l.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop("listener", l.Stop) })
	s := wimthread.New(b.db, b.conns(r, logger, opts.Metrics), logger, opts)
	s.TestSignals().Init()
	b.sup = s
	if err := s.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop("supervisor", s.Stop) })
	rescueEvery := opts.SweepEvery
	if rescueEvery <= 0 || rescueEvery > time.Second {
		rescueEvery = 100 * time.Millisecond
	}
	c := coordinator.NewNone(coordinator.NoneConfig{DB: b.db, AccountList: list, Runner: s, Logger: logger,
		Chores: []coordinator.Chore{chores.NewRescuer(b.db, logger, rescueEvery)}})
	if err := c.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop("coordinator", c.Stop) })
	return s
}

// member starts a supervisor as one wimd of a cluster runs it: given no
// account until the test says (SetAccounts), following the account
// notifications on a listener of its own, its test signals initialised.
// Both are stopped when the test ends.
func (b *bundle) member(t testing.TB, opts wimthread.Options) *wimthread.Supervisor {
	t.Helper()
	if opts.Policy == (actions.Policy{}) {
		opts.Policy = fast
	}
	if opts.Poll == 0 {
		opts.Poll = time.Hour // as in own
	}
	l := persistence.NewListener(b.db, nil)
	opts.Notifications = l.Subscribe(persistence.ChannelAccounts)
	if err := l.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	s := wimthread.New(b.db, b.conns(registry(), nil, nil), nil, opts)
	s.TestSignals().Init()
	if err := s.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Errorf("stop supervisor %s: %v", opts.Owner, err)
		}
		if err := l.Stop(ctx); err != nil {
			t.Errorf("stop listener: %v", err)
		}
	})
	return s
}

// watchClaims checks the ownership invariant over and over while the
// supervisor runs: every unexpired claim the database holds under its
// owner is one of its workers' (wimthread.VerifyClaims). The returned
// function stops the checks and fails the test if one ever failed. A
// database that does not answer (tests take it away) is not a violation.
func watchClaims(t testing.TB, s *wimthread.Supervisor) func() {
	done := make(chan struct{})
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error
		checks int
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := s.VerifyClaims(ctx)
			cancel()
			mu.Lock()
			checks++
			if errors.Is(err, wimthread.ErrStrayClaims) && failed == nil {
				failed = err
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		if failed != nil {
			t.Errorf("ownership invariant broken (after %d checks): %v", checks, failed)
		}
	}
}

// instance creates an instance with n VLDs across dcs (dcA and dcB when
// none is given).
func (b *bundle) instance(t testing.TB, name string, n int, status string, dcs ...string) engine.InstanceView {
	t.Helper()
	if len(dcs) == 0 {
		dcs = []string{"dcA", "dcB"}
	}
	return b.f.Instance(t, "t0", name, testfactory.Nets(status, testfactory.VLDs(n), dcs...))
}

// patience bounds every wait of the tests, on a signal or on state.
const patience = 30 * time.Second

// waitFor waits for state that no part of the supervisor announces (the
// caller says which in a comment): it polls.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	eventually.Until(t, patience, what, cond)
}

// written waits until cond holds over what the supervisor started last
// (b.sup) writes with action outcomes: cond is checked again after each
// outcome write it announces.
func (b *bundle) written(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	if b.sup == nil {
		t.Fatalf("waiting for %s: no supervisor started by bundle.own", what)
	}
	b.sup.TestSignals().OutcomesWritten.Until(t, patience, what, cond)
}

// actionDone waits until an instance action has finished all its tasks.
func (b *bundle) actionDone(t testing.TB, instanceID, actionID string) engine.InstanceActionView {
	t.Helper()
	var v engine.InstanceActionView
	b.written(t, "instance action "+actionID, func() (bool, string) {
		var err error
		v, err = b.eng.GetInstanceAction(b.ctx, "t0", instanceID, actionID)
		if err != nil {
			return false, err.Error()
		}
		var st []string
		for _, a := range v.WIMActions {
			st = append(st, a.Action+":"+a.Status)
		}
		return v.Done+v.Failed >= v.Tasks, fmt.Sprintf("%d/%d done, %d failed, %v", v.Done, v.Tasks, v.Failed, st)
	})
	return v
}

// waitedForNetworks waits until the first CREATE of instance v has found
// its local networks not ACTIVE n times.
func (b *bundle) waitedForNetworks(t testing.TB, v engine.InstanceView, n float64) {
	t.Helper()
	b.written(t, fmt.Sprintf("the CREATE deferred %v times", n), func() (bool, string) {
		ia, _ := b.eng.GetInstanceAction(b.ctx, "t0", v.UUID, v.ActionID)
		if len(ia.WIMActions) == 0 {
			return false, "no task"
		}
		waits, _ := ia.WIMActions[0].Extra["wait_attempts"].(float64)
		return waits >= n, fmt.Sprintf("extra %v", ia.WIMActions[0].Extra)
	})
}

func (b *bundle) linksActive(t testing.TB, instanceID string) []wimro.WANLink {
	t.Helper()
	var links []wimro.WANLink
	b.written(t, "links ACTIVE", func() (bool, string) {
		var err error
		links, err = b.eng.ListWANLinks(b.ctx, "t0", instanceID)
		if err != nil {
			return false, err.Error()
		}
		var st []string
		all := true
		for _, l := range links {
			st = append(st, l.Status)
			all = all && l.Status == wimro.LinkActive
		}
		return all, strings.Join(st, ",")
	})
	return links
}

func (b *bundle) noUnfinished(t testing.TB) {
	t.Helper()
	b.written(t, "no unfinished action", func() (bool, string) {
		n, err := b.db.CountUnfinishedActions(b.ctx, b.accounts(t))
		return err == nil && n == 0, fmt.Sprintf("%d unfinished (%v)", n, err)
	})
}

func (b *bundle) accounts(t testing.TB) []string {
	t.Helper()
	all, err := b.db.ListAccounts(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, a := range all {
		ids = append(ids, a.UUID)
	}
	return ids
}

func TestInstanceGoesActiveAndDeleteRemovesServices(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", map[string]any{"build_polls": 2})
	b.start(t, registry(), wimthread.Options{})
	v := b.instance(t, "ns", 4, wimro.NetActive)

	ia := b.actionDone(t, v.UUID, v.ActionID)
	if ia.Done != 4 || ia.Failed != 0 {
		t.Fatalf("create: %d done %d failed", ia.Done, ia.Failed)
	}
	links := b.linksActive(t, v.UUID)
	if b.ctrl.Count() != 4 {
		t.Fatalf("%d services on the controller, want 4", b.ctrl.Count())
	}
	for _, l := range links {
		pts, ok := b.ctrl.Points(*l.WIMInternalID)
		eps := map[string]bool{}
		for _, p := range pts {
			eps[p.ServiceEndpointID] = p.Encapsulation == connectors.EncapDot1Q && p.VLAN >= 100
		}
		if !ok || len(pts) != 2 || !eps["ep-dcA"] || !eps["ep-dcB"] {
			t.Fatalf("service %s points = %+v", *l.WIMInternalID, pts)
		}
	}
	b.noUnfinished(t)

	del, _, err := b.eng.DeleteInstance(b.ctx, "t0", v.UUID)
	if err != nil {
		t.Fatal(err)
	}
	d := b.actionDone(t, v.UUID, del.UUID)
	if d.Done != 4 || d.Failed != 0 {
		t.Fatalf("delete: %d done %d failed", d.Done, d.Failed)
	}
	if n := b.ctrl.Count(); n != 0 {
		t.Fatalf("%d services left on the controller", n)
	}
}

// A CREATE waits while a local network is not ACTIVE and runs when the
// NFVO reports it ACTIVE.
func TestCreateWaitsForLocalNetworks(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	b.start(t, registry(), wimthread.Options{})
	v := b.instance(t, "ns", 1, wimro.NetBuild)
	b.waitedForNetworks(t, v, 2)
	if b.ctrl.Count() != 0 {
		t.Fatal("service created while the local networks were BUILD")
	}
	for _, n := range v.Networks {
		if _, err := b.eng.UpdateNetwork(b.ctx, "t0", v.UUID, n.UUID, engine.NetworkUpdate{Status: ptr("ACTIVE")}); err != nil {
			t.Fatal(err)
		}
	}
	b.linksActive(t, v.UUID)
	if b.ctrl.Count() != 1 {
		t.Fatalf("%d services", b.ctrl.Count())
	}
}

// Both networks of a link reported ACTIVE 1 ms apart make the link ACTIVE
// at once, never after the CREATE's wait for its networks (issue 30, point
// 11). The first report makes the waiting CREATE due; its claim can read
// the second network still BUILD while the second report, finding the
// CREATE claimed or already due, used to leave it as it was: the run then
// waited its whole interval (10 s, the default, kept here). Many rounds,
// since the two reports race with the claim.
func TestNetworkReportsDuringTheirCreateRun(t *testing.T) {
	t.Parallel()
	const (
		rounds = 30
		wait   = 10 * time.Second
		// gap is the scenario (the NFVO's two reports), not a wait for state.
		gap = time.Millisecond
	)
	b := setup(t, "fake", nil)
	policy := fast
	policy.Wait = wait
	b.start(t, registry(), wimthread.Options{Policy: policy})
	for round := range rounds {
		v := b.instance(t, fmt.Sprintf("ns%d", round), 1, wimro.NetBuild)
		if len(v.Networks) != 2 {
			t.Fatalf("round %d: %d networks, want 2", round, len(v.Networks))
		}
		// The CREATE has run once and waits for its networks.
		b.written(t, "a CREATE waiting for its networks", func() (bool, string) {
			ia, err := b.eng.GetInstanceAction(b.ctx, "t0", v.UUID, v.ActionID)
			if err != nil || len(ia.WIMActions) == 0 {
				return false, fmt.Sprintf("no task (%v)", err)
			}
			n, _ := ia.WIMActions[0].Extra["wait_attempts"].(float64)
			return n >= 1 && ia.WIMActions[0].ClaimedBy == nil, fmt.Sprintf("extra %v", ia.WIMActions[0].Extra)
		})
		for i, n := range v.Networks {
			if i > 0 {
				<-time.After(gap)
			}
			if _, err := b.eng.UpdateNetwork(b.ctx, "t0", v.UUID, n.UUID, engine.NetworkUpdate{Status: ptr("ACTIVE")}); err != nil {
				t.Fatal(err)
			}
		}
		reported := time.Now()
		b.sup.TestSignals().OutcomesWritten.Until(t, time.Second, fmt.Sprintf("round %d: the link ACTIVE within 1 s of the second report (the CREATE waits %s)", round, wait), func() (bool, string) {
			links, err := b.eng.ListWANLinks(b.ctx, "t0", v.UUID)
			if err != nil || len(links) != 1 {
				return false, fmt.Sprintf("%d links (%v)", len(links), err)
			}
			return links[0].Status == wimro.LinkActive, links[0].Status
		})
		t.Logf("round %d: ACTIVE %v after the second report", round, time.Since(reported).Round(time.Millisecond))
	}
}

// Failing connector actions end FAILED with the controller's message, and
// the link shows ERROR.
func TestFailingConnectorFailsWithMessage(t *testing.T) {
	t.Parallel()
	b := setup(t, "failing", map[string]any{"reason": "controller said no"})
	b.start(t, registry(), wimthread.Options{})
	v := b.instance(t, "ns", 2, wimro.NetActive)
	ia := b.actionDone(t, v.UUID, v.ActionID)
	if ia.Failed != 2 || ia.Done != 0 {
		t.Fatalf("%d done %d failed", ia.Done, ia.Failed)
	}
	for _, a := range ia.WIMActions {
		if a.Status != wimro.ActionFailed || a.ErrorMsg == nil || !strings.Contains(*a.ErrorMsg, "controller said no") {
			t.Fatalf("task = %+v", a)
		}
	}
	links, _ := b.eng.ListWANLinks(b.ctx, "t0", v.UUID)
	for _, l := range links {
		if l.Status != wimro.LinkError || l.ErrorMsg == nil || !strings.Contains(*l.ErrorMsg, "controller said no") {
			t.Fatalf("link = %+v", l)
		}
	}
}

// Retryable errors back off and retry; past MaxAttempts the action fails
// with the last message.
func TestRetryThenSucceedAndGiveUp(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	b.ctrl.FailNext(2, connectors.KindRetryable)
	b.start(t, registry(), wimthread.Options{})
	v := b.instance(t, "ns", 1, wimro.NetActive)
	if ia := b.actionDone(t, v.UUID, v.ActionID); ia.Done != 1 {
		t.Fatalf("after 2 retryable failures: %+v", ia.InstanceAction)
	}

	b.ctrl.FailNext(10, connectors.KindRetryable)
	v2 := b.instance(t, "ns2", 1, wimro.NetActive)
	ia := b.actionDone(t, v2.UUID, v2.ActionID)
	if ia.Failed != 1 || !strings.Contains(*ia.WIMActions[0].ErrorMsg, "gave up after 3 attempts") {
		t.Fatalf("gave up: %+v %v", ia.InstanceAction, *ia.WIMActions[0].ErrorMsg)
	}
}

// A link across three datacenters is an ELAN: made where the WIM type
// declares ELAN, and failed at once with OSM's multipoint message, naming
// the type, where it does not (instead of retrying forever), with nothing
// asked of the controller.
func TestMultipointIsAnELANWhereDeclared(t *testing.T) {
	t.Parallel()
	elineOnly := connectors.NewRegistry()
	elineOnly.Register("fake", fake.Factory, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}, QoS: fake.Capabilities.QoS, Edit: true, List: true})
	for _, tt := range []struct {
		name string
		r    *connectors.Registry
		ok   bool
	}{
		{"declared", registry(), true},
		{"not declared", elineOnly, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "fake", nil)
			b.f.Datacenter(t, "dcC", wimro.Tenant{Name: "t0"})
			if _, err := b.eng.CreatePortMappings(b.ctx, "t0", "wan1", []engine.PortMappingInput{testfactory.ExitMapping("dcC", 3)}); err != nil {
				t.Fatal(err)
			}
			b.start(t, tt.r, wimthread.Options{})
			v := b.instance(t, "ns", 1, wimro.NetActive, "dcA", "dcB", "dcC")
			ia := b.actionDone(t, v.UUID, v.ActionID)
			if !tt.ok {
				msg := ""
				if ia.WIMActions[0].ErrorMsg != nil {
					msg = *ia.WIMActions[0].ErrorMsg
				}
				if ia.Failed != 1 || !strings.Contains(msg, connectors.MultipointNotSupported) || !strings.Contains(msg, "fake connector does not make ELAN") {
					t.Fatalf("multipoint on an ELINE-only type: failed %d, %q", ia.Failed, msg)
				}
				if n := b.ctrl.CallCount(fake.MethodCreateService); n != 0 {
					t.Fatalf("the controller was asked %d creates, want none", n)
				}
				return
			}
			if ia.Failed != 0 {
				t.Fatalf("multipoint on an ELAN type: %+v", ia.WIMActions)
			}
			services := b.ctrl.Services()
			if len(services) != 1 || services[0].Info["service_type"] != string(connectors.ServiceELAN) || len(services[0].Endpoints) != 3 {
				t.Fatalf("controller services = %+v, want one ELAN of 3 points", services)
			}
		})
	}
}

// counted is a decorator as a test or an instrumentation layer writes
// one: it embeds the connector and wraps CreateService only.
type counted struct {
	connectors.Connector
	creates *atomic.Int32
}

func (c counted) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	c.creates.Add(1)
	return c.Connector.CreateService(ctx, req)
}

// A decorator cannot drop a capability: the link's QoS reaches the
// controller through a connector wrapped by one that knows nothing of
// QoS (with QoS behind an optional interface, the wrapper hid it and
// every create asking QoS failed, "cannot honour").
func TestDecoratedConnectorKeepsItsQoS(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	var creates atomic.Int32
	r := connectors.NewRegistry()
	r.Register("fake", func(cfg connectors.Config) (connectors.Connector, error) {
		c, err := fake.Factory(cfg)
		return counted{Connector: c, creates: &creates}, err
	}, fake.Capabilities)
	b.start(t, r, wimthread.Options{})
	nets := testfactory.Nets(wimro.NetActive, testfactory.VLDs(1), "dcA", "dcB")
	for i := range nets {
		nets[i].Bandwidth, nets[i].Latency = engine.QoSValue("100"), engine.QoSValue("7")
	}
	v := b.f.Instance(t, "t0", "ns", nets)
	ia := b.actionDone(t, v.UUID, v.ActionID)
	if ia.Failed != 0 {
		t.Fatalf("create with QoS through a decorator: %+v", ia.WIMActions)
	}
	services := b.ctrl.Services()
	if len(services) != 1 || creates.Load() != 1 {
		t.Fatalf("services %+v after %d creates, want one", services, creates.Load())
	}
	if q, _ := b.ctrl.QoS(services[0].ID); q != (connectors.QoS{BandwidthMbps: 100, LatencyMs: 7}) {
		t.Fatalf("the controller holds QoS %+v, want bandwidth 100 and latency 7", q)
	}
}

// The actions of one WAN link run strictly in order while different links
// run in parallel: a DELETE queued behind a slow CREATE never overtakes it.
func TestPerLinkOrderUnderParallelism(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", map[string]any{"latency_ms": 100})
	tr := &tracker{}
	r := connectors.NewRegistry()
	r.Register("fake", func(cfg connectors.Config) (connectors.Connector, error) {
		c, err := fake.Factory(cfg)
		return &tracked{Connector: c, t: tr}, err
	}, fake.Capabilities)
	b.start(t, r, wimthread.Options{Parallel: 4})

	v := b.instance(t, "ns1", 8, wimro.NetActive)
	b.actionDone(t, v.UUID, v.ActionID)
	if m := tr.maxInFlight(); m < 2 || m > 4 {
		t.Fatalf("at most %d creates ran at once; want parallel links, bounded by 4", m)
	}

	// Delete a second instance while its creates are in flight.
	tr.started.Init() // the creates of ns2 only
	v2 := b.instance(t, "ns2", 6, wimro.NetActive)
	tr.started.Wait(t, patience, "a create of ns2 in flight")
	del, _, err := b.eng.DeleteInstance(b.ctx, "t0", v2.UUID)
	if err != nil {
		t.Fatal(err)
	}
	b.actionDone(t, v2.UUID, v2.ActionID)
	b.actionDone(t, v2.UUID, del.UUID)
	b.noUnfinished(t)
	if n := b.ctrl.Count(); n != 8 {
		t.Fatalf("%d services on the controller, want the 8 of ns1 only", n)
	}
	created := map[string]int{} // service id -> index of its create
	for i, c := range b.ctrl.Calls() {
		switch c.Method {
		case fake.MethodCreateService:
			if c.Err == nil {
				created[c.ID] = i
			}
		case fake.MethodDeleteService:
			if at, ok := created[c.ID]; !ok || at > i {
				t.Fatalf("delete of %s at call %d before its create", c.ID, i)
			}
		}
	}
}

// tracker counts controller creates in flight, and tells when one starts.
type tracker struct {
	mu       sync.Mutex
	now, max int
	started  testsignal.Signal[struct{}]
}

func (t *tracker) add(d int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.now += d
	t.max = max(t.max, t.now)
	if d > 0 {
		t.started.Send(struct{}{})
	}
}

func (t *tracker) maxInFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.max
}

type tracked struct {
	connectors.Connector
	t *tracker
}

func (c *tracked) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	c.t.add(1)
	defer c.t.add(-1)
	return c.Connector.CreateService(ctx, req)
}

// A process killed mid-batch: its claims stay until the lease expires; a
// new process takes them over, adopts the services the dead one already
// made, and the dead one's late writes are fenced off. Every action ends
// DONE with exactly one service per link.
func TestKillAndRestart(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })

	// Process A: its controller calls go through, then it hangs (as if
	// killed) before it can write anything.
	var hung sync.WaitGroup
	hung.Add(3)
	ra := connectors.NewRegistry()
	ra.Register("fake", func(cfg connectors.Config) (connectors.Connector, error) {
		c, err := fake.Factory(cfg)
		return &hangAfterCreate{Connector: c, release: release, hung: &hung}, err
	}, fake.Capabilities)
	// A renews nothing (SweepEvery: an hour): its account lease and claims
	// expire as a dead process's would.
	a := b.own(t, ra, nil, wimthread.Options{Owner: "process-A", Parallel: 3, Lease: 500 * time.Millisecond, SweepEvery: time.Hour, Poll: 50 * time.Millisecond})
	v := b.instance(t, "ns", 5, wimro.NetActive)
	hung.Wait() // three creates reached the controller, none was recorded
	if got := b.ctrl.Count(); got != 3 {
		t.Fatalf("%d services before the kill, want 3", got)
	}

	// Process B starts after the "kill" and sweeps the expired claims.
	b.start(t, registry(), wimthread.Options{Owner: "process-B", Lease: 500 * time.Millisecond, SweepEvery: 100 * time.Millisecond})
	ia := b.actionDone(t, v.UUID, v.ActionID)
	links := b.linksActive(t, v.UUID)
	b.noUnfinished(t)

	// A wakes up: its outcomes must be refused (fenced), not double counted.
	once.Do(func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	ia2, _ := b.eng.GetInstanceAction(b.ctx, "t0", v.UUID, v.ActionID)
	if ia.Done != 5 || ia2.Done != 5 || ia2.Failed != 0 {
		t.Fatalf("counters: %d then %d done, %d failed; want exactly 5", ia.Done, ia2.Done, ia2.Failed)
	}
	if n := b.ctrl.Count(); n != 5 {
		t.Fatalf("%d services on the controller, want exactly one per link (5)", n)
	}
	ids := map[string]bool{}
	for _, l := range links {
		ids[*l.WIMInternalID] = true
	}
	if len(ids) != 5 {
		t.Fatalf("links share services: %v", ids)
	}
}

// hangAfterCreate lets the create reach the controller, then never returns
// until released: the state a killed process leaves behind.
type hangAfterCreate struct {
	connectors.Connector
	release chan struct{}
	hung    *sync.WaitGroup
}

func (h *hangAfterCreate) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	id, info, err := h.Connector.CreateService(ctx, req)
	h.hung.Done()
	<-h.release
	return id, info, err
}

func TestSupervisorFollowsAccounts(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	s := b.start(t, registry(), wimthread.Options{})
	sig := s.TestSignals()
	first := sig.AccountDriven.Wait(t, patience, "the first account driven")
	if got := s.Accounts(); len(got) != 1 || got[0] != first {
		t.Fatalf("driven %v, want %s alone", got, first)
	}
	// A new account appears through NOTIFY (the account list channel); a
	// removed one goes.
	b.f.Tenant(t, "t1")
	added := b.f.Account(t, "t1", "wan1", engine.AccountInput{})
	sig.AccountDriven.WaitFor(t, patience, "the new account driven", func(id string) bool { return id == added.UUID })
	if got := s.Accounts(); len(got) != 2 {
		t.Fatalf("driven %v, want both accounts", got)
	}
	if got := s.Owned(); len(got) != 2 {
		t.Fatalf("leases held = %v, want both accounts", got)
	}
	if _, err := b.eng.DeleteAccounts(b.ctx, "t1", "wan1"); err != nil {
		t.Fatal(err)
	}
	sig.AccountStopped.WaitFor(t, patience, "the deleted account no longer driven", func(id string) bool { return id == added.UUID })
	if got := s.Accounts(); len(got) != 1 || got[0] != first {
		t.Fatalf("driven %v, want %s alone", got, first)
	}
}

// SetAccounts is the whole contract with a coordinator: the supervisor
// takes the leases of what it is given, runs those accounts, and stops
// and lets go of what it is no longer given once its worker is done.
func TestSetAccountsTakesAndReleasesLeases(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	ids := b.accounts(t)
	s := wimthread.New(b.db, b.conns(registry(), nil, nil), nil, wimthread.Options{Owner: "only", Policy: fast, Poll: 100 * time.Millisecond})
	sig := s.TestSignals()
	sig.Init()
	if err := s.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	s.SetAccounts(ids)
	sig.AccountDriven.Wait(t, patience, "the account driven")
	holders, err := b.db.LeaseHolders(b.ctx)
	if len(s.Accounts()) != 1 || len(s.Owned()) != 1 || holders[ids[0]] != "only" || err != nil {
		t.Fatalf("driven %v, owned %v, lease holders %v (%v); want the account driven under its lease", s.Accounts(), s.Owned(), holders, err)
	}
	s.SetAccounts(nil)
	sig.LeasesReleased.Wait(t, patience, "the lease released")
	holders, err = b.db.LeaseHolders(b.ctx)
	if len(s.Accounts()) != 0 || len(s.Owned()) != 0 || len(holders) != 0 || err != nil {
		t.Fatalf("driven %v, owned %v, lease holders %v (%v); want no account and no lease", s.Accounts(), s.Owned(), holders, err)
	}
}
