package wimthread_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/wimthread"
)

// Issue 31: the keeper renews one row per round, the process lease,
// whatever the number of accounts it holds; the account lease rows are
// written when taken, not when renewed. Every lease was one row written
// per round, and at 50,000 accounts a renewal did not finish within a
// quarter of the lease.
func TestRenewalWritesNoAccountLeaseRow(t *testing.T) {
	t.Parallel()
	const accounts = 10000
	const lease = 5 * time.Second
	b := setup(t, "fake", nil)
	if _, err := b.db.Pool().Exec(b.ctx, `INSERT INTO wim_accounts (uuid, name, wim_id)
		SELECT gen_random_uuid(), 'many-' || i, (SELECT uuid FROM wims LIMIT 1) FROM generate_series(1, $1) i`, accounts-1); err != nil {
		t.Fatal(err)
	}
	s := b.own(t, registry(), nil, wimthread.Options{Owner: "many", Lease: lease})
	eventually.Until(t, 2*time.Minute, "every lease taken", func() (bool, string) {
		n := len(s.Owned())
		return n == accounts, fmt.Sprint(n)
	})
	var t0 time.Time
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT clock_timestamp()`).Scan(&t0); err != nil {
		t.Fatal(err)
	}
	// Two leases by the database's clock: six renewal rounds.
	eventually.Until(t, time.Minute, "two leases gone by", func() (bool, string) {
		var past bool
		err := b.db.Pool().QueryRow(b.ctx, `SELECT clock_timestamp() > $1::timestamptz + $2::interval`, t0, 2*lease).Scan(&past)
		return err == nil && past, fmt.Sprint(err)
	})
	var written int
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM wim_account_leases WHERE modified_at > $1`, t0).Scan(&written); err != nil {
		t.Fatal(err)
	}
	if written != 0 {
		t.Errorf("%d account lease rows written by the renewals of two leases, want 0 (one process lease row per renewal)", written)
	}
	var renewed time.Time
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT expires_at FROM wim_process_leases WHERE owner = 'many'`).Scan(&renewed); err != nil {
		t.Fatal(err)
	}
	if !renewed.After(t0.Add(2 * lease)) {
		t.Errorf("process lease expires at %v, want after %v (renewed during the two leases)", renewed, t0.Add(2*lease))
	}
	eventually.Until(t, 30*time.Second, "every lease still owned", func() (bool, string) {
		n := len(s.Owned())
		return n == accounts, fmt.Sprint(n)
	})
}
