package persistence

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/wimro/wimro"
)

// DriftState is what drift reconcile compares with one account's
// controller: the account's WAN links, what computing their connection
// points needs, and the links that have work in flight. It is read in one
// round trip and one snapshot, so a link and its in-flight flag agree.
type DriftState struct {
	// Links are the account's WAN links (any status), oldest first.
	Links []wimro.WANLink
	// Nets are the local networks of those links' groups; Datacenters
	// holds their datacenters by uuid.
	Nets        []wimro.InstanceNet
	Datacenters map[string]wimro.Datacenter
	// Busy holds the WAN link ids (item_id) with a SCHEDULED or BUILD
	// action of the account: a CREATE or DELETE in flight, including the
	// DELETE of a link whose row is already gone with its instance.
	Busy map[string]bool
}

const (
	driftLinksSQL = `SELECT ` + linkCols + ` FROM instance_wim_nets l WHERE l.wim_account_id = $1 ORDER BY l.created_at, l.uuid`
	driftNetsSQL  = `SELECT ` + netCols + ` FROM instance_nets n
		WHERE (n.instance_scenario_id, n.sce_net_id) IN (
			SELECT l.instance_scenario_id, l.sce_net_id FROM instance_wim_nets l WHERE l.wim_account_id = $1)
		ORDER BY n.datacenter_id, n.created_at, n.uuid`
	driftDatacentersSQL = `SELECT ` + datacenterCols + ` FROM datacenters d
		WHERE d.uuid IN (
			SELECT n.datacenter_id FROM instance_nets n
			JOIN instance_wim_nets l ON n.instance_scenario_id = l.instance_scenario_id AND n.sce_net_id = l.sce_net_id
			WHERE l.wim_account_id = $1)`
	driftBusySQL = `SELECT DISTINCT a.item_id::text FROM vim_wim_actions a
		WHERE a.wim_account_id = $1 AND a.item = 'instance_wim_nets' AND a.status IN ('SCHEDULED', 'BUILD')`
)

// DriftStateOf reads the DriftState of an account in one repeatable-read
// snapshot (a batch alone runs its statements in separate snapshots).
func (db *DB) DriftStateOf(ctx context.Context, accountID string) (DriftState, error) {
	st := DriftState{Datacenters: map[string]wimro.Datacenter{}, Busy: map[string]bool{}}
	b := &pgx.Batch{}
	b.Queue(driftLinksSQL, accountID)
	b.Queue(driftNetsSQL, accountID)
	b.Queue(driftDatacentersSQL, accountID)
	b.Queue(driftBusySQL, accountID)
	err := db.Snapshot(ctx, func(s *Store) error {
		return s.runBatch(ctx, b, func(i int, rows pgx.Rows) error {
			var err error
			switch i {
			case 0:
				st.Links, err = collectAll[wimro.WANLink](rows, "instance_wim_nets")
			case 1:
				st.Nets, err = collectAll[wimro.InstanceNet](rows, "instance_nets")
			case 2:
				var list []wimro.Datacenter
				list, err = collectAll[wimro.Datacenter](rows, "datacenters")
				for _, d := range list {
					st.Datacenters[d.UUID] = d
				}
			default:
				for rows.Next() {
					var id string
					if err := rows.Scan(&id); err != nil {
						return mapError(fmt.Errorf("persistence: drift state: %w", err))
					}
					st.Busy[id] = true
				}
				err = rows.Err()
			}
			return err
		})
	})
	if err != nil {
		return DriftState{}, fmt.Errorf("persistence: drift state of account %s: %w", accountID, err)
	}
	return st, nil
}

// LockIdleLinks locks, for a re-queue, the WAN links of ids that still
// belong to the account and have no SCHEDULED or BUILD action, and
// returns them with the tenant of their instance (TenantOf, by instance
// uuid). A link that changed since the drift state was read (deleted, or
// given work meanwhile) is left out: it is no longer drift.
func (s *Store) LockIdleLinks(ctx context.Context, accountID string, ids []string) ([]wimro.WANLink, map[string]string, error) {
	links, err := getAll[wimro.WANLink](ctx, s, "instance_wim_nets",
		`SELECT `+linkCols+` FROM instance_wim_nets l
		WHERE l.wim_account_id = $1 AND l.uuid = ANY($2::uuid[]) AND l.instance_scenario_id IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM vim_wim_actions a
			WHERE a.item = 'instance_wim_nets' AND a.item_id = l.uuid AND a.status IN ('SCHEDULED', 'BUILD'))
		ORDER BY l.created_at, l.uuid
		FOR UPDATE OF l`, accountID, nonNil(ids))
	if err != nil || len(links) == 0 {
		return nil, nil, err
	}
	rows, err := s.q.Query(ctx, `SELECT i.uuid::text, i.tenant_id::text FROM instance_scenarios i
		WHERE i.uuid IN (SELECT l.instance_scenario_id FROM instance_wim_nets l WHERE l.uuid = ANY($1::uuid[]))`, nonNil(ids))
	if err != nil {
		return nil, nil, mapError(fmt.Errorf("persistence: tenants of instances: %w", err))
	}
	defer rows.Close()
	tenants := map[string]string{}
	for rows.Next() {
		var inst, tenant string
		if err := rows.Scan(&inst, &tenant); err != nil {
			return nil, nil, mapError(fmt.Errorf("persistence: tenants of instances: %w", err))
		}
		tenants[inst] = tenant
	}
	if err := rows.Err(); err != nil {
		return nil, nil, mapError(fmt.Errorf("persistence: tenants of instances: %w", err))
	}
	return links, tenants, nil
}

// KnownKey is what the whole database knows of one key a controller lists
// (a WAN link's uuid), whatever the account: reconcile calls a service an
// orphan only when nothing here knows its key.
type KnownKey struct {
	// LinkAccount and LinkStatus are those of the WAN link with this uuid,
	// "" when there is none (never made, or deleted with its instance).
	LinkAccount, LinkStatus string
	// Busy is true when an unfinished action of any account works on it.
	Busy bool
	// Abandoned is the newest record of the service's DELETE abandoned by
	// an operator, nil when none.
	Abandoned *wimro.ActionOverride
}

// knownKeysSQL reads, per key of $1, the link of that uuid, whether an
// unfinished action of any account works on it and the newest abandon of
// its service, in one statement (one snapshot).
const knownKeysSQL = `
	SELECT k.key::text, COALESCE(l.wim_account_id::text, ''), COALESCE(l.status, ''),
	       EXISTS (SELECT 1 FROM vim_wim_actions a
	               WHERE a.item = 'instance_wim_nets' AND a.item_id = COALESCE(l.uuid, k.key) AND a.status IN ('SCHEDULED', 'BUILD')),
	       o.id
	FROM unnest($1::uuid[]) AS k(key)
	LEFT JOIN LATERAL (
		-- The link of the key: its own uuid, or the key of the service an
		-- EDIT replaced its first one with (wim_info service_key).
		SELECT l.* FROM instance_wim_nets l WHERE l.uuid = k.key
		UNION ALL
		SELECT l.* FROM instance_wim_nets l WHERE l.wim_info->>'service_key' = k.key::text AND l.uuid <> k.key
		LIMIT 1) l ON true
	LEFT JOIN LATERAL (SELECT o.id FROM action_overrides o WHERE o.kind = 'abandon' AND o.wan_link_id = k.key
	                   ORDER BY o.at DESC, o.id DESC LIMIT 1) o ON true`

// KnownKeys says, for each key that some row of the database knows, what
// knows it (see KnownKey); a key nothing knows, or that is not a uuid
// (no link can have it), is not in the map.
func (db *DB) KnownKeys(ctx context.Context, keys []string) (map[string]KnownKey, error) {
	out := map[string]KnownKey{}
	var ids []string
	for _, k := range keys {
		if id, ok := wimro.ParseUUID(k); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := db.q.Query(ctx, knownKeysSQL, ids)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: known keys: %w", err))
	}
	abandoned := map[int64]string{}
	for rows.Next() {
		var (
			key string
			k   KnownKey
			id  *int64
		)
		if err := rows.Scan(&key, &k.LinkAccount, &k.LinkStatus, &k.Busy, &id); err != nil {
			rows.Close()
			return nil, mapError(fmt.Errorf("persistence: known keys: %w", err))
		}
		if id != nil {
			abandoned[*id] = key
		}
		if k.LinkAccount != "" || k.Busy || id != nil {
			out[key] = k
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, mapError(fmt.Errorf("persistence: known keys: %w", err))
	}
	if len(abandoned) > 0 {
		ids := make([]int64, 0, len(abandoned))
		for id := range abandoned {
			ids = append(ids, id)
		}
		list, err := getAll[wimro.ActionOverride](ctx, &db.Store, "action_overrides",
			`SELECT `+overrideCols+` FROM action_overrides o WHERE o.id = ANY($1::bigint[])`, ids)
		if err != nil {
			return nil, err
		}
		for _, o := range list {
			key := abandoned[o.ID]
			k := out[key]
			k.Abandoned = &o
			out[key] = k
		}
	}
	return out, nil
}
