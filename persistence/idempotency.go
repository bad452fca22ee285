package persistence

import (
	"context"
	"time"
)

// IdempotentAnswer is the stored first answer to a request sent with an
// Idempotency-Key. Status 0 means the first request is still running.
type IdempotentAnswer struct {
	Fingerprint []byte   `db:"fingerprint"`
	Status      int      `db:"status"`
	ContentType string   `db:"content_type"`
	Body        []byte   `db:"body"`
	Warnings    []string `db:"warnings"`
}

// ClaimIdempotencyKey makes the key of principal (the client: its token
// id, "" without authentication) pending for the request whose fingerprint
// is given and reports claimed, unless a live row holds it: then it returns
// that row (the first answer, or status 0 while the first request runs).
// Rows older than ttl have expired and are purged; a pending row older
// than stale belonged to a process that stopped before answering and is
// taken over.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, principal, key string, fingerprint []byte, ttl, stale time.Duration) (IdempotentAnswer, bool, error) {
	var (
		held    IdempotentAnswer
		claimed bool
	)
	err := db.Tx(ctx, func(s *Store) error {
		if _, err := s.exec(ctx, "idempotency_keys", `DELETE FROM idempotency_keys
			WHERE created_at < now() - make_interval(secs => $1) OR (principal = $2 AND key = $3 AND status = 0 AND created_at < now() - make_interval(secs => $4))`,
			ttl.Seconds(), principal, key, stale.Seconds()); err != nil {
			return err
		}
		n, err := s.exec(ctx, "idempotency_keys", `INSERT INTO idempotency_keys (principal, key, fingerprint, status, content_type, body)
			VALUES ($1, $2, $3, 0, '', '') ON CONFLICT (principal, key) DO NOTHING`, principal, key, fingerprint)
		if err != nil || n == 1 {
			claimed = n == 1
			return err
		}
		held, err = getOne[IdempotentAnswer](ctx, s, "idempotency_keys", "key="+key,
			`SELECT fingerprint, status, content_type, body, warnings FROM idempotency_keys WHERE principal = $1 AND key = $2`, principal, key)
		return err
	})
	return held, claimed, err
}

// StoreIdempotentAnswer records the answer of the request that claimed
// the key of principal.
func (s *Store) StoreIdempotentAnswer(ctx context.Context, principal, key string, a IdempotentAnswer) error {
	if a.Warnings == nil {
		a.Warnings = []string{}
	}
	_, err := s.exec(ctx, "idempotency_keys", `UPDATE idempotency_keys SET status = $3, content_type = $4, body = $5, warnings = $6
		WHERE principal = $1 AND key = $2 AND status = 0`, principal, key, a.Status, a.ContentType, a.Body, a.Warnings)
	return err
}

// ReleaseIdempotencyKey gives up a pending key of principal (the request
// failed: a retry with the same key runs again).
func (s *Store) ReleaseIdempotencyKey(ctx context.Context, principal, key string) error {
	_, err := s.exec(ctx, "idempotency_keys", `DELETE FROM idempotency_keys WHERE principal = $1 AND key = $2 AND status = 0`, principal, key)
	return err
}
