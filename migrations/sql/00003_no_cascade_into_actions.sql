-- wimro schema, version 3: nothing cascades into the work rows.
--
-- Deleting a tenant, an account or a WIM used to cascade into
-- instance_actions and vim_wim_actions: a DELETE action still SCHEDULED
-- vanished with them and its service stayed on the controller for good.
-- The engine checks for unfinished actions first, but a check cannot see
-- the uncommitted DELETE actions of a concurrent instance delete, and the
-- cascade then removed them once that delete committed. Every foreign key
-- into the work rows is now RESTRICT, so PostgreSQL itself refuses (SQLSTATE
-- 23503) to delete a row that work still references, whatever the timing:
--
--   instance_actions.tenant_id          -> nfvo_tenants     (was CASCADE)
--   vim_wim_actions.instance_action_id  -> instance_actions (was CASCADE)
--   vim_wim_actions.wim_account_id      -> wim_accounts     (was CASCADE)
--
-- These are the only foreign keys of the two tables; nothing references
-- vim_wim_actions, and only vim_wim_actions references instance_actions
-- (instance_actions.instance_id has no foreign key: actions outlive their
-- instance). wims -> wim_accounts stays CASCADE: deleting a WIM deletes its
-- accounts, and the RESTRICT key above stops that at the accounts' work.
-- The application removes finished history explicitly: a tenant's
-- instance actions and their tasks are deleted with it, and the finished
-- actions of a deleted account keep their history with wim_account_id NULL.
-- ON UPDATE stays CASCADE: renaming a key loses nothing.
--
-- FIND actions are gone from the code: only CREATE and DELETE remain.

-- +goose Up

-- There never were FIND rows. A finished one is history of an action kind
-- that no longer exists and is dropped; an unfinished one is work this
-- version cannot run, so the migration refuses to go on.
DELETE FROM vim_wim_actions WHERE action = 'FIND' AND status NOT IN ('SCHEDULED', 'BUILD');
-- +goose StatementBegin
DO $$
DECLARE
    n bigint;
BEGIN
    SELECT count(*) INTO n FROM vim_wim_actions WHERE action = 'FIND';
    IF n > 0 THEN
        RAISE EXCEPTION 'wimro migration 3: % unfinished FIND action(s) in vim_wim_actions; FIND is no longer supported: let them finish (or mark them FAILED) and migrate again', n;
    END IF;
END;
$$;
-- +goose StatementEnd

ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_action_check,
    ADD CONSTRAINT vim_wim_actions_action_check CHECK (action IN ('CREATE', 'DELETE'));

ALTER TABLE instance_actions
    DROP CONSTRAINT instance_actions_tenant_id_fkey,
    ADD CONSTRAINT instance_actions_tenant_id_fkey FOREIGN KEY (tenant_id)
        REFERENCES nfvo_tenants (uuid) ON DELETE RESTRICT ON UPDATE CASCADE;

ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_instance_action_id_fkey,
    ADD CONSTRAINT vim_wim_actions_instance_action_id_fkey FOREIGN KEY (instance_action_id)
        REFERENCES instance_actions (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    DROP CONSTRAINT vim_wim_actions_wim_account_id_fkey,
    ADD CONSTRAINT vim_wim_actions_wim_account_id_fkey FOREIGN KEY (wim_account_id)
        REFERENCES wim_accounts (uuid) ON DELETE RESTRICT ON UPDATE CASCADE;

-- +goose Down
ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_wim_account_id_fkey,
    ADD CONSTRAINT vim_wim_actions_wim_account_id_fkey FOREIGN KEY (wim_account_id)
        REFERENCES wim_accounts (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    DROP CONSTRAINT vim_wim_actions_instance_action_id_fkey,
    ADD CONSTRAINT vim_wim_actions_instance_action_id_fkey FOREIGN KEY (instance_action_id)
        REFERENCES instance_actions (uuid) ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE instance_actions
    DROP CONSTRAINT instance_actions_tenant_id_fkey,
    ADD CONSTRAINT instance_actions_tenant_id_fkey FOREIGN KEY (tenant_id)
        REFERENCES nfvo_tenants (uuid) ON DELETE CASCADE ON UPDATE CASCADE;

ALTER TABLE vim_wim_actions
    DROP CONSTRAINT vim_wim_actions_action_check,
    ADD CONSTRAINT vim_wim_actions_action_check CHECK (action IN ('CREATE', 'DELETE', 'FIND'));
