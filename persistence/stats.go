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

// queueStatsSQL is the queue of every account with actions to run, in
// one read of the claim index (vim_wim_actions_claim_idx: the unfinished
// actions, claimed or not), never the history of finished ones. It was
// two halves, claimed and unclaimed, joined by UNION ALL, from when each
// had a partial index of its own; over one index, PostgreSQL planned the
// two as a parallel aggregate, and starting its workers took 50-280 ms of
// a scrape on the benchmark machine where the query runs in under 1 ms
// (BenchmarkPurgeAndScrape, queue-ms).
const queueStatsSQL = `SELECT wim_account_id::text, count(*),
			coalesce(extract(epoch FROM now() - min(run_after) FILTER (WHERE run_after <= now())), 0)::float8
		FROM vim_wim_actions
		WHERE status IN ('SCHEDULED', 'BUILD') AND wim_account_id IS NOT NULL
		GROUP BY wim_account_id
		ORDER BY wim_account_id`

// QueueStats returns the queue of every account that has actions to run,
// in one statement (the metrics read it at each scrape).
func (s *Store) QueueStats(ctx context.Context) ([]QueueStat, error) {
	rows, err := s.q.Query(ctx, queueStatsSQL)
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
