package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// execOn returns a function that runs a statement on pool and fails the
// test if it fails: the plan tests build their tables by hand.
func execOn(t testing.TB, pool *pgxpool.Pool) func(sql string, args ...any) {
	return func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// queueTables fills a fresh database with the queue the plan tests read:
// accounts accounts of one WIM, every one leased by owner "P", and total
// CREATE actions of one instance action spread over the first busy
// accounts, those numbered below done DONE and the rest SCHEDULED.
func queueTables(exec func(sql string, args ...any), accounts, busy, done, total int) {
	exec(`INSERT INTO nfvo_tenants (uuid, name) VALUES ('00000000-0000-0000-0000-000000000001', 't')`)
	exec(`INSERT INTO wims (uuid, name, type, wim_url) VALUES ('00000000-0000-0000-0000-000000000002', 'w', 'fake', 'http://x')`)
	exec(`INSERT INTO wim_accounts (uuid, name, wim_id) SELECT gen_random_uuid(), 'a' || i, '00000000-0000-0000-0000-000000000002' FROM generate_series(1, $1) i`, accounts)
	exec(`INSERT INTO instance_actions (uuid, tenant_id, description) VALUES ('00000000-0000-0000-0000-000000000003', '00000000-0000-0000-0000-000000000001', 'CREATE')`)
	exec(`WITH acc AS (SELECT uuid, row_number() OVER (ORDER BY uuid) - 1 AS n FROM wim_accounts)
		INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status)
		SELECT '00000000-0000-0000-0000-000000000003', i, acc.uuid, 'CREATE', gen_random_uuid(), CASE WHEN i < $1 THEN 'DONE' ELSE 'SCHEDULED' END
		FROM generate_series(0, $2 - 1) i JOIN acc ON acc.n = i % $3`, done, total, busy)
	exec(`INSERT INTO wim_process_leases (owner, epoch, expires_at) VALUES ('P', 1, now() + interval '1 hour')`)
	exec(`INSERT INTO wim_account_leases (account_id, owner, epoch, proc_epoch, expires_at) SELECT uuid, 'P', 1, 1, 'infinity' FROM wim_accounts`)
}

// TestClaimPlans checks the plans of the claim statements on 100 accounts
// with 100,000 finished and 10,000 pending actions: each reads the queue
// through its partial indexes, never the finished history, and walks the
// claim index in order, stopping at what it needs. With -v it prints them.
func TestClaimPlans(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	exec := execOn(t, pool)
	queueTables(exec, 100, 100, 100000, 110000)
	exec(`ANALYZE`)
	explain := func(name, sql string, args ...any) {
		t.Helper()
		rows, err := pool.Query(ctx, "EXPLAIN "+sql, args...)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for rows.Next() {
			var l string
			rows.Scan(&l)
			lines = append(lines, l)
		}
		rows.Close()
		plan := strings.Join(lines, "\n")
		t.Logf("%s:\n%s", name, plan)
		if strings.Contains(plan, "Seq Scan on vim_wim_actions") {
			t.Errorf("the %s statement scans vim_wim_actions:\n%s", name, plan)
		}
		// A bitmap of the claim index holds every queued entry of an
		// account before the first is looked at.
		if strings.Contains(plan, "Bitmap Index Scan on vim_wim_actions_claim_idx") {
			t.Errorf("the %s statement reads the claim index into a bitmap:\n%s", name, plan)
		}
	}
	explain("claim", claimSQL, "P", []string{}, []int32{}, 8, []string{}, 500, "P#x", time.Minute)
	explain("claimed links", claimedLinksSQL, "P#x")
	explain("claimed networks", claimedNetsSQL, "P#x")
	explain("claimed datacenters", claimedDatacentersSQL, "P#x")
	explain("next due", nextDueSQL, "P", []string{})
}

// TestClaimPlanWithoutStatistics claims on 10,000 leased accounts (100 of
// them with 20 due actions each) whose tables have no statistics yet, as
// in a fresh database right after a process took its leases: the claim,
// and the next-due read after it, read each lease's queue once, not once
// per due action. Planned as a join of the candidates with the actions,
// the claim read every lease's queue 2,000 times over (20 million index
// scans, 45 million buffer hits, 23-27 s for one claim of 200).
func TestClaimPlanWithoutStatistics(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	exec := execOn(t, pool)
	for _, table := range []string{"wim_accounts", "wim_account_leases", "vim_wim_actions"} {
		exec(`ALTER TABLE ` + table + ` SET (autovacuum_enabled = false)`) // no ANALYZE behind the test's back
	}
	queueTables(exec, 10000, 100, 0, 2000)
	// The leases taken again and the actions touched, still without
	// statistics.
	for range 3 {
		exec(`UPDATE wim_account_leases SET epoch = epoch + 1`)
	}
	exec(`UPDATE vim_wim_actions SET modified_at = now()`)

	// Prepared, as pgx prepares it, so that the plan cache decides; both
	// of its choices. The next-due read follows the claim, as in ClaimDue.
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		plans := map[string]planNode{}
		conn, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = func() error {
			tx, err := conn.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx) // the claim is only looked at
			defer conn.Exec(ctx, `DEALLOCATE claim_plan; DEALLOCATE next_due_plan`)
			for _, q := range []string{
				`SET LOCAL plan_cache_mode = ` + mode,
				`PREPARE claim_plan (text, uuid[], int[], int, uuid[], int, text, interval) AS ` + claimSQL,
				`PREPARE next_due_plan (text, uuid[]) AS ` + nextDueSQL,
			} {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
			for _, e := range []struct{ name, execute string }{
				{"claim", `claim_plan ('P', '{}', '{}', 8, '{}', 200, 'P#x', '1 minute')`},
				{"next due", `next_due_plan ('P', '{}')`},
			} {
				var raw string
				if err := tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE `+e.execute).Scan(&raw); err != nil {
					return err
				}
				var out []struct {
					Plan planNode `json:"Plan"`
				}
				if err := json.Unmarshal([]byte(raw), &out); err != nil || len(out) != 1 {
					return fmt.Errorf("%s: EXPLAIN output %.200s: %v", e.name, raw, err)
				}
				plans[e.name] = out[0].Plan
				t.Logf("%s, %s: %s", mode, e.name, raw)
			}
			return nil
		}()
		conn.Release()
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if n := plans["claim"].Rows; n != 200 {
			t.Errorf("%s: claimed %d actions, want 200", mode, n)
		}
		for name, top := range plans {
			// A healthy claim reads each lease's head of the claim index
			// once: about 25,000 buffers; the next-due read about as many.
			if top.Hits > 200000 {
				t.Errorf("%s, %s: read %d buffers", mode, name, top.Hits)
			}
			// Nothing runs more often than once per lease.
			top.walk(func(n planNode) {
				if n.Loops > 10000 {
					t.Errorf("%s, %s: %s %s runs %d times", mode, name, n.Type, n.Relation, n.Loops)
				}
			})
		}
	}
}

// planNode is a node of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON).
type planNode struct {
	Type     string     `json:"Node Type"`
	Relation string     `json:"Relation Name"`
	Loops    int        `json:"Actual Loops"`
	Rows     int        `json:"Actual Rows"`
	Hits     int        `json:"Shared Hit Blocks"`
	Plans    []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
