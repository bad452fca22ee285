-- wimro schema, version 17: the rest of OSM's openmano commands (issue 32).
--
-- - vnfs: the VNF catalogue as far as the WAN side needs it, as openmano
--   v6 keeps it: a VNF descriptor's name, description, osm_id, public flag,
--   its VNFCs (vnfcs), internal networks (nets) and external connections,
--   each a list of the objects openmano answers. VNFs are kept, never
--   deployed. A scenario names its VNFs from this catalogue (the vnf_id of
--   each entry of scenarios.vnfs); the engine refuses to delete a VNF a
--   scenario names.
-- - sdn_controllers: openmano's SDN (OpenFlow) controller records. wimro
--   drives no OpenFlow controller, so the record is only kept and shown:
--   no password is stored (there is nothing to use it for).
-- - sdn_port_mappings: a datacenter's SDN port mapping (compute node, PCI
--   address, switch port or MAC), kept for the controller its
--   config.sdn-controller names, as openmano lists it.

-- +goose Up
CREATE TABLE vnfs (
    uuid                 uuid PRIMARY KEY,
    tenant_id            uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    name                 text NOT NULL,
    description          text,
    osm_id               text,
    public               boolean NOT NULL DEFAULT false,
    vnfcs                jsonb NOT NULL DEFAULT '[]',
    nets                 jsonb NOT NULL DEFAULT '[]',
    external_connections jsonb NOT NULL DEFAULT '[]',
    created_at           timestamptz NOT NULL DEFAULT now(),
    modified_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT vnfs_name_check CHECK (length(name) BETWEEN 1 AND 255)
);
CREATE INDEX vnfs_tenant_idx ON vnfs (tenant_id);
CREATE TRIGGER vnfs_modified_at BEFORE UPDATE ON vnfs
    FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();

CREATE TABLE sdn_controllers (
    uuid        uuid PRIMARY KEY,
    name        text NOT NULL,
    description text,
    dpid        text NOT NULL,
    ip          text NOT NULL,
    port        integer NOT NULL,
    type        text NOT NULL,
    version     text,
    "user"      text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sdn_controllers_name_check CHECK (length(name) BETWEEN 1 AND 255),
    CONSTRAINT sdn_controllers_port_check CHECK (port BETWEEN 1 AND 65535)
);
CREATE TRIGGER sdn_controllers_modified_at BEFORE UPDATE ON sdn_controllers
    FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();

CREATE TABLE sdn_port_mappings (
    uuid          uuid NOT NULL UNIQUE,
    datacenter_id uuid NOT NULL REFERENCES datacenters (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    controller_id uuid NOT NULL REFERENCES sdn_controllers (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    compute_node  text NOT NULL,
    pci           text NOT NULL,
    switch_port   text,
    switch_mac    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (datacenter_id, compute_node, pci)
);

-- +goose Down
DROP TABLE sdn_port_mappings;
DROP TABLE sdn_controllers;
DROP TABLE vnfs;
