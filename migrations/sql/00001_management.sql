-- wimro schema, version 1: tenants, datacenters, WIMs, accounts, port mappings.
--
-- Table and column names follow OSM RO (openmano) so the REST API stays
-- openmano-compatible; types are real PostgreSQL types: uuid keys,
-- timestamptz, jsonb for the "serialized" YAML columns of RO, text enums
-- checked by CHECK constraints.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION wimro_touch_modified_at() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.modified_at := now();
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TABLE nfvo_tenants (
    uuid        uuid PRIMARY KEY,
    name        text NOT NULL,
    description text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT nfvo_tenants_name_key UNIQUE (name),
    CONSTRAINT nfvo_tenants_name_check CHECK (length(name) BETWEEN 1 AND 255)
);

-- A datacenter is a VIM endpoint as the NFVO knows it. wimro has no VIM side;
-- it keeps what the WAN side needs, above all config.external_connections,
-- the rules that say where a local network leaves the datacenter.
CREATE TABLE datacenters (
    uuid          uuid PRIMARY KEY,
    name          text NOT NULL,
    description   text,
    type          text NOT NULL DEFAULT 'openvim',
    vim_url       text NOT NULL,
    vim_url_admin text,
    config        jsonb,
    created_at    timestamptz NOT NULL DEFAULT now(),
    modified_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT datacenters_name_key UNIQUE (name),
    CONSTRAINT datacenters_name_check CHECK (length(name) BETWEEN 1 AND 255)
);

-- A datacenter is attached to a tenant through this association.
CREATE TABLE tenants_datacenters (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    nfvo_tenant_id uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    datacenter_id  uuid NOT NULL REFERENCES datacenters (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    modified_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_datacenters_key UNIQUE (datacenter_id, nfvo_tenant_id)
);
CREATE INDEX tenants_datacenters_tenant_idx ON tenants_datacenters (nfvo_tenant_id);

CREATE TABLE wims (
    uuid        uuid PRIMARY KEY,
    name        text NOT NULL,
    description text,
    type        text NOT NULL,
    wim_url     text NOT NULL,
    config      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT wims_name_key UNIQUE (name),
    CONSTRAINT wims_name_check CHECK (length(name) BETWEEN 1 AND 255),
    CONSTRAINT wims_type_check CHECK (type IN ('ietfl2vpn', 'tapi', 'onos', 'onos_vpls', 'dynpac', 'odl', 'fake', 'failing'))
);

-- Credentials and connector settings for one WIM; one worker per account.
-- password holds the AES-GCM sealed secret, never the clear text.
CREATE TABLE wim_accounts (
    uuid        uuid PRIMARY KEY,
    name        text,
    wim_id      uuid NOT NULL REFERENCES wims (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    created     boolean NOT NULL DEFAULT false,
    username    text,
    password    bytea,
    config      jsonb,
    created_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT wim_accounts_wim_name_key UNIQUE (wim_id, name)
);

-- A tenant reaches a WIM through at most one account.
CREATE TABLE wim_nfvo_tenants (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    nfvo_tenant_id uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    wim_id         uuid NOT NULL REFERENCES wims (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    wim_account_id uuid NOT NULL REFERENCES wim_accounts (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    created_at     timestamptz NOT NULL DEFAULT now(),
    modified_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT wim_nfvo_tenant UNIQUE (wim_id, nfvo_tenant_id)
);
CREATE INDEX wim_nfvo_tenants_tenant_idx ON wim_nfvo_tenants (nfvo_tenant_id);
CREATE INDEX wim_nfvo_tenants_account_idx ON wim_nfvo_tenants (wim_account_id);

-- "Datacenter D's switch pop_switch_dpid/pop_switch_port is wired to WAN
-- endpoint wan_service_endpoint_id."
CREATE TABLE wim_port_mappings (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    wim_id                   uuid NOT NULL REFERENCES wims (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    datacenter_id            uuid NOT NULL REFERENCES datacenters (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    pop_switch_dpid          text NOT NULL,
    pop_switch_port          text NOT NULL,
    wan_service_endpoint_id  text NOT NULL,
    wan_service_mapping_info jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at               timestamptz NOT NULL DEFAULT now(),
    modified_at              timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT unique_datacenter_port_mapping UNIQUE (datacenter_id, pop_switch_dpid, pop_switch_port),
    CONSTRAINT unique_wim_port_mapping UNIQUE (wim_id, wan_service_endpoint_id)
);
CREATE INDEX wim_port_mappings_datacenter_idx ON wim_port_mappings (datacenter_id);

CREATE TRIGGER nfvo_tenants_touch BEFORE UPDATE ON nfvo_tenants FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER datacenters_touch BEFORE UPDATE ON datacenters FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER tenants_datacenters_touch BEFORE UPDATE ON tenants_datacenters FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER wims_touch BEFORE UPDATE ON wims FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER wim_accounts_touch BEFORE UPDATE ON wim_accounts FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER wim_nfvo_tenants_touch BEFORE UPDATE ON wim_nfvo_tenants FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER wim_port_mappings_touch BEFORE UPDATE ON wim_port_mappings FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();

-- +goose Down
DROP TABLE wim_port_mappings;
DROP TABLE wim_nfvo_tenants;
DROP TABLE wim_accounts;
DROP TABLE wims;
DROP TABLE tenants_datacenters;
DROP TABLE datacenters;
DROP TABLE nfvo_tenants;
DROP FUNCTION wimro_touch_modified_at();
