package persistence

import (
	"context"
	"time"

	"github.com/wimro/wimro"
)

// ClaimActions claims up to limit due actions of the lease's account under
// claim: a one-account claim for the queue tests (the supervisor claims
// through ClaimDue), in one statement over the claim index, and only while lease is
// held as given (same owner and epoch, not expired): a process that lost
// the account claims nothing. claim is written to claimed_by and fences
// every later write: the caller makes it unique per claim (ClaimName), so
// a stale outcome of an earlier claim of the same process can never pass
// for a newer one. The actions of one WAN link run strictly in order: an
// action is claimable only when no earlier action of its link is
// unfinished, no action of its link is claimed, and its link is not in
// busyLinks (links the caller is already working on). SKIP LOCKED lets
// several claimers race without waiting on each other; the claim records a
// lease. It does not count an attempt: the outcome does, when its run
// reached the controller (Outcome.Reached).
func (s *Store) ClaimActions(ctx context.Context, lease Lease, claim string, ttl time.Duration, limit int, busyLinks []string) ([]wimro.Action, error) {
	if limit <= 0 {
		return nil, nil
	}
	return getAll[wimro.Action](ctx, s, "vim_wim_actions", `
		WITH due AS (
			SELECT a.instance_action_id, a.task_index, a.item_id
			FROM vim_wim_actions a
			WHERE a.wim_account_id = $1
			  AND a.status IN ('SCHEDULED', 'BUILD') AND a.claimed_by IS NULL AND a.run_after <= now()
			  AND a.item_id <> ALL($5::uuid[])
			  AND `+linkHead+`
			  AND EXISTS (
				SELECT 1 FROM wim_account_leases l
				WHERE l.account_id = $1 AND l.owner = $6 AND l.epoch = $7 AND `+leaseLive+`)
			ORDER BY a.run_after, a.seq
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		)
		UPDATE vim_wim_actions AS a
		SET claimed_by = $2, claim_expires_at = now() + $3::interval, unsettled_runs = a.unsettled_runs + 1, modified_at = now()
		FROM due o
		WHERE a.instance_action_id = o.instance_action_id AND a.task_index = o.task_index
		RETURNING `+actionCols,
		lease.AccountID, claim, ttl, limit, nonNil(busyLinks), lease.Owner, lease.Epoch)
}

// FinishAction writes one outcome; see FinishActions. For the tests.
func (s *Store) FinishAction(ctx context.Context, l Lease, a wimro.Action, o wimro.Outcome) error {
	errs, err := s.FinishActions(ctx, []Finished{{Action: a, Outcome: o, Lease: l}})
	if err != nil {
		return err
	}
	return errs[0]
}

// SealedSelectForTest is the query ScanSealed reads a page of table with.
func SealedSelectForTest(table string) string { return sealedSelect[table] }
