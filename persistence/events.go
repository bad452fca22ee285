package persistence

import (
	"context"
	"fmt"
	"strconv"
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

// readEventsSQL reads the events after a cursor in (xid, id) order, only
// those of transactions older than every transaction still running
// (pg_snapshot_xmin of this statement's snapshot): an event of a
// transaction still open could commit later with a smaller cursor. The
// last row is always the state of the instance action, with no event:
// settled when no task is unfinished and no visible event was held back.
const readEventsSQL = `
	WITH snap AS (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin),
	ev AS (
		SELECT e.* FROM instance_action_events e, snap
		WHERE e.instance_action_id = $1 AND (e.xid, e.id) > ($2::text::xid8, $3::bigint) AND e.xid < snap.xmin
		ORDER BY e.xid, e.id
		LIMIT $4)
	SELECT * FROM (
		SELECT ev.xid::text AS xid, ev.id, ev.task_index, ev.action, ev.status, ev.wan_link_id::text AS wan_link_id,
		       ev.link_status, ev.error_msg, ev.attempt, ev.next_try_at, ev.at, NULL::bool AS settled
		FROM ev ORDER BY ev.xid, ev.id) AS events
	UNION ALL
	SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	       NOT EXISTS (SELECT 1 FROM vim_wim_actions a WHERE a.instance_action_id = $1 AND a.status IN ('SCHEDULED', 'BUILD'))
	   AND NOT EXISTS (SELECT 1 FROM instance_action_events e, snap WHERE e.instance_action_id = $1 AND e.xid >= snap.xmin)`

// ReadEvents returns at most limit events of an instance action after the
// cursor, and whether it has settled (see EventPage). It does not check
// that the instance action exists: the caller has read it.
func (s *Store) ReadEvents(ctx context.Context, instanceActionID string, after wimro.EventCursor, limit int) (EventPage, error) {
	if limit <= 0 {
		limit = 500
	}
	rows, err := s.query(ctx, "instance_action_events", readEventsSQL,
		instanceActionID, strconv.FormatUint(after.XID, 10), after.ID, limit)
	if err != nil {
		return EventPage{}, err
	}
	defer rows.Close()
	var page EventPage
	for rows.Next() {
		var (
			xid     *string
			id      *int64
			e       wimro.Event
			when    *time.Time
			settled *bool
		)
		if err := rows.Scan(&xid, &id, &e.TaskIndex, &e.Action, &e.Status, &e.WANLinkID, &e.LinkStatus, &e.ErrorMsg, &e.Attempt, &e.NextTryAt, &when, &settled); err != nil {
			return EventPage{}, mapError(fmt.Errorf("persistence: read instance_action_events: %w", err))
		}
		if xid == nil {
			page.Settled = settled != nil && *settled && len(page.Events) < limit
			continue
		}
		x, err := strconv.ParseUint(*xid, 10, 64)
		if err != nil {
			return EventPage{}, fmt.Errorf("persistence: read instance_action_events: xid %q: %w", *xid, err)
		}
		e.Cursor = wimro.EventCursor{XID: x, ID: *id}
		if when != nil {
			e.At = *when
		}
		page.Events = append(page.Events, e)
	}
	if err := rows.Err(); err != nil {
		return EventPage{}, mapError(fmt.Errorf("persistence: read instance_action_events: %w", err))
	}
	return page, nil
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
