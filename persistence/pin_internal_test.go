package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/wimro/wimro/internal/testkit/pgtest"
)

// TestPinnedKeepsItsConnection: a Pinned runs every use on one backend
// while it works, takes another after its backend died under it (the
// failed use reports the error, the next one succeeds), and hands its
// connection back on Release.
func TestPinnedKeepsItsConnection(t *testing.T) {
	t.Parallel()
	db := NewDB(pgtest.NewPool(t), nil)
	ctx := context.Background()
	p := db.Pin()
	backend := func() (int, error) {
		var pid int
		err := p.Do(ctx, func(s *Store) error { return s.q.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid) })
		return pid, err
	}
	first, err := backend()
	if err != nil {
		t.Fatal(err)
	}
	// Other users of the pool meanwhile do not move it.
	other, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if pid, err := backend(); err != nil || pid != first {
			t.Fatalf("use %d: backend %d (%v), want %d", i, pid, err, first)
		}
	}
	other.Release()
	if db.pool.Stat().AcquiredConns() != 1 {
		t.Fatalf("%d connections acquired, want the pinned one", db.pool.Stat().AcquiredConns())
	}

	if _, err := db.pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, first); err != nil {
		t.Fatal(err)
	}
	if _, err := backend(); err == nil {
		t.Fatal("a use on a terminated backend succeeded")
	}
	second, err := backend()
	if err != nil || second == first || second == 0 {
		t.Fatalf("after the backend died: backend %d (%v), the dead one was %d", second, err, first)
	}

	p.Release()
	if n := db.pool.Stat().AcquiredConns(); n != 0 {
		t.Fatalf("%d connections still acquired after Release", n)
	}
	if pid, err := backend(); err != nil || pid == 0 {
		t.Fatalf("after Release: backend %d, %v", pid, err)
	}
	p.Release()
}

// TestPinnedGivesWayInAFullPool: in a pool with no connection left to
// give, a Pinned hands its own back after each use, so another user of the
// pool (the lease renewal, the API) does not wait behind it.
func TestPinnedGivesWayInAFullPool(t *testing.T) {
	t.Parallel()
	db, err := Open(context.Background(), pgtest.URL(t), nil, WithMaxConns(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	ctx := context.Background()
	p := db.Pin()
	defer p.Release()
	ping := func(s *Store) error { _, err := s.q.Exec(ctx, `SELECT 1`); return err }
	if err := p.Do(ctx, ping); err != nil {
		t.Fatal(err)
	}
	if n := db.pool.Stat().AcquiredConns(); n != 1 {
		t.Fatalf("%d connections acquired, want the pinned one kept", n)
	}
	other, err := db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	if err := p.Do(ctx, ping); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	third, err := db.pool.Acquire(wait)
	if err != nil {
		t.Fatalf("the pool's last connection stayed pinned: %v", err)
	}
	third.Release()
}
