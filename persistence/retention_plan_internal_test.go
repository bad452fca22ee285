package persistence

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// historyTables fills a fresh database with finished actions as a
// retention purge at its steady state finds them, in creation order (the
// heap's): finished actions in all, of which a tenth are the CREATEs of
// live links (instances of 10 links, created 60 days ago, past the
// retention: the history the purge must keep), purgeable DONE actions of
// deleted instances 40 days old (fewer than a batch: the last batch of a
// purge, the only batch of most), and the rest of deleted instances 1 day
// old (within the retention), 10 per instance action. Plus 1,000 queued
// CREATEs of one live instance and 10 accounts. Every row is written by
// INSERT ... SELECT generate_series, so the links' triggers count them as
// wimd's writes do.
func historyTables(exec func(sql string, args ...any), finished, purgeable int) {
	const (
		tenant = "00000000-0000-0000-0000-000000000001"
		wim    = "00000000-0000-0000-0000-000000000002"
		queued = "00000000-0000-0000-0000-000000000003"
	)
	live := finished / 10
	recent := finished - live - purgeable
	exec(`ALTER TABLE vim_wim_actions SET (autovacuum_enabled = off)`)
	exec(`INSERT INTO nfvo_tenants (uuid, name) VALUES ($1, 't')`, tenant)
	exec(`INSERT INTO wims (uuid, name, type, wim_url) VALUES ($1, 'w', 'fake', 'http://x')`, wim)
	exec(`INSERT INTO wim_accounts (uuid, name, wim_id) SELECT gen_random_uuid(), 'a' || i, $1 FROM generate_series(1, 10) i`, wim)
	exec(`CREATE TABLE bench_accts AS SELECT uuid, row_number() OVER (ORDER BY uuid) - 1 AS n FROM wim_accounts`)
	// Live: one instance, one CREATE instance action and 10 ACTIVE links
	// with their CREATE DONE per 10 live actions.
	exec(`CREATE TABLE bench_inst AS SELECT gen_random_uuid() AS uuid, gen_random_uuid() AS ia, i FROM generate_series(0, $1 / 10 - 1) i`, live)
	exec(`INSERT INTO instance_scenarios (uuid, name, tenant_id) SELECT uuid, 'ns' || i, $1 FROM bench_inst`, tenant)
	exec(`INSERT INTO instance_actions (uuid, tenant_id, instance_id, description, number_tasks, number_done, created_at, modified_at)
		SELECT ia, $1, uuid, 'CREATE', 10, 10, now() - interval '60 days', now() - interval '60 days' FROM bench_inst`, tenant)
	exec(`CREATE TABLE bench_lnk AS SELECT gen_random_uuid() AS uuid, inst.uuid AS inst, inst.ia, k, (inst.i * 10 + k) % 10 AS acct
		FROM bench_inst inst, generate_series(0, 9) k`)
	exec(`INSERT INTO instance_wim_nets (uuid, instance_scenario_id, sce_net_id, wim_id, wim_account_id, status, wim_internal_id, created_at, modified_at)
		SELECT l.uuid, l.inst, gen_random_uuid(), $1, a.uuid, 'ACTIVE', 'svc-' || l.uuid, now() - interval '60 days', now() - interval '60 days'
		FROM bench_lnk l JOIN bench_accts a ON a.n = l.acct`, wim)
	exec(`INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status, created_at, modified_at)
		SELECT l.ia, l.k, a.uuid, 'CREATE', l.uuid, 'DONE', now() - interval '60 days', now() - interval '60 days'
		FROM bench_lnk l JOIN bench_accts a ON a.n = l.acct ORDER BY l.ia, l.k`)
	// Deleted instances: instance actions of an instance that is gone.
	deleted := func(n int, age string) {
		exec(`WITH ias AS (
				INSERT INTO instance_actions (uuid, tenant_id, instance_id, description, number_tasks, number_done, created_at, modified_at)
				SELECT gen_random_uuid(), $1, gen_random_uuid(), 'DELETE', 10, 10, now() - $3::interval, now() - $3::interval
				FROM generate_series(1, ($2 + 9) / 10)
				RETURNING uuid)
			INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status, created_at, modified_at)
			SELECT x.uuid, x.k, a.uuid, 'DELETE', gen_random_uuid(), 'DONE', now() - $3::interval, now() - $3::interval
			FROM (SELECT ias.uuid, k, row_number() OVER () AS r FROM ias, generate_series(0, 9) k) x
			JOIN bench_accts a ON a.n = x.r % 10
			WHERE x.r <= $2`, tenant, n, age)
	}
	deleted(purgeable, "40 days")
	deleted(recent, "1 day")
	// The queue: CREATEs of one live instance, due.
	exec(`INSERT INTO instance_actions (uuid, tenant_id, instance_id, description, number_tasks)
		SELECT $1, $2, uuid, 'CREATE', 1000 FROM bench_inst LIMIT 1`, queued, tenant)
	exec(`INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id, status)
		SELECT $1, i, a.uuid, 'CREATE', gen_random_uuid(), 'SCHEDULED' FROM generate_series(0, 999) i JOIN bench_accts a ON a.n = i % 10`, queued)
	exec(`DROP TABLE bench_accts, bench_inst, bench_lnk`)
	exec(`VACUUM ANALYZE`)
}

// The old statements, the baselines of the plan test and the benchmark:
// the purge took its actions by modified_at alone, in no order, and the
// scrape counted the links table and read the queue in two halves.
var (
	oldPurgeActionsSQL = without(purgeActionsSQL,
		"a.created_at < now() - $1::interval AND ", "ORDER BY a.created_at\n\t\t")
	oldPurgeInstanceActionsSQL = without(purgeInstanceActionsSQL,
		"ia.created_at < now() - $1::interval AND ", "ORDER BY ia.created_at\n\t\t")
)

// without returns sql with each of parts taken out once; a part it does
// not hold is a baseline gone stale, and panics.
func without(sql string, parts ...string) string {
	for _, p := range parts {
		if !strings.Contains(sql, p) {
			panic("baseline: the statement no longer holds " + strconv.Quote(p))
		}
		sql = strings.Replace(sql, p, "", 1)
	}
	return sql
}

const (
	oldLinkCountsSQL = `SELECT status, count(*) FROM instance_wim_nets GROUP BY status`
	oldQueueStatsSQL = `SELECT wim_account_id::text, count(*),
			coalesce(extract(epoch FROM now() - min(run_after) FILTER (WHERE run_after <= now())), 0)::float8
		FROM (
			SELECT wim_account_id, run_after FROM vim_wim_actions
			WHERE status IN ('SCHEDULED', 'BUILD') AND claimed_by IS NULL
			UNION ALL
			SELECT wim_account_id, run_after FROM vim_wim_actions
			WHERE status IN ('SCHEDULED', 'BUILD') AND claimed_by IS NOT NULL
		) q
		WHERE wim_account_id IS NOT NULL
		GROUP BY wim_account_id
		ORDER BY wim_account_id`
	accountCountsSQL    = `SELECT status, count(*) FROM wim_accounts GROUP BY status`
	purgeRetention      = 30 * 24 * time.Hour
	purgeBatch          = 1000
	bigTablesNotScanned = "vim_wim_actions, instance_actions, instance_wim_nets"
)

// planOf returns the plan PostgreSQL chooses for sql with args.
func planOf(t testing.TB, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "EXPLAIN "+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// seqScans returns the big tables that plan reads in full.
func seqScans(plan string) []string {
	var out []string
	for _, table := range strings.Split(bigTablesNotScanned, ", ") {
		if strings.Contains(plan, "Seq Scan on "+table+" ") {
			out = append(out, table)
		}
	}
	return out
}

// TestPurgeAndScrapePlans checks, on 200,000 finished actions (20,000 of
// live links) and 20,000 links, analyzed, that neither the retention
// purge's statements nor the /metrics scrape's read a big table in full
// (issue 30, point 12): the purge walks the finished actions by age
// (vim_wim_actions_finished_idx, instance_actions_created_idx), the queue
// reads the claim index, and the link counts read their own few rows. The
// accounts' count reads wim_accounts, one row per account, in full.
func TestPurgeAndScrapePlans(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	historyTables(execOn(t, pool), 200000, 500)
	for _, c := range []struct {
		name, sql string
		args      []any
	}{
		{"purge actions", purgeActionsSQL, []any{purgeRetention, purgeBatch}},
		{"purge instance actions", purgeInstanceActionsSQL, []any{purgeRetention, purgeBatch}},
		{"scrape: queue", queueStatsSQL, nil},
		{"scrape: links by status", linkCountsSQL, []any{lockClass, foldLinkCountsName}},
	} {
		plan := planOf(t, pool, c.sql, c.args...)
		t.Logf("%s:\n%s", c.name, plan)
		if s := seqScans(plan); len(s) > 0 {
			t.Errorf("the %s statement reads %v in full:\n%s", c.name, s, plan)
		}
	}
}

// TestLinkCountsAreExact checks the counts the links' triggers keep
// against a count of the table, after inserts, updates that change a
// status or keep it, a cascade from deleted instances, deletes, and folds
// in between.
func TestLinkCountsAreExact(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	exec := execOn(t, pool)
	ctx := context.Background()
	historyTables(exec, 10000, 100)
	check := func(step string) {
		t.Helper()
		want := map[string]int{}
		rows, err := pool.Query(ctx, oldLinkCountsSQL)
		if err != nil {
			t.Fatal(err)
		}
		var (
			st string
			n  int
		)
		for rows.Next() {
			if err := rows.Scan(&st, &n); err != nil {
				t.Fatal(err)
			}
			want[st] = n
		}
		rows.Close()
		got, err := NewDB(pool, nil).CountWANLinksByStatus(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("%s: counts %v, table %v", step, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: counts %v, table %v", step, got, want)
				break
			}
		}
	}
	check("filled")
	exec(`UPDATE instance_wim_nets SET status = 'DOWN' WHERE uuid IN (SELECT uuid FROM instance_wim_nets ORDER BY uuid LIMIT 300)`)
	exec(`UPDATE instance_wim_nets SET modified_at = now() WHERE uuid IN (SELECT uuid FROM instance_wim_nets ORDER BY uuid LIMIT 600)`)
	check("updated")
	exec(`UPDATE instance_wim_nets SET status = CASE status WHEN 'DOWN' THEN 'ACTIVE' ELSE 'ERROR' END WHERE uuid IN (SELECT uuid FROM instance_wim_nets ORDER BY uuid LIMIT 400)`)
	check("swapped")
	exec(`DELETE FROM instance_scenarios WHERE uuid IN (SELECT uuid FROM instance_scenarios ORDER BY uuid LIMIT 20)`)
	check("instances deleted")
	exec(`DELETE FROM instance_wim_nets WHERE status = 'ERROR'`)
	check("links deleted")
	var rowsLeft int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM wan_link_status_counts`).Scan(&rowsLeft); err != nil || rowsLeft > 3 {
		t.Errorf("%d count rows after a fold (%v), want one per status", rowsLeft, err)
	}
}

// median runs f n times and returns its median duration.
func median(n int, f func()) time.Duration {
	d := make([]time.Duration, n)
	for i := range d {
		start := time.Now()
		f()
		d[i] = time.Since(start)
	}
	slices.Sort(d)
	return d[n/2]
}

// BenchmarkPurgeAndScrape measures, on 1,000,000 finished actions (see
// historyTables: 100,000 of live links, 500 purgeable, the rest within the
// retention) and 100,000 links, one purge batch (both statements, rolled
// back so that each run finds the same rows) and one /metrics scrape (the
// queue, the accounts and the links by status, and each alone), each
// against the old statements in the same run (medians of 5), and the
// build of the finished-actions index that migration 00013 makes.
// WIMRO_BENCH_FINISHED changes the size.
func BenchmarkPurgeAndScrape(b *testing.B) {
	finished := 1000000
	if v, err := strconv.Atoi(os.Getenv("WIMRO_BENCH_FINISHED")); err == nil && v > 0 {
		finished = v
	}
	pool := pgtest.NewPool(b)
	ctx := context.Background()
	exec := execOn(b, pool)
	start := time.Now()
	historyTables(exec, finished, 500)
	b.Logf("%d finished actions built in %v", finished, time.Since(start).Round(time.Millisecond))
	purge := func(actions, instanceActions string) func() {
		return func() {
			tx, err := pool.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer tx.Rollback(ctx)
			a, err := tx.Exec(ctx, actions, purgeRetention, purgeBatch)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.Exec(ctx, instanceActions, purgeRetention, purgeBatch); err != nil {
				b.Fatal(err)
			}
			if a.RowsAffected() != 500 {
				b.Fatalf("purged %d actions, want 500", a.RowsAffected())
			}
		}
	}
	scrape := func(queue, links string, args ...any) func() {
		return func() {
			for _, q := range []struct {
				sql  string
				args []any
			}{{queue, nil}, {accountCountsSQL, nil}, {links, args}} {
				rows, err := pool.Query(ctx, q.sql, q.args...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	one := func(sql string, args ...any) func() {
		return func() {
			if _, err := pool.Exec(ctx, sql, args...); err != nil {
				b.Fatal(err)
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	for b.Loop() {
		newPurge := median(5, purge(purgeActionsSQL, purgeInstanceActionsSQL))
		oldPurge := median(5, purge(oldPurgeActionsSQL, oldPurgeInstanceActionsSQL))
		newScrape := median(5, scrape(queueStatsSQL, linkCountsSQL, lockClass, foldLinkCountsName))
		oldScrape := median(5, scrape(oldQueueStatsSQL, oldLinkCountsSQL))
		newLinks := median(5, one(linkCountsSQL, lockClass, foldLinkCountsName))
		oldLinks := median(5, one(oldLinkCountsSQL))
		queue := median(5, one(queueStatsSQL))
		oldQueue := median(5, one(oldQueueStatsSQL))
		accounts := median(5, one(accountCountsSQL))
		exec(`DROP INDEX vim_wim_actions_finished_idx`)
		build := time.Now()
		exec(`CREATE INDEX vim_wim_actions_finished_idx ON vim_wim_actions (created_at)
			WHERE status IN ('DONE', 'FAILED', 'SUPERSEDED', 'FINISHED')`)
		index := time.Since(build)
		b.ReportMetric(ms(newPurge), "purge-ms")
		b.ReportMetric(ms(oldPurge), "old-purge-ms")
		b.ReportMetric(float64(oldPurge)/float64(newPurge), "purge-x-faster")
		b.ReportMetric(ms(newScrape), "scrape-ms")
		b.ReportMetric(ms(oldScrape), "old-scrape-ms")
		b.ReportMetric(float64(oldScrape)/float64(newScrape), "scrape-x-faster")
		b.ReportMetric(ms(newLinks), "link-counts-ms")
		b.ReportMetric(ms(oldLinks), "old-link-counts-ms")
		b.ReportMetric(ms(queue), "queue-ms")
		b.ReportMetric(ms(oldQueue), "old-queue-ms")
		b.ReportMetric(ms(accounts), "accounts-ms")
		b.ReportMetric(ms(index), "index-build-ms")
	}
}
