package persistence

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
)

// SealedSamples returns one stored account password and one stored sealed
// string (from a wim_url or a WIM or account config), each empty when the
// database holds none: enough for wimd to check at start that its secret
// key opens what the database holds. sealedPrefix is the marker of a
// sealed string (secret.IsSealed).
func (s *Store) SealedSamples(ctx context.Context, sealedPrefix string) (password []byte, sealed string, err error) {
	err = s.q.QueryRow(ctx, `SELECT password FROM wim_accounts WHERE length(password) > 0 LIMIT 1`).Scan(&password)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, "", mapError(fmt.Errorf("persistence: a stored password: %w", err))
	}
	// A sealed string is the prefix then unpadded URL-safe base64.
	pattern := regexp.QuoteMeta(sealedPrefix) + "[A-Za-z0-9_-]+"
	var found *string
	err = s.q.QueryRow(ctx, `SELECT substring(x FROM $1)
		FROM (SELECT wim_url AS x FROM wims UNION ALL SELECT config::text FROM wims UNION ALL SELECT config::text FROM wim_accounts) s
		WHERE x ~ $1 LIMIT 1`, pattern).Scan(&found)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, "", mapError(fmt.Errorf("persistence: a stored sealed string: %w", err))
	}
	if found != nil {
		sealed = *found
	}
	return password, sealed, nil
}
