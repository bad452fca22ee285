package persistence_test

import (
	"testing"
	"time"

	"github.com/wimro/wimro"
)

// The audit trail pages by id from a time, and the purge deletes the
// entries older than the retention, in batches, and no other.
func TestAuditListAndPurge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 5 {
		if err := b.db.AppendAudit(b.ctx, wimro.AuditEntry{TokenID: "ops", Client: "10.0.0.1", Method: "DELETE", Route: "/openmano/wims/{wim_id}",
			Objects: []string{"wim_id=w" + string(rune('0'+i))}, Status: 200, Outcome: wimro.AuditOK}); err != nil {
			t.Fatal(err)
		}
	}
	// Three entries are 40 days old.
	if _, err := b.db.Pool().Exec(b.ctx, `UPDATE api_audit SET at = now() - interval '40 days' WHERE id IN (SELECT id FROM api_audit ORDER BY id LIMIT 3)`); err != nil {
		t.Fatal(err)
	}
	all, err := b.db.ListAudit(b.ctx, wimro.AuditFilter{Limit: 100})
	if err != nil || len(all) != 5 || all[0].Objects[0] != "wim_id=w0" || all[4].TokenID != "ops" {
		t.Fatalf("list: %+v, %v", all, err)
	}
	page, err := b.db.ListAudit(b.ctx, wimro.AuditFilter{After: all[1].ID, Limit: 2})
	if err != nil || len(page) != 2 || page[0].ID != all[2].ID {
		t.Fatalf("page after %d: %+v, %v", all[1].ID, page, err)
	}
	recent, err := b.db.ListAudit(b.ctx, wimro.AuditFilter{Since: time.Now().Add(-24 * time.Hour), Limit: 100})
	if err != nil || len(recent) != 2 {
		t.Fatalf("since a day ago: %d entries, %v; want 2", len(recent), err)
	}
	if n, err := b.db.PurgeAudit(b.ctx, 30*24*time.Hour, 2); err != nil || n != 2 {
		t.Fatalf("first batch: %d, %v; want 2", n, err)
	}
	if n, err := b.db.PurgeAudit(b.ctx, 30*24*time.Hour, 2); err != nil || n != 1 {
		t.Fatalf("second batch: %d, %v; want 1", n, err)
	}
	left, err := b.db.ListAudit(b.ctx, wimro.AuditFilter{Limit: 100})
	if err != nil || len(left) != 2 || left[0].ID != all[3].ID {
		t.Fatalf("after the purge: %+v, %v; want the 2 recent entries", left, err)
	}
}
