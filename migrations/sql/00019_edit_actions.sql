-- wimro schema, version 19: EDIT actions.
--
-- A change the NFVO reports on a live WAN link (a network's VLAN or
-- encapsulation, its PoP port, the physical network that maps it to
-- another port, the link's QoS, a network added or removed) queues an
-- EDIT action of the link, in the link's queue with its CREATE and
-- DELETE. The EDIT brings the controller's service in line with the
-- link's state when it runs: in place where the connector edits, else by
-- a replace (a new service with a new key, the old one deleted). What a
-- replace has done between its two runs is kept in the action's extra
-- and the link's wim_info (jsonb), so no column is added. A replaced
-- service has a key of its own (wim_info service_key): drift reconcile
-- looks a controller's key up there too, through the index below, before
-- it calls a service an orphan.

-- +goose Up
ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_action_check,
    ADD CONSTRAINT vim_wim_actions_action_check CHECK (action IN ('CREATE', 'DELETE', 'EDIT'));

CREATE INDEX instance_wim_nets_service_key_idx ON instance_wim_nets ((wim_info->>'service_key'));

-- +goose Down
-- A finished EDIT is history of an action kind the older version does not
-- know and is dropped; an unfinished one is work it cannot run (a replace
-- may be half done), so the step down refuses to go on.
-- +goose StatementBegin
DO $$
DECLARE
    n bigint;
BEGIN
    SELECT count(*) INTO n FROM vim_wim_actions WHERE action = 'EDIT' AND status IN ('SCHEDULED', 'BUILD');
    IF n > 0 THEN
        RAISE EXCEPTION 'wimro migration 19 down: % unfinished EDIT action(s) in vim_wim_actions: let them finish and migrate down again', n;
    END IF;
END;
$$;
-- +goose StatementEnd
DELETE FROM vim_wim_actions WHERE action = 'EDIT';
DROP INDEX instance_wim_nets_service_key_idx;

ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_action_check,
    ADD CONSTRAINT vim_wim_actions_action_check CHECK (action IN ('CREATE', 'DELETE'));
