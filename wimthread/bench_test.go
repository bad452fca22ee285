package wimthread_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/actions"
	"github.com/wimro/wimro/connectors/fake"
	"github.com/wimro/wimro/internal/secret"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/internal/testkit/testfactory"
	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// benchPolicy is fast with the status refresh due at once, so that a
// controller answering BUILD (build_polls) costs the engine's time, not a
// refresh timer's. With the fake connector as the benchmarks configure it,
// a CREATE's run makes the service and reads it ACTIVE at once: one action
// run, two controller calls, per link.
var benchPolicy = func() (p actions.Policy) {
	p = fast
	p.Refresh = time.Millisecond
	return p
}()

// fixture is the work of a throughput benchmark: accounts WIM accounts of
// one tenant (one fake WIM each, with two datacenters of its own mapped),
// and on each of them instances instances of links WAN links, created
// through the engine as the API would.
type fixture struct {
	accounts, instances, links int
	accountConfig              map[string]any
}

func (f fixture) creates() int { return f.accounts * f.instances * f.links }

// build makes the fixture on a fresh database. The database is opened the
// way wimd opens it (persistence.Open, its pool settings), not through the
// test harness's pool, so the figures follow wimd's pool sizing.
func (f fixture) build(b *testing.B, parallel int) *bundle {
	b.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	box, err := secret.New(key)
	if err != nil {
		b.Fatal(err)
	}
	db, err := persistence.Open(b.Context(), pgtest.URL(b), nil, persistence.WithMaxConns(wimthread.PoolSize(parallel)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(db.Close) // before the harness drops the database
	fa := testfactory.NewOn(b, db, box)
	bd := &bundle{f: fa, ctx: fa.Ctx, db: db, box: box, eng: fa.Eng, url: "http://fake-" + uuid.NewString()}
	bd.ctrl = fake.ControllerFor(bd.url)
	b.Cleanup(bd.ctrl.Reset)
	fa.Tenant(b, "t0")
	for a := range f.accounts {
		dcs := []string{fmt.Sprintf("dc%03da", a), fmt.Sprintf("dc%03db", a)}
		bd.wan(b, fmt.Sprintf("wan%03d", a), fake.Type, bd.url, f.accountConfig, dcs...)
		for i := range f.instances {
			bd.instance(b, fmt.Sprintf("ns%03d-%03d-%s", a, i, uuid.NewString()[:4]), f.links, wimro.NetActive, dcs...)
		}
	}
	return bd
}

// createProgress is the counters of the CREATE instance actions, one row
// each: the row's own plus the increments of the outcome batches (schema
// version 8), as persistence reads them.
const createProgress = `SELECT ia.number_done + coalesce(sum(p.n_done), 0) AS done, ia.number_failed + coalesce(sum(p.n_failed), 0) AS failed
	FROM instance_actions ia LEFT JOIN instance_action_progress p ON p.instance_action_id = ia.uuid
	WHERE ia.description = 'CREATE' GROUP BY ia.uuid`

// runResult is one timed run: from the supervisor's start until every
// CREATE was counted done (creates) and until every link was ACTIVE
// (active), with what the run cost.
type runResult struct {
	creates, active time.Duration
	calls           int           // controller calls: CREATE and status reads (two per link: the CREATE's run reads the status at once)
	cpu             time.Duration // user+sys of this process over the run
	serverCPU       time.Duration // user+sys of the PostgreSQL server over the run
	serverCPUOK     bool          // the server is a local process this one can read
	poolConns       int32
	poolWait        time.Duration // time the workers waited for a pool connection, summed
	claims, empty   int           // claim statements run, and those of them that found nothing
	loadavg         float64       // the machine's 1-minute load average at the end (it is shared)
}

// run starts a supervisor owning every account of bd and waits until
// every link is ACTIVE. It waits on the supervisor's own metrics (a CREATE
// outcome DONE is counted once its write committed), as River's burn-down
// waits on River's completion events: polling the database for the
// progress cost the server about a twentieth of a one-second run. The
// database is read once at the end: every CREATE counted done and every
// link ACTIVE, or the run fails. With the fake answering ACTIVE at once, a
// CREATE is counted done in the outcome that makes its link ACTIVE, so
// creates and active are the same time.
func (f fixture) run(b *testing.B, bd *bundle, opts wimthread.Options) runResult {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	watch, err := pgx.ConnectConfig(ctx, bd.db.Pool().Config().ConnConfig.Copy())
	if err != nil {
		b.Fatal(err)
	}
	defer watch.Close(context.Background())
	server := postmasterOf(ctx, watch)
	calls := func() int {
		return bd.ctrl.CallCount(fake.MethodCreateService) + bd.ctrl.CallCount(fake.MethodGetServiceStatus)
	}
	if opts.Policy == (actions.Policy{}) {
		opts.Policy = benchPolicy
	}
	if opts.Poll == 0 {
		opts.Poll = time.Second
	}
	if opts.SweepEvery == 0 {
		opts.SweepEvery = time.Second // own() sweeps expired claims at most every second
	}
	reg := prometheus.NewRegistry()
	if opts.Metrics, err = wimthread.NewMetrics(reg); err != nil {
		b.Fatal(err)
	}
	// finished is how many CREATE outcomes were written with status (the
	// fake is the only connector, so one series each).
	finished := func(status string) int {
		return int(metricValue(b, reg, "wimro_actions_finished_total", map[string]string{"action": wimro.ActionCreate, "status": status}))
	}
	total := f.creates()
	callsBefore := calls()

	var res runResult
	defer profile(b, f)()
	cpu0 := processCPU(b)
	srv0, srvOK0 := server.cpu()
	wait0 := bd.db.Pool().Stat().AcquireDuration()
	start := time.Now()
	s := bd.own(b, registry(), nil, opts)
	// A gather builds every series anew: every 5 ms costs the process about
	// 1% of a core.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		done, failed := finished(wimro.ActionDone), finished(wimro.ActionFailed)
		if failed > 0 {
			b.Fatalf("%d CREATE actions failed", failed)
		}
		if done >= total {
			res.active = time.Since(start)
			res.creates = res.active
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("after 5 minutes: %d of %d CREATEs DONE", done, total)
		}
		<-tick.C
	}
	res.cpu = processCPU(b) - cpu0
	if srv1, ok := server.cpu(); ok && srvOK0 {
		res.serverCPU, res.serverCPUOK = srv1-srv0, true
	}
	res.calls = calls() - callsBefore
	res.poolConns = bd.db.Pool().Config().MaxConns
	res.poolWait = bd.db.Pool().Stat().AcquireDuration() - wait0
	res.loadavg = loadavg()
	res.claims, res.empty = claimStatements(b, reg)
	var done, failed, active int
	if err := watch.QueryRow(ctx, `SELECT coalesce(sum(done), 0), coalesce(sum(failed), 0), (SELECT count(*) FROM instance_wim_nets WHERE status = 'ACTIVE')
		FROM (`+createProgress+`) p`).Scan(&done, &failed, &active); err != nil {
		b.Fatal(err)
	}
	if done != total || failed != 0 || active != total {
		b.Fatalf("the metrics counted %d CREATEs DONE, the database has %d done, %d failed, %d links ACTIVE of %d", total, done, failed, active, total)
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), time.Minute)
	defer stopCancel()
	if err := s.Stop(stopCtx); err != nil {
		b.Errorf("stop: %v", err)
	}
	return res
}

// profile writes a CPU profile of the timed part of a run into the
// folder named by WIMRO_BENCH_PROFILE_DIR, when it is set, one file per
// benchmark and fixture shape (go tool pprof reads it). The fixture's
// creation is left out, which -cpuprofile cannot do.
func profile(b *testing.B, f fixture) (stop func()) {
	b.Helper()
	dir := os.Getenv("WIMRO_BENCH_PROFILE_DIR")
	if dir == "" {
		return func() {}
	}
	name := fmt.Sprintf("%s-%dx%dx%d.pprof", strings.NewReplacer("/", "_").Replace(b.Name()), f.accounts, f.instances, f.links)
	out, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := out.Close(); err != nil {
			b.Error(err)
		}
	}
}

// loadavg is the 1-minute load average of the machine (0 if unknown).
func loadavg() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// processCPU is the user+sys time of this process so far (every thread).
func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postmaster is the PostgreSQL server process, when it runs on this
// machine under a user whose /proc this process can read (the harness's
// throwaway server); 0 otherwise.
type postmaster int

// postmasterOf finds the server through the backend of conn: the
// backend's parent is the postmaster.
func postmasterOf(ctx context.Context, conn *pgx.Conn) postmaster {
	var backend int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend); err != nil {
		return 0
	}
	st, ok := procStat(backend)
	if !ok || !strings.HasPrefix(st.comm, "postgres") {
		return 0 // another machine, or another pid namespace
	}
	return postmaster(st.ppid)
}

// cpu is the server's user+sys time so far: the postmaster's own, that of
// its children that have exited (reaped into its cutime/cstime: backends
// that came and went) and that of its live children.
func (p postmaster) cpu() (time.Duration, bool) {
	if p == 0 {
		return 0, false
	}
	root, ok := procStat(int(p))
	if !ok {
		return 0, false
	}
	ticks := root.utime + root.stime + root.cutime + root.cstime
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.ppid == int(p) {
			ticks += st.utime + st.stime
		}
	}
	// USER_HZ is 100 on every Linux build Go supports without cgo's sysconf.
	return time.Duration(ticks) * 10 * time.Millisecond, true
}

type stat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime int64
}

// procStat reads /proc/<pid>/stat (proc(5)): comm in parentheses, then
// state, ppid, ..., utime (14), stime, cutime, cstime (17).
func procStat(pid int) (stat, bool) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return stat{}, false
	}
	s := string(raw)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return stat{}, false
	}
	f := strings.Fields(s[end+1:]) // f[0] is field 3 (state)
	if len(f) < 15 {
		return stat{}, false
	}
	n := func(field int) int64 { v, _ := strconv.ParseInt(f[field-3], 10, 64); return v }
	return stat{comm: s[open+1 : end], ppid: int(n(4)), utime: n(14), stime: n(15), cutime: n(16), cstime: n(17)}, true
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
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `UPDATE bench_jobs SET state = 'done', claimed_by = NULL WHERE id = ANY($1)`, ids); err != nil {
			b.Fatal(err)
		}
		done += len(ids)
	}
	return float64(jobs) / time.Since(start).Seconds()
}

// reportCost reports what a run cost per CREATE action, suffix naming
// the run when a benchmark has several.
func reportCost(b *testing.B, r runResult, creates int, suffix string) {
	b.Helper()
	n := float64(creates)
	b.ReportMetric(float64(r.cpu.Microseconds())/n, "cpu-us/action"+suffix)
	if r.serverCPUOK {
		b.ReportMetric(float64(r.serverCPU.Microseconds())/n, "server-cpu-us/action"+suffix)
	}
	b.ReportMetric(float64(r.poolWait.Microseconds())/1000/n, "pool-wait-ms/action"+suffix)
	b.ReportMetric(float64(r.claims), "claims"+suffix)
	b.ReportMetric(float64(r.empty), "empty-claims"+suffix)
}

// BenchmarkActionThroughput (issue 16): 100 accounts x 50 links (one fake
// WIM per account, no latency) until every link is ACTIVE, at wimd's
// default per-account parallelism; the same 5,000 links on one account at
// parallelism 64; and River burning down 100,000 no-op jobs on the same
// server in the same run. The headline actions/s is CREATE actions per
// second of wall time until every link is ACTIVE (a CREATE's run makes the
// service and reads its status, ACTIVE at once with the fake: two
// controller calls per link, controller-calls/s). cpu-us/action is this process's user+sys time over the
// run per CREATE action, a figure that depends little on how loaded the
// machine is; server-cpu-us/action is PostgreSQL's (when the server is a
// local process). The unbatched and batched claim+complete loops are the
// earlier baselines, kept because they cost a second.
func BenchmarkActionThroughput(b *testing.B) {
	const riverJobs = 100000
	wide := fixture{accounts: 100, instances: 1, links: 50}
	narrow := fixture{accounts: 1, instances: 100, links: 50}
	for b.Loop() {
		bd := wide.build(b, 8)
		r := wide.run(b, bd, wimthread.Options{})
		one := narrow.run(b, narrow.build(b, 64), wimthread.Options{Parallel: 64})
		rv := riverBurnDown(b, riverJobs)
		base := claimCompleteBaseline(b, bd.db.Pool(), 2000, 1)
		batched := claimCompleteBaseline(b, bd.db.Pool(), 2000, 50)

		creates := float64(wide.creates())
		rate := creates / r.active.Seconds()
		oneRate := float64(narrow.creates()) / one.active.Seconds()
		b.ReportMetric(rate, "actions/s")
		b.ReportMetric(float64(r.calls)/r.active.Seconds(), "controller-calls/s")
		b.ReportMetric(float64(r.calls), "controller-calls")
		b.ReportMetric(creates/r.creates.Seconds(), "creates-done/s")
		b.ReportMetric(r.active.Seconds(), "s-all-active")
		reportCost(b, r, wide.creates(), "")
		b.ReportMetric(float64(r.poolConns), "pool-conns")
		b.ReportMetric(r.loadavg, "loadavg")
		b.ReportMetric(oneRate, "actions/s-1account-parallel64")
		reportCost(b, one, narrow.creates(), "-1account")
		b.ReportMetric(rv.jobsPerSec, "river-jobs/s")
		rv.reportCost(b, riverJobs, "river-")
		b.ReportMetric(rate/rv.jobsPerSec, "ratio-vs-river")
		b.ReportMetric(oneRate/rv.jobsPerSec, "ratio-1account-vs-river")
		b.ReportMetric(base, "baseline-unbatched/s")
		b.ReportMetric(batched, "baseline-batch50/s")
	}
}

// BenchmarkLatencyBound: one account, 100 links, 100 ms per controller
// call: parallel links (8) against the serial baseline (1 at a time, as
// OSM's thread) in the same run; until every CREATE is counted done and
// until every link is ACTIVE. A CREATE's run makes the service and reads
// its status (200 ms of controller time per link), so a CREATE is counted
// done when its link is ACTIVE.
func BenchmarkLatencyBound(b *testing.B) {
	slow := fixture{accounts: 1, instances: 1, links: 100, accountConfig: map[string]any{"latency_ms": 100}}
	for b.Loop() {
		// The earlier refresh interval (fast's 50 ms), so the figure stays
		// comparable with the recorded ones.
		parallel := slow.run(b, slow.build(b, 8), wimthread.Options{Parallel: 8, Policy: fast})
		serial := slow.run(b, slow.build(b, 1), wimthread.Options{Parallel: 1, Policy: fast})
		b.ReportMetric(parallel.creates.Seconds(), "s-parallel")
		b.ReportMetric(parallel.active.Seconds(), "s-parallel-all-active")
		b.ReportMetric(serial.creates.Seconds(), "s-serial-baseline")
		b.ReportMetric(serial.active.Seconds(), "s-serial-all-active")
		b.ReportMetric(serial.creates.Seconds()/parallel.creates.Seconds(), "speedup")
		b.ReportMetric(serial.active.Seconds()/parallel.active.Seconds(), "speedup-all-active")
	}
}

// BenchmarkLatencyBoundScale (issue 16): 100 accounts x 20 links, 100 ms
// per controller call, wimd's default parallelism: wall time until every
// CREATE is counted done and until every link is ACTIVE (a CREATE's run
// makes the service and reads its status: 200 ms of controller time per
// link). The baseline is one
// account's serial thread (parallelism 1, as OSM runs an account), which
// needs at least 20 x 200 ms = 4 s.
func BenchmarkLatencyBoundScale(b *testing.B) {
	cfg := map[string]any{"latency_ms": 100}
	wide := fixture{accounts: 100, instances: 1, links: 20, accountConfig: cfg}
	serial := fixture{accounts: 1, instances: 1, links: 20, accountConfig: cfg}
	for b.Loop() {
		r := wide.run(b, wide.build(b, 8), wimthread.Options{})
		s := serial.run(b, serial.build(b, 1), wimthread.Options{Parallel: 1})
		b.ReportMetric(r.creates.Seconds(), "s-creates-done")
		b.ReportMetric(r.active.Seconds(), "s-all-active")
		b.ReportMetric(s.creates.Seconds(), "s-serial-creates-baseline")
		b.ReportMetric(s.active.Seconds(), "s-serial-active-baseline")
		b.ReportMetric(s.creates.Seconds()/r.creates.Seconds(), "speedup-creates")
		b.ReportMetric(s.active.Seconds()/r.active.Seconds(), "speedup-active")
		reportCost(b, r, wide.creates(), "")
		b.ReportMetric(float64(r.poolConns), "pool-conns")
		b.ReportMetric(r.loadavg, "loadavg")
	}
}

// BenchmarkLatencyBoundAmongIdleAccounts: the latency-bound run at scale
// (100 accounts x 20 links, 100 ms per controller call) by a process that
// also owns 9,900 idle accounts, against the same run without them, in
// the same run: what idle accounts cost the busy ones, the process's
// start with its 10,000 leases included. Every claim looks at the queue of
// each account the process owns; before the claim chose its actions
// before locking them, a claim planned on tables without statistics (a
// fresh database) read those queues once per due action, and this run
// took 70-90 s.
func BenchmarkLatencyBoundAmongIdleAccounts(b *testing.B) {
	const idle = 9900
	cfg := map[string]any{"latency_ms": 100}
	wide := fixture{accounts: 100, instances: 1, links: 20, accountConfig: cfg}
	for b.Loop() {
		alone := wide.run(b, wide.build(b, 8), wimthread.Options{})
		bd := wide.build(b, 8)
		if _, err := bd.db.Pool().Exec(bd.ctx, `INSERT INTO wim_accounts (uuid, name, wim_id)
			SELECT gen_random_uuid(), 'idle-' || i, (SELECT uuid FROM wims LIMIT 1) FROM generate_series(1, $1) i`, idle); err != nil {
			b.Fatal(err)
		}
		among := wide.run(b, bd, wimthread.Options{})
		b.ReportMetric(among.active.Seconds(), "s-all-active")
		b.ReportMetric(alone.active.Seconds(), "s-all-active-baseline-no-idle")
		b.ReportMetric(among.active.Seconds()/alone.active.Seconds(), "slowdown")
		reportCost(b, among, wide.creates(), "")
		reportCost(b, alone, wide.creates(), "-baseline")
		b.ReportMetric(among.loadavg, "loadavg")
	}
}
