package engine

import (
	"context"
	"log/slog"

	"github.com/wimro/wimro"
)

// RecordAudit appends e to the audit trail and logs it at INFO. An entry
// the database refuses is logged at ERROR with everything it holds, so
// that the log keeps what the table could not.
func (e *Engine) RecordAudit(ctx context.Context, a wimro.AuditEntry) error {
	attrs := []any{slog.String("token_id", a.TokenID), slog.String("client", a.Client), slog.String("method", a.Method),
		slog.String("route", a.Route), slog.Any("objects", a.Objects), slog.Int("status", a.Status),
		slog.String("outcome", a.Outcome), slog.String("request_id", a.RequestID)}
	if err := e.db.AppendAudit(ctx, a); err != nil {
		e.logger.Error("audit entry not recorded", append(attrs, slog.Any("error", err))...)
		return err
	}
	e.logger.Info("audit", attrs...)
	return nil
}

// ListAudit returns the audit entries f selects, oldest first; a zero
// Limit is 100.
func (e *Engine) ListAudit(ctx context.Context, f wimro.AuditFilter) ([]wimro.AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	list, err := e.db.ListAudit(ctx, f)
	if list == nil {
		list = []wimro.AuditEntry{}
	}
	return list, err
}
