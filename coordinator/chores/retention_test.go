package chores_test

import (
	"context"
	"testing"
	"time"

	"github.com/wimro/wimro"
	"github.com/wimro/wimro/coordinator/chores"
	"github.com/wimro/wimro/internal/testkit/pgtest"
	"github.com/wimro/wimro/persistence"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The retention chore purges the audit entries older than the audit
// retention, and keeps the others, even with the action purge off.
func TestRetentionPurgesAudit(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := persistence.NewDB(pgtest.NewPool(t), nil)
	for _, route := range []string{"/old/1", "/old/2", "/new"} {
		if err := db.AppendAudit(ctx, wimro.AuditEntry{Method: "POST", Route: route, Status: 200, Outcome: wimro.AuditOK}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE api_audit SET at = now() - interval '2 days' WHERE route LIKE '/old/%'`); err != nil {
		t.Fatal(err)
	}
	r := chores.NewRetention(db, nil, chores.RetentionOptions{AuditRetention: 24 * time.Hour, Batch: 1})
	r.TestSignals().Init()
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Stop(stopCtx); err != nil {
			t.Error(err)
		}
	})
	// One run purges every batch (Batch 1: one entry each).
	r.TestSignals().Ran.Wait(t, 10*time.Second, "a retention run")
	left, err := db.ListAudit(ctx, wimro.AuditFilter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Route != "/new" {
		t.Fatalf("after a retention run, entries left: %s; want /new alone", routes(left))
	}
}

func routes(list []wimro.AuditEntry) string {
	s := ""
	for _, e := range list {
		s += e.Route + " "
	}
	return s
}
