-- wimro schema, version 15: what OSM's own clients need (issue 32).
--
-- - scenarios, sce_nets: a scenario catalogue as far as the WAN side needs
--   it. A scenario holds named networks (the network part of an openmano
--   scenario descriptor); an instance created from it places each net in
--   one or more datacenters, and the nets spanning datacenters with
--   distinct VIMs become WAN links (instance_nets.sce_net_id is the
--   sce_nets uuid). The VNFs of the descriptor are kept as given (vnfs)
--   but never deployed. instance_scenarios.scenario_id stays without a
--   foreign key: instances described by an NFVO name a scenario of the
--   NFVO's own catalogue; deleting a scenario an instance uses is refused
--   by the engine instead.
-- - idempotency_keys: the first answer to a create sent with an
--   Idempotency-Key header, replayed to a retry with the same key and
--   body. A key is the client's: principal is the id of the API token the
--   request came with ('' without authentication), so two clients that
--   pick the same key never meet. fingerprint hashes the method, path and
--   body; rows older than 24 hours are expired (ignored, then purged).
-- - vlan_allocations: the VLAN of each local network of a datacenter
--   whose config.network_status_source is "none" (no NFVO reports its
--   networks), whether wimro chose it or the instance gave it. The primary
--   key makes a VLAN of a datacenter taken once. The row outlives its
--   network (instance_net_id becomes NULL with the instance): the
--   controller may still hold the WAN link's service on that VLAN until
--   the link's DELETE has run. link_id names that WAN link (NULL: the
--   network is in none) and has no foreign key, as the link goes with its
--   instance while its DELETE action stays. The engine drops a row whose
--   network is gone once its link has no DELETE or its last DELETE is
--   DONE or CANCELLED (a FAILED or ABANDONED one may have left the
--   service on the controller, so its VLAN stays taken).

-- +goose Up
CREATE TABLE scenarios (
    uuid        uuid PRIMARY KEY,
    tenant_id   uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    name        text NOT NULL,
    description text,
    osm_id      text,
    public      boolean NOT NULL DEFAULT false,
    vnfs        jsonb NOT NULL DEFAULT '[]',
    created_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT scenarios_name_check CHECK (length(name) BETWEEN 1 AND 255)
);
CREATE INDEX scenarios_tenant_idx ON scenarios (tenant_id);
CREATE TRIGGER scenarios_modified_at BEFORE UPDATE ON scenarios
    FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();

CREATE TABLE sce_nets (
    uuid        uuid PRIMARY KEY,
    scenario_id uuid NOT NULL REFERENCES scenarios (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    name        text NOT NULL,
    type        text NOT NULL DEFAULT 'bridge',
    description text,
    external    boolean NOT NULL DEFAULT false,
    osm_id      text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT sce_nets_name_key UNIQUE (scenario_id, name),
    CONSTRAINT sce_nets_name_check CHECK (length(name) BETWEEN 1 AND 255)
);

CREATE TABLE idempotency_keys (
    principal    text NOT NULL,
    key          text NOT NULL,
    fingerprint  bytea NOT NULL,
    status       integer NOT NULL,
    content_type text NOT NULL,
    body         bytea NOT NULL,
    warnings     text[] NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal, key),
    CONSTRAINT idempotency_keys_key_check CHECK (length(key) BETWEEN 1 AND 255)
);
CREATE INDEX idempotency_keys_created_idx ON idempotency_keys (created_at);

CREATE TABLE vlan_allocations (
    datacenter_id   uuid NOT NULL REFERENCES datacenters (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    vlan_id         integer NOT NULL,
    instance_net_id uuid REFERENCES instance_nets (uuid) ON DELETE SET NULL ON UPDATE CASCADE,
    link_id         uuid,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (datacenter_id, vlan_id),
    CONSTRAINT vlan_allocations_vlan_check CHECK (vlan_id BETWEEN 1 AND 4094)
);
CREATE INDEX vlan_allocations_net_idx ON vlan_allocations (instance_net_id);

-- +goose Down
DROP TABLE vlan_allocations;
DROP TABLE idempotency_keys;
DROP TABLE sce_nets;
DROP TABLE scenarios;
