package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/wimro/wimro"
)

const auditCols = `id, at, token_id, client, method, route, objects, status, outcome, request_id`

// AppendAudit writes one audit entry; its ID and At are set by the
// database. Text from the client (route parameters, its request id) is
// cut and made storable.
func (s *Store) AppendAudit(ctx context.Context, e wimro.AuditEntry) error {
	objects := make([]string, 0, len(e.Objects))
	for _, o := range e.Objects {
		objects = append(objects, wimro.CleanText(o, 300))
	}
	_, err := s.exec(ctx, "api_audit", `INSERT INTO api_audit (token_id, client, method, route, objects, status, outcome, request_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		wimro.CleanText(e.TokenID, 100), wimro.CleanText(e.Client, 100), wimro.CleanText(e.Method, 20), wimro.CleanText(e.Route, 300),
		objects, e.Status, e.Outcome, wimro.CleanText(e.RequestID, 128))
	return err
}

// ListAudit returns the audit entries f selects, oldest first.
func (s *Store) ListAudit(ctx context.Context, f wimro.AuditFilter) ([]wimro.AuditEntry, error) {
	var since *time.Time
	if !f.Since.IsZero() {
		since = &f.Since
	}
	return getAll[wimro.AuditEntry](ctx, s, "api_audit",
		`SELECT `+auditCols+` FROM api_audit
		WHERE ($1::timestamptz IS NULL OR at >= $1) AND id > $2
		ORDER BY id LIMIT $3`, since, f.After, f.Limit)
}

// PurgeAudit deletes up to batch audit entries older than olderThan,
// oldest first, and says how many. Rows are append-only, so processes
// purging at once only delete the same rows twice over: the second
// finds them gone (SKIP LOCKED passes over those the first holds).
func (db *DB) PurgeAudit(ctx context.Context, olderThan time.Duration, batch int) (int64, error) {
	if olderThan < 0 {
		return 0, wimro.Errorf(wimro.EINVALID, "persistence: purge audit: negative retention %s", olderThan)
	}
	if batch <= 0 {
		return 0, nil
	}
	n, err := db.exec(ctx, "api_audit", `
		WITH doomed AS (
			SELECT id FROM api_audit WHERE at < now() - $1::interval
			ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)
		DELETE FROM api_audit WHERE id IN (SELECT id FROM doomed)`, olderThan, batch)
	if err != nil {
		return 0, fmt.Errorf("persistence: purge audit: %w", err)
	}
	return n, nil
}
