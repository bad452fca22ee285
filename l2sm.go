package wimro

import "time"

// L2VPNService is a vpn-service of the IETF L2VPN service model (RFC 8466)
// that a client created through wimd's L2SM northbound. It is an NS
// instance of its tenant (InstanceID; the instance is named after the
// vpn-id), so the openmano API shows and deletes it like any other;
// deleting the instance deletes the vpn-service with it.
type L2VPNService struct {
	InstanceID   string    `json:"instance_id" db:"instance_id"`
	TenantID     string    `json:"tenant_id" db:"tenant_id"`
	VPNID        string    `json:"vpn_id" db:"vpn_id"`
	SvcType      string    `json:"svc_type" db:"svc_type"` // vpws, vpls (identity names, unprefixed)
	SvcTopo      string    `json:"svc_topo" db:"svc_topo"`
	CustomerName string    `json:"customer_name" db:"customer_name"`
	CreatedAt    time.Time `json:"created_at" db:"created_at"`
}

// L2VPNAccess is one site-network-access: where a vpn-service enters the
// WAN at a site (a datacenter of the tenant), through a bearer (a port
// mapping's wan_service_endpoint_id there), tagged with VLAN or untagged
// (VLAN nil). Its key is (tenant, datacenter, network-access-id).
type L2VPNAccess struct {
	TenantID        string    `json:"tenant_id" db:"tenant_id"`
	DatacenterID    string    `json:"datacenter_id" db:"datacenter_id"`
	NetworkAccessID string    `json:"network_access_id" db:"network_access_id"`
	InstanceID      string    `json:"instance_id" db:"instance_id"`
	BearerReference string    `json:"bearer_reference" db:"bearer_reference"`
	VLAN            *int      `json:"vlan" db:"vlan"`
	SiteRole        string    `json:"site_role" db:"site_role"`
	CreatedAt       time.Time `json:"created_at" db:"created_at"`
	ModifiedAt      time.Time `json:"modified_at" db:"modified_at"`
}
