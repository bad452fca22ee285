package engine

import (
	"context"
	"time"

	"github.com/wimro/wimro/persistence"
)

// IdempotencyTTL is how long the first answer to a request sent with an
// Idempotency-Key is replayed to its retries.
const IdempotencyTTL = 24 * time.Hour

// idempotencyStale is how long a key stays pending before it is taken to
// belong to a process that stopped before answering (no request runs this
// long: the HTTP server's write timeout is far shorter).
const idempotencyStale = 10 * time.Minute

// IdempotentAnswer is the stored first answer to a keyed request.
type IdempotentAnswer = persistence.IdempotentAnswer

// Keys are scoped per client, as the IETF draft intends: principal names
// the client (the API token's id, "" without authentication), so two
// clients choosing the same key neither collide nor read each other's
// answers.

// ClaimIdempotencyKey makes principal's key pending for the request of
// fingerprint, or returns the answer (or the pending state, status 0) of
// the request that holds it.
func (e *Engine) ClaimIdempotencyKey(ctx context.Context, principal, key string, fingerprint []byte) (IdempotentAnswer, bool, error) {
	return e.db.ClaimIdempotencyKey(ctx, principal, key, fingerprint, IdempotencyTTL, idempotencyStale)
}

// StoreIdempotentAnswer records the answer of the request that claimed
// principal's key.
func (e *Engine) StoreIdempotentAnswer(ctx context.Context, principal, key string, a IdempotentAnswer) error {
	return e.db.StoreIdempotentAnswer(ctx, principal, key, a)
}

// ReleaseIdempotencyKey frees a pending key of principal whose request
// failed.
func (e *Engine) ReleaseIdempotencyKey(ctx context.Context, principal, key string) error {
	return e.db.ReleaseIdempotencyKey(ctx, principal, key)
}
