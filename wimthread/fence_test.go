package wimthread_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/wimro/wimro/wimthread"
)

// Issue 30, point 4: a lease the keeper cannot renew stops counting as
// owned once its local bound passes, without waiting for a later renewal
// to say it was lost: the account is no longer driven nor reported, and
// LeaseHealth says why. When the database answers again, the keeper
// takes the lease back.
func TestLeasePastItsLocalBoundIsNotOwned(t *testing.T) {
	t.Parallel()
	b := setup(t, "fake", nil)
	ids := b.accounts(t)
	const lease = time.Second
	s := wimthread.New(b.db, b.conns(registry(), nil, nil), nil, wimthread.Options{Owner: "only", Policy: fast, Poll: 100 * time.Millisecond, Lease: lease})
	if err := s.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	s.SetAccounts(ids)
	owned := func(n int) func() (bool, string) {
		return func() (bool, string) {
			return len(s.Owned()) == n && len(s.Accounts()) == n, fmt.Sprint("owned ", s.Owned(), ", driven ", s.Accounts())
		}
	}
	waitFor(t, "the account owned and driven", owned(1))

	// Another session holds the process lease row: every renewal waits
	// for it and gives up at its deadline, as with a database that does
	// not answer.
	tx, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM wim_process_leases WHERE owner = 'only' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	blocked := time.Now()
	waitFor(t, "the lease no longer owned nor driven", owned(0))
	if d := time.Since(blocked); d > 3*lease {
		t.Errorf("the lease was reported owned %v after its renewals stopped, a lease is %v", d.Round(time.Millisecond), lease)
	}
	waitFor(t, "LeaseHealth to report the renewals", func() (bool, string) { return s.LeaseHealth() != nil, "nil" })
	t.Logf("not owned %v after renewals stopped; LeaseHealth: %v", time.Since(blocked).Round(time.Millisecond), s.LeaseHealth())

	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lease taken back", owned(1))
	waitFor(t, "LeaseHealth nil again", func() (bool, string) { return s.LeaseHealth() == nil, fmt.Sprint(s.LeaseHealth()) })
}
