package wimthread_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/wimthread"
)

// BenchmarkLeaseRenewalCost: what the account lease costs PostgreSQL with
// 10,000 idle accounts held by one process, at the old default lease
// (30 s, renewed every 10 s) and the new one (5 s, renewed every 1.67 s),
// in the same run on the same server: statements per second (every
// transaction of the database, the renewals and the claimer's polls), the
// lease rows updated per second (account and process leases: since the
// process lease, a renewal is one row), and the server's CPU (user+sys of the
// postmaster and its backends) as a share of one core. A shorter lease is
// what makes a dead process's accounts move within seconds (issue 31).
func BenchmarkLeaseRenewalCost(b *testing.B) {
	for _, bc := range []struct {
		name  string
		lease time.Duration
	}{{"lease=30s-old", 30 * time.Second}, {"lease=5s-new", 5 * time.Second}} {
		b.Run(bc.name, func(b *testing.B) { leaseRenewalCost(b, bc.lease) })
	}
}

func leaseRenewalCost(b *testing.B, lease time.Duration) {
	const accounts = 10000
	// Long enough for several renewals of the longest lease.
	const window = 40 * time.Second
	for b.Loop() {
		bd := setup(b, "fake", nil)
		pool := bd.db.Pool()
		if _, err := pool.Exec(bd.ctx, `INSERT INTO wim_accounts (uuid, name, wim_id)
			SELECT gen_random_uuid(), 'cost-' || i, (SELECT uuid FROM wims LIMIT 1) FROM generate_series(1, $1) i`, accounts-1); err != nil {
			b.Fatal(err)
		}
		const owner = "cost-bench"
		s := bd.own(b, registry(), nil, wimthread.Options{Owner: owner, Lease: lease, Poll: time.Second})
		// A keeper round drives the accounts whose leases it took.
		s.TestSignals().KeeperRound.Until(b, time.Minute, "a worker per account (leases taken)", func() (bool, string) {
			n := len(s.Accounts())
			return n == accounts, fmt.Sprint(n)
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*window)
		watch, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
		if err != nil {
			b.Fatal(err)
		}
		server := postmasterOf(ctx, watch)
		counters := func() (xacts, updated int64) {
			if err := watch.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&xacts); err != nil {
				b.Fatal(err)
			}
			if err := watch.QueryRow(ctx, `SELECT COALESCE(sum(n_tup_upd), 0)::bigint FROM pg_stat_user_tables WHERE relname IN ('wim_account_leases', 'wim_process_leases')`).Scan(&updated); err != nil {
				b.Fatal(err)
			}
			return xacts, updated
		}
		x0, u0 := counters()
		cpu0, cpuOK0 := server.cpu()
		start := time.Now()
		// Idle accounts: nothing to wait for but the clock.
		<-time.After(window)
		elapsed := time.Since(start)
		x1, u1 := counters()
		cpu1, cpuOK1 := server.cpu()
		// The statistics are flushed by the backends at most every second:
		// the window is long enough that this is noise.
		sec := elapsed.Seconds()
		b.ReportMetric(float64(x1-x0)/sec, "stmts/s")
		b.ReportMetric(float64(u1-u0)/sec, "lease-rows/s")
		if cpuOK0 && cpuOK1 {
			b.ReportMetric(100*(cpu1-cpu0).Seconds()/sec, "%cpu-postgres")
		}
		var held int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM wim_account_leases l JOIN wim_process_leases p ON p.owner = l.owner AND p.epoch = l.proc_epoch
			WHERE l.owner = $1 AND p.expires_at > now()`, owner).Scan(&held); err != nil || held != accounts {
			b.Fatalf("%d leases held, want %d (%v)", held, accounts, err)
		}
		watch.Close(context.Background())
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		s.Stop(sctx)
		scancel()
	}
}
