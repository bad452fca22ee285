-- wimro schema, version 10: an operator's way out of a dead controller
-- (issue 30).
--
-- A DELETE whose controller is gone retries for ever, and while it is
-- unfinished its account, and so its WIM, cannot be deleted. Two explicit,
-- audited operator overrides end such an action:
--
--   CANCELLED  a SCHEDULED action that never reached the controller
--              (no run reached it, it is not running, no service was
--              made) ends without running: nothing is left behind.
--   ABANDONED  a DELETE is given up, with force: its service may still be
--              on the controller. The service is recorded here as
--              abandoned, so that drift reconcile lists it as a known
--              leftover rather than as an orphan.
--
-- Both are finished statuses: they count as failed tasks of their
-- instance action, stand in the way of nothing and are purged with the
-- rest of the history.
--
-- action_overrides is the audit record of every cancel and abandon: who
-- (the API token's identity, else "operator"), when, why, and what: the
-- task, its WAN link (the controller service's key) and, for an abandon,
-- where the service was (WIM, account, controller URL, service id). No
-- foreign key: the record outlives the WIM, the account and the instance
-- action (a WIM is deleted precisely once its DELETE is abandoned), and
-- the retention purge leaves it alone.

-- unsettled_runs counts the claims of an action whose outcome never landed
-- (its process stopped or died mid-run, or gave the claim up): attempts
-- counts only the runs whose outcome says they reached the controller, so
-- an action with unsettled runs may have reached it uncounted, and a
-- cancel refuses it. Not indexed: claims stay HOT updates.
--
-- +goose Up
ALTER TABLE vim_wim_actions ADD COLUMN unsettled_runs integer NOT NULL DEFAULT 0;
ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_status_check,
    ADD CONSTRAINT vim_wim_actions_status_check
        CHECK (status IN ('SCHEDULED', 'BUILD', 'DONE', 'FAILED', 'SUPERSEDED', 'FINISHED', 'CANCELLED', 'ABANDONED'));

CREATE TABLE action_overrides (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind               text NOT NULL,
    instance_action_id uuid NOT NULL,
    task_index         integer NOT NULL,
    action             text NOT NULL,
    wan_link_id        uuid NOT NULL,
    tenant_id          uuid,
    instance_id        uuid,
    wim_id             uuid,
    wim_name           text,
    wim_type           text,
    wim_url            text,
    wim_account_id     uuid,
    wim_account_name   text,
    service_id         text,
    actor              text NOT NULL,
    reason             text NOT NULL,
    at                 timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT action_overrides_kind_check CHECK (kind IN ('cancel', 'abandon'))
);
-- Reconcile looks the keys a controller lists up among the abandoned
-- services.
CREATE INDEX action_overrides_abandoned_idx ON action_overrides (wan_link_id) WHERE kind = 'abandon';
CREATE INDEX action_overrides_instance_action_idx ON action_overrides (instance_action_id, task_index);

-- +goose Down
DROP TABLE action_overrides;
ALTER TABLE vim_wim_actions DROP COLUMN unsettled_runs;
UPDATE vim_wim_actions SET status = 'FAILED' WHERE status IN ('CANCELLED', 'ABANDONED');
ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_status_check,
    ADD CONSTRAINT vim_wim_actions_status_check
        CHECK (status IN ('SCHEDULED', 'BUILD', 'DONE', 'FAILED', 'SUPERSEDED', 'FINISHED'));
