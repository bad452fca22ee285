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
	sig := s.TestSignals()
	sig.Init()
	if err := s.Start(b.ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop(context.Background()) })
	s.SetAccounts(ids)
	owned := func(what string, n int) {
		t.Helper()
		if len(s.Owned()) != n || len(s.Accounts()) != n {
			t.Fatalf("%s: owned %v, driven %v; want %d of each", what, s.Owned(), s.Accounts(), n)
		}
	}
	sig.AccountDriven.Wait(t, patience, "the account driven")
	owned("the account taken", 1)

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
	loss := sig.LeaseLost.Wait(t, patience, "the lease lost")
	if d := time.Since(blocked); d > 3*lease {
		t.Errorf("the lease was reported owned %v after its renewals stopped, a lease is %v", d.Round(time.Millisecond), lease)
	}
	if loss != (wimthread.LeaseLoss{Account: ids[0], Reason: "local_bound"}) {
		t.Errorf("lost %+v, want the account's lease past its local bound", loss)
	}
	owned("the lease lost", 0)
	// LeaseHealth turns with the clock (a lease after the last renewal), which no part announces: polled.
	waitFor(t, "LeaseHealth to report the renewals", func() (bool, string) { return s.LeaseHealth() != nil, "nil" })
	t.Logf("not owned %v after renewals stopped; LeaseHealth: %v", time.Since(blocked).Round(time.Millisecond), s.LeaseHealth())

	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	sig.AccountDriven.Wait(t, patience, "the account driven again")
	owned("the lease taken back", 1)
	// A round that reaches the database makes it nil again.
	sig.KeeperRound.Until(t, patience, "LeaseHealth nil again", func() (bool, string) { return s.LeaseHealth() == nil, fmt.Sprint(s.LeaseHealth()) })
}
