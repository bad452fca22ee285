package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/internal/eventually"
	"github.com/wimro/wimro/persistence"
)

// otherProcess returns a second DB on the same database with a pool of its
// own, standing in for another wimd process.
func otherProcess(t *testing.T, b *bundle) *persistence.DB {
	t.Helper()
	pool, err := pgxpool.New(b.ctx, b.db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return persistence.NewDB(pool, nil)
}

// waiters counts sessions waiting for an advisory lock.
func waiters(t *testing.T, b *bundle, n int) func() (bool, string) {
	return func() (bool, string) {
		var got int
		err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		return got == n, fmt.Sprintf("%d waiting sessions", got)
	}
}

func TestLockSerialisesProcesses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := otherProcess(t, b)

	unlockA, err := b.db.Lock(b.ctx, "onos-vpls:http://c1")
	if err != nil {
		t.Fatal(err)
	}
	// Another name is independent.
	unlockOther, err := other.Lock(b.ctx, "onos-vpls:http://c2")
	if err != nil {
		t.Fatalf("a second name while the first is held: %v", err)
	}
	unlockOther()

	acquired := make(chan func(), 1)
	go func() {
		unlock, err := other.Lock(b.ctx, "onos-vpls:http://c1")
		if err != nil {
			t.Error(err)
			close(acquired)
			return
		}
		acquired <- unlock
	}()
	eventually.Until(t, 30*time.Second, "the second process to wait for the lock", waiters(t, b, 1))
	select {
	case <-acquired:
		t.Fatal("the second process took a lock the first one holds")
	default:
	}
	unlockA()
	unlockA() // idempotent
	var unlockB func()
	select {
	case unlockB = <-acquired:
	case <-time.After(30 * time.Second):
		t.Fatal("the second process did not get the lock after it was released")
	}
	if unlockB == nil {
		t.FailNow()
	}

	// A waiter whose ctx ends gives up and leaves nothing behind.
	ctx, cancel := context.WithCancel(b.ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.db.Lock(ctx, "onos-vpls:http://c1")
		gaveUp <- err
	}()
	eventually.Until(t, 30*time.Second, "the first process to wait again", waiters(t, b, 1))
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	unlockB()
	unlock, err := b.db.Lock(b.ctx, "onos-vpls:http://c1")
	if err != nil {
		t.Fatalf("lock after the cancelled waiter: %v", err)
	}
	unlock()
}

func TestLockFreedWhenTheHolderDies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg, err := pgxpool.ParseConfig(b.db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	app := "wimro-dying-" + t.Name()
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	dying := persistence.NewDB(pool, nil)
	unlockDead, err := dying.Lock(b.ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	// The holder's session ends, as when its process is killed.
	var killed int
	if err := b.db.Pool().QueryRow(b.ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1) k`, app).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminating the holder: %d sessions, %v", killed, err)
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	unlock, err := b.db.Lock(ctx, "x")
	if err != nil {
		t.Fatalf("the lock of a dead holder was not freed: %v", err)
	}
	unlock()
	unlockDead() // unlocking on a dead session must not hang or panic
}
