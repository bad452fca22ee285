package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/persistence"
)

// worker runs the actions of one account.
type worker struct {
	s        *Supervisor
	id       string
	log      *slog.Logger
	cancel   context.CancelFunc
	wake     chan struct{} // look for work now
	reload   chan struct{} // rebuild the connector first
	results  chan string   // a link finished and its outcome is written
	outcomes chan persistence.Finished
}

func (s *Supervisor) startWorker(id string) *worker {
	ctx, cancel := context.WithCancel(s.ctx)
	w := &worker{
		s: s, id: id, cancel: cancel,
		log:      s.logger.With(slog.String("account_id", id)),
		wake:     make(chan struct{}, 1),
		reload:   make(chan struct{}, 1),
		results:  make(chan string, s.opts.Parallel),
		outcomes: make(chan persistence.Finished, s.opts.Parallel),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		w.run(ctx)
	}()
	return w
}

func (w *worker) stop() { w.cancel() }

// markReload makes the worker rebuild its connector before its next
// action, without waking it.
func (w *worker) markReload() {
	select {
	case w.reload <- struct{}{}:
	default:
	}
}

// poke wakes the worker without blocking; reload also rebuilds its
// connector.
func (w *worker) poke(reload bool) {
	if reload {
		w.markReload()
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// target builds the connector of the account from the database. A
// connector that cannot be built is replaced by one that fails every
// action with the reason, as OSM's FailingConnector did.
func (w *worker) target(ctx context.Context) (actions.Target, error) {
	db := w.s.db
	a, err := db.GetAccount(ctx, w.id)
	if err != nil {
		return actions.Target{}, err
	}
	t := actions.Target{AccountID: a.UUID, WIMID: a.WIMID}
	wim, err := db.GetWIM(ctx, a.WIMID)
	if err != nil {
		return actions.Target{}, err
	}
	mappings, err := db.ListPortMappings(ctx, persistence.PortMappingFilter{WIMIDs: []string{wim.UUID}})
	if err != nil {
		return actions.Target{}, err
	}
	t.Mappings = mappings
	t.Datacenters = map[string]wimro.Datacenter{}
	for _, m := range mappings {
		if _, ok := t.Datacenters[m.DatacenterID]; ok {
			continue
		}
		dc, err := db.GetDatacenter(ctx, m.DatacenterID, "")
		if err != nil {
			return actions.Target{}, err
		}
		t.Datacenters[dc.UUID] = dc
	}
	password := ""
	if len(a.Password) > 0 {
		b, err := w.s.box.Open(a.Password)
		if err != nil {
			t.Connector = failing.New(fmt.Sprintf("Error when reading the password of WIM account %s: %v", a.UUID, err), connectors.KindPermanent)
			return t, nil
		}
		password = string(b)
	}
	cfg := connectors.Config{
		WIMID: wim.UUID, WIMName: wim.Name, Type: wim.Type, URL: wim.URL, WIMConfig: wim.Config,
		AccountID: a.UUID, AccountName: deref(a.Name), User: deref(a.User), Password: password,
		AccountConfig: a.Config, PortMappings: mappings, Logger: w.log,
		// Connectors that read-modify-write shared controller state
		// serialise with the other wimd processes through the database.
		Locker: w.s.db,
	}
	conn, err := w.s.registry.New(cfg)
	if err != nil {
		reason := fmt.Sprintf("Error when loading WIM connector for WIM (%s): %v\nAny task targeting WIM account %s (%s) will fail.", wim.Type, err, a.UUID, deref(a.Name))
		w.log.Error("connector unavailable", slog.String("connector", wim.Type), slog.Any("error", err))
		conn = failing.New(reason, connectors.KindPermanent)
	}
	t.Connector = conn
	return t, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// run is the worker loop. An idle worker sleeps until it is woken (a
// notification, the supervisor's poll of due work, or a finished link) or
// its next queued action is due; it builds its connector only when it has
// work, so thousands of idle accounts cost a goroutine each.
func (w *worker) run(ctx context.Context) {
	opts := w.s.opts
	inflight := map[string]bool{}
	var (
		t        actions.Target
		haveConn bool
		backoff  = time.Second
	)
	// The outcome writer starts with the first action, so an idle account
	// costs one goroutine.
	var writerDone chan struct{}
	defer func() {
		// Let running actions finish and their outcomes be written (they
		// see ctx cancelled), then stop the writer.
		for len(inflight) > 0 {
			delete(inflight, <-w.results)
		}
		if writerDone != nil {
			close(w.outcomes)
			<-writerDone
		}
	}()
	// Start asleep: the supervisor's first poll wakes the accounts with
	// due work.
	if !w.sleep(ctx, 0, inflight) {
		return
	}
	for ctx.Err() == nil {
		select {
		case <-w.reload:
			haveConn = false
		default:
		}
		var wait time.Duration // 0: until woken
		if !haveConn && len(inflight) == 0 {
			var err error
			t, err = w.target(ctx)
			if wimro.ErrorCode(err) == wimro.ENOTFOUND {
				// The account is gone; the supervisor will stop this worker.
				if !w.sleep(ctx, 0, inflight) {
					return
				}
				continue
			} else if err != nil {
				w.log.Error("build connector", slog.Any("error", err))
				if !w.sleep(ctx, backoff, inflight) {
					return
				}
				backoff = min(backoff*2, time.Minute)
				continue
			}
			haveConn, backoff = true, time.Second
		}
		if haveConn && len(inflight) < opts.Parallel {
			busy := make([]string, 0, len(inflight))
			for id := range inflight {
				busy = append(busy, id)
			}
			claimed, err := w.s.db.ClaimActions(ctx, w.id, opts.Owner, opts.Lease, opts.Parallel-len(inflight), busy)
			if err != nil && ctx.Err() == nil {
				w.log.Error("claim actions", slog.Any("error", err))
				wait = backoff
			}
			if len(claimed) > 0 && writerDone == nil {
				writerDone = make(chan struct{})
				go func() {
					defer close(writerDone)
					w.write()
				}()
			}
			for _, a := range claimed {
				inflight[a.ItemID] = true
				go w.runAction(ctx, t, a)
			}
			if next, err := w.s.db.NextRunAfter(ctx, w.id); err == nil && next != nil && len(inflight) < opts.Parallel {
				if d := time.Until(*next); wait == 0 || d < wait {
					wait = max(d, 10*time.Millisecond)
				}
			}
		}
		if !w.sleep(ctx, wait, inflight) {
			return
		}
	}
}

// sleep waits for a wake-up, a finished link, or d (0: no timeout);
// false when stopping.
func (w *worker) sleep(ctx context.Context, d time.Duration, inflight map[string]bool) bool {
	var timeout <-chan time.Time
	if d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-w.wake:
	case id := <-w.results:
		delete(inflight, id)
		// Collect every other finished link too, so one claim fills all
		// the freed slots.
		for {
			select {
			case id := <-w.results:
				delete(inflight, id)
				continue
			default:
			}
			break
		}
	case <-timeout:
	}
	return true
}

// runAction runs one action and hands its outcome to the writer.
func (w *worker) runAction(ctx context.Context, t actions.Target, a wimro.Action) {
	w.outcomes <- persistence.Finished{Action: a, Outcome: w.s.runner.Run(ctx, t, a)}
}

// write writes outcomes as they come, batching those that are ready
// together: one transaction (two round trips) for the whole batch, with the
// WAN links and counters. It keeps writing while the worker stops: a
// cancelled write would lose a service that was just created.
func (w *worker) write() {
	const maxBatch = 64
	for first := range w.outcomes {
		batch := []persistence.Finished{first}
	more:
		for len(batch) < maxBatch {
			select {
			case f, ok := <-w.outcomes:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		w.flush(batch)
		for _, f := range batch {
			w.results <- f.Action.ItemID
		}
	}
}

func (w *worker) flush(batch []persistence.Finished) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	err := w.s.db.Tx(ctx, func(s *persistence.Store) error {
		var err error
		_, errs, err = s.FinishActions(ctx, w.s.opts.Owner, batch)
		return err
	})
	for i, f := range batch {
		a := f.Action
		log := w.log.With(slog.String("action_id", fmt.Sprintf("%s[%d]", a.InstanceActionID, a.TaskIndex)), slog.String("wan_link_id", a.ItemID))
		switch {
		case err != nil:
			// The claims expire and the actions run again.
			log.Error("write action outcome", slog.Any("error", err))
		case errors.Is(errs[i], persistence.ErrClaimLost):
			log.Warn("claim lost before the outcome was written; the action will run again")
		default:
			log.Debug("action ran", slog.String("action", a.Action), slog.String("status", f.Outcome.Status))
		}
	}
}
