package persistence

import (
	"context"
	"fmt"
	"time"
)

// QueueStat is the queue of one WIM account: the actions still to run
// (SCHEDULED or BUILD) and how long the oldest due one has waited.
type QueueStat struct {
	AccountID string
	Actions   int
	// OldestDue is how long ago the oldest due action (run_after passed)
	// became due; 0 when none is due yet.
	OldestDue time.Duration
}

// QueueStats returns the queue of every account that has actions to run,
// in one statement (the metrics read it at each scrape).
func (s *Store) QueueStats(ctx context.Context) ([]QueueStat, error) {
	// Both halves read the unfinished actions through the claim index
	// (vim_wim_actions_claim_idx), never the history of finished ones;
	// they were apart when each half had a partial index of its own.
	rows, err := s.q.Query(ctx, `SELECT wim_account_id::text, count(*),
			coalesce(extract(epoch FROM now() - min(run_after) FILTER (WHERE run_after <= now())), 0)::float8
		FROM (
			SELECT wim_account_id, run_after FROM vim_wim_actions
			WHERE status IN ('SCHEDULED', 'BUILD') AND claimed_by IS NULL
			UNION ALL
			SELECT wim_account_id, run_after FROM vim_wim_actions
			WHERE status IN ('SCHEDULED', 'BUILD') AND claimed_by IS NOT NULL
		) q
		WHERE wim_account_id IS NOT NULL
		GROUP BY wim_account_id
		ORDER BY wim_account_id`)
	if err != nil {
		return nil, mapError(fmt.Errorf("persistence: queue stats: %w", err))
	}
	defer rows.Close()
	var out []QueueStat
	for rows.Next() {
		var (
			st   QueueStat
			secs float64
		)
		if err := rows.Scan(&st.AccountID, &st.Actions, &secs); err != nil {
			return nil, mapError(fmt.Errorf("persistence: queue stats: %w", err))
		}
		st.OldestDue = time.Duration(secs * float64(time.Second))
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, mapError(fmt.Errorf("persistence: queue stats: %w", err))
	}
	return out, nil
}
