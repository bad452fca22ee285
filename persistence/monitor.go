package persistence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

// MonitoredLink is a WAN link whose service the monitor re-reads from its
// controller, with what GetServiceStatus needs.
type MonitoredLink struct {
	UUID       string
	AccountID  string
	InstanceID *string
	// Status and ErrorMsg are the link's as read: RecordLinkStatus writes
	// only while the status is still Status.
	Status    string
	ErrorMsg  *string
	ServiceID string
	// ConnInfo is the conn_info the link's CREATE stored with its outcome
	// (as actions.Runner's refresh reads it).
	ConnInfo map[string]any
	// ActionSeq is the seq of the link's latest action (that CREATE):
	// RecordLinkStatus writes only while no action came after it.
	ActionSeq int64
	// ServiceType is the type the link is counted as in the metrics
	// (ELINE, ELAN, L3VPN; schema 22's wimro_link_service_type: an older
	// link of no recorded type is an ELAN when multipoint, else an ELINE).
	ServiceType string
}

// monitoredStatuses are the link statuses the monitor re-reads: ACTIVE to
// see it fail, DOWN, ERROR and INACTIVE to see it come back. BUILD and
// WIM_ERROR belong to an action in flight, DELETED to nothing.
var monitoredStatuses = []string{wimro.LinkActive, wimro.LinkDown, wimro.LinkError, wimro.LinkInactive}

// listMonitoredSQL lists the links of the accounts $1 whose latest action
// is a CREATE that finished DONE (the service exists as far as wimro
// knows, and its status came from the controller: a failed CREATE's ERROR
// is the action's, not the controller's, and is not re-read), with a
// service id, in a monitored status, and with no unfinished action (which
// owns the link until its outcome). The latest action comes from the
// item_type_id index, one probe per link.
const listMonitoredSQL = `
	SELECT l.uuid::text, l.wim_account_id::text, l.instance_scenario_id::text, l.status, l.error_msg,
	       COALESCE(a.wim_internal_id, l.wim_internal_id), a.extra -> 'conn_info', a.seq,
	       wimro_link_service_type(l.service_type, l.multipoint)
	FROM instance_wim_nets l
	CROSS JOIN LATERAL (
		SELECT a.seq, a.action, a.status, a.wim_internal_id, a.extra FROM vim_wim_actions a
		WHERE a.item = 'instance_wim_nets' AND a.item_id = l.uuid
		ORDER BY a.seq DESC LIMIT 1) a
	WHERE l.wim_account_id = ANY($1::uuid[])
	  AND l.wim_internal_id IS NOT NULL AND l.status = ANY($2::text[])
	  AND a.action = 'CREATE' AND a.status = 'DONE'
	  AND NOT EXISTS (
		SELECT 1 FROM vim_wim_actions u
		WHERE u.item = 'instance_wim_nets' AND u.item_id = l.uuid AND u.status IN ('SCHEDULED', 'BUILD'))
	ORDER BY l.wim_account_id, l.uuid`

// ListMonitoredLinks returns the links of the accounts that monitoring
// re-reads (see listMonitoredSQL), in account order. One statement
// whatever the number of accounts.
func (s *Store) ListMonitoredLinks(ctx context.Context, accountIDs []string) ([]MonitoredLink, error) {
	if len(accountIDs) == 0 {
		return nil, nil
	}
	rows, err := s.query(ctx, "instance_wim_nets", listMonitoredSQL, accountIDs, monitoredStatuses)
	if err != nil {
		return nil, err
	}
	links, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MonitoredLink, error) {
		var l MonitoredLink
		return l, r.Scan(&l.UUID, &l.AccountID, &l.InstanceID, &l.Status, &l.ErrorMsg, &l.ServiceID, &l.ConnInfo, &l.ActionSeq, &l.ServiceType)
	})
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: monitored links: %w", err))
	}
	return links, nil
}

// LinkStatus is what monitoring found for a link: what it read (From,
// ActionSeq: MonitoredLink's Status and ActionSeq) and the status the
// controller reports now.
type LinkStatus struct {
	LinkID    string
	From      string
	ActionSeq int64
	Status    string
	ErrorMsg  *string // nil clears the link's message
}

// recordLinkStatusSQL writes a monitored status, fenced like an outcome
// (finishSQL): only while the account's lease ($3) is held as given ($4
// owner, $5 epoch, unexpired), only while the link still has the status
// the monitor read ($2, compare-and-set) and no action came after the one
// that was its latest then ($8: a CREATE queued again and finished since,
// by reconcile, leaves the status as it was but the controller's answer
// may predate it), and only while no action of the link is unfinished (an
// action in flight owns the link; its outcome decides). The link row is locked, so a concurrent outcome either
// commits first (then the status no longer matches, re-checked on the
// new row version) or waits for this write. An action queued by a
// transaction that commits after this statement's snapshot is ordered
// after this write: its outcome, written later, wins. status_since moves
// only when the status changes; the event, in the same statement, is
// attached to the link's latest action (its instance action is where the
// link's history is read) and written only for a status change. A link
// that already has this status and message is not written (the monitor
// compares before it calls, but the message is stored cleaned).
const recordLinkStatusSQL = `
	WITH link AS (
		SELECT l.uuid, l.status FROM instance_wim_nets l
		WHERE l.uuid = $1 AND l.status = $2 AND l.wim_account_id = $3
		  AND (l.status IS DISTINCT FROM $6 OR l.error_msg IS DISTINCT FROM $7)
		  AND EXISTS (
			SELECT 1 FROM wim_account_leases l
			WHERE l.account_id = $3 AND l.owner = $4 AND l.epoch = $5 AND ` + leaseLive + `)
		  AND NOT EXISTS (
			SELECT 1 FROM vim_wim_actions u
			WHERE u.item = 'instance_wim_nets' AND u.item_id = $1 AND (u.status IN ('SCHEDULED', 'BUILD') OR u.seq > $8))
		FOR UPDATE OF l),
	changed AS (
		UPDATE instance_wim_nets l SET
			status = $6,
			error_msg = $7,
			status_since = CASE WHEN $6 IS DISTINCT FROM k.status THEN now() ELSE l.status_since END,
			modified_at = now()
		FROM link k WHERE l.uuid = k.uuid
		RETURNING l.uuid, k.status AS old_status),
	latest AS (
		SELECT a.instance_action_id, a.task_index, a.action, a.status FROM vim_wim_actions a
		WHERE a.item = 'instance_wim_nets' AND a.item_id = $1
		ORDER BY a.seq DESC LIMIT 1),
	events AS (
		INSERT INTO instance_action_events (instance_action_id, task_index, action, status, wan_link_id, link_status, error_msg)
		SELECT a.instance_action_id, a.task_index, a.action, a.status, c.uuid, $6, $7
		FROM changed c, latest a
		WHERE c.old_status IS DISTINCT FROM $6)
	SELECT count(*) FROM changed`

// RecordLinkStatus writes what monitoring found for a link of the lease's
// account (see recordLinkStatusSQL for the fence) and reports whether it
// wrote. false is not an error: nothing differed, the lease was lost, the
// link changed or went, or an action now owns it; the monitor reads it
// again next round.
func (s *Store) RecordLinkStatus(ctx context.Context, l Lease, st LinkStatus) (bool, error) {
	var n int64
	err := s.q.QueryRow(ctx, recordLinkStatusSQL, st.LinkID, st.From, l.AccountID, l.Owner, l.Epoch, st.Status, cleanMsg(st.ErrorMsg), st.ActionSeq).Scan(&n)
	if err != nil {
		return false, mapError(fmt.Errorf("persistence: record the status of WAN link %s: %w", st.LinkID, err))
	}
	return n > 0, nil
}

// foldLinkCountsName names the advisory lock (in lockClass) of the one
// folder of wan_link_status_counts at a time.
const foldLinkCountsName = "wimro:fold-link-status-counts"

// linkCountsSQL returns how many WAN links have each status and service
// type (pairs with none left out): the sums of wan_link_status_counts,
// the signed deltas that the links table's statement triggers append
// (schema 13, by type since schema 22), exact in the statement's snapshot.
// It also folds the rows it reads into one per pair, so the next read sums
// a few rows: every part of the statement sees the same snapshot, so the
// sums are of the rows before the fold, and deltas committed meanwhile are
// neither read nor deleted. One folder at a time (a transaction-scoped
// advisory lock taken without waiting): two would each delete what the
// other already folded and count it once less. A statement that finds the
// lock taken only reads.
const linkCountsSQL = `
	WITH lk AS (SELECT pg_try_advisory_xact_lock($1, hashtext($2)) AS got),
	gone AS (
		DELETE FROM wan_link_status_counts WHERE (SELECT got FROM lk)
		RETURNING status, service_type, n),
	folded AS (
		INSERT INTO wan_link_status_counts (status, service_type, n)
		SELECT status, service_type, sum(n) FROM gone GROUP BY status, service_type HAVING sum(n) <> 0)
	SELECT status, service_type, sum(n)::bigint FROM wan_link_status_counts GROUP BY status, service_type HAVING sum(n) <> 0`

// LinkCountKey is what WAN links are counted by: their status and the
// service type they are made as (ELINE, ELAN, L3VPN; a link written before
// the type was recorded counts as an ELAN when multipoint, else an ELINE,
// as the runner makes it).
type LinkCountKey struct {
	Status      string
	ServiceType string
}

// CountWANLinks returns how many WAN links have each status and service
// type, over every account, exactly, from the counts the links table's
// triggers keep (see linkCountsSQL): the links table itself is not read,
// however large. It writes (the fold), so it needs a primary.
func (s *Store) CountWANLinks(ctx context.Context) (map[LinkCountKey]int, error) {
	rows, err := s.query(ctx, "wan_link_status_counts", linkCountsSQL, lockClass, foldLinkCountsName)
	if err != nil {
		return nil, err
	}
	out := map[LinkCountKey]int{}
	var (
		k LinkCountKey
		n int
	)
	if _, err := pgx.ForEachRow(rows, []any{&k.Status, &k.ServiceType, &n}, func() error { out[k] = n; return nil }); err != nil {
		return nil, mapError(fmt.Errorf("persistence: count WAN links by status and service type: %w", err))
	}
	return out, nil
}

// CountWANLinksByStatus returns how many WAN links have each status,
// whatever their type (CountWANLinks summed).
func (s *Store) CountWANLinksByStatus(ctx context.Context) (map[string]int, error) {
	byType, err := s.CountWANLinks(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for k, n := range byType {
		out[k.Status] += n
	}
	return out, nil
}
