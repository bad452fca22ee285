package persistence_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro/persistence"
)

// otherProcess returns a second DB on the same database with a pool of its
// own, standing in for another wimd process.
func otherProcess(t *testing.T, b *bundle) *persistence.DB {
	t.Helper()
	return otherProcessWith(t, b, func(*pgxpool.Config) {})
}

// otherProcessWith is otherProcess with its pool's settings changed by tune.
func otherProcessWith(t *testing.T, b *bundle, tune func(*pgxpool.Config)) *persistence.DB {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(b.db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	tune(cfg)
	pool, err := pgxpool.NewWithConfig(b.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return persistence.NewDB(pool, nil)
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

	// Held by the first process: the second waits, and gives up when its
	// ctx ends, leaving nothing behind.
	waitFor := func(db *persistence.DB) error {
		ctx, cancel := context.WithTimeout(b.ctx, 300*time.Millisecond)
		defer cancel()
		unlock, err := db.Lock(ctx, "onos-vpls:http://c1")
		if err == nil {
			unlock()
		}
		return err
	}
	if err := waitFor(other); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the second process while the first holds the lock: %v, want context.DeadlineExceeded", err)
	}
	unlockA()
	unlockA() // idempotent
	unlockB, err := other.Lock(b.ctx, "onos-vpls:http://c1")
	if err != nil {
		t.Fatalf("the second process after the first released the lock: %v", err)
	}
	if err := waitFor(b.db); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the first process while the second holds the lock: %v, want context.DeadlineExceeded", err)
	}
	unlockB()
	unlock, err := b.db.Lock(b.ctx, "onos-vpls:http://c1")
	if err != nil {
		t.Fatalf("lock after the waiter gave up: %v", err)
	}
	unlock()
}

// Locks held for the length of a controller call take no connection of
// the pool (issue 30): a process holding more locks than its pool has
// connections still serves every other use of the pool at once.
func TestLocksHeldTakeNoPoolConnection(t *testing.T) {
	t.Parallel()
	b := setup(t)
	db := otherProcessWith(t, b, func(c *pgxpool.Config) { c.MaxConns = 2 })
	pool := db.Pool()
	var unlocks []func()
	// Before the pool closes (it waits for its connections to come back).
	t.Cleanup(func() {
		for _, u := range unlocks {
			u()
		}
	})
	for i := range 3 * db.MaxConns() {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		unlock, err := db.Lock(ctx, fmt.Sprint("held-", i))
		cancel()
		if err != nil {
			t.Fatalf("lock %d with a pool of %d: %v", i+1, db.MaxConns(), err)
		}
		unlocks = append(unlocks, unlock)
	}
	if n := pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d pool connections acquired while %d locks are held, want 0", n, len(unlocks))
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if err := db.Ping(ctx); err != nil {
		t.Fatalf("the pool while locks are held: %v", err)
	}
	// Another process sees them held, and gets them once released.
	other := otherProcess(t, b)
	ctx, cancel = context.WithTimeout(b.ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := other.Lock(ctx, "held-0"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("another process took a held lock: %v", err)
	}
	for _, u := range unlocks {
		u()
	}
	unlock, err := other.Lock(b.ctx, "held-0")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

func TestLockFreedWhenTheHolderDies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	app := "wimro-dying-" + t.Name()
	dying := otherProcessWith(t, b, func(c *pgxpool.Config) { c.ConnConfig.RuntimeParams["application_name"] = app })
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
