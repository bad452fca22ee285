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
	s       *Supervisor
	id      string
	log     *slog.Logger
	cancel  context.CancelFunc
	wake    chan struct{} // look for work now
	reload  chan struct{} // rebuild the connector first
	results chan string   // a link finished
}

func (s *Supervisor) startWorker(id string) *worker {
	ctx, cancel := context.WithCancel(s.ctx)
	w := &worker{
		s: s, id: id, cancel: cancel,
		log:     s.logger.With(slog.String("account_id", id)),
		wake:    make(chan struct{}, 1),
		reload:  make(chan struct{}, 1),
		results: make(chan string, s.opts.Parallel),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		w.run(ctx)
	}()
	return w
}

func (w *worker) stop() { w.cancel() }

// poke wakes the worker without blocking; reload also rebuilds its
// connector.
func (w *worker) poke(reload bool) {
	if reload {
		select {
		case w.reload <- struct{}{}:
		default:
		}
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

// run is the worker loop: claim what is due, run each link in its own
// goroutine, write outcomes, sleep until woken, a link finishes, or the
// next action is due.
func (w *worker) run(ctx context.Context) {
	opts := w.s.opts
	inflight := map[string]bool{}
	var (
		t        actions.Target
		haveConn bool
		backoff  = time.Second
	)
	defer func() {
		// Let running actions finish their write (they see ctx cancelled).
		for len(inflight) > 0 {
			delete(inflight, <-w.results)
		}
	}()
	for ctx.Err() == nil {
		select {
		case <-w.reload:
			haveConn = false
		default:
		}
		if !haveConn && len(inflight) == 0 {
			var err error
			t, err = w.target(ctx)
			if wimro.ErrorCode(err) == wimro.ENOTFOUND {
				w.log.Info("account gone; worker idle until the supervisor stops it")
				if !w.sleep(ctx, opts.Poll, inflight) {
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
		if haveConn {
			busy := make([]string, 0, len(inflight))
			for id := range inflight {
				busy = append(busy, id)
			}
			claimed, err := w.s.db.ClaimActions(ctx, w.id, opts.Owner, opts.Lease, opts.Parallel-len(inflight), busy)
			if err != nil && ctx.Err() == nil {
				w.log.Error("claim actions", slog.Any("error", err))
			}
			for _, a := range claimed {
				inflight[a.ItemID] = true
				go w.runAction(ctx, t, a)
			}
		}
		wait := opts.Poll
		if next, err := w.s.db.NextRunAfter(ctx, w.id); err == nil && next != nil {
			if d := time.Until(*next); d < wait {
				wait = max(d, 10*time.Millisecond)
			}
		}
		if len(inflight) >= opts.Parallel {
			wait = time.Hour // only a finishing link can free a slot
		}
		if !w.sleep(ctx, wait, inflight) {
			return
		}
	}
}

// sleep waits for a wake-up, a finished link, or d; false when stopping.
func (w *worker) sleep(ctx context.Context, d time.Duration, inflight map[string]bool) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-w.wake:
	case id := <-w.results:
		delete(inflight, id)
	case <-timer.C:
	}
	return true
}

// runAction runs one action and writes its outcome in one transaction.
func (w *worker) runAction(ctx context.Context, t actions.Target, a wimro.Action) {
	defer func() { w.results <- a.ItemID }()
	log := w.log.With(slog.String("action_id", fmt.Sprintf("%s[%d]", a.InstanceActionID, a.TaskIndex)), slog.String("wan_link_id", a.ItemID))
	o := w.s.runner.Run(ctx, t, a)
	// The write must happen even when stopping: a cancelled ctx would lose
	// a service that was just created. It is bounded by its own timeout.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := w.s.db.Tx(wctx, func(s *persistence.Store) error {
		_, err := s.FinishAction(wctx, a, w.s.opts.Owner, o)
		return err
	})
	switch {
	case errors.Is(err, persistence.ErrClaimLost):
		log.Warn("claim lost before the outcome was written; the action will run again")
	case err != nil:
		log.Error("write action outcome", slog.Any("error", err))
	default:
		log.Debug("action ran", slog.String("action", a.Action), slog.String("status", o.Status))
	}
}
