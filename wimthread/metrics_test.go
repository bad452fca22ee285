package wimthread_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// metricValue is the value of the series of name with labels in g: a
// counter's or gauge's value, a histogram's sample count; 0 when absent.
func metricValue(t testing.TB, g prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return 0
}

// metricSum is the sum of the observations of a histogram without labels.
func metricSum(t testing.TB, g prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetHistogram() != nil {
			return mf.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	return 0
}

// claimStatements reads wimro_claim_actions: how many claim statements
// ran, and how many of them took nothing (its bucket le=0).
func claimStatements(t testing.TB, g prometheus.Gatherer) (claims, empty int) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "wimro_claim_actions" {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			claims += int(h.GetSampleCount())
			for _, bk := range h.GetBucket() {
				if bk.GetUpperBound() == 0 {
					empty += int(bk.GetCumulativeCount())
				}
			}
		}
	}
	return claims, empty
}

// stub answers each call with the error of its operation.
type stub struct{ err map[string]error }

func (s stub) CheckCredentials(context.Context) error { return s.err["check"] }
func (s stub) CreateService(context.Context, connectors.Request) (string, map[string]any, error) {
	return "id", nil, s.err["create"]
}
func (s stub) GetServiceStatus(context.Context, string, map[string]any) (connectors.ServiceStatus, error) {
	return connectors.ServiceStatus{Status: connectors.StatusActive}, s.err["status"]
}
func (s stub) EditService(context.Context, string, map[string]any, connectors.Request) (map[string]any, error) {
	return nil, s.err["edit"]
}
func (s stub) DeleteService(context.Context, string, map[string]any) error { return s.err["delete"] }
func (s stub) ListServices(context.Context) ([]connectors.Service, error)  { return nil, s.err["list"] }
func (s stub) ClearAll(context.Context) error                              { return s.err["clear"] }

func TestInstrumentedConnectorObservesEveryCallByOutcome(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m, err := wimthread.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wimthread.NewMetrics(reg); err == nil {
		t.Fatal("registering the metrics twice on one registry succeeded")
	}
	c := m.Instrument("stubby", stub{err: map[string]error{
		"create": connectors.Errorf(connectors.KindRetryable, "busy"),
		"status": connectors.Errorf(connectors.KindNotFound, "gone"),
		"delete": connectors.Errorf(connectors.KindUnauthorized, "no"),
		"clear":  fmt.Errorf("unclassified"),
	}})
	ctx := t.Context()
	if id, _, err := c.CreateService(ctx, connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: nil}); id != "id" || connectors.KindOf(err) != connectors.KindRetryable {
		t.Fatalf("create through the decorator: %q, %v", id, err)
	}
	_, _, _ = c.CreateService(ctx, connectors.Request{Key: "k", Type: connectors.ServiceELINE, Points: nil})
	_, _ = c.GetServiceStatus(ctx, "id", nil)
	_, _ = c.EditService(ctx, "id", nil, connectors.Request{})
	_ = c.DeleteService(ctx, "id", nil)
	_, _ = c.ListServices(ctx)
	_ = c.ClearAll(ctx)
	_ = c.CheckCredentials(ctx)

	want := map[[2]string]float64{
		{"create_service", "retryable"}:     2,
		{"get_service_status", "not_found"}: 1,
		{"edit_service", "ok"}:              1,
		{"delete_service", "unauthorized"}:  1,
		{"list_services", "ok"}:             1,
		{"clear_all", "permanent"}:          1,
		{"check_credentials", "ok"}:         1,
	}
	for k, n := range want {
		got := metricValue(t, reg, "wimro_connector_call_duration_seconds", map[string]string{"connector": "stubby", "operation": k[0], "outcome": k[1]})
		if got != n {
			t.Errorf("%s %s: %v observations, want %v", k[0], k[1], got, n)
		}
	}
	if n := testutil.CollectAndCount(reg, "wimro_connector_call_duration_seconds"); n != len(want) {
		t.Errorf("%d series, want %d", n, len(want))
	}
	// No metrics: the connector is returned as is.
	var none *wimthread.Metrics
	f := failing.New("x", connectors.KindPermanent)
	if none.Instrument("failing", f) != f {
		t.Error("nil metrics wrapped the connector")
	}
}

// recording is a stub that records the request it was asked.
type recording struct {
	stub
	got *connectors.Request
}

func (s recording) CreateService(_ context.Context, req connectors.Request) (string, map[string]any, error) {
	*s.got = req
	return "id", nil, nil
}

// The decorator passes the whole create request on: QoS, service type
// and points reach the connector it wraps.
func TestInstrumentedConnectorPassesTheRequest(t *testing.T) {
	t.Parallel()
	m, err := wimthread.NewMetrics(prometheus.NewPedanticRegistry())
	if err != nil {
		t.Fatal(err)
	}
	want := connectors.Request{Key: "k", Type: connectors.ServiceELAN, QoS: connectors.QoS{BandwidthMbps: 100, LatencyMs: 5},
		Points: []connectors.ConnectionPoint{{ServiceEndpointID: "a"}, {ServiceEndpointID: "b"}, {ServiceEndpointID: "c"}}}
	var got connectors.Request
	c := m.Instrument("qos", recording{got: &got})
	if _, _, err := c.CreateService(t.Context(), want); err != nil || got.Key != want.Key || got.Type != want.Type || got.QoS != want.QoS || len(got.Points) != 3 {
		t.Fatalf("create through the decorator: %v, the connector got %+v, want %+v", err, got, want)
	}
}

func TestQueueCollectorReadsTheQueueInOneQuery(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	coll := wimthread.NewQueueCollector(b.db)
	if n := testutil.CollectAndCount(coll); n != 0 {
		t.Fatalf("empty queue: %d series", n)
	}
	// No supervisor runs: the CREATE actions of 3 links wait, due now.
	b.instance(t, "ns", 3, wimro.NetActive)
	acct := b.accounts(t)[0]
	want := fmt.Sprintf(`# HELP wimro_queue_actions Actions to run (SCHEDULED or BUILD), by WIM account.
# TYPE wimro_queue_actions gauge
wimro_queue_actions{account_id=%q} 3
`, acct)
	if err := testutil.CollectAndCompare(coll, strings.NewReader(want), "wimro_queue_actions"); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(coll)
	// Nothing runs: the age grows with the database's clock alone.
	waitFor(t, "the oldest due action ages", func() (bool, string) {
		age := metricValue(t, reg, "wimro_queue_oldest_due_seconds", map[string]string{"account_id": acct})
		return age > 0, fmt.Sprintf("age %v", age)
	})
}

// wimro_wan_links_by_status counts by status and service type, from the
// links table's counts: links of the three types, in several statuses,
// each a series of its own.
func TestLinkStatusGaugeByServiceType(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	// No supervisor runs: the engine's 3 links (ELINEs over dcA and dcB)
	// stay BUILD until set below.
	v := b.instance(t, "ns", 3, wimro.NetActive)
	links, err := b.db.ListWANLinks(b.ctx, v.UUID)
	if err != nil || len(links) != 3 {
		t.Fatalf("links = %+v, %v", links, err)
	}
	l3 := links[0]
	l3.UUID, l3.ServiceType = "", "L3VPN"
	for range 2 {
		l, err := b.db.CreateWANLinks(b.ctx, []wimro.WANLink{l3})
		if err != nil {
			t.Fatal(err)
		}
		links = append(links, l...)
	}
	if err := b.db.SetWANLinkServiceType(b.ctx, links[2].UUID, "ELAN"); err != nil {
		t.Fatal(err)
	}
	for i, st := range []string{wimro.LinkActive, wimro.LinkDown, wimro.LinkError, wimro.LinkActive, wimro.LinkDown} {
		if err := b.db.UpdateWANLink(b.ctx, links[i].UUID, wimro.LinkUpdate{Status: &st}); err != nil {
			t.Fatal(err)
		}
	}
	want := `# HELP wimro_wan_links_by_status WAN links by status (BUILD, ACTIVE, DOWN, ERROR, INACTIVE, WIM_ERROR, DELETED), as the actions and monitoring left them, and service type (ELINE, ELAN, L3VPN).
# TYPE wimro_wan_links_by_status gauge
wimro_wan_links_by_status{service_type="ELAN",status="ERROR"} 1
wimro_wan_links_by_status{service_type="ELINE",status="ACTIVE"} 1
wimro_wan_links_by_status{service_type="ELINE",status="DOWN"} 1
wimro_wan_links_by_status{service_type="L3VPN",status="ACTIVE"} 1
wimro_wan_links_by_status{service_type="L3VPN",status="DOWN"} 1
`
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(wimthread.NewLinkStatusCollector(b.db))
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "wimro_wan_links_by_status"); err != nil {
		t.Fatal(err)
	}
}

func TestMetricsMoveAsAnInstanceGoesActive(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", map[string]any{"build_polls": 1})
	reg := prometheus.NewPedanticRegistry()
	m, err := wimthread.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := b.start(t, registry(), wimthread.Options{Metrics: m})
	reg.MustRegister(wimthread.NewSupervisorCollector(s), wimthread.NewQueueCollector(b.db))

	v := b.instance(t, "ns", 2, wimro.NetActive)
	if ia := b.actionDone(t, v.UUID, v.ActionID); ia.Done != 2 {
		t.Fatalf("create: %d done %d failed", ia.Done, ia.Failed)
	}
	b.linksActive(t, v.UUID)
	if got := metricValue(t, reg, "wimro_actions_finished_total", map[string]string{"action": "CREATE", "status": "DONE", "connector": "fake"}); got != 2 {
		t.Errorf("CREATE DONE finished %v, want 2", got)
	}
	if got := metricValue(t, reg, "wimro_connector_call_duration_seconds", map[string]string{"connector": "fake", "operation": "create_service", "outcome": "ok"}); got < 2 {
		t.Errorf("%v create_service calls observed, want at least 2", got)
	}
	if got := metricValue(t, reg, "wimro_workers_running", nil); got != 1 {
		t.Errorf("workers running %v, want 1", got)
	}
	if got := metricValue(t, reg, "wimro_accounts_owned", nil); got != 1 {
		t.Errorf("accounts owned %v, want 1", got)
	}
	b.noUnfinished(t)
	// Two CREATEs (the service answers BUILD once) and their two refreshes:
	// four claimed, four outcomes written, in batches. The histograms are
	// observed after the write, so they may trail the database a moment.
	sig := s.TestSignals()
	sig.OutcomesWritten.Until(t, patience, "the batches observed", func() (bool, string) {
		claimed, written := metricSum(t, reg, "wimro_claim_actions"), metricSum(t, reg, "wimro_outcome_batch_actions")
		writes := metricValue(t, reg, "wimro_outcome_write_duration_seconds", nil)
		return claimed == 4 && written == 4 && writes >= 1, fmt.Sprintf("claimed %v, written %v in %v writes", claimed, written, writes)
	})
	// The last outcome written wakes a claim, which finds nothing: an
	// empty claim is observed too.
	sig.Claimed.Until(t, patience, "an empty claim observed", func() (bool, string) {
		claims, empty := claimStatements(t, reg)
		return empty >= 1, fmt.Sprintf("%d claims, %d empty", claims, empty)
	})
	if n := testutil.CollectAndCount(wimthread.NewQueueCollector(b.db), "wimro_queue_actions"); n != 0 {
		t.Errorf("%d queue series with nothing to run", n)
	}
}

// blocking is a connector whose CreateService waits for release.
type blocking struct {
	stub
	release <-chan struct{}
}

func (c blocking) CreateService(ctx context.Context, req connectors.Request) (string, map[string]any, error) {
	select {
	case <-c.release:
		return req.Key, nil, nil
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
}

func TestClaimsHeldWhileActionsRun(t *testing.T) {
	t.Parallel()
	// The WIM is of type fake, built by a blocking connector.
	b := setup(t, "fake", nil)
	release := make(chan struct{})
	r := connectors.NewRegistry()
	r.Register("fake", func(connectors.Config) (connectors.Connector, error) {
		return blocking{release: release}, nil
	}, connectors.Capabilities{Services: []connectors.ServiceType{connectors.ServiceELINE}})
	reg := prometheus.NewPedanticRegistry()
	m, err := wimthread.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := b.start(t, r, wimthread.Options{Metrics: m})
	reg.MustRegister(wimthread.NewSupervisorCollector(s), wimthread.NewQueueCollector(b.db))
	v := b.instance(t, "ns", 2, wimro.NetActive)
	sig := s.TestSignals()
	sig.Claimed.Until(t, patience, "two claims held", func() (bool, string) {
		n := metricValue(t, reg, "wimro_claims_held", nil)
		return n == 2, fmt.Sprintf("%v held", n)
	})
	acct := b.accounts(t)[0]
	if n := metricValue(t, reg, "wimro_queue_actions", map[string]string{"account_id": acct}); n != 2 {
		t.Errorf("queue %v while both run, want 2", n)
	}
	close(release)
	b.actionDone(t, v.UUID, v.ActionID)
	b.noUnfinished(t)
	sig.OutcomesWritten.Until(t, patience, "no claim held", func() (bool, string) {
		n := metricValue(t, reg, "wimro_claims_held", nil)
		return n == 0, fmt.Sprintf("%v held", n)
	})
	if got := metricValue(t, reg, "wimro_actions_finished_total", map[string]string{"action": "CREATE", "status": "DONE", "connector": "fake"}); got < 2 {
		t.Errorf("CREATE finished %v, want at least 2", got)
	}
}

// failingStats is a database that does not answer.
type failingStats struct{}

func (failingStats) QueueStats(context.Context) ([]persistence.QueueStat, error) {
	return nil, errors.New("database away")
}

func TestQueueCollectorErrorLeavesTheOtherMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	if _, err := wimthread.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	reg.MustRegister(wimthread.NewQueueCollector(failingStats{}))
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "wimro_test_total", Help: "a metric besides"})
	c.Inc()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err == nil || !strings.Contains(err.Error(), "database away") {
		t.Fatalf("gather error = %v, want the query's", err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	if !names["wimro_test_total"] || names["wimro_queue_actions"] || names["wimro_queue_oldest_due_seconds"] {
		t.Fatalf("gathered %v, want the other metrics and no queue series", names)
	}
}

// wimro_actions_finished_total counts an action once, when a run ends it
// (DONE, FAILED): never the runs that leave it to run again, a CREATE
// waiting for its local networks, a retry, a BUILD poll.
func TestActionsFinishedCountsOnlyEndedActions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		config  map[string]any // the account's
		net     string         // the local networks' status at creation
		failing int            // retryable failures of the controller first
		status  string         // the action's end
	}{
		{name: "waits for its local networks", net: wimro.NetBuild, status: wimro.ActionDone},
		{name: "retried twice", net: wimro.NetActive, failing: 2, status: wimro.ActionDone},
		{name: "polled while BUILD", config: map[string]any{"build_polls": 2}, net: wimro.NetActive, status: wimro.ActionDone},
		{name: "gives up", net: wimro.NetActive, failing: 10, status: wimro.ActionFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "fake", tt.config)
			if tt.failing > 0 {
				b.ctrl.FailNext(tt.failing, connectors.KindRetryable)
			}
			reg := prometheus.NewPedanticRegistry()
			m, err := wimthread.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			b.start(t, registry(), wimthread.Options{Metrics: m})
			v := b.instance(t, "ns", 1, tt.net)
			if tt.net != wimro.NetActive {
				b.waitedForNetworks(t, v, 2)
				for _, n := range v.Networks {
					if _, err := b.eng.UpdateNetwork(b.ctx, "t0", v.UUID, n.UUID, engine.NetworkUpdate{Status: ptr(wimro.NetActive)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			b.actionDone(t, v.UUID, v.ActionID)
			b.noUnfinished(t)
			// Counted once written: the metric may trail the database.
			b.written(t, "the end counted", func() (bool, string) {
				n := metricValue(t, reg, "wimro_actions_finished_total", map[string]string{"action": "CREATE", "status": tt.status})
				return n >= 1, fmt.Sprintf("%v", n)
			})
			want := fmt.Sprintf(`# HELP wimro_actions_finished_total Actions finished by a run, by action (CREATE, DELETE), the status they ended in (DONE, FAILED, SUPERSEDED) and connector (WIM type); a run that leaves its action to run again (a wait, a retry, a BUILD poll) is not counted.
# TYPE wimro_actions_finished_total counter
wimro_actions_finished_total{action="CREATE",connector="fake",status=%q} 1
`, tt.status)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "wimro_actions_finished_total"); err != nil {
				t.Error(err)
			}
		})
	}
}

// wimro_account_leases_lost_total counts each lease lost while wanted, by
// why: a renewal that found it taken, or a bound that passed unrenewed.
func TestLeaseLossesCounted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, reason string
		// lose makes the keeper lose the account's lease; the returned
		// function ends what it did.
		lose func(t *testing.T, b *bundle, account string) func()
	}{
		{name: "taken by another process", reason: "renewal", lose: func(t *testing.T, b *bundle, account string) func() {
			// Another process, alive for an hour, holds it now.
			if _, err := b.db.Pool().Exec(b.ctx, `INSERT INTO wim_process_leases (owner, epoch, expires_at) VALUES ('another', 1, now() + interval '1 hour')`); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.Pool().Exec(b.ctx, `UPDATE wim_account_leases SET owner = 'another', epoch = epoch + 1, proc_epoch = 1
				WHERE account_id = $1`, account); err != nil {
				t.Fatal(err)
			}
			return func() {}
		}},
		{name: "renewals held past the local bound", reason: "local_bound", lose: func(t *testing.T, b *bundle, account string) func() {
			// Another session holds the process lease row: every
			// renewal waits for it and gives up at its deadline.
			tx, err := b.db.Pool().Begin(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(b.ctx, `SELECT 1 FROM wim_process_leases WHERE owner = 'only' FOR UPDATE`); err != nil {
				t.Fatal(err)
			}
			return func() { tx.Rollback(context.Background()) }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, "fake", nil)
			ids := b.accounts(t)
			reg := prometheus.NewPedanticRegistry()
			m, err := wimthread.NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			s := wimthread.New(b.db, b.conns(registry(), nil, m), nil, wimthread.Options{Owner: "only", Policy: fast, Poll: 100 * time.Millisecond,
				Lease: time.Second, Metrics: m})
			sig := s.TestSignals()
			sig.Init()
			if err := s.Start(b.ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if err := s.Stop(ctx); err != nil {
					t.Errorf("stop: %v", err)
				}
			})
			lost := func(reason string) float64 {
				return metricValue(t, reg, "wimro_account_leases_lost_total", map[string]string{"reason": reason})
			}
			s.SetAccounts(ids)
			sig.LeasesTaken.Wait(t, patience, "the lease taken")
			if got := s.Owned(); len(got) != 1 {
				t.Fatalf("owned %v after the lease was taken, want the account", got)
			}
			if n, n2 := lost("renewal"), lost("local_bound"); n != 0 || n2 != 0 {
				t.Fatalf("leases lost before any loss: renewal %v, local_bound %v", n, n2)
			}
			end := tt.lose(t, b, ids[0])
			defer end()
			sig.LeaseLost.WaitFor(t, patience, "the lease lost ("+tt.reason+")", func(l wimthread.LeaseLoss) bool {
				return l == wimthread.LeaseLoss{Account: ids[0], Reason: tt.reason}
			})
			if n := lost(tt.reason); n < 1 || len(s.Owned()) != 0 {
				t.Fatalf("%v leases lost (%s) counted, owned %v; want the loss counted and nothing owned", n, tt.reason, s.Owned())
			}
		})
	}
}
