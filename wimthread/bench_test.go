package wimthread_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/engine"
	"github.com/wimro/wimro/wimthread"
)

// run creates `instances` instances of `links` links each, starts a
// supervisor and returns how long it takes until every CREATE is counted
// done.
func runBatch(b *testing.B, tb testing.TB, bd *bundle, instances, links int, opts wimthread.Options) time.Duration {
	b.Helper()
	var views []engine.InstanceView
	for i := range instances {
		views = append(views, bd.instance(tb, fmt.Sprintf("ns%d-%s", i, uuid.NewString()[:4]), links, wimro.NetActive))
	}
	total := instances * links
	start := time.Now()
	s := bd.start(tb, registry(), opts)
	// One cheap query on a short tick, so the wait adds little to the
	// measured time.
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var n int
		if err := bd.db.Pool().QueryRow(bd.ctx, `SELECT coalesce(sum(number_done + number_failed), 0) FROM instance_actions WHERE description = 'CREATE'`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n >= total {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d actions done after 5 minutes", n, total)
		}
		<-tick.C
	}
	elapsed := time.Since(start)
	for _, v := range views {
		if ia := bd.actionDone(tb, v.UUID, v.ActionID); ia.Failed != 0 {
			b.Fatalf("%d actions failed", ia.Failed)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.Stop(ctx)
	return elapsed
}

// claimCompleteBaseline is the plain queue loop on the same server: claim
// one row with SKIP LOCKED, complete it, repeat (batch rows per claim).
func claimCompleteBaseline(b *testing.B, pool *pgxpool.Pool, jobs, batch int) float64 {
	b.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_jobs (id bigserial PRIMARY KEY, state text NOT NULL, claimed_by text);
		TRUNCATE bench_jobs; CREATE INDEX IF NOT EXISTS bench_jobs_pending ON bench_jobs (id) WHERE state = 'pending'`); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO bench_jobs (state) SELECT 'pending' FROM generate_series(1, $1)`, jobs); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for done := 0; done < jobs; {
		rows, err := pool.Query(ctx, `WITH c AS (SELECT id FROM bench_jobs WHERE state = 'pending' ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE bench_jobs j SET state = 'running', claimed_by = 'b' FROM c WHERE j.id = c.id RETURNING j.id`, batch)
		if err != nil {
			b.Fatal(err)
		}
		var ids []int64
		for rows.Next() {
			var id int64
			rows.Scan(&id)
			ids = append(ids, id)
		}
		rows.Close()
		if _, err := pool.Exec(ctx, `UPDATE bench_jobs SET state = 'done', claimed_by = NULL WHERE id = ANY($1)`, ids); err != nil {
			b.Fatal(err)
		}
		done += len(ids)
	}
	return float64(jobs) / time.Since(start).Seconds()
}

// BenchmarkActionThroughput: 10 instances x 50 links created through the
// engine, fake controller with no latency, until every action is counted
// done, at the default per-account parallelism (8) and at 64; against the
// plain claim+complete loop (unbatched and batched by 50) and pgbench
// simple-update measured on the same server in the same run.
func BenchmarkActionThroughput(b *testing.B) {
	const instances, links = 10, 50
	for b.Loop() {
		rates := map[int]float64{}
		var bd *bundle
		for _, p := range []int{8, 64} {
			bd = setup(b, "fake", nil)
			elapsed := runBatch(b, b, bd, instances, links, wimthread.Options{Parallel: p, Poll: time.Second})
			rates[p] = float64(instances*links) / elapsed.Seconds()
		}
		base := claimCompleteBaseline(b, bd.db.Pool(), 2000, 1)
		batched := claimCompleteBaseline(b, bd.db.Pool(), 2000, 50)
		b.ReportMetric(rates[8], "actions/s")
		b.ReportMetric(rates[64], "actions/s-parallel64")
		b.ReportMetric(base, "baseline-unbatched/s")
		b.ReportMetric(batched, "baseline-batch50/s")
		b.ReportMetric(rates[8]/base, "ratio-vs-unbatched")
		b.ReportMetric(rates[8]/batched, "ratio-vs-batch50")
		if tps, ok := pgbenchTPS(b); ok {
			b.ReportMetric(tps, "pgbench-simple-update-tps")
			b.ReportMetric(rates[8]/tps, "ratio-vs-pgbench")
		}
	}
}

// BenchmarkLatencyBound: one account, 100 links, 100 ms per controller
// call: parallel links (8) against the serial baseline (1 at a time, as
// OSM's thread) in the same run.
func BenchmarkLatencyBound(b *testing.B) {
	for b.Loop() {
		t := b
		par := setup(t, "fake", map[string]any{"latency_ms": 100})
		parallel := runBatch(b, t, par, 1, 100, wimthread.Options{Parallel: 8, Poll: time.Second})
		ser := setup(t, "fake", map[string]any{"latency_ms": 100})
		serial := runBatch(b, t, ser, 1, 100, wimthread.Options{Parallel: 1, Poll: time.Second})
		b.ReportMetric(parallel.Seconds(), "s-parallel")
		b.ReportMetric(serial.Seconds(), "s-serial-baseline")
		b.ReportMetric(serial.Seconds()/parallel.Seconds(), "speedup")
	}
}
