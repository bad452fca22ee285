package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro/internal/testkit/eventually"
	"github.com/wimro/wimro/persistence"
)

// expire makes p's lease expire now, as if its holder had stopped
// renewing it a lease ago.
func expire(t *testing.T, b *bundle, p persistence.ProcessLease) {
	t.Helper()
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE wim_process_leases SET expires_at = now() - interval '1 millisecond' WHERE owner = $1 AND epoch = $2`, p.Owner, p.Epoch); err != nil {
		t.Fatal(err)
	}
}

// An account lease is held while its holder's process lease is: another
// process takes it only once that lease expired, its holder started
// another epoch (restarted), or released it; then the account's epoch
// grows. The holder of a dead process lease can no longer renew it.
func TestAccountLeaseFollowsItsProcessLease(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// then does what happens to holder A after it took the account.
		then func(t *testing.T, b *bundle, a persistence.ProcessLease, l persistence.Lease) persistence.ProcessLease
		// taker is who tries to take the account then: "B", or "A" again.
		taker     string
		taken     bool
		epoch     int64
		aRenewsOK bool
	}{
		{name: "holder alive", taker: "B", then: func(*testing.T, *bundle, persistence.ProcessLease, persistence.Lease) persistence.ProcessLease {
			return persistence.ProcessLease{}
		}, taken: false, aRenewsOK: true},
		{name: "holder's process lease expired", taker: "B", then: func(t *testing.T, b *bundle, a persistence.ProcessLease, _ persistence.Lease) persistence.ProcessLease {
			expire(t, b, a)
			return persistence.ProcessLease{}
		}, taken: true, epoch: 2},
		{name: "holder restarted, another process takes", taker: "B", then: func(t *testing.T, b *bundle, a persistence.ProcessLease, _ persistence.Lease) persistence.ProcessLease {
			p, err := b.db.StartProcessLease(b.ctx, a.Owner, time.Minute)
			if err != nil || p.Epoch != a.Epoch+1 {
				t.Fatalf("restart: %+v, %v; want epoch %d", p, err, a.Epoch+1)
			}
			return p
		}, taken: true, epoch: 2},
		{name: "holder restarted, takes it again", taker: "A", then: func(t *testing.T, b *bundle, a persistence.ProcessLease, _ persistence.Lease) persistence.ProcessLease {
			p, err := b.db.StartProcessLease(b.ctx, a.Owner, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}, taken: true, epoch: 2},
		{name: "holder released it", taker: "B", then: func(t *testing.T, b *bundle, _ persistence.ProcessLease, l persistence.Lease) persistence.ProcessLease {
			if err := b.db.ReleaseLeases(b.ctx, []persistence.Lease{l}); err != nil {
				t.Fatal(err)
			}
			return persistence.ProcessLease{}
		}, taken: true, epoch: 2, aRenewsOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			acct, _, _, _ := queue(t, b)
			a, err := b.db.StartProcessLease(b.ctx, "A", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.db.TakeLeases(b.ctx, a, []string{acct})
			if err != nil || len(got) != 1 || got[0].Epoch != 1 || got[0].ProcEpoch != a.Epoch {
				t.Fatalf("first take = %+v, %v", got, err)
			}
			restarted := tt.then(t, b, a, got[0])
			taker := restarted
			if tt.taker == "B" {
				if taker, err = b.db.StartProcessLease(b.ctx, "B", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			took, err := b.db.TakeLeases(b.ctx, taker, []string{acct})
			if err != nil {
				t.Fatal(err)
			}
			holders, err := b.db.LeaseHolders(b.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.taken {
				if len(took) != 0 || holders[acct] != "A" {
					t.Fatalf("%s took %+v; holders %v, want A still", tt.taker, took, holders)
				}
			} else if len(took) != 1 || took[0].Epoch != tt.epoch || took[0].Owner != tt.taker || holders[acct] != tt.taker {
				t.Fatalf("%s took %+v, want epoch %d; holders %v", tt.taker, took, tt.epoch, holders)
			}
			// A claim under A's first lease: only while it is held.
			claimed, err := b.db.ClaimActions(b.ctx, got[0], "A#1", time.Minute, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.taken == (len(claimed) != 0) {
				t.Errorf("claimed %d under A's first lease, taken by %s: %v", len(claimed), tt.taker, tt.taken)
			}
			err = b.db.RenewProcessLease(b.ctx, a, time.Minute)
			if tt.aRenewsOK != (err == nil) || (err != nil && !errors.Is(err, persistence.ErrLeaseLost)) {
				t.Errorf("A's first process lease renewed: %v, want ok %v (else ErrLeaseLost)", err, tt.aRenewsOK)
			}
		})
	}
}

// A takeover that finds the holder's process lease expired while the
// holder's renewal, begun before the expiry, is not committed yet waits
// for it and then takes nothing: the holder renewed and keeps driving the
// account. Read without that wait, the takeover and the renewal both
// commit, and two processes believe they hold the account.
func TestTakeoverWaitsForARenewalInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	a, err := b.db.StartProcessLease(b.ctx, "A", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.db.TakeLeases(b.ctx, a, []string{acct}); err != nil || len(got) != 1 {
		t.Fatalf("A's take = %v, %v", got, err)
	}
	var expiry time.Time
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT expires_at FROM wim_process_leases WHERE owner = 'A'`).Scan(&expiry); err != nil {
		t.Fatal(err)
	}
	tx, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	// A's renewal, in flight: it found its lease valid and holds the row.
	if tag, err := tx.Exec(b.ctx, `UPDATE wim_process_leases SET expires_at = now() + interval '1 minute' WHERE owner = 'A' AND epoch = $1 AND expires_at > now()`, a.Epoch); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("A's renewal: %v, %v", tag, err)
	}
	eventually.Until(t, 10*time.Second, "A's lease past its expiry as committed", func() (bool, string) {
		var past bool
		err := b.db.Pool().QueryRow(b.ctx, `SELECT clock_timestamp() > $1`, expiry).Scan(&past)
		return err == nil && past, fmt.Sprint(err)
	})
	bp, err := b.db.StartProcessLease(b.ctx, "B", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		got []persistence.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := b.db.TakeLeases(b.ctx, bp, []string{acct})
		done <- result{got, err}
	}()
	eventually.Until(t, 10*time.Second, "B's takeover waiting for A's renewal", func() (bool, string) {
		select {
		case r := <-done:
			t.Fatalf("B's takeover did not wait for A's renewal in flight: took %+v, %v", r.got, r.err)
		default:
		}
		var waiting int
		err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == 1, fmt.Sprint(waiting, err)
	})
	if err := tx.Commit(b.ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || len(r.got) != 0 {
		t.Fatalf("B's takeover after A renewed = %+v, %v; want nothing taken", r.got, r.err)
	}
	if err := b.db.RenewProcessLease(b.ctx, a, time.Minute); err != nil {
		t.Errorf("A's renewal after B's attempt: %v", err)
	}
	if holders, err := b.db.LeaseHolders(b.ctx); err != nil || holders[acct] != "A" {
		t.Errorf("holders %v, %v; want A", holders, err)
	}
}

// Issue 31: a take in flight does not hold up its taker's renewal. The
// take keeps its process lease row locked until it commits (FOR KEY
// SHARE, so that no other process marks the lease dead meanwhile), and a
// take can wait long on rows another process is releasing; a renewal,
// which only moves expires_at, goes through. When the take renewed the
// lease itself (an update of the same row), the renewal waited for it.
func TestRenewalDoesNotWaitForATakeInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	acct, _, _, _ := queue(t, b)
	a, err := b.db.StartProcessLease(b.ctx, "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.db.TakeLeases(b.ctx, a, []string{acct})
	if err != nil || len(got) != 1 {
		t.Fatalf("A's take = %v, %v", got, err)
	}
	if err := b.db.ReleaseLeases(b.ctx, got); err != nil {
		t.Fatal(err)
	}
	// Another process's release in flight: the account's row is locked.
	tx, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM wim_account_leases WHERE account_id = $1 FOR UPDATE`, acct); err != nil {
		t.Fatal(err)
	}
	type result struct {
		got []persistence.Lease
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := b.db.TakeLeases(b.ctx, a, []string{acct})
		done <- result{got, err}
	}()
	eventually.Until(t, 10*time.Second, "A's take waiting for the row", func() (bool, string) {
		var waiting int
		err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == 1, fmt.Sprint(waiting, err)
	})
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := b.db.RenewProcessLease(ctx, a, time.Minute); err != nil {
		t.Errorf("A's renewal while its take waits: %v, want renewed at once", err)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || len(r.got) != 1 {
		t.Fatalf("A's take once the row is free = %+v, %v; want the account", r.got, r.err)
	}
}

// accountsOf makes n accounts of a new WIM and returns their ids in
// account order, the order takes and releases lock them in.
func accountsOf(t *testing.T, b *bundle, n int) []string {
	t.Helper()
	w := b.wim(t, "w-"+t.Name())
	rows, err := b.db.Pool().Query(b.ctx, `INSERT INTO wim_accounts (uuid, name, wim_id)
		SELECT gen_random_uuid(), $2 || '-' || i, $3 FROM generate_series(1, $1) i RETURNING uuid::text`, n, t.Name(), w.UUID)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

// Issue 31: a take does not lock the rows of accounts a live process
// holds, so that process's release of them never waits for the take.
// The conflict path of an INSERT locks the row it finds even when its
// WHERE refuses it: a joining member trying every account it was given
// locked the rows of the members about to release them, chunk after
// chunk, and their releases waited.
func TestTakeDoesNotLockLeasesHeldElsewhere(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := accountsOf(t, b, 2)
	held, free := ids[0], ids[1] // the take reaches held first
	a, err := b.db.StartProcessLease(b.ctx, "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.db.TakeLeases(b.ctx, a, ids)
	if err != nil || len(got) != 2 {
		t.Fatalf("A's take = %v, %v", got, err)
	}
	if err := b.db.ReleaseLeases(b.ctx, got[1:]); err != nil {
		t.Fatal(err)
	}
	// The free account's row is locked (someone else's release in
	// flight): B's take of both waits there.
	tx, err := b.db.Pool().Begin(b.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(b.ctx, `SELECT 1 FROM wim_account_leases WHERE account_id = $1 FOR UPDATE`, free); err != nil {
		t.Fatal(err)
	}
	bp, err := b.db.StartProcessLease(b.ctx, "B", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := b.db.TakeLeases(b.ctx, bp, ids)
		done <- err
	}()
	eventually.Until(t, 10*time.Second, "B's take waiting for the free account's row", func() (bool, string) {
		var waiting int
		err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err == nil && waiting == 1, fmt.Sprint(waiting, err)
	})
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := b.db.ReleaseLeases(ctx, got[:1]); err != nil {
		t.Errorf("A's release of %s while B's take waits: %v, want released at once", held, err)
	}
	if err := tx.Rollback(b.ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A release statement sends one notification, however many leases it
// frees, and none when it frees nothing.
func TestReleaseNotifiesOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := accountsOf(t, b, 3)
	conn, err := pgx.ConnectConfig(b.ctx, b.db.Pool().Config().ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(b.ctx, `LISTEN `+persistence.ChannelAccounts); err != nil {
		t.Fatal(err)
	}
	a, err := b.db.StartProcessLease(b.ctx, "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.db.TakeLeases(b.ctx, a, ids)
	if err != nil || len(got) != 3 {
		t.Fatalf("take = %v, %v", got, err)
	}
	for _, release := range [][]persistence.Lease{got, got} { // the second frees nothing
		if err := b.db.ReleaseLeases(b.ctx, release); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.db.Pool().Exec(b.ctx, `SELECT pg_notify($1, 'end')`, persistence.ChannelAccounts); err != nil {
		t.Fatal(err)
	}
	var payloads []string
	for len(payloads) == 0 || payloads[len(payloads)-1] != "end" {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		n, err := conn.WaitForNotification(ctx)
		cancel()
		if err != nil {
			t.Fatalf("after %v: %v", payloads, err)
		}
		payloads = append(payloads, n.Payload)
	}
	if want := []string{persistence.NotifyReleased, "end"}; !slices.Equal(payloads, want) {
		t.Errorf("notifications %q, want %q", payloads, want)
	}
}
