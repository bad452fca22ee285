package actions_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var policy = actions.Policy{RetryBase: time.Second, RetryMax: time.Minute, MaxAttempts: 3,
	Refresh: 10 * time.Second, Wait: 5 * time.Second, WaitTimeout: time.Hour, WaitMin: 2}

// fixture is one tenant, two datacenters, a fake WIM mapped to both, the
// tenant's account, and one instance with one two-datacenter VLD: one
// WAN link and its CREATE action.
type fixture struct {
	ctx    context.Context
	db     *persistence.DB
	eng    *engine.Engine
	ctrl   *fake.Controller
	conn   connectors.Connector
	runner *actions.Runner
	target actions.Target
	inst   engine.InstanceView
	link   wimro.WANLink
	create wimro.Action
}

type fixtureOpts struct {
	netStatus  string // of the dcB network; dcA is ACTIVE
	noExitPort bool   // dcB's network matches no external_connections rule
	noMapping  bool   // dcB's network leaves by a port the WIM has no mapping for
	extraDC    bool   // a third datacenter in the VLD (multipoint)
	bandwidth  string // the VLD's bandwidth (raw JSON); "" asks none
}

func newFixture(t *testing.T, o fixtureOpts) *fixture {
	t.Helper()
	tf := testfactory.New(t)
	f := &fixture{ctx: tf.Ctx, db: tf.DB, eng: tf.Eng}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	url := "http://fake-" + uuid.NewString()
	f.ctrl = fake.ControllerFor(url)
	t.Cleanup(f.ctrl.Reset)
	tf.Tenant(t, "t0")
	dcs := []string{"dcA", "dcB"}
	if o.extraDC {
		dcs = append(dcs, "dcC")
	}
	acct := tf.WAN(t, testfactory.WAN{WIM: engine.WIMInput{Name: ptr("wan1"), URL: &url}, Tenant: "t0", Datacenters: dcs})
	vld := uuid.NewString()
	var nets []engine.NetworkInput
	for i, dc := range dcs {
		n := engine.NetworkInput{Name: "net-" + dc, SceNetID: vld, Datacenter: dc, Status: wimro.NetActive,
			PhysicalNetwork: "physnet1", EncapsulationType: "vlan", EncapsulationID: ptr(100 + i)}
		if o.bandwidth != "" {
			n.Bandwidth = engine.QoSValue(o.bandwidth)
		}
		if dc == "dcB" {
			if o.netStatus != "" {
				n.Status = o.netStatus
			}
			if o.noExitPort {
				n.PhysicalNetwork = "elsewhere"
			}
		}
		nets = append(nets, n)
	}
	f.inst = tf.Instance(t, "t0", "ns", nets)
	if o.noMapping {
		port := engine.Port("7")
		must(f.eng.UpdateNetwork(f.ctx, "t0", f.inst.UUID, "net-dcB", engine.NetworkUpdate{PopSwitchDPID: ptr("00:00:00:00:00:00:00:99"), PopSwitchPort: &port}))
	}
	links, err := f.eng.ListWANLinks(f.ctx, "t0", f.inst.UUID)
	if err != nil || len(links) != 1 {
		t.Fatalf("links = %v, %v", links, err)
	}
	f.link = links[0]
	acts, err := f.db.ListActionsOfItem(f.ctx, f.link.UUID)
	if err != nil || len(acts) != 1 {
		t.Fatalf("actions = %v, %v", acts, err)
	}
	f.create = acts[0]
	if f.conn, err = fake.Factory(connectors.Config{URL: url}); err != nil {
		t.Fatal(err)
	}
	f.runner = actions.NewRunner(&f.db.Store, policy, nil)
	// The target declares ELINE only, as a type without multipoint does:
	// the runner refuses an ELAN from the declaration.
	f.target = actions.Target{AccountID: acct.UUID, WIMID: acct.WIMID, Type: fake.Type, Connector: f.conn,
		Capabilities: connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}, QoS: fake.Capabilities.QoS}}
	return f
}

func ptr[T any](v T) *T { return &v }

// made creates the link's service on the controller and returns the
// CREATE as it stands once that outcome is written: BUILD, with the id.
func (f *fixture) made(t *testing.T) wimro.Action {
	t.Helper()
	id, info, err := f.conn.CreateService(f.ctx, connectors.Request{Key: f.link.UUID, Type: connectors.ServiceELINE, Points: []connectors.ConnectionPoint{
		{ServiceEndpointID: "ep-dcA", Encapsulation: connectors.EncapDot1Q, VLAN: 100},
		{ServiceEndpointID: "ep-dcB", Encapsulation: connectors.EncapDot1Q, VLAN: 101}}})
	if err != nil {
		t.Fatal(err)
	}
	a := f.create
	a.Status, a.WIMInternalID, a.Extra = wimro.ActionBuild, &id, map[string]any{"conn_info": info}
	return a
}

// deleted deletes the instance (the link row goes) and returns its DELETE.
func (f *fixture) deleted(t *testing.T, serviceID *string) wimro.Action {
	t.Helper()
	if serviceID != nil {
		if err := f.db.UpdateWANLink(f.ctx, f.link.UUID, wimro.LinkUpdate{WIMInternalID: serviceID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.eng.DeleteInstance(f.ctx, "t0", f.inst.UUID); err != nil {
		t.Fatal(err)
	}
	acts, err := f.db.ListActionsOfItem(f.ctx, f.link.UUID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.Action == wimro.ActionDelete {
			return a
		}
	}
	t.Fatal("no DELETE action")
	return wimro.Action{}
}

// scripted answers the status calls with a fixed status or error, and
// panics on create when told to; the rest goes to the fake controller.
type scripted struct {
	connectors.Connector
	status    *connectors.ServiceStatus
	err       error // of status calls
	createErr error
	createID  string // answered by CreateService without reaching the controller
	panicky   bool
	// statusPanics makes status calls panic; afterCreate runs once the
	// service is created.
	statusPanics bool
	afterCreate  func()
}

func (s *scripted) GetServiceStatus(ctx context.Context, id string, info map[string]any) (connectors.ServiceStatus, error) {
	if s.statusPanics {
		panic("connector bug in status")
	}
	if s.err != nil {
		return connectors.ServiceStatus{}, s.err
	}
	if s.status != nil {
		return *s.status, nil
	}
	return s.Connector.GetServiceStatus(ctx, id, info)
}

func (s *scripted) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	if s.panicky {
		panic("connector bug")
	}
	if s.createErr != nil {
		return "", nil, s.createErr
	}
	if s.createID != "" {
		return s.createID, nil, nil
	}
	id, info, err := s.Connector.CreateService(ctx, req)
	if s.afterCreate != nil {
		s.afterCreate()
	}
	return id, info, err
}

// want is what one row of the state machine (actions/doc.go) produces.
type want struct {
	status     string // the action's new status
	done       int
	failed     int
	linkStatus string // "" = the link is not touched
	linkMsg    string // a part of the link's error_msg; "" = not checked
	// statusCalls is how many status calls reached the fake controller
	// (nil: not checked).
	statusCalls *int
	msg         string // a part of the action's error_msg; "" = none
	runAfter    [2]time.Duration
	services    int // on the controller afterwards
	// retry: the outcome is a retry (a retry event is written with it);
	// reached, when set: whether the run counts as an attempt.
	retry   bool
	reached *bool
	// qos, when set, is what the controller holds for the one service.
	qos *connectors.QoS
	// vlans, when set, are the VLANs of the controller's one service.
	vlans []int
}

// TestStateMachine runs every row of the action state machine in
// actions/doc.go through Runner.Run against a real database and the fake
// controller, and checks the outcome the completer would write.
func TestStateMachine(t *testing.T) {
	t.Parallel()
	soon := [2]time.Duration{0, time.Second}
	tests := []struct {
		name    string
		opts    fixtureOpts
		prepare func(t *testing.T, f *fixture) (wimro.Action, context.Context)
		want    want
	}{
		{
			name: "CREATE: local network pending -> SCHEDULED, waits",
			opts: fixtureOpts{netStatus: wimro.NetBuild},
			want: want{status: wimro.ActionScheduled, msg: "Still waiting for the local networks to be active: the NFVO reports each one ACTIVE", runAfter: [2]time.Duration{policy.Wait, policy.Wait + time.Second}},
		},
		{
			name: "CREATE: still pending after the wait timeout and enough checks -> FAILED",
			opts: fixtureOpts{netStatus: wimro.NetBuild},
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.create
				a.Extra = map[string]any{"first_attempted_at": time.Now().Add(-2 * time.Hour).Format(time.RFC3339Nano), "wait_attempts": 5.0}
				return a, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "Timeout reached", runAfter: soon},
		},
		{
			name: "CREATE: local network broken -> FAILED",
			opts: fixtureOpts{netStatus: wimro.NetError},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "issue with the local networks", runAfter: soon},
		},
		{
			name: "CREATE: no exit port -> FAILED",
			opts: fixtureOpts{noExitPort: true},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "No external port", runAfter: soon},
		},
		{
			name: "CREATE: no port mapping -> FAILED",
			opts: fixtureOpts{noMapping: true},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "No WIM port mapping found", runAfter: soon},
		},
		{
			name: "CREATE: multipoint -> FAILED",
			opts: fixtureOpts{extraDC: true},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: connectors.MultipointNotSupported + " (the fake connector does not make ELAN services; it makes ELINE)", runAfter: soon},
		},
		{
			// The type's declaration decides, not the connector value
			// (this fake would carry the bandwidth): a WIM whose type or
			// settings changed since the instance was written.
			name: "CREATE: QoS the type does not declare -> FAILED, nothing asked of the controller",
			opts: fixtureOpts{bandwidth: "100"},
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.QoS = []connectors.QoSField{connectors.QoSLatency}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "the fake connector cannot honour bandwidth", runAfter: soon, statusCalls: ptr(0)},
		},
		{
			name: "CREATE: QoS the type declares -> carried to the controller",
			opts: fixtureOpts{bandwidth: "100"},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, services: 1, qos: &connectors.QoS{BandwidthMbps: 100}},
		},
		{
			name: "CREATE: permanent controller error -> FAILED",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.ctrl.FailNext(1, connectors.KindPermanent)
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "injected", runAfter: soon},
		},
		{
			name: "CREATE: retryable controller error -> SCHEDULED, backs off",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.ctrl.FailNext(1, connectors.KindRetryable)
				a := f.create
				a.Attempts = 1 // one run reached the controller before: this is attempt 2
				return a, f.ctx
			},
			// Full jitter over the window of attempt 2 (2 s).
			want: want{status: wimro.ActionScheduled, msg: "injected", runAfter: [2]time.Duration{0, 2*time.Second + time.Second}, services: 0, retry: true, reached: ptr(true)},
		},
		{
			name: "CREATE: 429 with Retry-After -> SCHEDULED, not before the controller asked",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, createErr: &connectors.Error{Kind: connectors.KindRetryable, Status: 429, RetryAfter: 90 * time.Second, Message: "slow down"}}
				return f.create, f.ctx
			},
			// The hint wins over RetryMax (1 min); jitter comes on top.
			want: want{status: wimro.ActionScheduled, msg: "slow down", runAfter: [2]time.Duration{90 * time.Second, 90*time.Second + policy.RetryBase + time.Second}, services: 0, retry: true},
		},
		{
			name: "CREATE: retryable error at the last attempt -> FAILED",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.ctrl.FailNext(1, connectors.KindRetryable)
				a := f.create
				a.Attempts = policy.MaxAttempts - 1
				return a, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "gave up after 3 attempts", runAfter: soon},
		},
		{
			name: "CREATE: interrupted (process stopping) -> SCHEDULED, due at once",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				ctx, cancel := context.WithCancel(f.ctx)
				cancel()
				return f.create, ctx
			},
			want: want{status: wimro.ActionScheduled, msg: "interrupted", runAfter: soon, services: 0, reached: ptr(false)},
		},
		{
			name: "CREATE: service created, controller says ACTIVE at once -> DONE, link ACTIVE, counted done",
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, statusCalls: ptr(1)},
		},
		{
			name: "CREATE: service created, controller says DOWN at once -> DONE, link DOWN with the reason",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusDown, Message: "port down"}}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkDown, linkMsg: "port down", runAfter: soon, services: 1},
		},
		{
			name: "CREATE: service created, controller says BUILD -> BUILD, counted done, refresh later",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusBuild}}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionBuild, done: 1, linkStatus: wimro.LinkBuild, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "CREATE: service created, controller says INACTIVE -> BUILD, link INACTIVE, refresh later",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusInactive}}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionBuild, done: 1, linkStatus: wimro.LinkInactive, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "CREATE: service created, its status call fails -> BUILD with the id, not an error, refresh later",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, err: connectors.HTTPError(503, "busy")}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionBuild, done: 1, linkStatus: wimro.LinkBuild, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "CREATE: service created, its status call panics -> BUILD with the id, refresh later",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, statusPanics: true}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionBuild, done: 1, linkStatus: wimro.LinkBuild, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "CREATE: service created as the process stops -> BUILD with the id, no status call",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				ctx, cancel := context.WithCancel(f.ctx)
				f.target.Connector = &scripted{Connector: f.conn, afterCreate: cancel}
				return f.create, ctx
			},
			want: want{status: wimro.ActionBuild, done: 1, linkStatus: wimro.LinkBuild, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1, statusCalls: ptr(0)},
		},
		{
			name: "CREATE: service already there (a re-run) -> adopted, ACTIVE",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.made(t)
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1},
		},
		{
			name: "CREATE: the controller's service id is not storable text -> FAILED",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, createID: "svc\x00\xff"}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "cannot be stored", runAfter: soon, services: 0},
		},
		{
			name: "CREATE: link gone (instance deleted first) -> SUPERSEDED, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.deleted(t, nil)
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionSuperseded, done: 1, msg: "superseded", runAfter: soon, services: 0},
		},
		{
			name: "CREATE: connector panics -> FAILED with the panic",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, panicky: true}
				return f.create, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "the connector panicked: connector bug", runAfter: soon, services: 0},
		},
		{
			name: "BUILD: controller says BUILD -> BUILD, refresh again",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusBuild}}
				return f.made(t), f.ctx
			},
			want: want{status: wimro.ActionBuild, linkStatus: wimro.LinkBuild, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "BUILD: controller says INACTIVE -> BUILD, refresh again",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusInactive}}
				return f.made(t), f.ctx
			},
			want: want{status: wimro.ActionBuild, linkStatus: wimro.LinkInactive, runAfter: [2]time.Duration{policy.Refresh, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "BUILD: controller says ACTIVE -> DONE",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				return f.made(t), f.ctx
			},
			want: want{status: wimro.ActionDone, linkStatus: wimro.LinkActive, runAfter: soon, services: 1},
		},
		{
			name: "BUILD: controller says DOWN -> DONE, link DOWN with the reason",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusDown, Message: "port down"}}
				return f.made(t), f.ctx
			},
			want: want{status: wimro.ActionDone, linkStatus: wimro.LinkDown, runAfter: soon, services: 1},
		},
		{
			name: "BUILD: controller says ERROR -> DONE, link ERROR",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, status: &connectors.ServiceStatus{Status: connectors.StatusError, Message: "no path"}}
				return f.made(t), f.ctx
			},
			want: want{status: wimro.ActionDone, linkStatus: wimro.LinkError, runAfter: soon, services: 1},
		},
		{
			name: "BUILD: status call fails (any kind, any attempt) -> BUILD, link WIM_ERROR, polled again within the refresh interval",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Connector = &scripted{Connector: f.conn, err: connectors.HTTPError(401, "credentials refused")}
				a := f.made(t)
				a.Attempts = 50
				return a, f.ctx
			},
			want: want{status: wimro.ActionBuild, linkStatus: wimro.LinkWIMError, msg: "credentials refused", runAfter: [2]time.Duration{0, policy.Refresh + time.Second}, services: 1},
		},
		{
			name: "BUILD: link gone (a DELETE waits behind) -> SUPERSEDED",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.made(t)
				f.deleted(t, a.WIMInternalID)
				return a, f.ctx
			},
			want: want{status: wimro.ActionSuperseded, runAfter: soon, services: 1},
		},
		{
			name: "DELETE: service deleted -> DONE, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.made(t)
				return f.deleted(t, a.WIMInternalID), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkDeleted, runAfter: soon, services: 0},
		},
		{
			name: "DELETE: service already gone -> DONE",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				return f.deleted(t, ptr("no-such-service")), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkDeleted, runAfter: soon, services: 0},
		},
		{
			name: "DELETE: no id recorded, nothing on the controller -> DONE",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				return f.deleted(t, nil), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkDeleted, runAfter: soon, services: 0},
		},
		{
			name: "DELETE: no id recorded but a crashed CREATE made the service -> found by key and deleted",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.made(t) // the CREATE's outcome was never written
				return f.deleted(t, nil), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkDeleted, runAfter: soon, services: 0},
		},
		{
			name:    "DELETE: retryable error -> SCHEDULED, backs off",
			prepare: retryableDelete(0),
			want:    want{status: wimro.ActionScheduled, msg: "injected", runAfter: [2]time.Duration{0, policy.RetryMax + time.Second}, services: 1, retry: true, reached: ptr(true)},
		},
		{
			name:    "DELETE: retryable error past MaxAttempts -> SCHEDULED, backs off capped at RetryMax (never gives up)",
			prepare: retryableDelete(5 * policy.MaxAttempts),
			want:    want{status: wimro.ActionScheduled, msg: "injected", runAfter: [2]time.Duration{0, policy.RetryMax + time.Second}, services: 1, retry: true, reached: ptr(true)},
		},
		{
			name: "DELETE: interrupted (process stopping) -> SCHEDULED, due at once, not an attempt",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.made(t)
				d := f.deleted(t, a.WIMInternalID)
				ctx, cancel := context.WithCancel(f.ctx)
				cancel()
				return d, ctx
			},
			want: want{status: wimro.ActionScheduled, msg: "interrupted", runAfter: soon, services: 1, reached: ptr(false)},
		},
		{
			name: "DELETE: permanent error -> FAILED, counted failed, link untouched",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.made(t)
				d := f.deleted(t, a.WIMInternalID)
				f.ctrl.FailNext(1, connectors.KindPermanent)
				return d, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, msg: "Impossible to delete WAN connectivity", runAfter: soon, services: 1},
		},
		{
			name: "EDIT: link gone (instance deleted first) -> SUPERSEDED, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.edit(t)
				f.deleted(t, nil)
				return a, f.ctx
			},
			want: want{status: wimro.ActionSuperseded, done: 1, msg: "superseded", runAfter: soon, services: 1},
		},
		{
			name: "EDIT: edited in place (Edit declared), controller says ACTIVE -> DONE, link ACTIVE, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.Edit = true
				return f.edit(t), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, vlans: []int{100, 401}},
		},
		{
			name: "EDIT: retryable controller error -> SCHEDULED, backs off",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.Edit = true
				a := f.edit(t)
				f.ctrl.FailNext(1, connectors.KindRetryable)
				return a, f.ctx
			},
			want: want{status: wimro.ActionScheduled, msg: "injected", runAfter: [2]time.Duration{0, policy.RetryBase + time.Second}, services: 1, retry: true, reached: ptr(true), vlans: []int{100, 101}},
		},
		{
			name: "EDIT: permanent controller error -> FAILED, link ERROR, counted failed",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.Edit = true
				a := f.edit(t)
				f.ctrl.FailNext(1, connectors.KindPermanent)
				return a, f.ctx
			},
			want: want{status: wimro.ActionFailed, failed: 1, linkStatus: wimro.LinkError, msg: "Impossible to change WAN connectivity", runAfter: soon, services: 1},
		},
		{
			name: "EDIT: link has no service yet (its CREATE failed) -> made as a CREATE makes it, DONE, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.create
				a.Action = wimro.ActionEdit
				return a, f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, vlans: []int{100, 101}},
		},
		{
			name: "EDIT: replace, nothing changed since the service was made -> DONE, the controller not asked",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.edit(t)
				f.setVLAN(t, 101) // reverted before the EDIT ran
				return a, f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, msg: "nothing to change", runAfter: soon, services: 1, reached: ptr(false), vlans: []int{100, 101}},
		},
		{
			name: "EDIT: replace, make-before-break, first run: new service made -> BUILD, link BUILD saying so, old one kept",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.MakeBeforeBreak = true
				return f.edit(t), f.ctx
			},
			want: want{status: wimro.ActionBuild, linkStatus: wimro.LinkBuild, linkMsg: "make-before-break", runAfter: soon, services: 2},
		},
		{
			name: "EDIT: replace, make-before-break, first run again after a crash before its outcome -> the new service adopted",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.MakeBeforeBreak = true
				a := f.edit(t)
				f.runner.Run(f.ctx, f.target, a) // its outcome never written
				return a, f.ctx
			},
			want: want{status: wimro.ActionBuild, linkStatus: wimro.LinkBuild, runAfter: soon, services: 2},
		},
		{
			name: "EDIT BUILD: make-before-break, second run: old service deleted -> DONE, link ACTIVE, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.MakeBeforeBreak = true
				return f.firstRun(t, f.edit(t)), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, vlans: []int{100, 401}},
		},
		{
			name: "EDIT BUILD: make-before-break, second run again after a crash before its outcome -> DONE, one service",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.MakeBeforeBreak = true
				a := f.firstRun(t, f.edit(t))
				f.runner.Run(f.ctx, f.target, a) // its outcome never written
				return a, f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, vlans: []int{100, 401}},
		},
		{
			name: "EDIT BUILD: make-before-break, link gone meanwhile -> old and new services deleted, SUPERSEDED, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.MakeBeforeBreak = true
				a := f.firstRun(t, f.edit(t))
				f.deleted(t, nil)
				return a, f.ctx
			},
			want: want{status: wimro.ActionSuperseded, done: 1, msg: "superseded", runAfter: soon, services: 0},
		},
		{
			name: "EDIT BUILD: a replace half done, retryable error past MaxAttempts -> BUILD, backs off, never gives up",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				f.target.Capabilities.MakeBeforeBreak = true
				a := f.firstRun(t, f.edit(t))
				a.Attempts = 5 * policy.MaxAttempts
				f.ctrl.FailNext(1, connectors.KindRetryable)
				return a, f.ctx
			},
			want: want{status: wimro.ActionBuild, msg: "injected", runAfter: [2]time.Duration{0, policy.RetryMax + time.Second}, services: 2, retry: true, reached: ptr(true)},
		},
		{
			name: "EDIT: replace, break-before-make, first run: old service deleted -> BUILD, link BUILD saying so",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				return f.edit(t), f.ctx
			},
			want: want{status: wimro.ActionBuild, linkStatus: wimro.LinkBuild, linkMsg: "break-before-make", runAfter: soon, services: 0},
		},
		{
			name: "EDIT BUILD: break-before-make, second run: new service made -> DONE, link ACTIVE, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				return f.firstRun(t, f.edit(t)), f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, vlans: []int{100, 401}},
		},
		{
			name: "EDIT BUILD: break-before-make, second run again after a crash before its outcome -> the new service adopted",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.firstRun(t, f.edit(t))
				f.runner.Run(f.ctx, f.target, a) // its outcome never written
				return a, f.ctx
			},
			want: want{status: wimro.ActionDone, done: 1, linkStatus: wimro.LinkActive, runAfter: soon, services: 1, vlans: []int{100, 401}},
		},
		{
			name: "EDIT BUILD: break-before-make, link gone meanwhile -> nothing made, SUPERSEDED, counted done",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.firstRun(t, f.edit(t))
				f.deleted(t, nil)
				return a, f.ctx
			},
			want: want{status: wimro.ActionSuperseded, done: 1, msg: "superseded", runAfter: soon, services: 0},
		},
		{
			name: "an action in a state the machine does not define -> FAILED",
			prepare: func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
				a := f.made(t)
				d := f.deleted(t, a.WIMInternalID)
				d.Status = wimro.ActionBuild
				return d, f.ctx
			},
			want: want{status: wimro.ActionFailed, msg: "is not defined", runAfter: soon, services: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.opts)
			a, ctx := f.create, f.ctx
			if tt.prepare != nil {
				a, ctx = tt.prepare(t, f)
			}
			before := time.Now()
			o := f.runner.Run(ctx, f.target, a)
			w := tt.want
			if o.Status != w.status || o.Done != w.done || o.Failed != w.failed {
				t.Fatalf("outcome %s done=%d failed=%d (msg %v), want %s done=%d failed=%d", o.Status, o.Done, o.Failed, deref(o.ErrorMsg), w.status, w.done, w.failed)
			}
			switch {
			case w.msg == "" && o.ErrorMsg != nil:
				t.Fatalf("error_msg %q, want none", *o.ErrorMsg)
			case w.msg != "" && (o.ErrorMsg == nil || !strings.Contains(*o.ErrorMsg, w.msg)):
				t.Fatalf("error_msg %q, want it to say %q", deref(o.ErrorMsg), w.msg)
			}
			var linkStatus string
			if o.Link != nil && o.Link.Status != nil {
				linkStatus = *o.Link.Status
			}
			if linkStatus != w.linkStatus {
				t.Fatalf("link status %q, want %q", linkStatus, w.linkStatus)
			}
			if w.linkMsg != "" && (o.Link.ErrorMsg == nil || !strings.Contains(*o.Link.ErrorMsg, w.linkMsg)) {
				t.Fatalf("link error_msg %q, want it to say %q", deref(o.Link.ErrorMsg), w.linkMsg)
			}
			if n := f.ctrl.CallCount(fake.MethodGetServiceStatus); w.statusCalls != nil && n != *w.statusCalls {
				t.Fatalf("%d status calls reached the controller, want %d", n, *w.statusCalls)
			}
			if o.Retry != w.retry || (w.reached != nil && o.Reached != *w.reached) {
				t.Fatalf("retry %v, reached the controller %v; want retry %v, reached %v", o.Retry, o.Reached, w.retry, deref(w.reached))
			}
			runAfter := before
			if o.RunAfter != nil {
				runAfter = *o.RunAfter
			}
			if d := runAfter.Sub(before); d < w.runAfter[0]-time.Millisecond || d > w.runAfter[1] {
				t.Fatalf("run_after in %v, want within %v", d, w.runAfter)
			}
			if n := f.ctrl.Count(); n != w.services {
				t.Fatalf("%d services on the controller, want %d", n, w.services)
			}
			if w.qos != nil {
				if q, _ := f.ctrl.QoS(f.ctrl.Services()[0].ID); q != *w.qos {
					t.Fatalf("the controller holds QoS %+v, want %+v", q, *w.qos)
				}
			}
			if w.vlans != nil {
				if got := f.vlansOf(t); !slices.Equal(got, w.vlans) {
					t.Fatalf("the controller's service has VLANs %v, want %v", got, w.vlans)
				}
			}
			if w.done == 1 && a.Action == wimro.ActionCreate && w.services == 1 && (o.WIMInternalID == nil || o.Link.WIMInternalID == nil || *o.WIMInternalID != f.ctrl.Services()[0].ID) {
				t.Fatalf("created without recording the service id: %v", o.WIMInternalID)
			}
		})
	}
}

// retryableDelete prepares the DELETE of a link whose service exists,
// after attempts failed runs, with the controller failing the next call
// retryably.
func retryableDelete(attempts int) func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
	return func(t *testing.T, f *fixture) (wimro.Action, context.Context) {
		a := f.made(t)
		d := f.deleted(t, a.WIMInternalID)
		d.Attempts = attempts
		f.ctrl.FailNext(1, connectors.KindRetryable)
		return d, f.ctx
	}
}

func deref[T any](p *T) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}
