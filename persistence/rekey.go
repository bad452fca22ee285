package persistence

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/wimro/wimro"
)

// Sealed tables: every column that may hold a secret sealed with the
// secret key. Adding a sealed column anywhere means adding it here, or
// wimd rekey leaves it under the old key.
const (
	// SealedAccounts: wim_accounts.password (a sealed value) and the
	// secret keys of wim_accounts.config (sealed strings).
	SealedAccounts = "wim_accounts"
	// SealedWIMs: the password in wims.wim_url's user info and the
	// secret keys of wims.config.
	SealedWIMs = "wims"
	// SealedOverrides: action_overrides.wim_url, the WIM's URL as it was
	// when an operator overrode a task: written masked now, sealed
	// password included by wimd before 2026-11.
	SealedOverrides = "action_overrides"
)

// SealedTables lists the tables of sealed values, in the order rekey
// walks them.
var SealedTables = []string{SealedAccounts, SealedWIMs, SealedOverrides}

// SealedRow is the sealed columns of one row of a sealed table.
type SealedRow struct {
	// Key is the row's primary key (uuid, or id of action_overrides).
	Key string
	// Password is wim_accounts.password (nil elsewhere).
	Password []byte
	// URL is wim_url (wims, action_overrides; nil when none).
	URL *string
	// Config holds the string values of the secret config keys the row's
	// config has (wim_accounts, wims).
	Config map[string]string
}

// sealedSelect reads a page of a sealed table's rows after a key. The
// ORDER BY names the table's column: a bare name would be the output
// column (the key cast to text), sorting every row of the table for each
// page instead of reading the primary key's index (wimd's start, which
// counts the sealed values, took 15 s at 100,000 accounts), and ordering
// action_overrides' ids as text ("10" before "9") while the next page is
// chosen by number.
var sealedSelect = map[string]string{
	SealedAccounts:  `SELECT uuid::text, password, NULL::text, config::text FROM wim_accounts WHERE uuid > $1::uuid ORDER BY wim_accounts.uuid LIMIT $2`,
	SealedWIMs:      `SELECT uuid::text, NULL::bytea, wim_url, config::text FROM wims WHERE uuid > $1::uuid ORDER BY wims.uuid LIMIT $2`,
	SealedOverrides: `SELECT id::text, NULL::bytea, wim_url, NULL::text FROM action_overrides WHERE id > $1::bigint ORDER BY action_overrides.id LIMIT $2`,
}

// firstKey is the key before every row of a table.
func firstKey(table string) string {
	if table == SealedOverrides {
		return "0"
	}
	return "00000000-0000-0000-0000-000000000000"
}

// ScanSealed returns up to batch rows of table after the key after (""
// from the first), with the string values of configKeys in their config,
// and the key to read on from ("" when none is left).
func (s *Store) ScanSealed(ctx context.Context, table string, configKeys []string, after string, batch int) ([]SealedRow, string, error) {
	return s.scanSealed(ctx, table, configKeys, after, batch, "")
}

func (s *Store) scanSealed(ctx context.Context, table string, configKeys []string, after string, batch int, lock string) ([]SealedRow, string, error) {
	q, ok := sealedSelect[table]
	if !ok {
		return nil, "", fmt.Errorf("persistence: %s is not a sealed table", table)
	}
	if after == "" {
		after = firstKey(table)
	}
	rows, err := s.q.Query(ctx, q+lock, after, batch)
	if err != nil {
		return nil, "", mapError(fmt.Errorf("persistence: read %s: %w", table, err))
	}
	defer rows.Close()
	var out []SealedRow
	for rows.Next() {
		var r SealedRow
		var config *string
		if err := rows.Scan(&r.Key, &r.Password, &r.URL, &config); err != nil {
			return nil, "", mapError(fmt.Errorf("persistence: read %s: %w", table, err))
		}
		if config != nil {
			// Only the secret keys are read, as strings: the rest of the
			// config is never decoded, so never rewritten.
			var doc map[string]json.RawMessage
			if json.Unmarshal([]byte(*config), &doc) == nil {
				for _, k := range configKeys {
					var v string
					if raw, ok := doc[k]; ok && json.Unmarshal(raw, &v) == nil && v != "" {
						if r.Config == nil {
							r.Config = map[string]string{}
						}
						r.Config[k] = v
					}
				}
			}
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, "", mapError(fmt.Errorf("persistence: read %s: %w", table, err))
	}
	next := ""
	if len(out) == batch {
		next = out[len(out)-1].Key
	}
	return out, next, nil
}

// ResealBatch re-seals one batch of table, in one transaction: it locks
// up to batch rows after the key after (as an edit of the row would, so an
// edit waits for the batch or the batch for the edit, never both writing),
// gives each to reseal, which changes the row's sealed values in place
// and says whether it changed them, and writes the changed ones: the
// password and wim_url whole, the config's secret keys merged into the
// stored config (its other keys untouched), modified_at kept. It returns the key to go on
// from ("" when none is left) and how many rows it changed.
func (db *DB) ResealBatch(ctx context.Context, table string, configKeys []string, after string, batch int,
	reseal func(r *SealedRow) (bool, error)) (next string, changed int, err error) {
	err = db.Tx(ctx, func(s *Store) error {
		changed = 0
		// Not an edit: the touch trigger keeps modified_at (schema 14),
		// so that an edit racing the batch is not refused as concurrent.
		if _, err := s.q.Exec(ctx, `SELECT set_config('wimro.reseal', 'on', true)`); err != nil {
			return mapError(fmt.Errorf("persistence: reseal: %w", err))
		}
		rows, n, err := s.scanSealed(ctx, table, configKeys, after, batch, " FOR UPDATE")
		if err != nil {
			return err
		}
		next = n
		for i := range rows {
			r := &rows[i]
			ok, err := reseal(r)
			if err != nil {
				return fmt.Errorf("%s %s: %w", table, r.Key, err)
			}
			if !ok {
				continue
			}
			cfg, err := json.Marshal(r.Config)
			if err != nil {
				return err
			}
			if r.Config == nil {
				cfg = []byte("{}")
			}
			var q string
			var args []any
			switch table {
			case SealedAccounts:
				q, args = `UPDATE wim_accounts SET password = $2, config = CASE WHEN config IS NULL THEN NULL ELSE config || $3::jsonb END WHERE uuid = $1`, []any{r.Key, r.Password, string(cfg)}
			case SealedWIMs:
				q, args = `UPDATE wims SET wim_url = $2, config = CASE WHEN config IS NULL THEN NULL ELSE config || $3::jsonb END WHERE uuid = $1`, []any{r.Key, r.URL, string(cfg)}
			case SealedOverrides:
				q, args = `UPDATE action_overrides SET wim_url = $2 WHERE id = $1::bigint`, []any{r.Key, r.URL}
			}
			if _, err := s.exec(ctx, table, q, args...); err != nil {
				return err
			}
			changed++
		}
		return nil
	})
	return next, changed, err
}

// KeyHolder is what one wimd process reported of its secret keys: the
// ids (never the keys) of the key it seals with and of every key it
// opens with, and when it last said so.
type KeyHolder struct {
	InstanceID string    `db:"instance_id"`
	SealingKey string    `db:"sealing_key_id"`
	KeyIDs     []string  `db:"key_ids"`
	SeenAt     time.Time `db:"seen_at"`
}

// RecordKeyHolder writes (or refreshes) the key ids of the process
// instanceID.
func (s *Store) RecordKeyHolder(ctx context.Context, instanceID, sealingKey string, keyIDs []string) error {
	_, err := s.exec(ctx, "secret_key_holders", `INSERT INTO secret_key_holders (instance_id, sealing_key_id, key_ids) VALUES ($1, $2, $3)
		ON CONFLICT (instance_id) DO UPDATE SET sealing_key_id = EXCLUDED.sealing_key_id, key_ids = EXCLUDED.key_ids, seen_at = now()`,
		wimro.CleanText(instanceID, 300), sealingKey, keyIDs)
	return err
}

// DeleteKeyHolder removes the row of a process that stops.
func (s *Store) DeleteKeyHolder(ctx context.Context, instanceID string) error {
	_, err := s.exec(ctx, "secret_key_holders", `DELETE FROM secret_key_holders WHERE instance_id = $1`, wimro.CleanText(instanceID, 300))
	return err
}

// KeyHolders returns the processes that reported their keys within the
// last within, by instance id.
func (s *Store) KeyHolders(ctx context.Context, within time.Duration) ([]KeyHolder, error) {
	return getAll[KeyHolder](ctx, s, "secret_key_holders",
		`SELECT instance_id, sealing_key_id, key_ids, seen_at FROM secret_key_holders
		WHERE seen_at > now() - $1::interval ORDER BY instance_id`, within)
}
