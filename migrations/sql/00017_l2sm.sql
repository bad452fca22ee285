-- wimro schema, version 17: the IETF L2VPN (RFC 8466) northbound.
--
-- - l2sm_vpn_services: a vpn-service a client created through the L2SM
--   routes. Each is an NS instance of its tenant (instance_id; deleting
--   the instance through the openmano API deletes the vpn-service with
--   it), and its vpn-id is unique per tenant.
-- - l2sm_accesses: the site-network-accesses of those vpn-services, keyed
--   by (tenant, datacenter, network-access-id) as a client addresses them
--   (the site is a datacenter of the tenant). bearer_reference is the
--   wan_service_endpoint_id of a port mapping at that datacenter; vlan is
--   the customer VLAN (NULL: untagged). The instance's networks and its
--   WAN link are derived from these rows once a vpn-service has all its
--   accesses.

-- +goose Up
CREATE TABLE l2sm_vpn_services (
    instance_id   uuid PRIMARY KEY REFERENCES instance_scenarios (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    tenant_id     uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    vpn_id        text NOT NULL,
    svc_type      text NOT NULL,
    svc_topo      text NOT NULL,
    customer_name text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT l2sm_vpn_services_vpn_id_key UNIQUE (tenant_id, vpn_id)
);

CREATE TABLE l2sm_accesses (
    tenant_id         uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    datacenter_id     uuid NOT NULL REFERENCES datacenters (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    network_access_id text NOT NULL,
    instance_id       uuid NOT NULL REFERENCES l2sm_vpn_services (instance_id) ON DELETE CASCADE ON UPDATE CASCADE,
    bearer_reference  text NOT NULL,
    vlan              integer,
    site_role         text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    modified_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, datacenter_id, network_access_id),
    CONSTRAINT l2sm_accesses_vlan_check CHECK (vlan IS NULL OR vlan BETWEEN 1 AND 4094)
);
CREATE INDEX l2sm_accesses_instance_idx ON l2sm_accesses (instance_id);

-- +goose Down
DROP TABLE l2sm_accesses;
DROP TABLE l2sm_vpn_services;
