-- wimro schema, version 2: NS instances, their networks, WAN links and the action queue.

-- +goose Up

-- An NS instance as the NFVO describes it. Deleting a tenant that still has
-- instances is refused: their WAN services would be orphaned.
CREATE TABLE instance_scenarios (
    uuid          uuid PRIMARY KEY,
    name          text NOT NULL,
    tenant_id     uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    scenario_id   uuid,
    datacenter_id uuid REFERENCES datacenters (uuid) ON DELETE SET NULL ON UPDATE CASCADE,
    description   text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    modified_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instance_scenarios_tenant_idx ON instance_scenarios (tenant_id);

-- A local network of an instance in one datacenter, reported by the NFVO.
-- Where it leaves the datacenter is either explicit (pop_switch_*) or
-- derived from vim_info by the datacenter's external_connections rules.
CREATE TABLE instance_nets (
    uuid                 uuid PRIMARY KEY,
    instance_scenario_id uuid NOT NULL REFERENCES instance_scenarios (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    sce_net_id           uuid,
    osm_id               text,
    vim_net_id           text,
    vim_name             text,
    datacenter_id        uuid NOT NULL REFERENCES datacenters (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    status               text NOT NULL DEFAULT 'BUILD',
    error_msg            text,
    vim_info             jsonb,
    encapsulation_type   text,
    encapsulation_id     integer,
    pop_switch_dpid      text,
    pop_switch_port      text,
    sdn_net_id           text,
    related              uuid,
    created_at           timestamptz NOT NULL DEFAULT now(),
    modified_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT instance_nets_status_check CHECK (status IN ('ACTIVE', 'INACTIVE', 'DOWN', 'BUILD', 'ERROR', 'VIM_ERROR', 'DELETED', 'SCHEDULED_CREATION', 'SCHEDULED_DELETION')),
    CONSTRAINT instance_nets_encapsulation_check CHECK (encapsulation_type IS NULL OR encapsulation_type IN ('none', 'vlan')),
    CONSTRAINT instance_nets_vlan_check CHECK (encapsulation_id IS NULL OR encapsulation_id BETWEEN 1 AND 4094)
);
CREATE INDEX instance_nets_sce_net_idx ON instance_nets (instance_scenario_id, sce_net_id);
CREATE INDEX instance_nets_datacenter_idx ON instance_nets (datacenter_id);

-- WAN links: one connectivity service per (instance, sce_net). A WIM or an
-- account that a link still uses cannot be deleted (RESTRICT).
CREATE TABLE instance_wim_nets (
    uuid                 uuid PRIMARY KEY,
    wim_internal_id      text,
    instance_scenario_id uuid REFERENCES instance_scenarios (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    sce_net_id           uuid,
    wim_id               uuid REFERENCES wims (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    wim_account_id       uuid NOT NULL REFERENCES wim_accounts (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    status               text NOT NULL DEFAULT 'BUILD',
    error_msg            text,
    wim_info             jsonb,
    multipoint           boolean NOT NULL DEFAULT false,
    created              boolean NOT NULL DEFAULT false,
    related              uuid,
    created_at           timestamptz NOT NULL DEFAULT now(),
    modified_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT instance_wim_nets_status_check CHECK (status IN ('ACTIVE', 'INACTIVE', 'DOWN', 'BUILD', 'ERROR', 'WIM_ERROR', 'DELETED', 'SCHEDULED_CREATION', 'SCHEDULED_DELETION'))
);
CREATE INDEX instance_wim_nets_instance_idx ON instance_wim_nets (instance_scenario_id, sce_net_id);
CREATE INDEX instance_wim_nets_wim_idx ON instance_wim_nets (wim_id);
CREATE INDEX instance_wim_nets_account_idx ON instance_wim_nets (wim_account_id);

-- One user operation (create/delete an instance) and its progress.
CREATE TABLE instance_actions (
    uuid          uuid PRIMARY KEY,
    tenant_id     uuid NOT NULL REFERENCES nfvo_tenants (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    instance_id   uuid,
    description   text NOT NULL,
    number_tasks  integer NOT NULL DEFAULT 0,
    number_done   integer NOT NULL DEFAULT 0,
    number_failed integer NOT NULL DEFAULT 0,
    created_at    timestamptz NOT NULL DEFAULT now(),
    modified_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT instance_actions_counters_check CHECK (number_tasks >= 0 AND number_done >= 0 AND number_failed >= 0)
);
CREATE INDEX instance_actions_instance_idx ON instance_actions (instance_id);

-- The action queue. Each row is one task (CREATE/DELETE/FIND of a WAN link).
-- seq orders the actions of one link; claimed_by / claim_expires_at record
-- which process holds a claim and until when (a sweep returns expired claims);
-- run_after delays retries and refreshes.
CREATE TABLE vim_wim_actions (
    instance_action_id uuid NOT NULL REFERENCES instance_actions (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    task_index         integer NOT NULL,
    seq                bigint GENERATED ALWAYS AS IDENTITY,
    wim_account_id     uuid REFERENCES wim_accounts (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    wim_internal_id    text,
    action             text NOT NULL,
    item               text NOT NULL DEFAULT 'instance_wim_nets',
    item_id            uuid NOT NULL,
    status             text NOT NULL DEFAULT 'SCHEDULED',
    extra              jsonb,
    error_msg          text,
    attempts           integer NOT NULL DEFAULT 0,
    run_after          timestamptz NOT NULL DEFAULT now(),
    claimed_by         text,
    claim_expires_at   timestamptz,
    created_at         timestamptz NOT NULL DEFAULT now(),
    modified_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (instance_action_id, task_index),
    CONSTRAINT vim_wim_actions_seq_key UNIQUE (seq),
    CONSTRAINT vim_wim_actions_action_check CHECK (action IN ('CREATE', 'DELETE', 'FIND')),
    CONSTRAINT vim_wim_actions_item_check CHECK (item = 'instance_wim_nets'),
    CONSTRAINT vim_wim_actions_status_check CHECK (status IN ('SCHEDULED', 'BUILD', 'DONE', 'FAILED', 'SUPERSEDED', 'FINISHED')),
    CONSTRAINT vim_wim_actions_claim_check CHECK ((claimed_by IS NULL) = (claim_expires_at IS NULL))
);
CREATE INDEX item_type_id ON vim_wim_actions (item, item_id, seq);
CREATE INDEX vim_wim_actions_account_idx ON vim_wim_actions (wim_account_id);
-- Serves the claim query: the due, unclaimed work of one account in order.
CREATE INDEX vim_wim_actions_claim_idx ON vim_wim_actions (wim_account_id, run_after, seq)
    WHERE status IN ('SCHEDULED', 'BUILD') AND claimed_by IS NULL;
-- Serves the sweep of expired claims.
CREATE INDEX vim_wim_actions_lease_idx ON vim_wim_actions (claim_expires_at)
    WHERE claimed_by IS NOT NULL;

CREATE TRIGGER instance_scenarios_touch BEFORE UPDATE ON instance_scenarios FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER instance_nets_touch BEFORE UPDATE ON instance_nets FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER instance_wim_nets_touch BEFORE UPDATE ON instance_wim_nets FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER instance_actions_touch BEFORE UPDATE ON instance_actions FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER vim_wim_actions_touch BEFORE UPDATE ON vim_wim_actions FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();

-- +goose Down
DROP TABLE vim_wim_actions;
DROP TABLE instance_actions;
DROP TABLE instance_wim_nets;
DROP TABLE instance_nets;
DROP TABLE instance_scenarios;
