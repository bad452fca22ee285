-- wimro schema, version 13: a network report never waits a retry interval,
-- and the retention purge and the /metrics scrape no longer read whole
-- tables (issue 30, points 11 and 12).
--
-- - vim_wim_actions.woken_claim: a network report (MakeLinksDue) that
--   lands while the link's CREATE is claimed cannot make it due (its
--   worker owns it) and used to be lost: the CREATE had read the networks
--   at its claim, found one still BUILD and waited its 10 s. The report
--   now writes the claim it found into woken_claim, and the outcome of
--   that same claim (FinishActions), if it keeps the CREATE SCHEDULED, is
--   due at once. Claim names are used once, so a mark left by a claim
--   whose outcome was never written matches no later claim. Not indexed:
--   the claim and its renewal stay HOT updates.
-- - vim_wim_actions_finished_idx, instance_actions_created_idx: the purge
--   took the finished actions older than the retention by modified_at, in
--   a scan of the whole table per batch (and the instance actions the
--   same way). modified_at cannot be indexed: every claim and renewal sets
--   it, and an indexed column makes those updates non-HOT (schema 8). The
--   purge walks created_at instead, which never changes (created_at <=
--   modified_at, both now() of the server, so "created before the cutoff"
--   only narrows what "last modified before it" keeps), over finished
--   actions only: the predicate's status is already indexed (the claim
--   index), so no update loses HOT, and the finishing update, already
--   non-HOT, adds one index entry.
-- - wan_link_status_counts: wimro_wan_links_by_status counted the links
--   table in full at every scrape (fillfactor 15: seven links a page).
--   Statement-level triggers with transition tables append, per statement
--   that changes the table, one signed delta per status whose count moved
--   (an outcome that keeps its link's status appends nothing); the count
--   of a status is the sum of its rows, exact in any snapshot. Appends
--   only, so no writer waits on a counter row (the reason of schema 8's
--   progress rows); the scrape and the purge fold the rows into one per
--   status (persistence.CountWANLinksByStatus).
--
-- One transaction, no CREATE INDEX CONCURRENTLY: the counts are filled in
-- the transaction that creates their triggers, under the triggers' lock,
-- so they start exact; and a concurrent build that fails leaves an invalid
-- index that IF NOT EXISTS would then take for done. A plain build blocks
-- writes of vim_wim_actions while it reads the finished actions (1.4-1.8 s at
-- 1,000,000 on the benchmark machine, BENCHMARKS.md). On a much larger
-- table, build the two indexes beforehand with CREATE INDEX CONCURRENTLY
-- under the same names and definitions; this migration then skips them.

-- +goose Up
-- Every table this migration changes is locked first, in one statement
-- and in the order wimd's statements lock them (the claim reads the
-- actions, then the links): taken one by one, a DROP TRIGGER on the links
-- then an index of the actions deadlocked with a claim of a running wimd.
LOCK TABLE vim_wim_actions, instance_wim_nets, instance_actions IN ACCESS EXCLUSIVE MODE;
ALTER TABLE vim_wim_actions ADD COLUMN woken_claim text;

CREATE INDEX IF NOT EXISTS vim_wim_actions_finished_idx ON vim_wim_actions (created_at)
    WHERE status IN ('DONE', 'FAILED', 'SUPERSEDED', 'FINISHED', 'CANCELLED', 'ABANDONED');
CREATE INDEX IF NOT EXISTS instance_actions_created_idx ON instance_actions (created_at);

CREATE TABLE wan_link_status_counts (
    status text NOT NULL,
    n      bigint NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION wimro_count_link_statuses() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO wan_link_status_counts (status, n) SELECT status, count(*) FROM new_links GROUP BY status;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO wan_link_status_counts (status, n) SELECT status, -count(*) FROM old_links GROUP BY status;
    ELSE
        INSERT INTO wan_link_status_counts (status, n)
        SELECT status, sum(d) FROM (
            SELECT status, 1 AS d FROM new_links
            UNION ALL
            SELECT status, -1 FROM old_links) c
        GROUP BY status HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- One trigger per event: PostgreSQL gives transition tables to a trigger
-- of one event only. A cascade from a deleted instance fires the DELETE
-- trigger too.
CREATE TRIGGER instance_wim_nets_count_insert AFTER INSERT ON instance_wim_nets
    REFERENCING NEW TABLE AS new_links FOR EACH STATEMENT EXECUTE FUNCTION wimro_count_link_statuses();
CREATE TRIGGER instance_wim_nets_count_update AFTER UPDATE ON instance_wim_nets
    REFERENCING OLD TABLE AS old_links NEW TABLE AS new_links FOR EACH STATEMENT EXECUTE FUNCTION wimro_count_link_statuses();
CREATE TRIGGER instance_wim_nets_count_delete AFTER DELETE ON instance_wim_nets
    REFERENCING OLD TABLE AS old_links FOR EACH STATEMENT EXECUTE FUNCTION wimro_count_link_statuses();

INSERT INTO wan_link_status_counts (status, n) SELECT status, count(*) FROM instance_wim_nets GROUP BY status;

-- +goose Down
-- Every table this migration changes is locked first, in one statement
-- and in the order wimd's statements lock them (the claim reads the
-- actions, then the links): taken one by one, a DROP TRIGGER on the links
-- then an index of the actions deadlocked with a claim of a running wimd.
LOCK TABLE vim_wim_actions, instance_wim_nets, instance_actions IN ACCESS EXCLUSIVE MODE;
DROP TRIGGER instance_wim_nets_count_delete ON instance_wim_nets;
DROP TRIGGER instance_wim_nets_count_update ON instance_wim_nets;
DROP TRIGGER instance_wim_nets_count_insert ON instance_wim_nets;
DROP FUNCTION wimro_count_link_statuses();
DROP TABLE wan_link_status_counts;
DROP INDEX instance_actions_created_idx;
DROP INDEX vim_wim_actions_finished_idx;
ALTER TABLE vim_wim_actions DROP COLUMN woken_claim;
