package persistence

import "context"

// LinksWithPendingRun locks the unclaimed SCHEDULED CREATE and EDIT
// actions of the links ids and returns the links that have one: such an
// action reads the link's networks and QoS when it runs, so a change
// written in this transaction reaches the controller through it and
// needs no EDIT of its own (several changes before a run are one edit).
// The lock makes that safe against a claim: one that locked the action
// first makes this statement wait, and the row, claimed by then, no
// longer counts; one that comes after skips the locked row, and claims it
// after this transaction commits, reading the change.
func (s *Store) LinksWithPendingRun(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.q.Query(ctx, `
		SELECT item_id::text FROM vim_wim_actions
		WHERE item = 'instance_wim_nets' AND item_id = ANY($1::uuid[]) AND action IN ('CREATE', 'EDIT')
		  AND status = 'SCHEDULED' AND claimed_by IS NULL
		ORDER BY instance_action_id, task_index
		FOR UPDATE`, ids)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, mapError(err)
		}
		out[id] = true
	}
	return out, mapError(rows.Err())
}

// DeleteInstanceNet deletes one network of an instance (a scale in); its
// VLAN allocation, if any, outlives it until LockVLANs finds it released.
func (s *Store) DeleteInstanceNet(ctx context.Context, id string) error {
	_, err := s.exec(ctx, "instance_nets", `DELETE FROM instance_nets WHERE uuid = $1`, id)
	return err
}

// DeleteWANLink deletes one WAN link row (its DELETE action, queued
// first, carries a copy).
func (s *Store) DeleteWANLink(ctx context.Context, id string) error {
	_, err := s.exec(ctx, "instance_wim_nets", `DELETE FROM instance_wim_nets WHERE uuid = $1`, id)
	return err
}

// SetWANLinkServiceType records the service type a WAN link is made as,
// when a scale out or in changes it (an ELINE grown to an ELAN and back).
func (s *Store) SetWANLinkServiceType(ctx context.Context, id, serviceType string) error {
	_, err := s.exec(ctx, "instance_wim_nets", `UPDATE instance_wim_nets SET service_type = $2 WHERE uuid = $1`, id, serviceType)
	return err
}
