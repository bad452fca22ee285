package wimthread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/persistence"
)

// worker runs the actions of one account, under the account's lease.
type worker struct {
	s        *Supervisor
	id       string
	lease    persistence.Lease
	log      *slog.Logger
	cancel   context.CancelFunc
	done     chan struct{} // closed once stopped and every outcome is written
	wake     chan struct{} // look for work now
	reload   chan struct{} // rebuild the connector first
	results  chan string   // a link finished and its outcome is written
	outcomes chan persistence.Finished
	connName atomic.Pointer[string] // the connector's WIM type, for the metrics
}

func (s *Supervisor) startWorker(id string, lease persistence.Lease) *worker {
	ctx, cancel := context.WithCancel(s.ctx)
	w := &worker{
		s: s, id: id, lease: lease, cancel: cancel, done: make(chan struct{}),
		log:      s.logger.With(slog.String("account_id", id)),
		wake:     make(chan struct{}, 1),
		reload:   make(chan struct{}, 1),
		results:  make(chan string, s.opts.Parallel),
		outcomes: make(chan persistence.Finished, s.opts.Parallel),
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(w.done)
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
	t.Type = wim.Type
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
			t.Connector = w.instrument(wim.Type, failing.New(fmt.Sprintf("Error when reading the password of WIM account %s: %v", a.UUID, err), connectors.KindPermanent))
			return t, nil
		}
		password = string(b)
	}
	// The other secrets (wim_url's password, bearer_token) are sealed at
	// rest too; a value stored in clear by an older wimd is used as is.
	if wim.URL, wim.Config, a.Config, err = w.s.box.OpenConnector(wim.URL, wim.Config, a.Config); err != nil {
		t.Connector = w.instrument(wim.Type, failing.New(fmt.Sprintf("Error when reading the secrets of WIM account %s: %v", a.UUID, err), connectors.KindPermanent))
		return t, nil
	}
	cfg := connectors.Config{
		WIMID: wim.UUID, WIMName: wim.Name, Type: wim.Type, URL: wim.URL, WIMConfig: wim.Config,
		AccountID: a.UUID, AccountName: deref(a.Name), User: deref(a.User), Password: password,
		AccountConfig: a.Config, PortMappings: mappings, Logger: w.log,
		// Connectors that read-modify-write shared controller state
		// serialise with the other wimd processes through the database.
		Locker:    w.s.db,
		UserAgent: w.s.opts.UserAgent,
	}
	conn, err := w.s.registry.New(cfg)
	if err != nil {
		reason := fmt.Sprintf("Error when loading WIM connector for WIM (%s): %v\nAny task targeting WIM account %s (%s) will fail.", wim.Type, err, a.UUID, deref(a.Name))
		w.log.Error("connector unavailable", slog.String("connector", wim.Type), slog.Any("error", err))
		conn = failing.New(reason, connectors.KindPermanent)
	}
	t.Connector = w.instrument(wim.Type, conn)
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
			var claimed []wimro.Action
			err := w.s.claims.claim(func() ([]persistence.ClaimKey, error) {
				var err error
				claimed, err = w.s.db.ClaimActions(ctx, w.lease, w.s.claims.name(opts.Owner), opts.Lease, opts.Parallel-len(inflight), busy)
				keys := make([]persistence.ClaimKey, len(claimed))
				for i, a := range claimed {
					keys[i] = persistence.KeyOf(a)
				}
				return keys, err
			})
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
			for _, a := range claimed {
				busy = append(busy, a.ItemID)
			}
			if next, err := w.s.db.NextRunAfter(ctx, w.id, busy); err == nil && next != nil && len(inflight) < opts.Parallel {
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

// runAction runs one action and hands its outcome to the writer. The
// runner turns a panic into a FAILED outcome, so a broken connector fails
// its action and the worker goes on.
func (w *worker) runAction(ctx context.Context, t actions.Target, a wimro.Action) {
	w.outcomes <- persistence.Finished{Action: a, Outcome: w.s.runner.Run(ctx, t, a), Lease: w.lease}
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

// flush writes a batch of outcomes so that no claim is left behind:
//   - the database is away: retry, with back-off, for up to one lease
//     (the claims stay renewed, so the write lands when it comes back);
//   - the database refuses the batch: write each outcome alone, so one bad
//     outcome cannot hold back the others, and for the one it refuses
//     write the runner's "could not be recorded" outcome instead;
//   - still nothing written: give the claims up (no longer renewed, and
//     released as soon as the database answers). The actions run again,
//     which they are written to survive.
func (w *worker) flush(batch []persistence.Finished) {
	err := w.commit(batch)
	if err == nil {
		return
	}
	if !transient(err) {
		if len(batch) > 1 {
			for _, f := range batch {
				w.flush([]persistence.Finished{f})
			}
			return
		}
		a := batch[0].Action
		w.actionLog(a).Error("the database refused an action outcome; recording the failure to record it instead", slog.Any("error", err))
		if w.commit([]persistence.Finished{{Action: a, Outcome: w.s.runner.Unrecorded(a, err), Lease: w.lease}}) == nil {
			return
		}
	}
	for _, f := range batch {
		w.s.claims.giveUp(persistence.KeyOf(f.Action))
		w.actionLog(f.Action).Error("action outcome not written; the claim is given up and the action will run again", slog.Any("error", err))
	}
}

// commit writes a batch in one transaction, retrying while the database is
// unavailable for up to one lease, and settles each claim it wrote or
// found lost.
func (w *worker) commit(batch []persistence.Finished) error {
	opts := w.s.opts
	deadline := time.Now().Add(opts.Lease)
	delay := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), min(opts.Lease, 30*time.Second))
		var errs []error
		err := w.s.db.Tx(ctx, func(s *persistence.Store) error {
			var err error
			_, errs, err = s.FinishActions(ctx, batch)
			return err
		})
		cancel()
		if err == nil {
			var lost []persistence.ClaimKey
			for i, f := range batch {
				a := f.Action
				w.s.claims.done(persistence.KeyOf(a))
				if errors.Is(errs[i], persistence.ErrClaimLost) {
					lost = append(lost, persistence.KeyOf(a))
					w.actionLog(a).Warn("claim or account lease lost before the outcome was written; the action will run again")
				} else {
					w.actionLog(a).Debug("action ran", slog.String("action", a.Action), slog.String("status", f.Outcome.Status))
				}
			}
			w.countFinished(batch, errs)
			// A claim still held under its name but refused because the
			// account's lease was lost goes back to the queue now, for the
			// account's new owner; one lost to another claim is untouched.
			if len(lost) > 0 {
				rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if _, err := w.s.db.ReleaseClaimsOf(rctx, lost); err != nil {
					w.log.Warn("release claims after a lost lease", slog.Any("error", err))
				}
				cancel()
			}
			return nil
		}
		if !transient(err) || time.Now().Add(delay).After(deadline) {
			return err
		}
		w.log.Warn("writing action outcomes failed; retrying", slog.Int("actions", len(batch)), slog.Int("attempt", attempt), slog.Any("error", err))
		time.Sleep(delay) // back-off between retries of an I/O call, not synchronisation
		delay = min(2*delay, 2*time.Second)
	}
}

// transient reports whether a failed write may succeed if tried again
// unchanged: anything but the database refusing the statement itself.
func transient(err error) bool { return !persistence.Refused(err) }

func (w *worker) actionLog(a wimro.Action) *slog.Logger {
	return w.log.With(slog.String("action_id", fmt.Sprintf("%s[%d]", a.InstanceActionID, a.TaskIndex)), slog.String("wan_link_id", a.ItemID))
}
