package wimthread_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/wimro/wimro/wimthread"
)

// BenchmarkLeaseHandover: the take rate of a rebalance (issue 31). One
// supervisor holds 30,000 idle accounts; a second one is given a third of
// them, spread over the account order as the cluster's assignment spreads
// them, while the first is told to let them go, as a joining member and
// the members it relieves are told together. The figures: leases/s from
// that moment until the second owns them all, and until the first has
// released them all, against the baseline of the same run: the first
// supervisor taking the same accounts while they were free. Each
// supervisor has its own LISTEN connection, as each wimd has.
func BenchmarkLeaseHandover(b *testing.B) {
	const accounts = 30000
	for b.Loop() {
		bd := setup(b, "fake", nil)
		if _, err := bd.db.Pool().Exec(bd.ctx, `INSERT INTO wim_accounts (uuid, name, wim_id)
			SELECT gen_random_uuid(), 'handover-' || i, (SELECT uuid FROM wims LIMIT 1) FROM generate_series(1, $1) i`, accounts-1); err != nil {
			b.Fatal(err)
		}
		ids := bd.accounts(b)
		slices.Sort(ids)
		var moved, kept []string
		for i, id := range ids {
			if i%3 == 0 {
				moved = append(moved, id)
			} else {
				kept = append(kept, id)
			}
		}
		a := bd.member(b, wimthread.Options{Owner: "a"})
		start := time.Now()
		owns(b, a, moved)
		free := time.Since(start)
		a.SetAccounts(ids)
		owns(b, a, ids)
		m := bd.member(b, wimthread.Options{Owner: "m"})
		released := a.TestSignals().LeasesReleased.C(b, "leases released")
		start = time.Now()
		releasedAll := make(chan time.Duration, 1)
		go func() {
			for n := 0; n < len(moved); {
				n += len(<-released)
			}
			releasedAll <- time.Since(start)
		}()
		a.SetAccounts(kept)
		m.SetAccounts(moved)
		owns(b, m, moved)
		handover := time.Since(start)
		release := <-releasedAll // announced after each statement committed, so before the handover ended
		b.ReportMetric(float64(len(moved))/free.Seconds(), "leases/s-free")
		b.ReportMetric(float64(len(moved))/handover.Seconds(), "leases/s-handover")
		b.ReportMetric(free.Seconds()/handover.Seconds(), "ratio-handover/free")
		b.ReportMetric(release.Seconds(), "s-release")
		b.ReportMetric(handover.Seconds(), "s-handover")
	}
}

// owns gives s the accounts ids and waits until it owns them all.
func owns(b *testing.B, s *wimthread.Supervisor, ids []string) {
	b.Helper()
	s.SetAccounts(ids)
	s.TestSignals().KeeperRound.Until(b, 5*time.Minute, fmt.Sprintf("%d leases owned", len(ids)), func() (bool, string) {
		n := len(s.Owned())
		return n == len(ids), fmt.Sprint(n)
	})
}
