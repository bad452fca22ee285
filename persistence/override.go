package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const overrideCols = `o.id, o.kind, o.instance_action_id::text AS instance_action_id, o.task_index, o.action, o.wan_link_id::text AS wan_link_id,
	o.tenant_id::text AS tenant_id, o.instance_id::text AS instance_id, o.wim_id::text AS wim_id, o.wim_name, o.wim_type, o.wim_url,
	o.wim_account_id::text AS wim_account_id, o.wim_account_name, o.service_id, o.actor, o.reason, o.at`

// LockTasks locks the tasks of an instance action, all of them or the
// one of taskIndex, in primary-key order (as every writer of several
// actions locks them), and returns them by task index: what an operator
// override reads before it decides.
func (s *Store) LockTasks(ctx context.Context, instanceActionID string, taskIndex *int) ([]wimro.Action, error) {
	return getAll[wimro.Action](ctx, s, "vim_wim_actions",
		`SELECT `+actionCols+` FROM vim_wim_actions a
		WHERE a.instance_action_id = $1 AND ($2::int IS NULL OR a.task_index = $2)
		ORDER BY a.instance_action_id, a.task_index
		FOR UPDATE OF a`, instanceActionID, taskIndex)
}

// Override is one operator override to write (OverrideAction).
type Override struct {
	// Record is the audit record; its ID and At are set by the database.
	Record wimro.ActionOverride
	// Status is the action's new status (CANCELLED, ABANDONED) and
	// ErrorMsg the message it and its event carry.
	Status, ErrorMsg string
	// LinkStatus and LinkError, when LinkStatus is set, update the task's
	// WAN link if its row still exists.
	LinkStatus, LinkError string
}

// overrideSQL ends one unfinished, unclaimed action by an operator's
// decision in one statement: the action's status and message, its WAN
// link (when asked and its row exists), the event of the change (status
// and link status as they now are), one failed task in the instance
// action's progress, and the audit record, which comes back. An action
// that is no longer unfinished and unclaimed is left alone and nothing
// comes back.
const overrideSQL = `
	WITH done AS (
		UPDATE vim_wim_actions a SET status = $3, error_msg = $4, run_after = now(), modified_at = now()
		WHERE a.instance_action_id = $1 AND a.task_index = $2 AND a.status IN ('SCHEDULED', 'BUILD') AND a.claimed_by IS NULL
		RETURNING a.instance_action_id, a.task_index, a.action, a.item_id, a.status, a.error_msg),
	link AS (
		UPDATE instance_wim_nets l SET status = $5, error_msg = $6,
			status_since = CASE WHEN l.status IS DISTINCT FROM $5 THEN now() ELSE l.status_since END, modified_at = now()
		FROM done d WHERE $5 <> '' AND l.uuid = d.item_id
		RETURNING l.uuid, l.status),
	events AS (
		INSERT INTO instance_action_events (instance_action_id, task_index, action, status, wan_link_id, link_status, error_msg)
		SELECT d.instance_action_id, d.task_index, d.action, d.status, d.item_id,
		       COALESCE((SELECT k.status FROM link k), (SELECT b.status FROM instance_wim_nets b WHERE b.uuid = d.item_id)), d.error_msg
		FROM done d),
	progress AS (
		INSERT INTO instance_action_progress (instance_action_id, n_done, n_failed)
		SELECT d.instance_action_id, 0, 1 FROM done d)
	INSERT INTO action_overrides AS o (kind, instance_action_id, task_index, action, wan_link_id, tenant_id, instance_id,
		wim_id, wim_name, wim_type, wim_url, wim_account_id, wim_account_name, service_id, actor, reason)
	SELECT $7, d.instance_action_id, d.task_index, d.action, d.item_id, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18
	FROM done d
	RETURNING ` + overrideCols

// OverrideAction writes one operator override (see overrideSQL) and
// returns its audit record. The caller holds the action's row lock
// (LockTasks) and has checked it may be overridden; an action that was
// not unfinished and unclaimed is a conflict.
func (s *Store) OverrideAction(ctx context.Context, o Override) (wimro.ActionOverride, error) {
	r := o.Record
	list, err := getAll[wimro.ActionOverride](ctx, s, "action_overrides", overrideSQL,
		r.InstanceActionID, r.TaskIndex, o.Status, wimro.CleanText(o.ErrorMsg, maxMsg), o.LinkStatus, wimro.CleanText(o.LinkError, maxMsg),
		r.Kind, r.TenantID, r.InstanceID, r.WIMID, r.WIMName, r.WIMType, r.WIMURL, r.WIMAccountID, r.WIMAccountName,
		cleanID(r.ServiceID), wimro.CleanText(r.Actor, 200), wimro.CleanText(r.Reason, maxMsg))
	if err != nil {
		return wimro.ActionOverride{}, err
	}
	if len(list) == 0 {
		return wimro.ActionOverride{}, wimro.Errorf(wimro.ECONFLICT, "task %d of instance action %s is no longer unfinished and idle: read it again", r.TaskIndex, r.InstanceActionID)
	}
	return list[0], nil
}

// OverridesOf returns the audit records of an instance action, oldest
// first.
func (s *Store) OverridesOf(ctx context.Context, instanceActionID string) ([]wimro.ActionOverride, error) {
	return getAll[wimro.ActionOverride](ctx, s, "action_overrides",
		`SELECT `+overrideCols+` FROM action_overrides o WHERE o.instance_action_id = $1 ORDER BY o.at, o.id`, instanceActionID)
}
