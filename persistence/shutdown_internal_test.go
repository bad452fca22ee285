package persistence

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/internal/pglocal"
	"github.com/wimro/wimro/internal/testkit/eventually"
)

// A statement whose answer is being streamed when PostgreSQL is halted
// with an immediate shutdown fails with no SQLSTATE: the backend, busy
// sending rows, exits without a FATAL message and pgx reads an unexpected
// EOF. That is the database going away (EUNAVAILABLE, 503), not an
// internal error (500): the soak saw POST /instances answer 500 from the
// VLAN allocation reads of instance creation at such a halt.
func TestStatementCutByImmediateShutdownIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	srv, err := pglocal.Start(ctx, pglocal.Options{})
	if err != nil {
		t.Fatalf("PostgreSQL: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	pool, err := pgxpool.New(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	watch, err := pgxpool.New(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watch.Close)

	// Rows enough that the backend is still sending when the halt comes
	// (the halt follows as soon as the statement is seen running).
	const sql = `SELECT g FROM generate_series(1, 20000000) g /* cut by halt */`
	done := make(chan error, 1)
	go func() {
		_, err := (&Store{q: pool}).vlans(ctx, sql)
		done <- err
	}()
	eventually.Until(t, 30*time.Second, "the statement runs", func() (bool, string) {
		var n int
		err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%cut by halt%' AND pid <> pg_backend_pid()`).Scan(&n)
		return err == nil && n == 1, "not running yet"
	})
	if err := srv.HaltImmediate(ctx); err != nil {
		t.Fatalf("halt immediate: %v", err)
	}
	var got error
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("the statement did not end after the halt")
	}
	if got == nil {
		t.Fatal("the statement finished before the halt; nothing was cut")
	}
	if code := wimro.ErrorCode(got); code != wimro.EUNAVAILABLE {
		t.Fatalf("statement cut by an immediate shutdown: code %q (%T %v), want %q", code, got, got, wimro.EUNAVAILABLE)
	}
}
