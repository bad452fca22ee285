package wimthread

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors/accountconn"
	"github.com/wimro/wimro/persistence"
)

// account is what the process keeps of one account it drives: its lease,
// its connector cache and the count of its actions in flight. It is a map
// entry, not a goroutine: the claimer and the completer serve every
// account. inflight, running and stopping are guarded by table.mu.
type account struct {
	id    string
	lease persistence.Lease
	// bound is the lease's local validity bound (fence.go), checked
	// before every controller call that changes something.
	bound *leaseBound
	log   *slog.Logger
	// ctx is cancelled when the account stops (lease lost, no longer
	// wanted, or the supervisor stops): its running actions come back
	// "interrupted".
	ctx    context.Context
	cancel context.CancelFunc

	// inflight counts the actions claimed and not yet written (their links
	// stay busy); running those of them still at the controller, what
	// Options.Parallel bounds: an action whose outcome waits for the
	// completer frees its slot for another link.
	inflight, running int
	stopping          bool // no new claims; forgotten once inflight is 0

	// The connector cache: built before the first action, rebuilt after a
	// change notification (stale) before the next one. Actions already
	// running keep the Target they started with.
	tmu      sync.Mutex
	target   actions.Target
	built    bool
	stale    atomic.Bool
	connName atomic.Pointer[string] // the connector's WIM type, for the metrics

	signals *testSignals
}

// stop makes the account take no new action and cancels those running.
// Call with table.mu held.
func (a *account) stop() {
	if !a.stopping {
		a.signals.AccountStopped.Send(a.id)
	}
	a.stopping = true
	a.cancel()
}

// current reports whether the cached Target may be used: built, and no
// change notified since (a notified change forgets it). Call with tmu held.
func (a *account) current() bool {
	if a.stale.Swap(false) {
		a.built = false
	}
	return a.built
}

// targets keeps the accounts' connectors (actions.Target), built from the
// database by the process's accountconn.Factory, for the claimer's actions
// and the monitors' calls.
type targets struct {
	conns   *accountconn.Factory
	logger  *slog.Logger
	metrics *Metrics
}

// connector returns the account's Target, building it first if it is
// missing or stale. The actions of one account wait for one build.
func (g *targets) connector(a *account) (actions.Target, error) {
	a.tmu.Lock()
	defer a.tmu.Unlock()
	if a.current() {
		return a.target, nil
	}
	c, err := g.conns.Account(a.ctx, a.id)
	if err != nil {
		a.stale.Store(false)
		return actions.Target{}, err
	}
	t := g.targetFrom(a, c)
	a.target, a.built = t, true
	return t, nil
}

// buildTargets builds, from one read, the connectors of the accounts that
// have none or a stale one: the claimer calls it before it starts the
// actions it claimed, so that the first actions of many accounts do not
// each wait for reads of their own. An account it could not build (the
// read failed) is built by its first action, which reports why.
func (g *targets) buildTargets(ctx context.Context, list []*account) {
	var need []*account
	ids := make([]string, 0, len(list))
	for _, a := range list {
		a.tmu.Lock()
		if !a.current() {
			need = append(need, a)
			ids = append(ids, a.id)
		}
		a.tmu.Unlock()
	}
	if len(need) == 0 {
		return
	}
	in, err := g.conns.Load(ctx, ids)
	if err != nil {
		g.logger.Debug("read the connectors of the accounts claimed for; each builds its own", slog.Int("accounts", len(ids)), slog.Any("error", err))
		return
	}
	for _, a := range need {
		i, ok := in[a.id]
		if !ok {
			continue
		}
		t := g.targetFrom(a, i)
		a.tmu.Lock()
		// Built meanwhile by an action of the account: keep that one. A
		// change notified after the read left stale set: the next action
		// rebuilds.
		if !a.built {
			a.target, a.built = t, true
		}
		a.tmu.Unlock()
	}
}

// targetFrom makes the account's Target of its connector. One that could
// not be built is accountconn's stand-in, which fails every action with
// the reason.
func (g *targets) targetFrom(w *account, c accountconn.Conn) actions.Target {
	a := c.Account
	if c.Err != nil {
		w.log.Error("connector unavailable", slog.String("connector", c.WIM.Type), slog.Any("error", c.Err))
	}
	return actions.Target{AccountID: a.UUID, WIMID: a.WIMID, AccountModifiedAt: a.ModifiedAt, Type: c.WIM.Type, Mappings: c.Mappings,
		Capabilities: c.Capabilities, Connector: g.instrument(w, c.WIM.Type, c.Connector)}
}

func (a *account) actionLog(act wimro.Action) *slog.Logger {
	return a.log.With(slog.String("action_id", fmt.Sprintf("%s[%d]", act.InstanceActionID, act.TaskIndex)), slog.String("wan_link_id", act.ItemID))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
