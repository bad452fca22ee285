-- wimro schema, version 13: a network report never waits a retry interval
-- (issue 30, point 11).
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

-- +goose Up
ALTER TABLE vim_wim_actions ADD COLUMN woken_claim text;

-- +goose Down
ALTER TABLE vim_wim_actions DROP COLUMN woken_claim;
