package persistence

import (
	"context"
	"fmt"
)

// LockVLANs takes the transaction-scoped lock on the VLAN range of a
// datacenter: the free VLANs read after it stay free until the
// transaction that took it commits its allocations (READ COMMITTED reads
// each statement's own snapshot, so a writer waiting here sees the
// allocations committed before it).
func (s *Store) LockVLANs(ctx context.Context, datacenterID string) error {
	_, err := s.q.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('wimro vlans ' || $1, 0))`, datacenterID)
	return mapError(err)
}

// FreeVLANs returns the n lowest VLANs of [lo, hi] not allocated in the
// datacenter (fewer when the range has fewer free).
func (s *Store) FreeVLANs(ctx context.Context, datacenterID string, lo, hi, n int) ([]int, error) {
	rows, err := s.q.Query(ctx, `SELECT g FROM generate_series($2::int, $3::int) g
		WHERE NOT EXISTS (SELECT 1 FROM vlan_allocations v WHERE v.datacenter_id = $1 AND v.vlan_id = g)
		ORDER BY g LIMIT $4`, datacenterID, lo, hi, n)
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

// VLANAllocation is a VLAN of a datacenter taken by a local network.
type VLANAllocation struct {
	DatacenterID, InstanceNetID string
	VLAN                        int
}

// AllocateVLANs records the VLANs wimro chose; the rows go with their
// networks.
func (s *Store) AllocateVLANs(ctx context.Context, rows []VLANAllocation) error {
	for _, r := range rows {
		if _, err := s.exec(ctx, "vlan_allocations", `INSERT INTO vlan_allocations (datacenter_id, vlan_id, instance_net_id) VALUES ($1, $2, $3)`,
			r.DatacenterID, r.VLAN, r.InstanceNetID); err != nil {
			return fmt.Errorf("vlan %d of datacenter %s: %w", r.VLAN, r.DatacenterID, err)
		}
	}
	return nil
}
