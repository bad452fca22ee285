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
	start := time.Now()
	s := bd.start(tb, registry(), opts)
	for _, v := range views {
		bd.actionDone(tb, v.UUID, v.ActionID)
	}
	elapsed := time.Since(start)
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

// BenchmarkActionThroughput: instances x links created through the engine,
// fake controller with no latency, until every action is counted done;
// against the plain claim+complete loop measured on the same server in the
// same run.
func BenchmarkActionThroughput(b *testing.B) {
	b.Run("e2e", func(b *testing.B) {
		for b.Loop() {
			t := b
			bd := setup(t, "fake", nil)
			const instances, links = 10, 50
			elapsed := runBatch(b, t, bd, instances, links, wimthread.Options{Parallel: 8, Poll: time.Second})
			rate := float64(instances*links) / elapsed.Seconds()
			base := claimCompleteBaseline(b, bd.db.Pool(), 2000, 1)
			batched := claimCompleteBaseline(b, bd.db.Pool(), 2000, 50)
			b.ReportMetric(rate, "actions/s")
			b.ReportMetric(base, "baseline-unbatched/s")
			b.ReportMetric(batched, "baseline-batch50/s")
			b.ReportMetric(rate/base, "ratio-vs-unbatched")
			b.ReportMetric(rate/batched, "ratio-vs-batch50")
			if tps, ok := pgbenchTPS(b); ok {
				b.ReportMetric(tps, "pgbench-simple-update-tps")
				b.ReportMetric(rate/tps, "ratio-vs-pgbench")
			}
		}
	})
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
