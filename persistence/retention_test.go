package persistence_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/persistence"
)

const (
	retention = 30 * 24 * time.Hour
	old       = 40 * 24 * time.Hour // past the retention
	recent    = time.Hour           // within it
)

// history writes action history straight in SQL, so that its rows can be
// dated in the past (an UPDATE would touch modified_at), created when last
// modified: a row is never modified before it is created, and the purge
// relies on it (schema 13).
type history struct {
	b               *bundle
	tenant, account string
}

func newHistory(t *testing.T, b *bundle) *history {
	t.Helper()
	tn := b.tenant(t, "t0")
	a := b.attach(t, b.wim(t, "wim0"), tn)
	return &history{b: b, tenant: tn.UUID, account: a.UUID}
}

// instance creates an instance and, unless live, deletes it again.
func (h *history) instance(t *testing.T, live bool) *string {
	t.Helper()
	inst, err := h.b.db.CreateInstance(h.b.ctx, wimro.Instance{Name: "ns-" + uuid.NewString()[:8], TenantID: h.tenant})
	if err != nil {
		t.Fatal(err)
	}
	if !live {
		if err := h.b.db.DeleteInstance(h.b.ctx, inst.UUID); err != nil {
			t.Fatal(err)
		}
	}
	return &inst.UUID
}

// task is one action of an instance action; an empty link gets one of its
// own.
type task struct{ status, link string }

// instanceAction writes an instance action of instanceID (nil: none) and
// its tasks, all last modified age ago.
func (h *history) instanceAction(t *testing.T, instanceID *string, age time.Duration, tasks ...task) string {
	t.Helper()
	ia := uuid.NewString()
	if _, err := h.b.db.Pool().Exec(h.b.ctx, `INSERT INTO instance_actions (uuid, tenant_id, instance_id, description, number_tasks, created_at, modified_at)
		VALUES ($1, $2, $3, 'DELETE', $4, now() - $5::interval, now() - $5::interval)`, ia, h.tenant, instanceID, len(tasks), age); err != nil {
		t.Fatal(err)
	}
	for i, k := range tasks {
		if k.link == "" {
			k.link = uuid.NewString()
		}
		if _, err := h.b.db.Pool().Exec(h.b.ctx, `INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status, created_at, modified_at)
			VALUES ($1, $2, $3, 'DELETE', $4, $5, now() - $6::interval, now() - $6::interval)`, ia, i, h.account, k.link, k.status, age); err != nil {
			t.Fatal(err)
		}
	}
	return ia
}

// bulk writes n old instance actions of instanceID with perAction DONE
// tasks each.
func (h *history) bulk(t *testing.T, instanceID *string, n, perAction int) {
	t.Helper()
	if _, err := h.b.db.Pool().Exec(h.b.ctx, `
		WITH ias AS (
			INSERT INTO instance_actions (uuid, tenant_id, instance_id, description, number_tasks, created_at, modified_at)
			SELECT gen_random_uuid(), $1, $2, 'DELETE', $4, now() - $5::interval, now() - $5::interval FROM generate_series(1, $3)
			RETURNING uuid)
		INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status, created_at, modified_at)
		SELECT ias.uuid, k, $6, 'DELETE', gen_random_uuid(), 'DONE', now() - $5::interval, now() - $5::interval
		FROM ias, generate_series(0, $4 - 1) k`, h.tenant, instanceID, n, perAction, old, h.account); err != nil {
		t.Fatal(err)
	}
}

// left says how many actions an instance action still has, and whether
// the instance action itself is still there.
func (h *history) left(t *testing.T, ia string) (actions int, exists bool) {
	t.Helper()
	if err := h.b.db.Pool().QueryRow(h.b.ctx, `SELECT (SELECT count(*) FROM vim_wim_actions WHERE instance_action_id = $1),
		EXISTS (SELECT 1 FROM instance_actions WHERE uuid = $1)`, ia).Scan(&actions, &exists); err != nil {
		t.Fatal(err)
	}
	return actions, exists
}

// kept is what should be left of an instance action after a purge.
type kept struct {
	name    string
	ia      string
	actions int
	exists  bool
}

// expect checks what is left of each instance action.
func (h *history) expect(t *testing.T, want ...kept) {
	t.Helper()
	for _, w := range want {
		if n, ok := h.left(t, w.ia); n != w.actions || ok != w.exists {
			t.Errorf("%s: %d actions left (instance action kept: %v), want %d (%v)", w.name, n, ok, w.actions, w.exists)
		}
	}
}

// wantLeft fails t unless the database holds this many actions and
// instance actions in all.
func (h *history) wantLeft(t *testing.T, actions, instanceActions int64) {
	t.Helper()
	var a, ia int64
	if err := h.b.db.Pool().QueryRow(h.b.ctx, `SELECT (SELECT count(*) FROM vim_wim_actions), (SELECT count(*) FROM instance_actions)`).
		Scan(&a, &ia); err != nil {
		t.Fatal(err)
	}
	if a != actions || ia != instanceActions {
		t.Fatalf("%d actions and %d instance actions left, want %d and %d", a, ia, actions, instanceActions)
	}
}

// purge runs one batch and fails t unless it deletes this many actions and
// instance actions.
func purge(t *testing.T, db *persistence.DB, olderThan time.Duration, batch int, actions, instanceActions int64) {
	t.Helper()
	a, ia, err := db.PurgeFinishedActions(t.Context(), olderThan, batch)
	if err != nil || a != actions || ia != instanceActions {
		t.Fatalf("purge(%v, %d) = %d actions, %d instance actions, %v; want %d, %d", olderThan, batch, a, ia, err, actions, instanceActions)
	}
}

func TestPurgeFinishedActionsKeepsWhatIsStillNeeded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := newHistory(t, b)
	gone := func() *string { return h.instance(t, false) }
	finished := []task{{status: wimro.ActionDone}, {status: wimro.ActionFailed}, {status: wimro.ActionSuperseded}, {status: wimro.ActionFinished}}

	purged := h.instanceAction(t, gone(), old, finished...)
	noInstance := h.instanceAction(t, nil, old, task{status: wimro.ActionDone})
	tooRecent := h.instanceAction(t, gone(), recent, task{status: wimro.ActionDone})
	live := h.instanceAction(t, h.instance(t, true), old, finished...)
	scheduled := h.instanceAction(t, gone(), old, task{status: wimro.ActionDone}, task{status: wimro.ActionScheduled})
	building := h.instanceAction(t, gone(), old, task{status: wimro.ActionDone}, task{status: wimro.ActionBuild})
	// A link whose CREATE is long done but whose DELETE (another instance
	// action) still waits: the DELETE may read the CREATE's service id.
	link := uuid.NewString()
	inst := gone()
	created := h.instanceAction(t, inst, old, task{status: wimro.ActionDone, link: link})
	deleting := h.instanceAction(t, inst, old, task{status: wimro.ActionScheduled, link: link})
	emptyGone := h.instanceAction(t, gone(), old)
	emptyLive := h.instanceAction(t, h.instance(t, true), old)
	emptyRecent := h.instanceAction(t, gone(), recent)

	purge(t, b.db, retention, 1000, 5, 3)
	h.expect(t,
		kept{"old, finished, instance deleted", purged, 0, false},
		kept{"old, finished, no instance", noInstance, 0, false},
		kept{"recent", tooRecent, 1, true},
		kept{"instance still exists", live, 4, true},
		kept{"one action SCHEDULED", scheduled, 2, true},
		kept{"one action BUILD", building, 2, true},
		kept{"link still being deleted", created, 1, true},
		kept{"the link's DELETE", deleting, 1, true},
		kept{"empty, instance deleted", emptyGone, 0, false},
		kept{"empty, instance exists", emptyLive, 0, true},
		kept{"empty, recent", emptyRecent, 0, true},
	)
	purge(t, b.db, retention, 1000, 0, 0) // nothing more

	// Once the last action of an instance action finishes, the whole
	// instance action goes (here with no retention at all, which also
	// takes the recent ones); the link still being deleted keeps its
	// CREATE.
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE vim_wim_actions SET status = 'DONE' WHERE instance_action_id = $1 AND status = 'SCHEDULED'`, scheduled); err != nil {
		t.Fatal(err)
	}
	purge(t, b.db, 0, 1000, 3, 3)
	h.expect(t,
		kept{"last action finished", scheduled, 0, false},
		kept{"instance still exists", live, 4, true},
		kept{"link still being deleted", created, 1, true},
		kept{"one action BUILD", building, 2, true},
		kept{"recent", tooRecent, 0, false},
		kept{"empty, recent", emptyRecent, 0, false},
	)
}

func TestPurgeFinishedActionsInBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := newHistory(t, b)
	h.bulk(t, h.instance(t, false), 2500, 1)
	h.instanceAction(t, h.instance(t, true), old, task{status: wimro.ActionDone}) // kept

	// Each call empties as many instance actions as it deletes actions,
	// and deletes them too, within the same batch size.
	purge(t, b.db, retention, 1000, 1000, 1000)
	purge(t, b.db, retention, 1000, 1000, 1000)
	purge(t, b.db, retention, 1000, 500, 500)
	purge(t, b.db, retention, 1000, 0, 0)
	h.wantLeft(t, 1, 1) // the live instance's
}

func TestPurgeFinishedActionsArguments(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := newHistory(t, b)
	h.bulk(t, h.instance(t, false), 3, 1)
	if _, _, err := b.db.PurgeFinishedActions(b.ctx, -time.Hour, 10); wimro.ErrorCode(err) != wimro.EINVALID {
		t.Fatalf("negative retention: %v, want %s", err, wimro.EINVALID)
	}
	purge(t, b.db, retention, 0, 0, 0)
	h.wantLeft(t, 3, 3)
}

// While one process purges, another skips at once instead of waiting, and
// every row is purged once.
func TestPurgeSkipsWhileAnotherProcessPurges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := newHistory(t, b)
	h.bulk(t, h.instance(t, false), 10, 3)
	other := otherProcess(t, b)

	// Hold the first purger inside its transaction, after it took the
	// purge lock: its DELETE reads instance_scenarios, which a third
	// session keeps locked.
	blocker, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(context.WithoutCancel(b.ctx))
	if _, err := blocker.Exec(b.ctx, `LOCK TABLE instance_scenarios IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type result struct{ a, ia int64 }
	first := make(chan result, 1)
	go func() {
		a, ia, err := b.db.PurgeFinishedActions(b.ctx, retention, 1000)
		if err != nil {
			t.Error(err)
		}
		first <- result{a, ia}
	}()
	eventually.Until(t, 30*time.Second, "the first purger to hold the purge lock and wait on the table", func() (bool, string) {
		var held, waiting int
		if err := other.Pool().QueryRow(b.ctx, `SELECT
			(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
			(SELECT count(*) FROM pg_locks WHERE locktype = 'relation' AND NOT granted AND relation = 'instance_scenarios'::regclass)`).Scan(&held, &waiting); err != nil {
			t.Fatal(err)
		}
		return held == 1 && waiting == 1, ""
	})

	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	a, ia, err := other.PurgeFinishedActions(ctx, retention, 1000)
	if err != nil || a != 0 || ia != 0 {
		t.Fatalf("second purger while the first holds the lock: %d, %d, %v; want 0, 0, nil", a, ia, err)
	}
	h.wantLeft(t, 30, 10) // while the first purger waits

	if err := blocker.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-first:
		if r.a != 30 || r.ia != 10 {
			t.Fatalf("first purger: %d actions, %d instance actions; want 30 and 10", r.a, r.ia)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first purger did not finish once the table was free")
	}
	purge(t, other, retention, 1000, 0, 0)
	h.wantLeft(t, 0, 0)
}

// Two processes purging in a loop at the same time see no error and
// together delete each row once.
func TestPurgeConcurrentProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	h := newHistory(t, b)
	h.bulk(t, h.instance(t, false), 200, 5)
	const wantActions, wantIAs = 1000, 200
	dbs := []*persistence.DB{b.db, otherProcess(t, b)}

	var actions, ias atomic.Int64
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, db := range dbs {
		wg.Go(func() {
			for actions.Load() < wantActions || ias.Load() < wantIAs {
				a, ia, err := db.PurgeFinishedActions(ctx, retention, 50)
				if err != nil {
					t.Errorf("purge: %v", err)
					return
				}
				actions.Add(a)
				ias.Add(ia)
			}
		})
	}
	wg.Wait()
	if actions.Load() != wantActions || ias.Load() != wantIAs {
		t.Fatalf("purged %d actions and %d instance actions, want %d and %d", actions.Load(), ias.Load(), wantActions, wantIAs)
	}
	h.wantLeft(t, 0, 0)
}
