package persistence

import (
	"context"
	"fmt"
	"time"

	"github.com/wimro/wimro"
)

// EventPage is what ReadEvents found after a cursor.
type EventPage struct {
	// Events are in stream order, at most the limit asked for.
	Events []wimro.Event
	// Settled is true when every task of the instance action has finished
	// (DONE, FAILED, SUPERSEDED, CANCELLED or ABANDONED) and Events holds the last of its events:
	// nothing after them can belong to the work the action was made for.
	// (Monitoring may still add events later: a stream ends at Settled.)
	Settled bool
}

// ChannelEvents is the NOTIFY channel of events: a trigger on
// instance_action_events sends the uuid of each instance action a
// transaction wrote events of, while a process watches it (WatchEvents),
// delivered at its commit (so the events are committed and visible), once
// per instance action and transaction (migrations/sql/00012_event_seq.sql).
// Listener subscribers wake the streams that follow it.
const ChannelEvents = "wimro_events"

// WatchEvents says that owner (one per process) follows the events of
// the instance actions ids until ttl from now: their writers notify
// ChannelEvents meanwhile (migrations/sql/00012_event_seq.sql).
func (s *Store) WatchEvents(ctx context.Context, owner string, ids []string, ttl time.Duration) error {
	_, err := s.exec(ctx, "instance_action_watches", `
		INSERT INTO instance_action_watches (instance_action_id, owner, expires_at)
		SELECT DISTINCT id, $2, now() + $3::interval FROM unnest($1::uuid[]) AS id
		ON CONFLICT (instance_action_id, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at`, ids, owner, ttl)
	return err
}

// UnwatchEvents deletes the watches of owner but those of keep, and every
// expired watch (of processes gone).
func (s *Store) UnwatchEvents(ctx context.Context, owner string, keep []string) error {
	_, err := s.exec(ctx, "instance_action_watches", `
		DELETE FROM instance_action_watches
		WHERE (owner = $1 AND NOT (instance_action_id = ANY (coalesce($2::uuid[], '{}')))) OR expires_at < now()`, owner, keep)
	return err
}

// eventLockClass is the first key of the advisory lock that orders the
// numbering of one instance action's events (the second: its uuid,
// hashed); lockClass + 1, apart from Lock's.
const eventLockClass = lockClass + 1

// numberEventsSQL gives the committed events of an instance action that
// have no number yet the next numbers, by id. It runs in a transaction of
// its own under the instance action's advisory lock (taken by the
// statement before, so this one's snapshot sees the numbers of the last
// holder, committed before it let go): see
// migrations/sql/00012_event_seq.sql for why readers following seq then
// never skip nor repeat an event.
const numberEventsSQL = `
	UPDATE instance_action_events e SET seq = n.base + n.rn
	FROM (SELECT p.id, row_number() OVER (ORDER BY p.id) AS rn,
	             (SELECT coalesce(max(m.seq), 0) FROM instance_action_events m WHERE m.instance_action_id = $1 AND m.seq IS NOT NULL) AS base
	      FROM instance_action_events p WHERE p.instance_action_id = $1 AND p.seq IS NULL) n
	WHERE e.id = n.id`

// readEventsSQL reads the numbered events of an instance action after a
// cursor, by seq. The cursor's seq is that of its event id when the event
// is found ($3): a cursor given before version 12, (xid, id), then
// resumes where it was. The last row is always the state of the instance
// action, with no event: settled when no task is unfinished (a task's
// last event is written with its status, so then every task's events are
// visible) and none of its visible events waits for a number; unnumbered
// says whether one does.
const readEventsSQL = `
	WITH cur AS (
		SELECT COALESCE((SELECT e.seq FROM instance_action_events e WHERE e.id = $3 AND e.instance_action_id = $1), $2) AS seq),
	unnumbered AS (
		SELECT EXISTS (SELECT 1 FROM instance_action_events e WHERE e.instance_action_id = $1 AND e.seq IS NULL) AS any)
	SELECT * FROM (
		SELECT e.seq, e.id, e.task_index, e.action, e.status, e.wan_link_id::text AS wan_link_id,
		       e.link_status, e.error_msg, e.attempt, e.next_try_at, e.at, NULL::bool AS settled, NULL::bool AS unnumbered
		FROM instance_action_events e, cur
		WHERE e.instance_action_id = $1 AND e.seq > cur.seq
		ORDER BY e.seq
		LIMIT $4) AS events
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	       NOT u.any AND NOT EXISTS (SELECT 1 FROM vim_wim_actions a WHERE a.instance_action_id = $1 AND a.status IN ('SCHEDULED', 'BUILD')),
	       u.any
	FROM unnumbered u`

// ReadEvents returns at most limit events of an instance action after the
// cursor, and whether it has settled (see EventPage). Events committed
// since the last read get their numbers first (numberEventsSQL), one
// short transaction, only when there are some. It does not check that the
// instance action exists: the caller has read it.
func (db *DB) ReadEvents(ctx context.Context, instanceActionID string, after wimro.EventCursor, limit int) (EventPage, error) {
	page, unnumbered, err := db.readEvents(ctx, instanceActionID, after, limit)
	if err != nil || !unnumbered {
		return page, err
	}
	err = db.Tx(ctx, func(s *Store) error {
		if _, err := s.exec(ctx, "instance_action_events", `SELECT pg_advisory_xact_lock($1, hashtext($2))`, eventLockClass, instanceActionID); err != nil {
			return err
		}
		_, err := s.exec(ctx, "instance_action_events", numberEventsSQL, instanceActionID)
		return err
	})
	if err != nil {
		return EventPage{}, err
	}
	page, _, err = db.readEvents(ctx, instanceActionID, after, limit)
	return page, err
}

func (s *Store) readEvents(ctx context.Context, instanceActionID string, after wimro.EventCursor, limit int) (EventPage, bool, error) {
	if limit <= 0 {
		limit = 500
	}
	rows, err := s.query(ctx, "instance_action_events", readEventsSQL, instanceActionID, after.Seq, after.ID, limit)
	if err != nil {
		return EventPage{}, false, err
	}
	defer rows.Close()
	var (
		page       EventPage
		unnumbered bool
	)
	for rows.Next() {
		var (
			seq     *int64
			id      *int64
			e       wimro.Event
			when    *time.Time
			settled *bool
			pending *bool
		)
		if err := rows.Scan(&seq, &id, &e.TaskIndex, &e.Action, &e.Status, &e.WANLinkID, &e.LinkStatus, &e.ErrorMsg, &e.Attempt, &e.NextTryAt, &when, &settled, &pending); err != nil {
			return EventPage{}, false, mapError(fmt.Errorf("persistence: read instance_action_events: %w", err))
		}
		if seq == nil {
			page.Settled = settled != nil && *settled && len(page.Events) < limit
			unnumbered = pending != nil && *pending
			continue
		}
		e.Cursor = wimro.EventCursor{Seq: *seq, ID: *id}
		if when != nil {
			e.At = *when
		}
		page.Events = append(page.Events, e)
	}
	if err := rows.Err(); err != nil {
		return EventPage{}, false, mapError(fmt.Errorf("persistence: read instance_action_events: %w", err))
	}
	return page, unnumbered, nil
}

// TaskLink is the WAN link a task of an instance action works on, as it
// is now.
type TaskLink struct {
	WANLinkID string  `db:"wan_link_id"`
	Status    *string `db:"status"` // nil: the link is gone (deleted with its instance)
	ErrorMsg  *string `db:"error_msg"`
}

// LinksOfInstanceAction returns, in one statement, the WAN links the
// tasks of an instance action work on, each once, by uuid: the end state
// an event stream's summary reports.
func (s *Store) LinksOfInstanceAction(ctx context.Context, instanceActionID string) ([]TaskLink, error) {
	return getAll[TaskLink](ctx, s, "instance_wim_nets", `
		SELECT DISTINCT a.item_id::text AS wan_link_id, l.status, l.error_msg
		FROM vim_wim_actions a LEFT JOIN instance_wim_nets l ON l.uuid = a.item_id
		WHERE a.instance_action_id = $1 AND a.item = 'instance_wim_nets'
		ORDER BY 1`, instanceActionID)
}
