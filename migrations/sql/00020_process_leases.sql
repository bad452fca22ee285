-- wimro schema, version 20: a lease per process (issue 31).
--
-- - wim_process_leases: one row per process (owner): the epoch of its
--   current run, which grows with every start, and when its lease expires
--   unless renewed. Renewing it is one row, however many accounts the
--   process holds: every account lease renewed its own row, and at 50,000
--   accounts a renewal did not finish within a quarter of the lease. An
--   epoch whose lease expired is dead for good: the renewal only extends
--   a lease still valid, and the first process to take an account of a
--   dead holder sets its expiry to -infinity (under the row's lock, so a
--   renewal racing the takeover either lands first and the take fails,
--   or waits and finds the lease dead).
-- - wim_account_leases.proc_epoch: the epoch of the holder's process
--   lease. An account lease is held while its owner's process lease of
--   that epoch is valid; its own expires_at is 'infinity' for the rows
--   this version writes (so that a process of the previous version never
--   takes an account one of this version holds), and a row written by the
--   previous version (proc_epoch NULL) is free once its expires_at passed,
--   as it was.

-- +goose Up
CREATE TABLE wim_process_leases (
    owner      text PRIMARY KEY,
    epoch      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);
ALTER TABLE wim_account_leases ADD COLUMN proc_epoch bigint;
-- A renewal counts the account leases held under its epoch (an
-- index-only scan), to notice one lost without its process lease.
CREATE INDEX wim_account_leases_holder_idx ON wim_account_leases (owner, proc_epoch) WHERE owner IS NOT NULL;
DROP INDEX wim_account_leases_owner_idx;

-- +goose Down
-- The previous version reads expires_at: give each held row its holder's.
UPDATE wim_account_leases l SET expires_at = COALESCE((
    SELECT p.expires_at FROM wim_process_leases p WHERE p.owner = l.owner AND p.epoch = l.proc_epoch), now())
WHERE l.proc_epoch IS NOT NULL;
CREATE INDEX wim_account_leases_owner_idx ON wim_account_leases (owner) WHERE owner IS NOT NULL;
ALTER TABLE wim_account_leases DROP COLUMN proc_epoch;
DROP TABLE wim_process_leases;
