package wimthread

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// Metrics are the workers' Prometheus metrics, registered on the registry
// they were built with (Options.Metrics); nil records nothing.
type Metrics struct {
	finished    *prometheus.CounterVec
	pastMax     *prometheus.CounterVec
	calls       *prometheus.HistogramVec
	transitions *prometheus.CounterVec
	claimed     prometheus.Histogram
	batch       prometheus.Histogram
	write       prometheus.Histogram
	leasesLost  *prometheus.CounterVec
}

// batchBuckets are the buckets of the claim and outcome batch sizes: one
// action up to a full statement (maxClaim, maxBatch).
var batchBuckets = []float64{1, 2, 5, 10, 25, 50, 100, 250, 500}

// ConnectorBuckets are the buckets of wimro_connector_call_duration_seconds:
// from a local fake to a controller at its timeout.
var ConnectorBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewMetrics registers the workers' metrics on reg:
// wimro_actions_finished_total{action,status,connector} (actions ended by
// a run: DONE, FAILED, SUPERSEDED),
// wimro_connector_call_duration_seconds{connector,operation,outcome},
// wimro_wan_link_transitions_total{from,to,service_type},
// wimro_delete_retries_past_max_total{connector},
// wimro_account_leases_lost_total{reason}, and how the claimer and the
// completer batch: wimro_claim_actions, wimro_outcome_batch_actions and
// wimro_outcome_write_duration_seconds.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wimro_actions_finished_total",
			Help: "Actions finished by a run, by action (CREATE, DELETE), the status they ended in (DONE, FAILED, SUPERSEDED) and connector (WIM type); a run that leaves its action to run again (a wait, a retry, a BUILD poll) is not counted.",
		}, []string{"action", "status", "connector"}),
		pastMax: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wimro_delete_retries_past_max_total",
			Help: "Retries written of DELETE actions that have failed MaxAttempts times or more, by connector (WIM type): a DELETE never gives up, and until it succeeds its service stays on the controller.",
		}, []string{"connector"}),
		calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "wimro_connector_call_duration_seconds",
			Help:    "Duration of connector calls, by connector (WIM type), operation and outcome (ok or the error kind: retryable, permanent, not_found, unauthorized).",
			Buckets: ConnectorBuckets,
		}, []string{"connector", "operation", "outcome"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wimro_wan_link_transitions_total",
			Help: "WAN link status changes found by monitoring (the link re-read from its controller), by status before (from) and after (to): ACTIVE, DOWN, ERROR, INACTIVE, and the link's service type (ELINE, ELAN, L3VPN).",
		}, []string{"from", "to", "service_type"}),
		claimed: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wimro_claim_actions",
			Help:    "Actions taken by one claim statement (of every account this process owns); a claim that found nothing due is observed as 0 (bucket le=0).",
			Buckets: append([]float64{0}, batchBuckets...),
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wimro_outcome_batch_actions",
			Help:    "Action outcomes written by one statement of the completer.",
			Buckets: batchBuckets,
		}),
		write: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "wimro_outcome_write_duration_seconds",
			Help:    "Time to write one batch of action outcomes, retries while the database is away included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "wimro_account_leases_lost_total",
			Help: "Account leases this process lost while it wanted them, by reason: renewal (a renewal found the lease expired or taken by another process) or local_bound (not renewed within its local bound: the database did not answer in time, or the process was paused).",
		}, []string{"reason"}),
	}
	// Both reasons exist from the start, at 0: an alert on their increase
	// sees the first loss.
	for _, r := range []string{lostRenewal, lostLocalBound} {
		m.leasesLost.WithLabelValues(r)
	}
	for _, c := range []prometheus.Collector{m.finished, m.pastMax, m.calls, m.transitions, m.claimed, m.batch, m.write, m.leasesLost} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// The reasons of wimro_account_leases_lost_total.
const (
	lostRenewal    = "renewal"
	lostLocalBound = "local_bound"
)

func (m *Metrics) leaseLost(reason string) {
	if m != nil {
		m.leasesLost.WithLabelValues(reason).Inc()
	}
}

// ended says whether an action left in status is over: no run takes it
// again (actions/doc.go has the state machine).
func ended(status string) bool {
	switch status {
	case wimro.ActionDone, wimro.ActionFailed, wimro.ActionSuperseded:
		return true
	}
	return false
}

func (m *Metrics) actionFinished(action, status, connector string) {
	if m != nil {
		m.finished.WithLabelValues(action, status, connector).Inc()
	}
}

func (m *Metrics) deleteRetriedPastMax(connector string) {
	if m != nil {
		m.pastMax.WithLabelValues(connector).Inc()
	}
}

func (m *Metrics) claimTook(n int) {
	if m != nil {
		m.claimed.Observe(float64(n))
	}
}

func (m *Metrics) batchWritten(n int, took time.Duration) {
	if m != nil {
		m.batch.Observe(float64(n))
		m.write.Observe(took.Seconds())
	}
}

func (m *Metrics) linkTransition(from, to, serviceType string) {
	if m != nil {
		m.transitions.WithLabelValues(from, to, serviceType).Inc()
	}
}

// Instrument wraps c so every call is observed in
// wimro_connector_call_duration_seconds under the connector name. With nil
// metrics it returns c.
func (m *Metrics) Instrument(name string, c connectors.Connector) connectors.Connector {
	if m == nil || c == nil {
		return c
	}
	return &instrumented{next: c, name: name, calls: m.calls}
}

// instrumented is a connectors.Connector that times the calls of another.
type instrumented struct {
	next  connectors.Connector
	name  string
	calls *prometheus.HistogramVec
}

func (c *instrumented) observe(op string, start time.Time, err error) {
	outcome := "ok"
	if err != nil {
		outcome = connectors.KindOf(err).String()
	}
	c.calls.WithLabelValues(c.name, op, outcome).Observe(time.Since(start).Seconds())
}

func (c *instrumented) CheckCredentials(ctx context.Context) error {
	start := time.Now()
	err := c.next.CheckCredentials(ctx)
	c.observe("check_credentials", start, err)
	return err
}

func (c *instrumented) CreateService(ctx context.Context, req connectors.Request) (id string, connInfo map[string]any, err error) {
	start := time.Now()
	id, connInfo, err = c.next.CreateService(ctx, req)
	c.observe("create_service", start, err)
	return id, connInfo, err
}

func (c *instrumented) GetServiceStatus(ctx context.Context, id string, connInfo map[string]any) (connectors.ServiceStatus, error) {
	start := time.Now()
	st, err := c.next.GetServiceStatus(ctx, id, connInfo)
	c.observe("get_service_status", start, err)
	return st, err
}

func (c *instrumented) EditService(ctx context.Context, id string, connInfo map[string]any, req connectors.Request) (map[string]any, error) {
	start := time.Now()
	info, err := c.next.EditService(ctx, id, connInfo, req)
	c.observe("edit_service", start, err)
	return info, err
}

func (c *instrumented) DeleteService(ctx context.Context, id string, connInfo map[string]any) error {
	start := time.Now()
	err := c.next.DeleteService(ctx, id, connInfo)
	c.observe("delete_service", start, err)
	return err
}

func (c *instrumented) ListServices(ctx context.Context) ([]connectors.Service, error) {
	start := time.Now()
	s, err := c.next.ListServices(ctx)
	c.observe("list_services", start, err)
	return s, err
}

func (c *instrumented) ClearAll(ctx context.Context) error {
	start := time.Now()
	err := c.next.ClearAll(ctx)
	c.observe("clear_all", start, err)
	return err
}

// instrument wraps an account's connector (already timed by
// accountconn's Instrument, Metrics.Instrument in wimd) in its fence
// (fence.go), and records its name for wimro_actions_finished_total.
func (g *targets) instrument(a *account, name string, c connectors.Connector) connectors.Connector {
	a.connName.Store(&name)
	if g.metrics != nil {
		// The connector's series exists at 0 from its first account: an
		// alert on its increase sees the first retry past the maximum.
		g.metrics.pastMax.WithLabelValues(name)
	}
	return fenced{c}
}

// countFinished counts the outcomes of batch that were written (errs are
// FinishActions' per-outcome errors) and ended their action. An outcome
// that leaves it SCHEDULED or BUILD (waiting for local networks, a retry,
// a status poll) is not a finished run: counted, a CREATE waiting for its
// networks every few seconds outnumbered every real outcome, and each
// action that ends was counted again at its end.
func (c *completer) countFinished(batch []outcome, errs []error) {
	for i, o := range batch {
		if i < len(errs) && errs[i] != nil {
			continue
		}
		name := ""
		if p := o.acct.connName.Load(); p != nil {
			name = *p
		}
		if ended(o.Outcome.Status) {
			c.metrics.actionFinished(o.Action.Action, o.Outcome.Status, name)
		}
		if c.runner.PastMaxAttempts(o.Action, o.Outcome) {
			c.metrics.deleteRetriedPastMax(name)
		}
	}
}

// ClaimsHeld returns how many action claims this process holds and
// renews (actions running or having their outcome written).
func (s *Supervisor) ClaimsHeld() int { return s.claims.held() }

// supervisorCollector reads the supervisor at scrape time.
type supervisorCollector struct {
	s                       *Supervisor
	workers, claims, leases *prometheus.Desc
}

// NewSupervisorCollector returns the collector of wimro_workers_running,
// wimro_claims_held and wimro_accounts_owned, read from s at each scrape.
func NewSupervisorCollector(s *Supervisor) prometheus.Collector {
	return &supervisorCollector{s: s,
		workers: prometheus.NewDesc("wimro_workers_running", "WIM accounts this process drives (lease held, actions claimed for it); an account costs a map entry, not a goroutine.", nil, nil),
		claims:  prometheus.NewDesc("wimro_claims_held", "Action claims this process holds and renews.", nil, nil),
		leases:  prometheus.NewDesc("wimro_accounts_owned", "WIM accounts whose lease this process holds.", nil, nil),
	}
}

func (c *supervisorCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.workers
	ch <- c.claims
	ch <- c.leases
}

func (c *supervisorCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.workers, prometheus.GaugeValue, float64(len(c.s.Accounts())))
	ch <- prometheus.MustNewConstMetric(c.claims, prometheus.GaugeValue, float64(c.s.ClaimsHeld()))
	ch <- prometheus.MustNewConstMetric(c.leases, prometheus.GaugeValue, float64(len(c.s.Owned())))
}

// QueueStatter is what the queue collector reads: persistence.DB.
type QueueStatter interface {
	QueueStats(ctx context.Context) ([]persistence.QueueStat, error)
}

// queueCollector runs one query at each scrape.
type queueCollector struct {
	db              QueueStatter
	timeout         time.Duration
	actions, oldest *prometheus.Desc
}

// NewQueueCollector returns the collector of wimro_queue_actions{account_id}
// and wimro_queue_oldest_due_seconds{account_id}: one query
// (persistence.QueueStats) per scrape, over every account with actions to
// run, whichever process owns it.
func NewQueueCollector(db QueueStatter) prometheus.Collector {
	return &queueCollector{db: db, timeout: 5 * time.Second,
		actions: prometheus.NewDesc("wimro_queue_actions", "Actions to run (SCHEDULED or BUILD), by WIM account.", []string{"account_id"}, nil),
		oldest:  prometheus.NewDesc("wimro_queue_oldest_due_seconds", "How long the oldest due action of a WIM account has waited since it became due; 0 when none is due.", []string{"account_id"}, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.actions
	ch <- c.oldest
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	stats, err := c.db.QueueStats(ctx)
	if err != nil {
		// The scrape reports the error; the other metrics are still served.
		ch <- prometheus.NewInvalidMetric(c.actions, errors.Join(errors.New("wimro: queue stats"), err))
		return
	}
	for _, st := range stats {
		ch <- prometheus.MustNewConstMetric(c.actions, prometheus.GaugeValue, float64(st.Actions), st.AccountID)
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, st.OldestDue.Seconds(), st.AccountID)
	}
}
