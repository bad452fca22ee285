-- wimro schema, version 4: account leases (who may drive an account) and a
-- notification when the set of accounts changes.

-- +goose Up

-- A process drives an account's worker only while it holds the account's
-- lease: taken by compare-and-set (free, expired, or already its own), the
-- epoch growing with every new holder, renewed by the live holder, released
-- on revoke. Every claim and outcome write checks it. A row per account,
-- not an advisory lock: the lock table holds only max_locks_per_transaction
-- x max_connections entries (6,400 by default). The row is bookkeeping, not
-- work, so it goes with its account.
CREATE TABLE wim_account_leases (
    account_id  uuid PRIMARY KEY REFERENCES wim_accounts (uuid) ON DELETE CASCADE ON UPDATE CASCADE,
    owner       text,
    epoch       bigint NOT NULL DEFAULT 0,
    expires_at  timestamptz NOT NULL DEFAULT now(),
    modified_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX wim_account_leases_owner_idx ON wim_account_leases (owner) WHERE owner IS NOT NULL;
CREATE TRIGGER wim_account_leases_touch BEFORE UPDATE ON wim_account_leases FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();

-- Whoever decides ownership recomputes it when an account is created or
-- deleted, however that happens (a cascade from a WIM included).
-- +goose StatementBegin
CREATE FUNCTION wimro_notify_account_list() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('wimro_account_list', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER wim_accounts_list_changed AFTER INSERT OR DELETE ON wim_accounts
    FOR EACH STATEMENT EXECUTE FUNCTION wimro_notify_account_list();

-- +goose Down
DROP TRIGGER wim_accounts_list_changed ON wim_accounts;
DROP FUNCTION wimro_notify_account_list();
DROP TABLE wim_account_leases;
