-- wimro schema, version 5: account health, the result of the last
-- CheckCredentials (run when an account is written and then every
-- --monitor-interval).

-- +goose Up

-- UNKNOWN until the first check finishes. The columns are bookkeeping of
-- the account itself: nothing references them and writing them notifies
-- nobody (an account edit notifies the workers; a status write must not).
ALTER TABLE wim_accounts
    ADD COLUMN status     text NOT NULL DEFAULT 'UNKNOWN' CHECK (status IN ('UNKNOWN', 'ACTIVE', 'ERROR')),
    ADD COLUMN status_msg text,
    ADD COLUMN checked_at timestamptz;

-- A check is not an edit: modified_at stays. Every status write sets
-- checked_at and no other write does.
DROP TRIGGER wim_accounts_touch ON wim_accounts;
CREATE TRIGGER wim_accounts_touch BEFORE UPDATE ON wim_accounts FOR EACH ROW
    WHEN (OLD.checked_at IS NOT DISTINCT FROM NEW.checked_at) EXECUTE FUNCTION wimro_touch_modified_at();

-- +goose Down
DROP TRIGGER wim_accounts_touch ON wim_accounts;
CREATE TRIGGER wim_accounts_touch BEFORE UPDATE ON wim_accounts FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
ALTER TABLE wim_accounts DROP COLUMN status, DROP COLUMN status_msg, DROP COLUMN checked_at;
