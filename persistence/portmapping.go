package persistence

import (
	"context"
	"fmt"

	"github.com/wimro/wimro"
)

const portMappingCols = `pm.id, pm.wim_id, pm.datacenter_id, pm.pop_switch_dpid, pm.pop_switch_port,
	pm.wan_service_endpoint_id, pm.wan_service_mapping_info, pm.created_at, pm.modified_at`

// CreatePortMapping inserts one mapping. A nil mapping info is stored as {}.
func (s *Store) CreatePortMapping(ctx context.Context, m wimro.PortMapping) (wimro.PortMapping, error) {
	if m.WANServiceMappingInfo == nil {
		m.WANServiceMappingInfo = map[string]any{}
	}
	return getOne[wimro.PortMapping](ctx, s, "wim_port_mappings", "wim_id="+m.WIMID,
		`INSERT INTO wim_port_mappings AS pm (wim_id, datacenter_id, pop_switch_dpid, pop_switch_port,
			wan_service_endpoint_id, wan_service_mapping_info)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+portMappingCols,
		m.WIMID, m.DatacenterID, m.PopSwitchDPID, m.PopSwitchPort, m.WANServiceEndpointID, m.WANServiceMappingInfo)
}

// PortMappingFilter restricts ListPortMappings; empty fields do not filter.
type PortMappingFilter struct {
	WIMIDs        []string
	DatacenterIDs []string
	// TenantID keeps the mappings whose WIM and datacenter are both
	// attached to the tenant.
	TenantID string
}

// PortMappingsOfWIM returns the port mappings of WIM wimID (the action
// runner's read when its caller gave it none).
func (s *Store) PortMappingsOfWIM(ctx context.Context, wimID string) ([]wimro.PortMapping, error) {
	return s.ListPortMappings(ctx, PortMappingFilter{WIMIDs: []string{wimID}})
}

// ListPortMappings returns mappings ordered by (wim_id, datacenter_id, id),
// the order the grouped API output needs.
func (s *Store) ListPortMappings(ctx context.Context, f PortMappingFilter) ([]wimro.PortMapping, error) {
	return getAll[wimro.PortMapping](ctx, s, "wim_port_mappings", `
		SELECT `+portMappingCols+` FROM wim_port_mappings pm
		WHERE (cardinality($1::uuid[]) = 0 OR pm.wim_id = ANY($1::uuid[]))
		  AND (cardinality($2::uuid[]) = 0 OR pm.datacenter_id = ANY($2::uuid[]))
		  AND ($3 = '' OR (
		       EXISTS (SELECT 1 FROM wim_nfvo_tenants wt WHERE wt.wim_id = pm.wim_id AND wt.nfvo_tenant_id::text = $3)
		   AND EXISTS (SELECT 1 FROM tenants_datacenters td WHERE td.datacenter_id = pm.datacenter_id AND td.nfvo_tenant_id::text = $3)))
		ORDER BY pm.wim_id, pm.datacenter_id, pm.id`,
		nonNil(f.WIMIDs), nonNil(f.DatacenterIDs), f.TenantID)
}

// FindPortMapping returns the mapping of wimID for the PoP switch port
// (dpid, port) of a datacenter.
func (s *Store) FindPortMapping(ctx context.Context, wimID, datacenterID, dpid, port string) (wimro.PortMapping, error) {
	return getOne[wimro.PortMapping](ctx, s, "wim_port_mappings",
		fmt.Sprintf("wim_id=%s datacenter_id=%s pop_switch_dpid=%s pop_switch_port=%s", wimID, datacenterID, dpid, port),
		`SELECT `+portMappingCols+` FROM wim_port_mappings pm
		 WHERE pm.wim_id = $1 AND pm.datacenter_id = $2 AND pm.pop_switch_dpid = $3 AND pm.pop_switch_port = $4`,
		wimID, datacenterID, dpid, port)
}

// DeletePortMappings deletes every mapping of a WIM and returns how many.
func (s *Store) DeletePortMappings(ctx context.Context, wimID string) (int64, error) {
	return s.exec(ctx, "wim_port_mappings", `DELETE FROM wim_port_mappings WHERE wim_id = $1`, wimID)
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
