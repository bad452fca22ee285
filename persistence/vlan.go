package persistence

import (
	"context"
	"fmt"
)

// LockVLANs takes the transaction-scoped lock on the VLANs of a
// datacenter and drops the allocations released since the last time: the
// free VLANs read after it stay free until the transaction that took it
// commits its allocations (READ COMMITTED reads each statement's own
// snapshot, so a writer waiting here sees the allocations committed
// before it).
//
// An allocation is released when its network is gone (with its instance)
// and the controller can no longer hold a service on its VLAN: the
// network was in no WAN link, or its link has no DELETE, or the link's
// last DELETE is DONE or CANCELLED (CANCELLED: no CREATE reached the
// controller). A DELETE still SCHEDULED, FAILED or ABANDONED keeps the VLAN
// taken: handing it out again could put two services on one VLAN of the
// datacenter. Reconcile frees those of a FAILED or ABANDONED DELETE once
// it has deleted the service (ReleaseLinkVLANs).
func (s *Store) LockVLANs(ctx context.Context, datacenterID string) error {
	if _, err := s.q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('wimro vlans ' || $1, 0))`, datacenterID); err != nil {
		return mapError(err)
	}
	_, err := s.exec(ctx, "vlan_allocations", `DELETE FROM vlan_allocations v
		WHERE v.datacenter_id = $1 AND v.instance_net_id IS NULL
		AND (v.link_id IS NULL OR COALESCE((SELECT a.status FROM vim_wim_actions a
			WHERE a.item = 'instance_wim_nets' AND a.item_id = v.link_id AND a.action = 'DELETE'
			ORDER BY a.seq DESC LIMIT 1), 'DONE') IN ('DONE', 'CANCELLED'))`, datacenterID)
	return err
}

// ReleaseLinkVLANs drops the allocations a WAN link kept after its
// networks were gone, once its service is known gone from the controller
// (reconcile deleted it): a FAILED or ABANDONED DELETE keeps them until
// then. It returns how many were dropped.
func (s *Store) ReleaseLinkVLANs(ctx context.Context, linkID string) (int64, error) {
	return s.exec(ctx, "vlan_allocations", `DELETE FROM vlan_allocations WHERE link_id = $1 AND instance_net_id IS NULL`, linkID)
}

// FreeVLANs returns the n lowest VLANs of [lo, hi] not allocated in the
// datacenter (fewer when the range has fewer free).
func (s *Store) FreeVLANs(ctx context.Context, datacenterID string, lo, hi, n int) ([]int, error) {
	return s.vlans(ctx, `SELECT g FROM generate_series($2::int, $3::int) g
		WHERE NOT EXISTS (SELECT 1 FROM vlan_allocations v WHERE v.datacenter_id = $1 AND v.vlan_id = g)
		ORDER BY g LIMIT $4`, datacenterID, lo, hi, n)
}

// TakenVLANs returns which of vlans are allocated in the datacenter.
func (s *Store) TakenVLANs(ctx context.Context, datacenterID string, vlans []int) ([]int, error) {
	return s.vlans(ctx, `SELECT vlan_id FROM vlan_allocations WHERE datacenter_id = $1 AND vlan_id = ANY($2) ORDER BY vlan_id`,
		datacenterID, vlans)
}

func (s *Store) vlans(ctx context.Context, sql string, args ...any) ([]int, error) {
	rows, err := s.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, mapError(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, mapError(err)
		}
		out = append(out, v)
	}
	return out, mapError(rows.Err())
}

// VLANAllocation is a VLAN of a datacenter taken by a local network and,
// when LinkID is set, by the WAN link that network is part of.
type VLANAllocation struct {
	DatacenterID, InstanceNetID string
	LinkID                      *string
	VLAN                        int
}

// AllocateVLANs records the VLANs of local networks; a row outlives its
// network until LockVLANs finds it released.
func (s *Store) AllocateVLANs(ctx context.Context, rows []VLANAllocation) error {
	for _, r := range rows {
		if _, err := s.exec(ctx, "vlan_allocations", `INSERT INTO vlan_allocations (datacenter_id, vlan_id, instance_net_id, link_id) VALUES ($1, $2, $3, $4)`,
			r.DatacenterID, r.VLAN, r.InstanceNetID, r.LinkID); err != nil {
			return fmt.Errorf("vlan %d of datacenter %s: %w", r.VLAN, r.DatacenterID, err)
		}
	}
	return nil
}

// MoveNetVLAN gives network netID VLAN vlan of datacenterID in place of
// the one it had (its WAN link linkID, nil for none, holds it): the old
// allocation is dropped, and the EDIT of the link moves the controller's
// service off it. The caller holds LockVLANs and has checked vlan is free.
func (s *Store) MoveNetVLAN(ctx context.Context, netID, datacenterID string, vlan int, linkID *string) error {
	if _, err := s.exec(ctx, "vlan_allocations", `DELETE FROM vlan_allocations WHERE instance_net_id = $1`, netID); err != nil {
		return err
	}
	return s.AllocateVLANs(ctx, []VLANAllocation{{DatacenterID: datacenterID, VLAN: vlan, InstanceNetID: netID, LinkID: linkID}})
}
