package wimthread_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wimro/wimro/persistence"
	"github.com/wimro/wimro/wimthread"
)

// rssMiB reads the resident set size of this process.
func rssMiB(b *testing.B) float64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkScaleAccounts: 10,000 accounts with idle workers, each with its
// lease held in PostgreSQL: start-up time and resident memory, against the
// process before the supervisor started; without monitoring, and with the
// credentials and links monitored every 5 minutes (wimd's default: the
// link monitor is one goroutine and one query per round, whatever the
// number of accounts).
func BenchmarkScaleAccounts(b *testing.B) {
	for _, bc := range []struct {
		name    string
		monitor time.Duration
	}{{"monitor=off", 0}, {"monitor=5m", 5 * time.Minute}} {
		b.Run(bc.name, func(b *testing.B) { scaleAccounts(b, bc.monitor) })
	}
}

func scaleAccounts(b *testing.B, monitor time.Duration) {
	const accounts = 10000
	for b.Loop() {
		bd := setup(b, "fake", nil)
		if _, err := bd.db.Pool().Exec(bd.ctx, `INSERT INTO wim_accounts (uuid, name, wim_id)
			SELECT gen_random_uuid(), 'scale-' || i, (SELECT uuid FROM wims LIMIT 1) FROM generate_series(1, $1) i`, accounts-1); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		before := rssMiB(b)
		goroutines := runtime.NumGoroutine()
		start := time.Now()
		const owner = "scale-bench"
		s := bd.own(b, registry(), nil, wimthread.Options{Owner: owner, Poll: time.Second, MonitorInterval: monitor})
		// A keeper round drives the accounts whose leases it took.
		s.TestSignals().KeeperRound.Until(b, time.Minute, "a worker per account (leases taken)", func() (bool, string) {
			n := len(s.Accounts())
			return n == accounts, fmt.Sprint(n)
		})
		startup := time.Since(start)
		// The workers run because their leases are held: the rows say so.
		var leases int
		if err := bd.db.Pool().QueryRow(bd.ctx, `SELECT count(*) FROM wim_account_leases l JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch
			WHERE l.owner = $1 AND p.expires_at > now()`, owner).Scan(&leases); err != nil {
			b.Fatal(err)
		}
		if leases != accounts {
			b.Fatalf("%d leases held by %s, want %d", leases, owner, accounts)
		}
		runtime.GC()
		after := rssMiB(b)
		b.ReportMetric(startup.Seconds(), "s-startup")
		b.ReportMetric(after, "MiB-rss")
		b.ReportMetric(before, "MiB-rss-baseline")
		b.ReportMetric(after/before, "ratio-rss")
		b.ReportMetric(after-before, "MiB-for-workers")
		b.ReportMetric((after-before)*1024/accounts, "KiB/account")
		b.ReportMetric(float64(runtime.NumGoroutine()-goroutines), "goroutines")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.Stop(ctx)
		cancel()
	}
}

// BenchmarkFirstClaimWith100kPending: 100,000 pending actions at start-up:
// time until the first action is claimed, against one bare claim
// statement on the same table in the same run.
func BenchmarkFirstClaimWith100kPending(b *testing.B) {
	const pending = 100000
	for b.Loop() {
		bd := setup(b, "fake", nil)
		pool := bd.db.Pool()
		var acct, tenant string
		pool.QueryRow(bd.ctx, `SELECT uuid, (SELECT uuid FROM nfvo_tenants LIMIT 1) FROM wim_accounts LIMIT 1`).Scan(&acct, &tenant)
		ia := uuid.NewString()
		if _, err := pool.Exec(bd.ctx, `INSERT INTO instance_actions (uuid, tenant_id, description, number_tasks) VALUES ($1, $2, 'CREATE', $3)`, ia, tenant, pending); err != nil {
			b.Fatal(err)
		}
		if _, err := pool.Exec(bd.ctx, `INSERT INTO vim_wim_actions (instance_action_id, task_index, wim_account_id, action, item_id)
			SELECT $1, i, $2, 'CREATE', gen_random_uuid() FROM generate_series(0, $3 - 1) i`, ia, acct, pending); err != nil {
			b.Fatal(err)
		}
		pool.Exec(bd.ctx, `ANALYZE vim_wim_actions`)

		leases, err := bd.db.AcquireLeases(bd.ctx, "baseline", []string{acct}, time.Minute)
		if err != nil || len(leases) != 1 {
			b.Fatalf("baseline lease: %v, %v", leases, err)
		}
		t0 := time.Now()
		res, err := bd.db.ClaimDue(bd.ctx, persistence.ClaimRequest{Owner: "baseline", Claim: persistence.ClaimName("baseline", "1"), TTL: time.Minute, Parallel: 8, Limit: 8})
		baseline := time.Since(t0)
		if err != nil || len(res.Claimed) != 8 {
			b.Fatalf("baseline claim: %d, %v", len(res.Claimed), err)
		}
		bd.db.ReleaseClaims(bd.ctx, "baseline")
		bd.db.ReleaseLeases(bd.ctx, leases)

		// The first claim is seen in the supervisor's own metrics (observed
		// once the claim statement returned): polling the table for it, a
		// scan of 100,000 rows each millisecond, took a core from the run.
		reg := prometheus.NewRegistry()
		m, err := wimthread.NewMetrics(reg)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		s := bd.own(b, registry(), nil, wimthread.Options{Owner: "bench", Poll: time.Second, Policy: fast, Metrics: m})
		tick := time.NewTicker(time.Millisecond)
		deadline := time.Now().Add(time.Minute)
		for metricSum(b, reg, "wimro_claim_actions") == 0 {
			if time.Now().After(deadline) {
				b.Fatal("no claim within a minute")
			}
			<-tick.C
		}
		tick.Stop()
		first := time.Since(start)
		var seen bool
		if err := pool.QueryRow(bd.ctx, `SELECT EXISTS (SELECT 1 FROM vim_wim_actions WHERE claimed_by LIKE 'bench#%' OR status <> 'SCHEDULED')`).Scan(&seen); err != nil || !seen {
			b.Fatalf("the metrics saw a claim, the table shows none (%v)", err)
		}
		b.ReportMetric(first.Seconds()*1000, "ms-to-first-claim")
		b.ReportMetric(baseline.Seconds()*1000, "ms-bare-claim-baseline")
		b.ReportMetric(first.Seconds()/baseline.Seconds(), "ratio")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.Stop(ctx)
		cancel()
	}
}
