package migrations_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/migrations"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var tables = []string{
	"nfvo_tenants", "datacenters", "tenants_datacenters", "wims", "wim_accounts", "wim_nfvo_tenants",
	"wim_port_mappings", "instance_scenarios", "instance_nets", "instance_wim_nets", "instance_actions", "vim_wim_actions",
}

func countTables(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	err := db.QueryRowContext(t.Context(), `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = 'public' AND table_name = ANY($1)`, tables).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// emptyDB opens a database of its own with no schema at all, and a
// migration provider over it.
func emptyDB(t *testing.T) (*sql.DB, *goose.Provider) {
	t.Helper()
	db, err := sql.Open("pgx", pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	return db, p
}

// atVersion opens a database of its own migrated up to version and runs
// the statements rows in it.
func atVersion(t *testing.T, version int64, rows ...string) (*sql.DB, *goose.Provider) {
	t.Helper()
	db, p := emptyDB(t)
	if _, err := p.UpTo(t.Context(), version); err != nil {
		t.Fatal(err)
	}
	for _, q := range rows {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return db, p
}

// Up, down to zero, and up again all work, and each step leaves the schema
// it should.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	db, p := emptyDB(t)
	ctx := t.Context()
	sources := p.ListSources()
	if len(sources) < 2 {
		t.Fatalf("%d migrations, want at least 2", len(sources))
	}
	latest := sources[len(sources)-1].Version

	for round := range 2 {
		if _, err := p.Up(ctx); err != nil {
			t.Fatalf("round %d up: %v", round, err)
		}
		if v, _ := p.GetDBVersion(ctx); v != latest {
			t.Fatalf("round %d: version %d, want %d", round, v, latest)
		}
		if n := countTables(t, db); n != len(tables) {
			t.Fatalf("round %d: %d of %d tables after up", round, n, len(tables))
		}
		if pending, _ := p.HasPending(ctx); pending {
			t.Fatalf("round %d: pending after up", round)
		}
		if _, err := p.DownTo(ctx, 0); err != nil {
			t.Fatalf("round %d down: %v", round, err)
		}
		if n := countTables(t, db); n != 0 {
			t.Fatalf("round %d: %d tables left after down", round, n)
		}
		if v, _ := p.GetDBVersion(ctx); v != 0 {
			t.Fatalf("round %d: version %d after down", round, v)
		}
	}
}

// deleteRules maps each foreign key into or out of the work rows
// (instance_actions, vim_wim_actions) to its ON DELETE rule: r restrict, c
// cascade, n set null, d set default, a no action.
func deleteRules(t *testing.T, db *sql.DB) map[string]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT conname, confdeltype FROM pg_constraint
		WHERE contype = 'f' AND (conrelid::regclass::text IN ('instance_actions', 'vim_wim_actions')
		                      OR confrelid::regclass::text IN ('instance_actions', 'vim_wim_actions'))`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, rule string
		if err := rows.Scan(&name, &rule); err != nil {
			t.Fatal(err)
		}
		out[name] = rule
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// actionCheck returns the definition of the CHECK on vim_wim_actions.action.
func actionCheck(t *testing.T, db *sql.DB) string {
	t.Helper()
	var def string
	if err := db.QueryRowContext(t.Context(), `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'vim_wim_actions_action_check'`).Scan(&def); err != nil {
		t.Fatal(err)
	}
	return def
}

// The progress increments of an instance action (schema 8) are its
// counters: a cascade could drop the progress of work still running.
var workKeys = []string{"instance_actions_tenant_id_fkey", "vim_wim_actions_instance_action_id_fkey", "vim_wim_actions_wim_account_id_fkey",
	"instance_action_progress_instance_action_id_fkey"}

// Nothing cascades into the work rows (issue 12): every foreign key into
// or out of instance_actions and vim_wim_actions, and into the counters,
// refuses a delete that
// would take work with it, and FIND is no longer an action.
func TestNoCascadeIntoActions(t *testing.T) {
	t.Parallel()
	db, _ := emptyDB(t)
	if err := migrations.Up(t.Context(), db, nil); err != nil {
		t.Fatal(err)
	}
	rules := deleteRules(t, db)
	if len(rules) != len(workKeys) {
		t.Errorf("foreign keys of the work rows = %v, want %v", rules, workKeys)
	}
	for name, rule := range rules {
		if rule != "r" {
			t.Errorf("%s: ON DELETE rule %q, want r (RESTRICT)", name, rule)
		}
	}
	if def := actionCheck(t, db); strings.Contains(def, "FIND") || !strings.Contains(def, "CREATE") || !strings.Contains(def, "DELETE") {
		t.Errorf("vim_wim_actions_action_check = %s", def)
	}
}

// Each migration's down undoes exactly its up: stepping down one version
// at a time from the top leaves the schema of the version below.
func TestDownOneStep(t *testing.T) {
	t.Parallel()
	db, p := emptyDB(t)
	ctx := t.Context()
	if err := migrations.Up(ctx, db, nil); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		to    int64
		check func(t *testing.T)
	}{
		{21, func(t *testing.T) {
			// Version 22 (link counts by type) is undone: the counts'
			// table, function and triggers are those of a database that
			// never had it.
			fresh, _ := atVersion(t, 21)
			if got, want := linkCountsShape(t, db), linkCountsShape(t, fresh); got != want {
				t.Errorf("version 21 after one step down:\n%s\nwant, as migrated up to 21:\n%s", got, want)
			}
		}},
		{20, func(t *testing.T) {
			// Version 21 (wim types) is undone: an l2nm WIM is refused again.
			_, err := db.ExecContext(ctx, `INSERT INTO wims (uuid, name, type, wim_url) VALUES ('00000000-0000-4000-8000-000000000021', 'w21', 'l2nm', 'http://x')`)
			if err == nil || !strings.Contains(err.Error(), "wims_type_check") {
				t.Errorf("version 20: an l2nm WIM: %v, want wims_type_check to refuse it", err)
			}
		}},
		{19, func(t *testing.T) {
			var tables, cols int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'wim_process_leases'`).Scan(&tables)
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public'
				AND table_name = 'wim_account_leases' AND column_name = 'proc_epoch'`).Scan(&cols)
			if tables != 0 || cols != 0 {
				t.Errorf("version 19: wim_process_leases %d, wim_account_leases.proc_epoch %d, want neither", tables, cols)
			}
		}},
		{18, func(t *testing.T) {
			var def string
			db.QueryRowContext(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'vim_wim_actions_action_check'`).Scan(&def)
			if strings.Contains(def, "EDIT") || !strings.Contains(def, "DELETE") {
				t.Errorf("version 18: the action check is %q, want CREATE and DELETE only", def)
			}
		}},
		{17, func(t *testing.T) {
			var cols int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public'
				AND ((table_name = 'instance_nets' AND column_name = 'l3') OR (table_name = 'instance_wim_nets' AND column_name = 'service_type'))`).Scan(&cols)
			if cols != 0 {
				t.Errorf("version 17: %d of the columns of version 18 left, want none", cols)
			}
		}},
		{16, func(t *testing.T) {
			var tables int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public'
				AND table_name IN ('l2sm_vpn_services', 'l2sm_accesses')`).Scan(&tables)
			if tables != 0 {
				t.Errorf("version 16: %d of the tables of version 17 left, want none", tables)
			}
		}},
		{15, func(t *testing.T) {
			var tables int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public'
				AND table_name IN ('vnfs', 'sdn_controllers', 'sdn_port_mappings')`).Scan(&tables)
			if tables != 0 {
				t.Errorf("version 15: %d of the tables of version 16 left, want none", tables)
			}
		}},
		{14, func(t *testing.T) {
			var tables int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public'
				AND table_name IN ('scenarios', 'sce_nets', 'idempotency_keys', 'vlan_allocations')`).Scan(&tables)
			if tables != 0 {
				t.Errorf("version 14: %d of the tables of version 15 left, want none", tables)
			}
		}},
		{13, func(t *testing.T) {
			var tables, reseal int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name IN ('api_audit', 'secret_key_holders')`).Scan(&tables)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_proc WHERE proname = 'wimro_touch_modified_at' AND prosrc LIKE '%wimro.reseal%'`).Scan(&reseal)
			if tables != 0 || reseal != 0 {
				t.Errorf("version 13: %d of api_audit and secret_key_holders left, touch function knows wimro.reseal %d; want none", tables, reseal)
			}
		}},
		{12, func(t *testing.T) {
			var cols, indexes, counts, triggers int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'vim_wim_actions' AND column_name = 'woken_claim'`).Scan(&cols)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname IN ('vim_wim_actions_finished_idx', 'instance_actions_created_idx')`).Scan(&indexes)
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'wan_link_status_counts'`).Scan(&counts)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'instance_wim_nets_count_%'`).Scan(&triggers)
			if cols != 0 || indexes != 0 || counts != 0 || triggers != 0 {
				t.Errorf("version 12: woken_claim %d, purge indexes %d, link counts table %d, count triggers %d; want all gone", cols, indexes, counts, triggers)
			}
		}},
		{11, func(t *testing.T) {
			var heads, seq, streamIdx, triggers int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'instance_action_watches'`).Scan(&heads)
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'instance_action_events' AND column_name = 'seq'`).Scan(&seq)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'instance_action_events_stream_idx'`).Scan(&streamIdx)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'instance_action_events'::regclass AND NOT tgisinternal`).Scan(&triggers)
			if heads != 0 || seq != 0 || streamIdx != 1 || triggers != 0 {
				t.Errorf("version 11: watches table %d, seq column %d, stream index %d, triggers %d (want 0, 0, 1, 0)", heads, seq, streamIdx, triggers)
			}
		}},
		{10, func(t *testing.T) {
			var cols int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'instance_action_events' AND column_name IN ('attempt','next_try_at')`).Scan(&cols)
			if cols != 0 {
				t.Errorf("version 10: %d retry columns of the events still there", cols)
			}
		}},
		{9, func(t *testing.T) {
			var overrides int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'action_overrides'`).Scan(&overrides)
			var check string
			db.QueryRowContext(ctx, `SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'vim_wim_actions_status_check'`).Scan(&check)
			var unsettled int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'vim_wim_actions' AND column_name = 'unsettled_runs'`).Scan(&unsettled)
			if overrides != 0 || unsettled != 0 || strings.Contains(check, "CANCELLED") || !strings.Contains(check, "FINISHED") {
				t.Errorf("version 9: action_overrides tables %d, unsettled_runs %d, status check %s; want no table, no column and no operator statuses", overrides, unsettled, check)
			}
		}},
		{8, func(t *testing.T) {
			var opts string
			db.QueryRowContext(ctx, `SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE relname = 'instance_wim_nets'`).Scan(&opts)
			if opts != "fillfactor=70" {
				t.Errorf("version 8: instance_wim_nets options %q, want fillfactor=70", opts)
			}
		}},
		{7, func(t *testing.T) {
			var lease, seqKey, triggers, progress int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'instance_action_progress'`).Scan(&progress)
			if progress != 0 {
				t.Errorf("version 7: instance_action_progress still there")
			}
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE indexname = 'vim_wim_actions_lease_idx'`).Scan(&lease)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_constraint WHERE conname = 'vim_wim_actions_seq_key'`).Scan(&seqKey)
			db.QueryRowContext(ctx, `SELECT count(*) FROM pg_trigger WHERE tgname IN ('vim_wim_actions_touch', 'instance_wim_nets_touch')`).Scan(&triggers)
			if lease != 1 || seqKey != 1 || triggers != 2 {
				t.Errorf("version 7: lease index %d, seq key %d, touch triggers %d (want 1, 1, 2)", lease, seqKey, triggers)
			}
		}},
		{6, func(t *testing.T) {
			var cols int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'instance_wim_nets' AND column_name IN ('bandwidth_mbps','latency_ms')`).Scan(&cols)
			if cols != 0 {
				t.Errorf("version 6: %d QoS columns still there", cols)
			}
		}},
		{5, func(t *testing.T) {
			var tables, cols int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'instance_action_events'`).Scan(&tables)
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'instance_wim_nets' AND column_name = 'status_since'`).Scan(&cols)
			if tables != 0 || cols != 0 {
				t.Errorf("version 5: events table %d, status_since %d; want both gone", tables, cols)
			}
		}},
		{4, func(t *testing.T) {
			var cols int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_schema='public' AND table_name = 'wim_accounts' AND column_name IN ('status','status_msg','checked_at')`).Scan(&cols)
			if cols != 0 {
				t.Errorf("version 4: %d account status columns still there", cols)
			}
		}},
		{3, func(t *testing.T) {
			var leases int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name = 'wim_account_leases'`).Scan(&leases)
			if leases != 0 {
				t.Errorf("version 3: wim_account_leases still there")
			}
		}},
		{2, func(t *testing.T) {
			rules := deleteRules(t, db)
			for _, name := range workKeys[:3] { // the progress key came with version 8
				if rules[name] != "c" {
					t.Errorf("version 2: %s has ON DELETE rule %q, want c (CASCADE)", name, rules[name])
				}
			}
			if def := actionCheck(t, db); !strings.Contains(def, "FIND") {
				t.Errorf("version 2: vim_wim_actions_action_check = %s", def)
			}
		}},
		{1, func(t *testing.T) {
			var mgmt, inst int
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name IN ('wims','wim_accounts','wim_port_mappings')`).Scan(&mgmt)
			db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name IN ('instance_wim_nets','vim_wim_actions')`).Scan(&inst)
			if mgmt != 3 || inst != 0 {
				t.Errorf("version 1: %d management tables (want 3), %d instance tables (want 0)", mgmt, inst)
			}
		}},
	}
	for _, s := range steps {
		if _, err := p.Down(ctx); err != nil {
			t.Fatal(err)
		}
		if v, _ := p.GetDBVersion(ctx); v != s.to {
			t.Fatalf("version %d after one step down, want %d", v, s.to)
		}
		s.check(t)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}

// Version 12 numbers the events already written in the order version 6
// read them (transaction, then id), not by id: a transaction that began
// first and wrote last comes first. A new event waits for a reader to
// number it.
func TestEventSeqNumbersExistingEvents(t *testing.T) {
	t.Parallel()
	db, p := emptyDB(t)
	ctx := t.Context()
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	const ia = "00000000-0000-4000-8000-000000000002"
	insert := `INSERT INTO instance_action_events (instance_action_id, action) VALUES ('` + ia + `', $1)`
	for _, q := range []string{
		`INSERT INTO nfvo_tenants (uuid, name) VALUES ('00000000-0000-4000-8000-000000000001', 't0')`,
		`INSERT INTO instance_actions (uuid, tenant_id, description) VALUES ('` + ia + `', '00000000-0000-4000-8000-000000000001', 'CREATE')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	older, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer older.Rollback() //nolint:errcheck // committed below
	if _, err := older.ExecContext(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, insert, "YOUNGER"); err != nil {
		t.Fatal(err)
	}
	if _, err := older.ExecContext(ctx, insert, "OLDER"); err != nil {
		t.Fatal(err)
	}
	if err := older.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, insert, "NEW"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(coalesce(seq::text, '-') || ' ' || action, ', ' ORDER BY seq) FROM instance_action_events`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "1 OLDER, 2 YOUNGER, - NEW" {
		t.Fatalf("events %q; want 1 OLDER, 2 YOUNGER, - NEW", got)
	}
}

// Version 3 drops FIND: finished FIND actions are dropped on the way up,
// an unfinished one stops the migration with a message that says what to do.
func TestUpRefusesUnfinishedFind(t *testing.T) {
	t.Parallel()
	db, p := atVersion(t, 2,
		`INSERT INTO nfvo_tenants (uuid, name) VALUES ('00000000-0000-4000-8000-000000000001', 't0')`,
		`INSERT INTO instance_actions (uuid, tenant_id, description, number_tasks) VALUES ('00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'FIND', 2)`,
		`INSERT INTO vim_wim_actions (instance_action_id, task_index, action, item_id, status) VALUES
			('00000000-0000-4000-8000-000000000002', 0, 'FIND', gen_random_uuid(), 'DONE'),
			('00000000-0000-4000-8000-000000000002', 1, 'FIND', gen_random_uuid(), 'SCHEDULED')`)
	ctx := t.Context()
	_, err := p.Up(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 unfinished FIND action(s)") {
		t.Fatalf("up with an unfinished FIND = %v", err)
	}
	if v, _ := p.GetDBVersion(ctx); v != 2 {
		t.Fatalf("version %d after a refused migration, want 2", v)
	}
	if _, err := db.ExecContext(ctx, `UPDATE vim_wim_actions SET status = 'FAILED'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM vim_wim_actions`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d FIND actions left (%v)", n, err)
	}
}

// The claim query of the action queue is served by the partial index.
func TestClaimIndexServesClaimQuery(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	var plan string
	rows, err := conn.Query(ctx, `EXPLAIN SELECT instance_action_id, task_index FROM vim_wim_actions
		WHERE wim_account_id = '00000000-0000-0000-0000-000000000000' AND status IN ('SCHEDULED', 'BUILD')
		  AND claimed_by IS NULL AND run_after <= now()
		ORDER BY run_after, seq LIMIT 10 FOR UPDATE SKIP LOCKED`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		rows.Scan(&line)
		plan += line + "\n"
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan, "vim_wim_actions_claim_idx") {
		t.Fatalf("claim query does not use the partial index:\n%s", plan)
	}
}

// The schema guard: a database with pending migrations, or with one this
// binary does not know (a newer wimd migrated it), is refused with what to
// do; the current schema passes.
func TestCheck(t *testing.T) {
	t.Parallel()
	db, p := emptyDB(t)
	ctx := t.Context()
	if err := migrations.Check(ctx, db); err == nil || !strings.Contains(err.Error(), "wimd migrate up") {
		t.Fatalf("check of an empty database = %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); err != nil {
		t.Fatalf("check of the current schema = %v", err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO goose_db_version (version_id, is_applied) VALUES (999, true)`); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Check(ctx, db); err == nil || !strings.Contains(err.Error(), "schema version(s) 999") {
		t.Fatalf("check with an unknown version = %v", err)
	}
}

// Version 13 counts the links that exist when it runs: the counts start
// exact, and the triggers keep them so.
func TestLinkCountsFilledOnUpgrade(t *testing.T) {
	t.Parallel()
	db, p := atVersion(t, 9,
		`INSERT INTO nfvo_tenants (uuid, name) VALUES ('00000000-0000-4000-8000-000000000001', 't0')`,
		`INSERT INTO wims (uuid, name, type, wim_url) VALUES ('00000000-0000-4000-8000-000000000002', 'w', 'fake', 'http://x')`,
		`INSERT INTO wim_accounts (uuid, name, wim_id) VALUES ('00000000-0000-4000-8000-000000000003', 'a', '00000000-0000-4000-8000-000000000002')`,
		`INSERT INTO instance_scenarios (uuid, name, tenant_id) VALUES ('00000000-0000-4000-8000-000000000004', 'ns', '00000000-0000-4000-8000-000000000001')`,
		`INSERT INTO instance_wim_nets (uuid, instance_scenario_id, wim_id, wim_account_id, status)
			SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003',
			       CASE WHEN i % 3 = 0 THEN 'DOWN' ELSE 'ACTIVE' END
			FROM generate_series(1, 30) i`)
	ctx := t.Context()
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE instance_wim_nets SET status = 'ERROR' WHERE uuid IN (SELECT uuid FROM instance_wim_nets WHERE status = 'ACTIVE' LIMIT 5)`); err != nil {
		t.Fatal(err)
	}
	var counts string
	if err := db.QueryRowContext(ctx, `SELECT string_agg(status || '=' || n, ',' ORDER BY status)
		FROM (SELECT status, sum(n) AS n FROM wan_link_status_counts GROUP BY status HAVING sum(n) <> 0) c`).Scan(&counts); err != nil {
		t.Fatal(err)
	}
	if counts != "ACTIVE=15,DOWN=10,ERROR=5" {
		t.Fatalf("link counts after the upgrade and one update: %s, want ACTIVE=15,DOWN=10,ERROR=5", counts)
	}
}

// linkCountsShape describes what versions 13 and 22 made for the link
// counts: the columns of wan_link_status_counts and their checks, the
// trigger function's source, the count triggers and the functions named
// wimro_link_*.
func linkCountsShape(t *testing.T, db *sql.DB) string {
	t.Helper()
	var shape string
	err := db.QueryRowContext(t.Context(), `SELECT concat_ws(E'\n',
		(SELECT string_agg(column_name || ' ' || data_type || ' ' || is_nullable, ', ' ORDER BY ordinal_position)
		 FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'wan_link_status_counts'),
		(SELECT string_agg(pg_get_constraintdef(oid), ', ' ORDER BY conname) FROM pg_constraint WHERE conrelid = 'wan_link_status_counts'::regclass),
		(SELECT prosrc FROM pg_proc WHERE proname = 'wimro_count_link_statuses'),
		(SELECT string_agg(pg_get_triggerdef(oid), E'\n' ORDER BY tgname) FROM pg_trigger WHERE tgname LIKE 'instance_wim_nets_count_%'),
		(SELECT string_agg(proname, ', ') FROM pg_proc WHERE proname LIKE 'wimro_link_%'))`).Scan(&shape)
	if err != nil {
		t.Fatal(err)
	}
	return shape
}

// linkCounts returns the sums of wan_link_status_counts, by the columns
// cols (a list of the table's columns), as "a/b=n" lines in order.
func linkCounts(t *testing.T, db *sql.DB, cols string) string {
	t.Helper()
	var counts sql.NullString
	err := db.QueryRowContext(t.Context(), `SELECT string_agg(k || '=' || n, ',' ORDER BY k)
		FROM (SELECT concat_ws('/', `+cols+`) AS k, sum(n) AS n FROM wan_link_status_counts GROUP BY `+cols+` HAVING sum(n) <> 0) c`).Scan(&counts)
	if err != nil {
		t.Fatal(err)
	}
	return counts.String
}

// Version 22 counts the links that exist when it runs by status and
// type, a link of no recorded type (written before version 18) as the
// runner makes it: an ELAN when multipoint, else an ELINE. Its triggers
// keep the counts exact, a change of type alone included, and its down
// step leaves counts by status that are exact too.
func TestLinkCountsByTypeOnUpgradeAndDown(t *testing.T) {
	t.Parallel()
	link := func(status, typ string, multipoint bool, n int) string {
		return fmt.Sprintf(`INSERT INTO instance_wim_nets (uuid, instance_scenario_id, wim_id, wim_account_id, status, service_type, multipoint)
			SELECT gen_random_uuid(), '00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000003',
			       '%s', %s, %t FROM generate_series(1, %d)`, status, typ, multipoint, n)
	}
	db, p := atVersion(t, 21,
		`INSERT INTO nfvo_tenants (uuid, name) VALUES ('00000000-0000-4000-8000-000000000001', 't0')`,
		`INSERT INTO wims (uuid, name, type, wim_url) VALUES ('00000000-0000-4000-8000-000000000002', 'w', 'fake', 'http://x')`,
		`INSERT INTO wim_accounts (uuid, name, wim_id) VALUES ('00000000-0000-4000-8000-000000000003', 'a', '00000000-0000-4000-8000-000000000002')`,
		`INSERT INTO instance_scenarios (uuid, name, tenant_id) VALUES ('00000000-0000-4000-8000-000000000004', 'ns', '00000000-0000-4000-8000-000000000001')`,
		link("ACTIVE", "NULL", false, 4),
		link("DOWN", "NULL", true, 2),
		link("ACTIVE", "'ELINE'", false, 3),
		link("ERROR", "'ELAN'", true, 1),
		link("ACTIVE", "'L3VPN'", false, 5),
		link("DOWN", "'L3VPN'", false, 2))
	ctx := t.Context()
	if _, err := p.UpTo(ctx, 22); err != nil {
		t.Fatal(err)
	}
	const filled = "ACTIVE/ELINE=7,ACTIVE/L3VPN=5,DOWN/ELAN=2,DOWN/L3VPN=2,ERROR/ELAN=1"
	if got := linkCounts(t, db, "status, service_type"); got != filled {
		t.Fatalf("link counts after the upgrade: %s, want %s", got, filled)
	}
	for _, step := range []struct{ name, sql, want string }{
		{"a scale out: 2 ELINEs of no recorded type become ELANs",
			`UPDATE instance_wim_nets SET service_type = 'ELAN' WHERE uuid IN (SELECT uuid FROM instance_wim_nets WHERE service_type IS NULL AND NOT multipoint LIMIT 2)`,
			"ACTIVE/ELAN=2,ACTIVE/ELINE=5,ACTIVE/L3VPN=5,DOWN/ELAN=2,DOWN/L3VPN=2,ERROR/ELAN=1"},
		{"status and type in one statement",
			`UPDATE instance_wim_nets SET status = 'ACTIVE', service_type = CASE WHEN service_type = 'L3VPN' THEN 'L3VPN' ELSE 'ELINE' END WHERE status IN ('DOWN', 'ERROR')`,
			"ACTIVE/ELAN=2,ACTIVE/ELINE=8,ACTIVE/L3VPN=7"},
		{"an update that changes neither", `UPDATE instance_wim_nets SET modified_at = now()`,
			"ACTIVE/ELAN=2,ACTIVE/ELINE=8,ACTIVE/L3VPN=7"},
		{"deleted", `DELETE FROM instance_wim_nets WHERE service_type = 'L3VPN' OR service_type IS NULL`,
			"ACTIVE/ELAN=2,ACTIVE/ELINE=6"},
	} {
		if _, err := db.ExecContext(ctx, step.sql); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := linkCounts(t, db, "status, service_type"); got != step.want {
			t.Fatalf("%s: link counts %s, want %s", step.name, got, step.want)
		}
	}

	if _, err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, link("DOWN", "'L3VPN'", false, 1)); err != nil {
		t.Fatal(err)
	}
	if got := linkCounts(t, db, "status"); got != "ACTIVE=8,DOWN=1" {
		t.Fatalf("link counts by status after the down step and an insert: %s, want ACTIVE=8,DOWN=1", got)
	}
}
