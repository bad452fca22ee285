package migrations_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/wimro/wimro/internal/pgtest"
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

// Up, down to zero, and up again all work, and each step leaves the schema
// it should.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("pgx", pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	p, err := migrations.NewProvider(db, nil)
	if err != nil {
		t.Fatal(err)
	}
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

// Each migration's down undoes exactly its up: stepping down one version
// from the top drops only the newer tables.
func TestDownOneStep(t *testing.T) {
	t.Parallel()
	db, err := sql.Open("pgx", pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	if err := migrations.Up(ctx, db, nil); err != nil {
		t.Fatal(err)
	}
	p, _ := migrations.NewProvider(db, nil)
	if _, err := p.Down(ctx); err != nil {
		t.Fatal(err)
	}
	var mgmt, inst int
	db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name IN ('wims','wim_accounts','wim_port_mappings')`).Scan(&mgmt)
	db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema='public' AND table_name IN ('instance_wim_nets','vim_wim_actions')`).Scan(&inst)
	if mgmt != 3 || inst != 0 {
		t.Fatalf("after one step down: %d management tables (want 3), %d instance tables (want 0)", mgmt, inst)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
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
