package wimthread

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors"
	"github.com/wimro/wimro/connectors/failing"
	"github.com/wimro/wimro/persistence"
)

// account is what the process keeps of one account it drives: its lease,
// its connector cache and the count of its actions in flight. It is a map
// entry, not a goroutine: the claimer and the completer serve every
// account. inflight and stopping are guarded by Supervisor.mu.
type account struct {
	id    string
	lease persistence.Lease
	log   *slog.Logger
	// ctx is cancelled when the account stops (lease lost, no longer
	// wanted, or the supervisor stops): its running actions come back
	// "interrupted".
	ctx    context.Context
	cancel context.CancelFunc

	inflight int
	stopping bool // no new claims; forgotten once inflight is 0

	// The connector cache: built before the first action, rebuilt after a
	// change notification (stale) before the next one. Actions already
	// running keep the Target they started with.
	tmu      sync.Mutex
	target   actions.Target
	built    bool
	stale    atomic.Bool
	connName atomic.Pointer[string] // the connector's WIM type, for the metrics
}

func (s *Supervisor) newAccount(l persistence.Lease) *account {
	ctx, cancel := context.WithCancel(s.ctx)
	return &account{id: l.AccountID, lease: l, ctx: ctx, cancel: cancel,
		log: s.logger.With(slog.String("account_id", l.AccountID))}
}

// stop makes the account take no new action and cancels those running.
// Call with Supervisor.mu held.
func (a *account) stop() {
	a.stopping = true
	a.cancel()
}

// connector returns the account's Target, building it first if it is
// missing or stale. The actions of one account wait for one build.
func (s *Supervisor) connector(a *account) (actions.Target, error) {
	a.tmu.Lock()
	defer a.tmu.Unlock()
	if a.stale.Swap(false) {
		a.built = false
	}
	if a.built {
		return a.target, nil
	}
	t, err := s.buildTarget(a)
	if err != nil {
		a.stale.Store(false)
		return actions.Target{}, err
	}
	a.target, a.built = t, true
	return t, nil
}

// buildTarget builds the connector of the account from the database. A
// connector that cannot be built is replaced by one that fails every
// action with the reason, as OSM's FailingConnector did.
func (s *Supervisor) buildTarget(w *account) (actions.Target, error) {
	ctx := w.ctx
	db := s.db
	a, err := db.GetAccount(ctx, w.id)
	if err != nil {
		return actions.Target{}, err
	}
	t := actions.Target{AccountID: a.UUID, WIMID: a.WIMID, AccountModifiedAt: a.ModifiedAt}
	wim, err := db.GetWIM(ctx, a.WIMID)
	if err != nil {
		return actions.Target{}, err
	}
	t.Type = wim.Type
	mappings, err := db.ListPortMappings(ctx, persistence.PortMappingFilter{WIMIDs: []string{wim.UUID}})
	if err != nil {
		return actions.Target{}, err
	}
	if mappings == nil {
		mappings = []wimro.PortMapping{} // cached: "none", not "not read"
	}
	t.Mappings = mappings
	password := ""
	if len(a.Password) > 0 {
		b, err := s.box.Open(a.Password)
		if err != nil {
			t.Connector = s.instrument(w, wim.Type, failing.New(fmt.Sprintf("Error when reading the password of WIM account %s: %v", a.UUID, err), connectors.KindPermanent))
			return t, nil
		}
		password = string(b)
	}
	// The other secrets (wim_url's password, bearer_token) are sealed at
	// rest too; a value stored in clear by an older wimd is used as is.
	if wim.URL, wim.Config, a.Config, err = s.box.OpenConnector(wim.URL, wim.Config, a.Config); err != nil {
		t.Connector = s.instrument(w, wim.Type, failing.New(fmt.Sprintf("Error when reading the secrets of WIM account %s: %v", a.UUID, err), connectors.KindPermanent))
		return t, nil
	}
	cfg := connectors.ConfigOf(wim, a, password, mappings)
	cfg.Logger, cfg.UserAgent = w.log, s.opts.UserAgent
	// Connectors that read-modify-write shared controller state serialise
	// with the other wimd processes through the database.
	cfg.Locker = s.db
	conn, err := s.registry.New(cfg)
	if err != nil {
		reason := fmt.Sprintf("Error when loading WIM connector for WIM (%s): %v\nAny task targeting WIM account %s (%s) will fail.", wim.Type, err, a.UUID, deref(a.Name))
		w.log.Error("connector unavailable", slog.String("connector", wim.Type), slog.Any("error", err))
		conn = failing.New(reason, connectors.KindPermanent)
	}
	t.Connector = s.instrument(w, wim.Type, conn)
	return t, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (a *account) actionLog(act wimro.Action) *slog.Logger {
	return a.log.With(slog.String("action_id", fmt.Sprintf("%s[%d]", act.InstanceActionID, act.TaskIndex)), slog.String("wan_link_id", act.ItemID))
}
