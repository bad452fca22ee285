package wimthread

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro/persistence"
)

// checkTimeout bounds one periodic credentials check.
const checkTimeout = 30 * time.Second

// monitor checks the credentials of every account this process drives,
// each once per MonitorInterval, the checks spread over the interval. A
// check runs in a goroutine of its own, at most one per account (an
// account whose last check has not returned skips its turn) and at most
// monitorParallel at once: a controller that does not answer holds its own
// account's check for up to checkTimeout, not the checks of the others
// (issue 30: one slow controller never slows another account). An
// account newly driven waits for its turn in the next round (a written
// account is checked by the engine at once); the first round starts as
// soon as an account is driven.
func (s *Supervisor) monitor(ctx context.Context) {
	interval := s.opts.MonitorInterval
	if interval <= 0 {
		return
	}
	var calls sync.WaitGroup
	defer calls.Wait()
	each := newPerAccount(1)
	for {
		ids, ok := s.drivenAccounts(ctx, interval)
		if !ok {
			return
		}
		if len(ids) == 0 {
			continue
		}
		gap := interval / time.Duration(len(ids))
		for _, id := range ids {
			start := time.Now()
			if each.take(id) {
				calls.Add(1)
				go func() {
					defer calls.Done()
					defer each.give(id)
					s.checkCredentials(id)
				}()
			}
			if !pause(ctx, gap-time.Since(start)) {
				return
			}
		}
	}
}

// drivenAccounts returns the accounts this process drives, for a round of
// monitoring. With none yet (at start, before the coordinator's first
// assignment) it waits a poll rather than a whole interval and returns
// none; ok is false when the supervisor stops meanwhile.
func (s *Supervisor) drivenAccounts(ctx context.Context, interval time.Duration) (ids []string, ok bool) {
	if ids = s.Accounts(); len(ids) > 0 {
		return ids, true
	}
	return nil, pause(ctx, min(interval, s.opts.Poll))
}

// pause waits d, or returns false at once when ctx ends (the supervisor
// stops).
func pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// checkCredentials runs the connector's CheckCredentials for one driven
// account, with its cached connector, and records the result.
func (s *Supervisor) checkCredentials(id string) {
	a := s.table.active(id)
	if a == nil {
		return // no longer driven here
	}
	t, err := s.targets.connector(a)
	if err != nil {
		return // not readable now (deleted, database down): next round
	}
	started := time.Now()
	ctx, cancel := context.WithTimeout(a.ctx, checkTimeout)
	defer cancel()
	err = t.Connector.CheckCredentials(ctx)
	if a.ctx.Err() != nil {
		return // the account stopped here: its new owner checks it
	}
	s.db.RecordAccountCheck(ctx, a.log.With("connector", t.Type), id, started, t.AccountModifiedAt, err)
	s.signals.CredentialsChecked.Send(id)
}

// StatusCounter counts the accounts by status (persistence.DB).
type StatusCounter interface {
	CountAccountsByStatus(ctx context.Context) (map[string]int, error)
}

// statusCollector runs one count query per scrape: count sends each
// count with its label values, in desc's order.
type statusCollector struct {
	count func(ctx context.Context, send func(n int, labels ...string)) error
	what  string
	desc  *prometheus.Desc
}

// NewAccountStatusCollector returns the collector of
// wimro_accounts_by_status{status}: one query per scrape, over every
// account whichever process owns it. Counted by status rather than a
// gauge per account, to keep the series few with thousands of accounts;
// GET .../wim_accounts names the accounts in ERROR.
func NewAccountStatusCollector(db StatusCounter) prometheus.Collector {
	return &statusCollector{what: "account status", desc: prometheus.NewDesc("wimro_accounts_by_status",
		"WIM accounts by the status of their last credentials check (UNKNOWN, ACTIVE, ERROR).", []string{"status"}, nil),
		count: func(ctx context.Context, send func(int, ...string)) error {
			n, err := db.CountAccountsByStatus(ctx)
			if err != nil {
				return err
			}
			for st, v := range n {
				send(v, st)
			}
			return nil
		}}
}

// LinkStatusCounter counts the WAN links by status and service type
// (persistence.DB).
type LinkStatusCounter interface {
	CountWANLinks(ctx context.Context) (map[persistence.LinkCountKey]int, error)
}

// NewLinkStatusCollector returns the collector of
// wimro_wan_links_by_status{status,service_type}: one query per scrape,
// over every link whichever process drives its account, exact, from the
// counts the links table's triggers keep (persistence.CountWANLinks), not
// a scan of the table; by status and type (at most 7 x 3 series), not per
// link, to keep the series few. sum by (status) gives the totals of
// before the type. GET .../wan_links names the links.
func NewLinkStatusCollector(db LinkStatusCounter) prometheus.Collector {
	return &statusCollector{what: "WAN link status", desc: prometheus.NewDesc("wimro_wan_links_by_status",
		"WAN links by status (BUILD, ACTIVE, DOWN, ERROR, INACTIVE, WIM_ERROR, DELETED), as the actions and monitoring left them, and service type (ELINE, ELAN, L3VPN).",
		[]string{"status", "service_type"}, nil),
		count: func(ctx context.Context, send func(int, ...string)) error {
			n, err := db.CountWANLinks(ctx)
			if err != nil {
				return err
			}
			for k, v := range n {
				send(v, k.Status, k.ServiceType)
			}
			return nil
		}}
}

func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.count(ctx, func(n int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), labels...)
	})
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("wimro: %s: %w", c.what, err))
	}
}
