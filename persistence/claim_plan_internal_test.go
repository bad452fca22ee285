package persistence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/internal/pgtest"
)

// execOn returns a function that runs a statement on pool and fails the
// test if it fails: the plan tests build their tables by hand.
func execOn(t *testing.T, pool *pgxpool.Pool) func(sql string, args ...any) {
	return func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
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
	exec(`INSERT INTO nfvo_tenants (uuid, name) VALUES ('00000000-0000-0000-0000-000000000001', 't')`)
	exec(`INSERT INTO wims (uuid, name, type, wim_url) VALUES ('00000000-0000-0000-0000-000000000002', 'w', 'fake', 'http://x')`)
	exec(`INSERT INTO wim_accounts (uuid, name, wim_id) SELECT gen_random_uuid(), 'a' || i, '00000000-0000-0000-0000-000000000002' FROM generate_series(1, 100) i`)
	exec(`INSERT INTO instance_actions (uuid, tenant_id, description) VALUES ('00000000-0000-0000-0000-000000000003', '00000000-0000-0000-0000-000000000001', 'CREATE')`)
	exec(`WITH acc AS (SELECT uuid, row_number() OVER (ORDER BY uuid) - 1 AS n FROM wim_accounts)
		INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status)
		SELECT '00000000-0000-0000-0000-000000000003', i, acc.uuid, 'CREATE', gen_random_uuid(), CASE WHEN i < 100000 THEN 'DONE' ELSE 'SCHEDULED' END
		FROM generate_series(0, 109999) i JOIN acc ON acc.n = i % 100`)
	exec(`INSERT INTO wim_account_leases (account_id, owner, epoch, expires_at) SELECT uuid, 'P', 1, now() + interval '1 hour' FROM wim_accounts`)
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
