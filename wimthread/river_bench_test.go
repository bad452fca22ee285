package wimthread_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// The River baseline: River itself (the library, a test-only dependency)
// burning down no-op jobs on a database of the same server, in the same
// run, so that wimro's actions/s has a yardstick measured like with like.
// It follows what `river bench --num-total-jobs` does (cmd/river/riverbench):
// jobs inserted before the client starts, the fetch settings River chose for
// its own benchmark, and completions counted through River's event
// subscription, which fires once a completion is written.

// riverNoopArgs is the job: nothing to do, so the figure is River's queue
// overhead alone.
type riverNoopArgs struct{}

func (riverNoopArgs) Kind() string { return "wimro_bench_noop" }

type riverNoopWorker struct {
	river.WorkerDefaults[riverNoopArgs]
}

func (riverNoopWorker) Work(context.Context, *river.Job[riverNoopArgs]) error { return nil }

// riverResult is one River burn-down.
type riverResult struct {
	jobsPerSec float64
	wall       time.Duration
	poolConns  int32 // the pool's MaxConns, as wimro's is reported
	// cpu is this process's user+sys over the burn-down, serverCPU the
	// PostgreSQL server's (when serverCPUOK), as wimro's runs report them.
	cpu, serverCPU time.Duration
	serverCPUOK    bool
}

// riverBurnDown migrates an empty database of the harness's server with
// River's own migrator, inserts jobs no-op jobs (COPY, InsertManyFast),
// then starts a client and times it from Start until every job's
// completion is reported.
func riverBurnDown(b *testing.B, jobs int) riverResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// pgx's default pool size, the one persistence.Open gives wimd.
	pool, err := pgxpool.New(ctx, pgtest.EmptyURL(b))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	quiet := slog.New(slog.DiscardHandler)
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		b.Fatalf("river migrations: %v", err)
	}

	workers := river.NewWorkers()
	river.AddWorker(workers, &riverNoopWorker{})
	client, err := river.NewClient(driver, &river.Config{
		// riverbench's settings: much faster than River's defaults for
		// a burn-down (its comments say ~1k-2k workers did best).
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Logger:            quiet,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 2000}},
		Workers:           workers,
	})
	if err != nil {
		b.Fatal(err)
	}
	// A channel as large as the run, so that no event is dropped.
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: jobs,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer unsubscribe()

	params := make([]river.InsertManyParams, jobs)
	for i := range params {
		params[i].Args = riverNoopArgs{}
	}
	n, err := client.InsertManyFast(ctx, params)
	if err != nil || n != jobs {
		b.Fatalf("river insert: %d of %d, %v", n, jobs, err)
	}

	conn, err := pool.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	server := postmasterOf(ctx, conn.Conn())
	conn.Release()
	cpu0 := processCPU(b)
	srv0, srvOK0 := server.cpu()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		b.Fatal(err)
	}
	deadline := time.NewTimer(5 * time.Minute)
	defer deadline.Stop()
	for done := 0; done < jobs; {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted || ev.Job.State != rivertype.JobStateCompleted {
				b.Fatalf("river job %d: %s (%s)", ev.Job.ID, ev.Kind, ev.Job.State)
			}
			done++
		case <-deadline.C:
			b.Fatalf("river: %d of %d jobs completed after 5 minutes", done, jobs)
		}
	}
	wall := time.Since(start)
	res := riverResult{jobsPerSec: float64(jobs) / wall.Seconds(), wall: wall, poolConns: pool.Config().MaxConns, cpu: processCPU(b) - cpu0}
	if srv1, ok := server.cpu(); ok && srvOK0 {
		res.serverCPU, res.serverCPUOK = srv1-srv0, true
	}
	if err := client.Stop(ctx); err != nil {
		b.Errorf("river stop: %v", err)
	}
	return res
}

// reportCost reports River's CPU per job, named as wimro's per action.
func (r riverResult) reportCost(b *testing.B, jobs int, prefix string) {
	b.Helper()
	b.ReportMetric(float64(r.cpu.Microseconds())/float64(jobs), prefix+"cpu-us/job")
	if r.serverCPUOK {
		b.ReportMetric(float64(r.serverCPU.Microseconds())/float64(jobs), prefix+"server-cpu-us/job")
	}
}

// BenchmarkRiverBurnDown: River alone (the same baseline that
// BenchmarkActionThroughput reports as river-jobs/s).
func BenchmarkRiverBurnDown(b *testing.B) {
	const jobs = 100000
	for b.Loop() {
		r := riverBurnDown(b, jobs)
		b.ReportMetric(r.jobsPerSec, "jobs/s")
		b.ReportMetric(r.wall.Seconds(), "s-wall")
		b.ReportMetric(float64(r.poolConns), "pool-conns")
		r.reportCost(b, jobs, "")
	}
}
