package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/wimro/wimro"
)

// purgeLockName names the advisory lock (in lockClass, hashed like Lock's
// names) that lets one process at a time purge finished actions.
const purgeLockName = "wimro:purge-finished-actions"

// purgeActionsSQL deletes up to $2 finished actions older than $1 whose
// instance is gone. An action stays while anything it belongs to is still
// in progress: its instance action (its counters and its history), or its
// WAN link (a DELETE still queued may read the link's earlier CREATE for
// the service id). The rows are picked and locked in one statement and
// deleted by ctid; SKIP LOCKED passes over the rows a worker is writing.
// They are taken oldest first through vim_wim_actions_finished_idx
// (schema 13): created_at never changes and is never after modified_at,
// so "created before the cutoff" keeps every row the purge may delete.
// modified_at itself cannot be indexed: every claim and renewal sets it,
// and would no longer be a HOT update. A batch reads the finished actions
// created before the cutoff until it has its rows, so what it reads
// besides them is the old history of live instances (a live link's
// CREATE), not the table: with the modified_at filter alone, a batch that
// found little read every finished action, and the last batch of every
// purge finds little.
const purgeActionsSQL = `
	WITH doomed AS (
		SELECT a.ctid
		FROM vim_wim_actions a
		JOIN instance_actions ia ON ia.uuid = a.instance_action_id
		WHERE a.status IN ('DONE', 'FAILED', 'SUPERSEDED', 'FINISHED', 'CANCELLED', 'ABANDONED')
		  AND a.created_at < now() - $1::interval AND a.modified_at < now() - $1::interval
		  AND (ia.instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM instance_scenarios i WHERE i.uuid = ia.instance_id))
		  AND NOT EXISTS (
			SELECT 1 FROM vim_wim_actions u
			WHERE u.instance_action_id = a.instance_action_id AND u.status IN ('SCHEDULED', 'BUILD'))
		  AND NOT EXISTS (
			SELECT 1 FROM vim_wim_actions l
			WHERE l.item = a.item AND l.item_id = a.item_id AND l.status IN ('SCHEDULED', 'BUILD'))
		ORDER BY a.created_at
		LIMIT $2
		FOR UPDATE OF a SKIP LOCKED
	)
	DELETE FROM vim_wim_actions WHERE ctid = ANY (ARRAY (SELECT ctid FROM doomed))`

// purgeInstanceActionsSQL deletes up to $2 instance actions older than $1
// (their row and their newest progress increment) that have no action
// left and whose instance is gone, with their events; their increments go
// with them (cascade). Locking the row (SKIP LOCKED) keeps it from a
// transaction adding an action to it. Oldest first through
// instance_actions_created_idx, as the actions.
const purgeInstanceActionsSQL = `
	WITH doomed AS (
		SELECT ia.ctid, ia.uuid
		FROM instance_actions ia
		WHERE ia.created_at < now() - $1::interval AND ia.modified_at < now() - $1::interval
		  AND NOT EXISTS (SELECT 1 FROM instance_action_progress p WHERE p.instance_action_id = ia.uuid AND p.created_at >= now() - $1::interval)
		  AND (ia.instance_id IS NULL OR NOT EXISTS (SELECT 1 FROM instance_scenarios i WHERE i.uuid = ia.instance_id))
		  AND NOT EXISTS (SELECT 1 FROM vim_wim_actions a WHERE a.instance_action_id = ia.uuid)
		ORDER BY ia.created_at
		LIMIT $2
		FOR UPDATE SKIP LOCKED
	),
	events AS (
		DELETE FROM instance_action_events e WHERE e.instance_action_id IN (SELECT uuid FROM doomed)),
	progress AS (
		DELETE FROM instance_action_progress p WHERE p.instance_action_id IN (SELECT uuid FROM doomed))
	DELETE FROM instance_actions WHERE ctid = ANY (ARRAY (SELECT ctid FROM doomed))`

// PurgeFinishedActions deletes one batch of history: at most batch
// finished actions (DONE, FAILED, SUPERSEDED, FINISHED, CANCELLED, ABANDONED) last modified more
// than olderThan ago whose instance no longer exists, then at most batch
// instance actions of such instances left with no action, and says how
// many of each it deleted. An action of an instance that still exists, an
// unfinished action, and every action of an instance action or a WAN link
// that still has unfinished work are kept. Callers loop until a batch
// comes back short.
//
// Several processes may share the database: the batch runs in one
// transaction under a transaction-scoped advisory lock taken without
// waiting, so only one process purges at a time and a call that finds the
// lock taken deletes nothing and returns 0, 0, nil. Rows locked by others
// are skipped, never waited for.
func (db *DB) PurgeFinishedActions(ctx context.Context, olderThan time.Duration, batch int) (actions, instanceActions int64, err error) {
	if olderThan < 0 {
		return 0, 0, wimro.Errorf(wimro.EINVALID, "persistence: purge: negative retention %s", olderThan)
	}
	if batch <= 0 {
		return 0, 0, nil
	}
	err = db.Tx(ctx, func(s *Store) error {
		var locked bool
		if err := s.q.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, hashtext($2))`, lockClass, purgeLockName).Scan(&locked); err != nil {
			return mapError(fmt.Errorf("persistence: purge: lock: %w", err))
		}
		if !locked {
			return nil // another process is purging
		}
		var err error
		if actions, err = s.exec(ctx, "vim_wim_actions", purgeActionsSQL, olderThan, batch); err != nil {
			return err
		}
		if instanceActions, err = s.exec(ctx, "instance_actions", purgeInstanceActionsSQL, olderThan, batch); err != nil {
			return err
		}
		// The link counts are folded by every /metrics scrape; the purge
		// folds them too, so they stay a few rows where nothing scrapes.
		_, err = s.exec(ctx, "wan_link_status_counts", linkCountsSQL, lockClass, foldLinkCountsName)
		return err
	})
	if err != nil {
		return 0, 0, err
	}
	return actions, instanceActions, nil
}
