package persistence

import (
	"context"

	"github.com/wimro/wimro"
)

const (
	l2vpnServiceCols = `v.instance_id, v.tenant_id, v.vpn_id, v.svc_type, v.svc_topo, v.customer_name, v.created_at`
	l2vpnAccessCols  = `a.tenant_id, a.datacenter_id, a.network_access_id, a.instance_id, a.bearer_reference, a.vlan, a.site_role,
	a.created_at, a.modified_at`
)

// CreateL2VPNService inserts a vpn-service; an existing vpn-id of the
// tenant is a conflict.
func (s *Store) CreateL2VPNService(ctx context.Context, v wimro.L2VPNService) (wimro.L2VPNService, error) {
	return getOne[wimro.L2VPNService](ctx, s, "l2sm_vpn_services", "vpn_id="+v.VPNID,
		`INSERT INTO l2sm_vpn_services AS v (instance_id, tenant_id, vpn_id, svc_type, svc_topo, customer_name)
		 VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+l2vpnServiceCols,
		v.InstanceID, v.TenantID, v.VPNID, v.SvcType, v.SvcTopo, v.CustomerName)
}

// GetL2VPNService finds a vpn-service of a tenant by vpn-id.
func (s *Store) GetL2VPNService(ctx context.Context, tenantID, vpnID string) (wimro.L2VPNService, error) {
	return getOne[wimro.L2VPNService](ctx, s, "l2sm_vpn_services", "vpn_id="+vpnID,
		`SELECT `+l2vpnServiceCols+` FROM l2sm_vpn_services v WHERE v.tenant_id = $1 AND v.vpn_id = $2`, tenantID, vpnID)
}

// GetL2VPNServiceOfInstance finds the vpn-service an instance is.
func (s *Store) GetL2VPNServiceOfInstance(ctx context.Context, instanceID string) (wimro.L2VPNService, error) {
	return getOne[wimro.L2VPNService](ctx, s, "l2sm_vpn_services", "instance_id="+instanceID,
		`SELECT `+l2vpnServiceCols+` FROM l2sm_vpn_services v WHERE v.instance_id = $1`, instanceID)
}

// ListL2VPNServices lists a tenant's vpn-services, oldest first.
func (s *Store) ListL2VPNServices(ctx context.Context, tenantID string) ([]wimro.L2VPNService, error) {
	return getAll[wimro.L2VPNService](ctx, s, "l2sm_vpn_services",
		`SELECT `+l2vpnServiceCols+` FROM l2sm_vpn_services v WHERE v.tenant_id = $1 ORDER BY v.created_at, v.vpn_id`, tenantID)
}

// ListL2VPNAccesses lists the site-network-accesses of a vpn-service (by
// its instance), oldest first.
func (s *Store) ListL2VPNAccesses(ctx context.Context, instanceID string) ([]wimro.L2VPNAccess, error) {
	return getAll[wimro.L2VPNAccess](ctx, s, "l2sm_accesses",
		`SELECT `+l2vpnAccessCols+` FROM l2sm_accesses a WHERE a.instance_id = $1 ORDER BY a.created_at, a.network_access_id`, instanceID)
}

// GetL2VPNAccess finds a site-network-access of a tenant at a datacenter.
func (s *Store) GetL2VPNAccess(ctx context.Context, tenantID, datacenterID, accessID string) (wimro.L2VPNAccess, error) {
	return getOne[wimro.L2VPNAccess](ctx, s, "l2sm_accesses", "network_access_id="+accessID,
		`SELECT `+l2vpnAccessCols+` FROM l2sm_accesses a WHERE a.tenant_id = $1 AND a.datacenter_id = $2 AND a.network_access_id = $3`,
		tenantID, datacenterID, accessID)
}

// PutL2VPNAccess inserts a site-network-access or replaces the one with
// its key (tenant, datacenter, network-access-id).
func (s *Store) PutL2VPNAccess(ctx context.Context, a wimro.L2VPNAccess) (wimro.L2VPNAccess, error) {
	return getOne[wimro.L2VPNAccess](ctx, s, "l2sm_accesses", "network_access_id="+a.NetworkAccessID,
		`INSERT INTO l2sm_accesses AS a (tenant_id, datacenter_id, network_access_id, instance_id, bearer_reference, vlan, site_role)
		 VALUES ($1, $2, $3, $4, $5, $6, $7)
		 ON CONFLICT (tenant_id, datacenter_id, network_access_id) DO UPDATE SET instance_id = EXCLUDED.instance_id,
			bearer_reference = EXCLUDED.bearer_reference, vlan = EXCLUDED.vlan, site_role = EXCLUDED.site_role, modified_at = now()
		 RETURNING `+l2vpnAccessCols,
		a.TenantID, a.DatacenterID, a.NetworkAccessID, a.InstanceID, a.BearerReference, a.VLAN, a.SiteRole)
}

// DeleteL2VPNAccess deletes a site-network-access of a tenant at a
// datacenter.
func (s *Store) DeleteL2VPNAccess(ctx context.Context, tenantID, datacenterID, accessID string) error {
	_, err := s.exec(ctx, "l2sm_accesses", `DELETE FROM l2sm_accesses WHERE tenant_id = $1 AND datacenter_id = $2 AND network_access_id = $3`,
		tenantID, datacenterID, accessID)
	return err
}

// DeleteInstanceLinks deletes an instance's WAN links and networks (not
// the instance): the caller has queued the links' DELETE actions, which
// carry copies of them.
func (s *Store) DeleteInstanceLinks(ctx context.Context, instanceID string) error {
	if _, err := s.exec(ctx, "instance_wim_nets", `DELETE FROM instance_wim_nets WHERE instance_scenario_id = $1`, instanceID); err != nil {
		return err
	}
	_, err := s.exec(ctx, "instance_nets", `DELETE FROM instance_nets WHERE instance_scenario_id = $1`, instanceID)
	return err
}

// InstanceExists says whether an instance of any tenant has the uuid.
func (s *Store) InstanceExists(ctx context.Context, id string) (bool, error) {
	ids, err := getIDs(ctx, s, "instance_scenarios", `SELECT uuid AS id FROM instance_scenarios WHERE uuid = $1`, id)
	return len(ids) > 0, err
}
