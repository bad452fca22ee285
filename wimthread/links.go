package wimthread

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/persistence"
)

// monitorParallel bounds the monitoring calls in flight in one process,
// credentials checks and link status calls each: not many, so that a
// controller shared by many accounts is not hit by all of them together.
// Within it each account has a few at most (perAccount), so that a
// controller that does not answer holds its own slots only and the other
// accounts' calls go on (issue 30: a bulkhead per account).
const monitorParallel = 16

// perAccount admits at most per monitoring calls at once per account, and
// at most monitorParallel in all. take never waits: a call over a bound
// skips its turn (the next round makes it), so a slow controller gets
// fewer reads, never another account's.
type perAccount struct {
	per  int
	mu   sync.Mutex
	n    int
	busy map[string]int
}

func newPerAccount(per int) *perAccount { return &perAccount{per: per, busy: map[string]int{}} }

func (p *perAccount) take(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy[id] >= p.per || p.n >= monitorParallel {
		return false
	}
	p.busy[id]++
	p.n++
	return true
}

func (p *perAccount) give(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.busy[id]--; p.busy[id] <= 0 {
		delete(p.busy, id)
	}
	p.n--
}

// linkCallsPerAccount bounds the status calls of one account's links in
// flight at once.
const linkCallsPerAccount = 2

// linkCallTimeout bounds one status call of the monitor: the interval,
// within [1 s, checkTimeout], so that a silent controller's calls do not
// pile up over rounds.
func linkCallTimeout(interval time.Duration) time.Duration {
	return min(checkTimeout, max(interval, time.Second))
}

// monitorLinks re-reads, once per MonitorInterval, every link the driven
// accounts have on their controllers (persistence.ListMonitoredLinks:
// created, ACTIVE, DOWN, ERROR or INACTIVE, no action unfinished), the
// calls spread over the interval, at most monitorParallel at once and
// linkCallsPerAccount per account (a link whose account is at its bound
// waits for the next round), never two for one link. A link the claimer is running is skipped (its
// action owns it); for the rest the write's compare-and-set decides
// (persistence.RecordLinkStatus). One goroutine for the loop and at most
// monitorParallel short-lived ones for the calls, whatever the number of
// links and accounts: an idle account costs one array element of the
// round's query.
func (s *Supervisor) monitorLinks(ctx context.Context) {
	interval := s.opts.MonitorInterval
	if interval <= 0 {
		return
	}
	var (
		calls    sync.WaitGroup
		mu       sync.Mutex
		inflight = map[string]bool{} // links whose call has not returned
	)
	defer calls.Wait()
	each := newPerAccount(linkCallsPerAccount)
	for {
		ids, ok := s.drivenAccounts(ctx, interval)
		if !ok {
			return
		}
		if len(ids) == 0 {
			continue
		}
		start := time.Now()
		links := s.monitoredLinks(ctx, ids)
		if len(links) == 0 {
			if !pause(ctx, interval-time.Since(start)) {
				return
			}
			continue
		}
		gap := interval / time.Duration(len(links))
		for i, l := range links {
			if !pause(ctx, time.Until(start.Add(time.Duration(i)*gap))) {
				return
			}
			a := s.monitorable(l)
			mu.Lock()
			if a == nil || inflight[l.UUID] || !each.take(l.AccountID) {
				mu.Unlock()
				continue
			}
			inflight[l.UUID] = true
			mu.Unlock()
			calls.Add(1)
			go func() {
				defer calls.Done()
				defer func() {
					each.give(l.AccountID)
					mu.Lock()
					delete(inflight, l.UUID)
					mu.Unlock()
				}()
				s.checkLink(a, l, linkCallTimeout(interval))
			}()
		}
		if !pause(ctx, interval-time.Since(start)) {
			return
		}
	}
}

// monitoredLinks lists the links of the accounts to re-read this round;
// none when the database does not answer (the next round tries again).
func (s *Supervisor) monitoredLinks(ctx context.Context, ids []string) []persistence.MonitoredLink {
	lctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	links, err := s.db.ListMonitoredLinks(lctx, ids)
	if err != nil && ctx.Err() == nil {
		s.logger.Warn("list the WAN links to monitor", slog.Int("accounts", len(ids)), slog.Any("error", err))
	}
	return links
}

// monitorable returns the account of l when the link may be read now: its
// account is still driven here and no action of the link is running.
func (s *Supervisor) monitorable(l persistence.MonitoredLink) *account {
	t := s.table
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.accounts[l.AccountID]
	if a == nil || a.stopping || t.busy[l.UUID] {
		return nil
	}
	return a
}

// linkReport is the status a controller's answer gives a link, with its
// message (nil: none, the link's message is cleared).
func linkReport(l persistence.MonitoredLink, st connectors.ServiceStatus, err error) (status string, msg *string, ok bool) {
	text := func(format string, args ...any) *string {
		m := fmt.Sprintf(format, args...)
		return &m
	}
	switch {
	case connectors.IsNotFound(err):
		return wimro.LinkDown, text("the controller no longer has service %s of this WAN link (%v); `wimd reconcile --fix` creates it again", l.ServiceID, err), true
	case err != nil:
		return "", nil, false
	}
	switch st.Status {
	case connectors.StatusActive:
		return wimro.LinkActive, nil, true
	case connectors.StatusDown, connectors.StatusError:
		if st.Message == "" {
			return string(st.Status), text("the controller reports service %s %s", l.ServiceID, st.Status), true
		}
		return string(st.Status), &st.Message, true
	case connectors.StatusBuild, connectors.StatusInactive:
		// Not BUILD: on a link that means an action is making it. The
		// controller says the service exists but does not say it carries
		// traffic: INACTIVE, read again next round like the others.
		m := fmt.Sprintf("the controller reports service %s %s", l.ServiceID, st.Status)
		if st.Message != "" {
			m += ": " + st.Message
		}
		return wimro.LinkInactive, &m, true
	}
	return "", nil, false
}

// checkLink asks the account's controller for the status of one link and
// records a change. A call that fails (timeout, refused, 5xx, 401)
// changes nothing on the link: the account's health check shows a
// controller that cannot be reached.
func (s *Supervisor) checkLink(a *account, l persistence.MonitoredLink, timeout time.Duration) {
	t, err := s.targets.connector(a)
	if err != nil {
		return // not readable now (deleted, database down): next round
	}
	log := a.log.With(slog.String("wan_link_id", l.UUID), slog.String("connector", t.Type))
	if l.InstanceID != nil {
		log = log.With(slog.String("instance_id", *l.InstanceID))
	}
	ctx, cancel := context.WithTimeout(a.ctx, timeout)
	st, err := t.Connector.GetServiceStatus(ctx, l.ServiceID, l.ConnInfo)
	cancel()
	// Told once any change found is recorded (or found not to be).
	defer s.signals.LinkRead.Send(l.UUID)
	if a.ctx.Err() != nil {
		return // the account stopped here: its new owner reads the link
	}
	status, msg, ok := linkReport(l, st, err)
	if !ok {
		if err == nil {
			err = fmt.Errorf("the controller answered the unknown status %q", st.Status)
		}
		log.Info("WAN link status check failed; the link is left as it was", slog.Any("error", err))
		return
	}
	if status == l.Status && equalMsg(msg, l.ErrorMsg) {
		return // nothing new: no write
	}
	ctx, cancel = context.WithTimeout(a.ctx, checkTimeout)
	defer cancel()
	wrote, err := s.db.RecordLinkStatus(ctx, a.lease, persistence.LinkStatus{
		LinkID: l.UUID, From: l.Status, ActionSeq: l.ActionSeq, Status: status, ErrorMsg: msg})
	switch {
	case err != nil:
		if a.ctx.Err() == nil {
			log.Warn("record the WAN link status found by monitoring", slog.Any("error", err))
		}
		return
	case !wrote || status == l.Status:
		return // changed meanwhile (an action, the lease): next round reads it again
	}
	s.opts.Metrics.linkTransition(l.Status, status, l.ServiceType)
	attrs := []any{slog.String("previous_status", l.Status), slog.String("status", status)}
	if status == wimro.LinkActive {
		log.Info("WAN link is ACTIVE again", attrs...)
		return
	}
	log.Warn("WAN link is no longer ACTIVE", append(attrs, slog.String("error", *msg))...)
}

func equalMsg(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
