package persistence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

const instanceCols = `i.uuid, i.name, i.tenant_id, i.scenario_id, i.datacenter_id, i.description, i.created_at, i.modified_at`

// CreateInstance inserts an NS instance; an empty UUID gets a new one.
func (s *Store) CreateInstance(ctx context.Context, in wimro.Instance) (wimro.Instance, error) {
	return getOne[wimro.Instance](ctx, s, "instance_scenarios", "name="+in.Name,
		`INSERT INTO instance_scenarios AS i (uuid, name, tenant_id, scenario_id, datacenter_id, description)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+instanceCols,
		newUUID(in.UUID), in.Name, in.TenantID, in.ScenarioID, in.DatacenterID, in.Description)
}

// GetInstance finds an instance of a tenant by name or uuid.
func (s *Store) GetInstance(ctx context.Context, tenantID, nameOrUUID string) (wimro.Instance, error) {
	col, v, crit, err := ref("instance_scenarios", nameOrUUID)
	if err != nil {
		return wimro.Instance{}, err
	}
	return getOne[wimro.Instance](ctx, s, "instance_scenarios", crit+" tenant_id="+tenantID,
		`SELECT `+instanceCols+` FROM instance_scenarios i WHERE i.`+col+` = $1 AND i.tenant_id = $2`, v, tenantID)
}

// ListInstances lists a tenant's instances, oldest first.
func (s *Store) ListInstances(ctx context.Context, tenantID string) ([]wimro.Instance, error) {
	return getAll[wimro.Instance](ctx, s, "instance_scenarios",
		`SELECT `+instanceCols+` FROM instance_scenarios i WHERE i.tenant_id = $1 ORDER BY i.created_at, i.uuid`, tenantID)
}

// DeleteInstance deletes an instance; its networks and WAN links go with it.
func (s *Store) DeleteInstance(ctx context.Context, id string) error {
	n, err := s.exec(ctx, "instance_scenarios", `DELETE FROM instance_scenarios WHERE uuid = $1`, id)
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound("instance_scenarios", "uuid="+id)
	}
	return nil
}

const netCols = `n.uuid, n.instance_scenario_id, n.sce_net_id, n.osm_id, n.vim_net_id, n.vim_name, n.datacenter_id,
	n.status, n.error_msg, n.vim_info, n.encapsulation_type, n.encapsulation_id, n.pop_switch_dpid, n.pop_switch_port,
	n.sdn_net_id, n.related, n.l3, n.created_at, n.modified_at`

// batchOne sends one RETURNING statement per row in a single round trip
// and collects the rows.
func batchOne[T, R any](ctx context.Context, s *Store, table string, rows []R, sql string, args func(R) []any) ([]T, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	b := &pgx.Batch{}
	for _, r := range rows {
		b.Queue(sql, args(r)...)
	}
	br := s.q.SendBatch(ctx, b)
	defer br.Close()
	out := make([]T, 0, len(rows))
	for range rows {
		res, err := br.Query()
		if err != nil {
			return nil, mapError(fmt.Errorf("persistence: write %s: %w", table, err))
		}
		v, err := collectOne[T](res, table, "batch")
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := br.Close(); err != nil {
		return nil, mapError(fmt.Errorf("persistence: write %s: %w", table, err))
	}
	return out, nil
}

// CreateInstanceNets inserts the local networks of an instance in one
// round trip.
func (s *Store) CreateInstanceNets(ctx context.Context, nets []wimro.InstanceNet) ([]wimro.InstanceNet, error) {
	return batchOne[wimro.InstanceNet](ctx, s, "instance_nets", nets,
		`INSERT INTO instance_nets AS n (uuid, instance_scenario_id, sce_net_id, osm_id, vim_net_id, vim_name, datacenter_id,
			status, error_msg, vim_info, encapsulation_type, encapsulation_id, pop_switch_dpid, pop_switch_port, sdn_net_id, related, l3)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17) RETURNING `+netCols,
		func(n wimro.InstanceNet) []any {
			status := n.Status
			if status == "" {
				status = wimro.NetBuild
			}
			return []any{newUUID(n.UUID), n.InstanceID, n.SceNetID, n.OsmID, n.VimNetID, n.VimName, n.DatacenterID,
				status, n.ErrorMsg, n.VimInfo, n.EncapsulationType, n.EncapsulationID, n.PopSwitchDPID, n.PopSwitchPort, n.SdnNetID, n.Related, n.L3}
		})
}

// ListInstanceNets returns the networks of an instance ordered by
// (sce_net_id, datacenter_id, uuid).
func (s *Store) ListInstanceNets(ctx context.Context, instanceID string) ([]wimro.InstanceNet, error) {
	return getAll[wimro.InstanceNet](ctx, s, "instance_nets",
		`SELECT `+netCols+` FROM instance_nets n WHERE n.instance_scenario_id = $1
		 ORDER BY n.sce_net_id NULLS LAST, n.datacenter_id, n.created_at, n.uuid`, instanceID)
}

// ListNetsOfGroup returns the local networks of one VLD of an instance: the
// ends of its WAN link.
func (s *Store) ListNetsOfGroup(ctx context.Context, instanceID, sceNetID string) ([]wimro.InstanceNet, error) {
	return getAll[wimro.InstanceNet](ctx, s, "instance_nets",
		`SELECT `+netCols+` FROM instance_nets n WHERE n.instance_scenario_id = $1 AND n.sce_net_id = $2
		 ORDER BY n.datacenter_id, n.created_at, n.uuid`, instanceID, sceNetID)
}

// GetInstanceNet finds a network of an instance by uuid, osm_id or vim_name.
func (s *Store) GetInstanceNet(ctx context.Context, instanceID, netRef string) (wimro.InstanceNet, error) {
	if id, ok := wimro.ParseUUID(netRef); ok {
		return getOne[wimro.InstanceNet](ctx, s, "instance_nets", "uuid="+id,
			`SELECT `+netCols+` FROM instance_nets n WHERE n.instance_scenario_id = $1 AND n.uuid = $2`, instanceID, id)
	}
	return getOne[wimro.InstanceNet](ctx, s, "instance_nets", "name="+netRef,
		`SELECT `+netCols+` FROM instance_nets n WHERE n.instance_scenario_id = $1 AND (n.osm_id = $2 OR n.vim_name = $2)`, instanceID, netRef)
}

// UpdateInstanceNet writes the fields the NFVO reports (status, error,
// encapsulation, exit point, vim_info) over the row with n.UUID.
func (s *Store) UpdateInstanceNet(ctx context.Context, n wimro.InstanceNet) (wimro.InstanceNet, error) {
	return getOne[wimro.InstanceNet](ctx, s, "instance_nets", "uuid="+n.UUID,
		`UPDATE instance_nets AS n SET status = $2, error_msg = $3, vim_info = $4, encapsulation_type = $5, encapsulation_id = $6,
			pop_switch_dpid = $7, pop_switch_port = $8, vim_net_id = $9, sdn_net_id = $10
		 WHERE n.uuid = $1 RETURNING `+netCols,
		n.UUID, n.Status, n.ErrorMsg, n.VimInfo, n.EncapsulationType, n.EncapsulationID, n.PopSwitchDPID, n.PopSwitchPort, n.VimNetID, n.SdnNetID)
}

const linkCols = `l.uuid, l.wim_internal_id, l.instance_scenario_id, l.sce_net_id, l.wim_id, l.wim_account_id, l.status,
	l.error_msg, l.wim_info, l.multipoint, l.created, l.related, l.status_since, l.created_at, l.modified_at,
	l.bandwidth_mbps, l.latency_ms, COALESCE(l.service_type, '') AS service_type`

// CreateWANLinks inserts WAN links in one round trip.
func (s *Store) CreateWANLinks(ctx context.Context, links []wimro.WANLink) ([]wimro.WANLink, error) {
	return batchOne[wimro.WANLink](ctx, s, "instance_wim_nets", links,
		`INSERT INTO instance_wim_nets AS l (uuid, instance_scenario_id, sce_net_id, wim_id, wim_account_id, status, multipoint, related, bandwidth_mbps, latency_ms, service_type)
		 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, '')) RETURNING `+linkCols,
		func(l wimro.WANLink) []any {
			status := l.Status
			if status == "" {
				status = wimro.LinkBuild
			}
			return []any{newUUID(l.UUID), l.InstanceID, l.SceNetID, l.WIMID, l.WIMAccountID, status, l.Multipoint, l.Related, l.BandwidthMbps, l.LatencyMs, l.ServiceType}
		})
}

// ListWANLinks returns the WAN links of an instance.
func (s *Store) ListWANLinks(ctx context.Context, instanceID string) ([]wimro.WANLink, error) {
	return getAll[wimro.WANLink](ctx, s, "instance_wim_nets",
		`SELECT `+linkCols+` FROM instance_wim_nets l WHERE l.instance_scenario_id = $1 ORDER BY l.created_at, l.uuid`, instanceID)
}

// ListWANLinksOfGroup returns the WAN links of one VLD of an instance.
func (s *Store) ListWANLinksOfGroup(ctx context.Context, instanceID, sceNetID string) ([]wimro.WANLink, error) {
	return getAll[wimro.WANLink](ctx, s, "instance_wim_nets",
		`SELECT `+linkCols+` FROM instance_wim_nets l WHERE l.instance_scenario_id = $1 AND l.sce_net_id = $2`, instanceID, sceNetID)
}

// GetWANLink reads a WAN link by uuid.
func (s *Store) GetWANLink(ctx context.Context, id string) (wimro.WANLink, error) {
	return getOne[wimro.WANLink](ctx, s, "instance_wim_nets", "uuid="+id,
		`SELECT `+linkCols+` FROM instance_wim_nets l WHERE l.uuid = $1`, id)
}

// instanceActionCols reads an instance action ia; its counters are the
// row's own plus the increments the outcome batches appended (finishSQL),
// and it was modified when the newest of them was.
const instanceActionCols = `ia.uuid, ia.tenant_id, ia.instance_id, ia.description, ia.number_tasks,
	ia.number_done + (SELECT COALESCE(sum(p.n_done), 0) FROM instance_action_progress p WHERE p.instance_action_id = ia.uuid)::int AS number_done,
	ia.number_failed + (SELECT COALESCE(sum(p.n_failed), 0) FROM instance_action_progress p WHERE p.instance_action_id = ia.uuid)::int AS number_failed,
	ia.created_at,
	greatest(ia.modified_at, (SELECT max(p.created_at) FROM instance_action_progress p WHERE p.instance_action_id = ia.uuid)) AS modified_at`

// CreateInstanceAction inserts an instance action; an empty UUID gets a
// new one.
func (s *Store) CreateInstanceAction(ctx context.Context, a wimro.InstanceAction) (wimro.InstanceAction, error) {
	return getOne[wimro.InstanceAction](ctx, s, "instance_actions", "description="+a.Description,
		`INSERT INTO instance_actions AS ia (uuid, tenant_id, instance_id, description, number_tasks, number_done, number_failed)
		 VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING `+instanceActionCols,
		newUUID(a.UUID), a.TenantID, a.InstanceID, a.Description, a.Tasks, a.Done, a.Failed)
}

// GetInstanceAction reads an instance action of an instance.
//
// instanceID "" finds it whatever its instance.
func (s *Store) GetInstanceAction(ctx context.Context, instanceID, id string) (wimro.InstanceAction, error) {
	uid, ok := wimro.ParseUUID(id)
	if !ok {
		return wimro.InstanceAction{}, notFound("instance_actions", "uuid="+id)
	}
	return getOne[wimro.InstanceAction](ctx, s, "instance_actions", "uuid="+uid,
		`SELECT `+instanceActionCols+` FROM instance_actions ia WHERE ia.uuid = $1 AND ($2 = '' OR ia.instance_id::text = $2)`, uid, instanceID)
}

// ListInstanceActions lists the actions of an instance, oldest first.
func (s *Store) ListInstanceActions(ctx context.Context, instanceID string) ([]wimro.InstanceAction, error) {
	return getAll[wimro.InstanceAction](ctx, s, "instance_actions",
		`SELECT `+instanceActionCols+` FROM instance_actions ia WHERE ia.instance_id = $1 ORDER BY ia.created_at, ia.uuid`, instanceID)
}

// ListTenantActions lists the instance actions of a tenant, of every
// instance (those of deleted instances included), oldest first; tenantID
// "" lists every tenant's.
func (s *Store) ListTenantActions(ctx context.Context, tenantID string) ([]wimro.InstanceAction, error) {
	return getAll[wimro.InstanceAction](ctx, s, "instance_actions",
		`SELECT `+instanceActionCols+` FROM instance_actions ia WHERE $1 = '' OR ia.tenant_id::text = $1 ORDER BY ia.created_at, ia.uuid`, tenantID)
}

// AddProgress adds to the counters of an instance action as an outcome
// batch does: it appends an increment (instance_action_progress), so
// concurrent writers neither lose an update nor queue on the row, and
// returns the instance action as read afterwards.
func (s *Store) AddProgress(ctx context.Context, id string, done, failed int) (wimro.InstanceAction, error) {
	n, err := s.exec(ctx, "instance_action_progress", `INSERT INTO instance_action_progress (instance_action_id, n_done, n_failed)
		SELECT ia.uuid, $2, $3 FROM instance_actions ia WHERE ia.uuid = $1`, id, done, failed)
	if err != nil {
		return wimro.InstanceAction{}, err
	}
	if n == 0 {
		return wimro.InstanceAction{}, notFound("instance_actions", "uuid="+id)
	}
	return getOne[wimro.InstanceAction](ctx, s, "instance_actions", "uuid="+id,
		`SELECT `+instanceActionCols+` FROM instance_actions ia WHERE ia.uuid = $1`, id)
}

const actionCols = `a.instance_action_id, a.task_index, a.seq, a.wim_account_id, a.wim_internal_id, a.action, a.item, a.item_id,
	a.status, a.extra, a.error_msg, a.attempts, a.unsettled_runs, a.run_after, a.claimed_by, a.claim_expires_at, a.created_at, a.modified_at`

// CreateActions inserts tasks in one round trip, in order: seq follows the
// slice, so the actions of one WAN link run in the order given. Each task
// gets its first event (its status and its link's) in the same statement.
func (s *Store) CreateActions(ctx context.Context, actions []wimro.Action) ([]wimro.Action, error) {
	return batchOne[wimro.Action](ctx, s, "vim_wim_actions", actions,
		`WITH a AS (
			INSERT INTO vim_wim_actions AS a (instance_action_id, task_index, wim_account_id, wim_internal_id, action, item, item_id, status, extra)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+actionCols+`),
		 ev AS (
			INSERT INTO instance_action_events (instance_action_id, task_index, action, status, wan_link_id, link_status, error_msg)
			SELECT a.instance_action_id, a.task_index, a.action, a.status, a.item_id,
			       (SELECT l.status FROM instance_wim_nets l WHERE l.uuid = a.item_id), a.error_msg
			FROM a)
		 SELECT * FROM a`,
		func(a wimro.Action) []any {
			status, item := a.Status, a.Item
			if status == "" {
				status = wimro.ActionScheduled
			}
			if item == "" {
				item = wimro.ItemWANLink
			}
			return []any{a.InstanceActionID, a.TaskIndex, a.WIMAccountID, a.WIMInternalID, a.Action, item, a.ItemID, status, a.Extra}
		})
}

// ListActionsOfInstanceAction returns the tasks of an instance action by
// task_index.
func (s *Store) ListActionsOfInstanceAction(ctx context.Context, instanceActionID string) ([]wimro.Action, error) {
	return getAll[wimro.Action](ctx, s, "vim_wim_actions",
		`SELECT `+actionCols+` FROM vim_wim_actions a WHERE a.instance_action_id = $1 ORDER BY a.task_index`, instanceActionID)
}

// ListActionsOfItem returns the tasks of one WAN link in queue order.
func (s *Store) ListActionsOfItem(ctx context.Context, itemID string) ([]wimro.Action, error) {
	return getAll[wimro.Action](ctx, s, "vim_wim_actions",
		`SELECT `+actionCols+` FROM vim_wim_actions a WHERE a.item = 'instance_wim_nets' AND a.item_id = $1 ORDER BY a.seq`, itemID)
}

// The foreign keys into the work rows. They are RESTRICT (schema version
// 3): PostgreSQL refuses to delete a tenant, instance action or account
// that work still references, even when the reference was written by a
// transaction that committed while the delete waited. A refused delete
// violates one of them (Constraint tells which).
const (
	ConstraintInstanceActionTenant = "instance_actions_tenant_id_fkey"
	ConstraintActionInstanceAction = "vim_wim_actions_instance_action_id_fkey"
	ConstraintActionAccount        = "vim_wim_actions_wim_account_id_fkey"
)

// unfinishedSQL selects the actions that still have work to do.
const unfinishedSQL = `(a.status IN ('SCHEDULED', 'BUILD'))`

// Unfinished is the work that stands in the way of a delete: the oldest
// SCHEDULED or BUILD actions (at most the limit asked for) and how many
// there are in all.
type Unfinished struct {
	Actions []wimro.Action
	Total   int
}

// UnfinishedActionsOfTenant returns the unfinished actions of the tenant's
// instance actions, whatever their account.
func (s *Store) UnfinishedActionsOfTenant(ctx context.Context, tenantID string, limit int) (Unfinished, error) {
	return s.unfinished(ctx, `a.instance_action_id IN (SELECT ia.uuid FROM instance_actions ia WHERE ia.tenant_id = $1)`, tenantID, limit)
}

// UnfinishedActionsOfAccounts returns the unfinished actions of the given
// accounts.
func (s *Store) UnfinishedActionsOfAccounts(ctx context.Context, accountIDs []string, limit int) (Unfinished, error) {
	return s.unfinished(ctx, `a.wim_account_id = ANY($1::uuid[])`, nonNil(accountIDs), limit)
}

// unfinished counts the unfinished actions that match cond (over $1 = arg)
// and lists the first limit of them in queue order.
func (s *Store) unfinished(ctx context.Context, cond string, arg any, limit int) (Unfinished, error) {
	var u Unfinished
	err := s.q.QueryRow(ctx, `SELECT count(*) FROM vim_wim_actions a WHERE `+unfinishedSQL+` AND `+cond, arg).Scan(&u.Total)
	if err != nil {
		return u, mapError(fmt.Errorf("persistence: count actions: %w", err))
	}
	if u.Total == 0 || limit <= 0 {
		return u, nil
	}
	u.Actions, err = getAll[wimro.Action](ctx, s, "vim_wim_actions",
		`SELECT `+actionCols+` FROM vim_wim_actions a WHERE `+unfinishedSQL+` AND `+cond+` ORDER BY a.seq LIMIT $2`, arg, limit)
	return u, err
}

// CountUnfinishedActions counts the SCHEDULED or BUILD actions of the given
// accounts.
func (s *Store) CountUnfinishedActions(ctx context.Context, accountIDs []string) (int, error) {
	u, err := s.UnfinishedActionsOfAccounts(ctx, accountIDs, 0)
	return u.Total, err
}

// MakeLinksDue makes the waiting CREATE of each of the WAN links due now:
// a CREATE that waits for its local networks is SCHEDULED with run_after
// in the future, and a NOTIFY alone would not run it before then. It is
// called in the transaction that changed a network, and writes every
// SCHEDULED CREATE of the links, due or not, so that its row lock orders
// the report against a claim of the CREATE (schema 13):
//   - the report locks the row first: a claim skips the CREATE (SKIP
//     LOCKED) until the report commits and notifies, and the next claim
//     reads the new network;
//   - a claim locks it first, and may read the networks before the report
//     commits: the report then marks the CREATE with the claim it runs
//     under (woken_claim), and FinishActions makes that claim's outcome
//     due at once if it still waits.
//
// Only a CREATE not yet due was written before: a second report landing
// just after the first one made it due, while its claim read the
// networks, was lost, and the CREATE waited its whole interval. It returns
// how many actions it made due or marked.
func (s *Store) MakeLinksDue(ctx context.Context, linkIDs []string) (int64, error) {
	if len(linkIDs) == 0 {
		return 0, nil
	}
	// Locked in primary-key order first, as every multi-row writer of the
	// actions locks them: a claimed CREATE is now written too, and the
	// outcome batch that holds it locks in that order.
	return s.exec(ctx, "vim_wim_actions", `
		WITH locked AS (
			SELECT instance_action_id, task_index FROM vim_wim_actions
			WHERE item = 'instance_wim_nets' AND item_id = ANY($1::uuid[]) AND action IN ('CREATE', 'EDIT') AND status = 'SCHEDULED'
			ORDER BY instance_action_id, task_index
			FOR UPDATE)
		UPDATE vim_wim_actions a
		SET run_after = CASE WHEN a.claimed_by IS NULL THEN least(a.run_after, now()) ELSE a.run_after END,
		    woken_claim = a.claimed_by, modified_at = now()
		FROM locked l
		WHERE a.instance_action_id = l.instance_action_id AND a.task_index = l.task_index`, linkIDs)
}

// detachFinishedActions clears the account of the finished actions of the
// accounts that accounts (SQL over $1 = arg) selects, so that deleting the
// accounts keeps their history. Unfinished actions keep their account:
// the RESTRICT foreign key then refuses the delete.
func (s *Store) detachFinishedActions(ctx context.Context, accounts string, arg any) error {
	_, err := s.exec(ctx, "vim_wim_actions", `UPDATE vim_wim_actions a SET wim_account_id = NULL, modified_at = now()
		WHERE a.wim_account_id IN (`+accounts+`) AND NOT `+unfinishedSQL, arg)
	return err
}
