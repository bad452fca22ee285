package wimthread_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/wimthread"
)

// BenchmarkThroughputLocal: accounts x links CREATEs (fake controller, no
// latency) until all are counted done; reports actions/s, this process's
// CPU per action (getrusage) and the database's transactions and buffer
// hits per action (pg_stat_database), which a loaded machine distorts
// less than the rate. Backends flush their statistics at most once a
// second, so on runs of a second or two the database counters undercount
// (read them from the longest run only).
func BenchmarkThroughputLocal(b *testing.B) {
	for _, c := range []struct{ accounts, links, parallel int }{{1, 500, 8}, {1, 500, 64}, {50, 10, 8}} {
		b.Run(fmt.Sprintf("accounts=%d/links=%d/parallel=%d", c.accounts, c.links, c.parallel), func(b *testing.B) {
			for b.Loop() {
				bd := setup(b, "fake", nil)
				dcs := [][]string{{"dcA", "dcB"}}
				for i := 1; i < c.accounts; i++ {
					d := []string{fmt.Sprintf("dc%da", i), fmt.Sprintf("dc%db", i)}
					bd.wan(b, fmt.Sprintf("wan%d", i+1), "fake", bd.url, nil, d...)
					dcs = append(dcs, d)
				}
				for i, d := range dcs {
					bd.instance(b, fmt.Sprintf("ns%d", i), c.links, wimro.NetActive, d...)
				}
				total := c.accounts * c.links
				stats := func() (xact, hits int64) {
					if err := bd.db.Pool().QueryRow(bd.ctx, `SELECT xact_commit, blks_hit FROM pg_stat_database WHERE datname = current_database()`).Scan(&xact, &hits); err != nil {
						b.Fatal(err)
					}
					return
				}
				var ru0, ru1 syscall.Rusage
				x0, h0 := stats()
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				start := time.Now()
				s := bd.own(b, registry(), nil, wimthread.Options{Parallel: c.parallel, Poll: time.Second})
				tick := time.NewTicker(10 * time.Millisecond)
				deadline := time.Now().Add(5 * time.Minute)
				for {
					var n int
					if err := bd.db.Pool().QueryRow(bd.ctx, `SELECT coalesce(sum(done + failed), 0) FROM (`+createProgress+`) p`).Scan(&n); err != nil {
						b.Fatal(err)
					}
					if n >= total {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d done after 5 minutes", n, total)
					}
					<-tick.C
				}
				tick.Stop()
				elapsed := time.Since(start)
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				x1, h1 := stats()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				s.Stop(ctx)
				cancel()
				cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) * time.Nanosecond
				b.ReportMetric(float64(total)/elapsed.Seconds(), "actions/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(total), "cpu-us/action")
				b.ReportMetric(float64(x1-x0)/float64(total), "xact/action")
				b.ReportMetric(float64(h1-h0)/float64(total), "blks-hit/action")
			}
		})
	}
}
