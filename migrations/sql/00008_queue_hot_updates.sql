-- wimro schema, version 8: what PostgreSQL does per action run (issue 16).
--
-- Measured on 100 accounts x 50 links: no update of vim_wim_actions was
-- HOT (0 of 26,514), because the claim, its renewal and its release change
-- claimed_by / claim_expires_at, which the claim index (its predicate) and
-- the lease index covered, so every one of them wrote a new entry in every
-- index of the table; and a plpgsql trigger ran for every updated action
-- and WAN link only to set modified_at.
--
-- - No index reads claimed_by or claim_expires_at any more: taking,
--   renewing and releasing a claim are HOT updates when the page has room.
--   The claim index keeps the unfinished actions, claimed or not; a claim
--   skips the claimed ones (at most the actions in flight) by the row.
--   The expired-claim sweep and the lists of a process's claims read the
--   same index (a claimed action is always unfinished) instead of the
--   lease index.
-- - vim_wim_actions_seq_key goes: seq is GENERATED ALWAYS AS IDENTITY, so
--   unique by construction, and nothing looks an action up by seq alone;
--   it was one more index entry per insert and per non-HOT update.
-- - fillfactor 70 on the two tables updated per action run, so a HOT
--   update finds room on the row's own page.
-- - The modified_at triggers of vim_wim_actions and instance_wim_nets go:
--   every statement that updates them sets modified_at = now() itself
--   (persistence is the only writer). The management tables keep theirs:
--   they are rarely written.

-- +goose Up
DROP INDEX vim_wim_actions_lease_idx;
DROP INDEX vim_wim_actions_claim_idx;
-- Serves the claim query (the due, unclaimed work of one account in order)
-- and every read of the claims in flight.
CREATE INDEX vim_wim_actions_claim_idx ON vim_wim_actions (wim_account_id, run_after, seq)
    WHERE status IN ('SCHEDULED', 'BUILD');
ALTER TABLE vim_wim_actions DROP CONSTRAINT vim_wim_actions_seq_key;
ALTER TABLE vim_wim_actions SET (fillfactor = 70);
ALTER TABLE instance_wim_nets SET (fillfactor = 70);
DROP TRIGGER vim_wim_actions_touch ON vim_wim_actions;
DROP TRIGGER instance_wim_nets_touch ON instance_wim_nets;

-- +goose Down
CREATE TRIGGER instance_wim_nets_touch BEFORE UPDATE ON instance_wim_nets FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
CREATE TRIGGER vim_wim_actions_touch BEFORE UPDATE ON vim_wim_actions FOR EACH ROW EXECUTE FUNCTION wimro_touch_modified_at();
ALTER TABLE instance_wim_nets RESET (fillfactor);
ALTER TABLE vim_wim_actions RESET (fillfactor);
ALTER TABLE vim_wim_actions ADD CONSTRAINT vim_wim_actions_seq_key UNIQUE (seq);
DROP INDEX vim_wim_actions_claim_idx;
CREATE INDEX vim_wim_actions_claim_idx ON vim_wim_actions (wim_account_id, run_after, seq)
    WHERE status IN ('SCHEDULED', 'BUILD') AND claimed_by IS NULL;
CREATE INDEX vim_wim_actions_lease_idx ON vim_wim_actions (claim_expires_at)
    WHERE claimed_by IS NOT NULL;
