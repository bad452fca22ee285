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
-- - The progress of an instance action is no longer one counter row that
--   every outcome batch updates: two batches in flight with actions of the
--   same instance action queued on its row lock. A batch appends its
--   increments to instance_action_progress (an insert takes no lock that
--   another insert waits for) and a read adds them to the row's own
--   counters (instance_actions.number_done / number_failed keep what was
--   counted before this version, and what AddProgress adds), and its
--   modified_at moves with the newest increment, as the trigger moved it.
--   Nothing cascades into them (a cascade into counters could lose the
--   progress of work still running): the key is RESTRICT, and the
--   retention purge and a tenant delete remove them explicitly with their
--   instance action.

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
CREATE TABLE instance_action_progress (
    instance_action_id uuid NOT NULL REFERENCES instance_actions (uuid) ON DELETE RESTRICT ON UPDATE CASCADE,
    n_done             integer NOT NULL,
    n_failed           integer NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX instance_action_progress_idx ON instance_action_progress (instance_action_id);

-- +goose Down
UPDATE instance_actions ia SET number_done = ia.number_done + p.n_done, number_failed = ia.number_failed + p.n_failed,
    modified_at = greatest(ia.modified_at, p.modified_at)
FROM (SELECT instance_action_id, sum(n_done) AS n_done, sum(n_failed) AS n_failed, max(created_at) AS modified_at
      FROM instance_action_progress GROUP BY instance_action_id) p
WHERE ia.uuid = p.instance_action_id;
DROP TABLE instance_action_progress;
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
